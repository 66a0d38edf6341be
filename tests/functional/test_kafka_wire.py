"""The agent reads requests as Kafka's broker reads them, over real sockets.

Every API at every version it offers, with bytes after the request's fields, is answered (not
closed); a request cut short closes its connection and nothing else. Clients' all-topics
metadata calls, which librdkafka 2.16 sends with 3 bytes after its Metadata v12 request, list
every topic: confluent-kafka's admin, producer and consumer, and kcat -L.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from objectlog import ObjectLog
from objectlog.kafka.server import AgentThread
from tests.kafka_agent_config import agent_config
from tests.kafka_frames import answer_frame
from tests.kafka_frames import request as kio_request
from tests.unit.test_kafka_wire import OFFERED, TRAILING

TOPICS = {"orders": 3, "payments": 1, "audit.v1": 2}
PRODUCE = 0


@pytest.fixture
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    for name, partitions in TOPICS.items():
        log.create_topic(name, partitions=partitions)
    running = AgentThread(log, agent_config()).start()
    yield running
    running.stop()


def answer_to(address: str, request: bytes) -> int | None:
    """The correlation id of the answer to one request, or None if the agent closed."""
    answer = answer_frame(address, request)
    return None if answer is None else int.from_bytes(answer[:4], "big", signed=True)


def answerable(api_key: int, version: int, correlation_id: int = 5) -> bytes:
    """A zero-valued request, but a Produce asks for acks=1 (Kafka never answers acks=0)."""
    values = {"acks": 1} if api_key == PRODUCE else {}
    return kio_request(api_key, version, values, correlation_id=correlation_id)


def test_every_offered_version_with_bytes_after_it_is_answered(agent: AgentThread) -> None:
    unanswered = []
    for correlation_id, (api_key, version) in enumerate(OFFERED):
        request = answerable(api_key, version, correlation_id)
        if answer_to(agent.address, request + TRAILING) != correlation_id:
            unanswered.append((api_key, version))
    assert unanswered == []


def test_a_request_cut_short_closes_its_connection_and_nothing_else(
    log: ObjectLog, agent: AgentThread
) -> None:
    from confluent_kafka.admin import AdminClient

    metadata = kio_request(3, 12)
    assert answer_to(agent.address, metadata[:-1]) is None
    produce = answerable(PRODUCE, 9)
    assert answer_to(agent.address, produce[:-2]) is None
    admin = AdminClient({"bootstrap.servers": agent.address})
    assert set(admin.list_topics(timeout=10).topics) == set(TOPICS)


def test_confluent_kafka_lists_every_topic_from_admin_producer_and_consumer(
    agent: AgentThread,
) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient

    settings = {"bootstrap.servers": agent.address}
    admin = AdminClient(settings)
    producer = Producer(settings)
    consumer = Consumer({**settings, "group.id": "lister"})
    try:
        for client in (admin, producer, consumer):
            listed = client.list_topics(timeout=10).topics
            assert {name: len(t.partitions) for name, t in listed.items()} == TOPICS
    finally:
        consumer.close()


def test_kcat_lists_every_topic(agent: AgentThread) -> None:
    listing = subprocess.run(
        ["kcat", "-b", agent.address, "-L", "-J"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    topics = json.loads(listing.stdout)["topics"]
    assert {t["topic"]: len(t["partitions"]) for t in topics} == TOPICS
