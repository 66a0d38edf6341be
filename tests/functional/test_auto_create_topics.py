"""Kafka's auto.create.topics.enable and num.partitions (Config.auto_create_topics and
num_partitions): a produce and a subscribe to a topic that does not exist create it through the
Kafka agent, a produce creates it through the HTTP API and REST Proxy, with num.partitions
partitions and the default configs; with the setting off each is refused and nothing is made."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from objectlog import ObjectLog
from objectlog.errors import TopicNotFound
from objectlog.kafka.server import AgentThread
from objectlog.kafka.wire import response_schema
from objectlog.tools.gateway import local_api
from tests.kafka_agent_config import agent_config
from tests.kafka_frames import answer_frame
from tests.kafka_frames import request as kio_request

NUM_PARTITIONS = 3
REST_PROXY_BINARY = "application/vnd.kafka.binary.v2+json"


@pytest.fixture(params=[True, False], ids=["auto-create", "no-auto-create"])
def served(request: pytest.FixtureRequest, log: ObjectLog) -> Iterator[ObjectLog]:
    """The test's log as a server sees it: auto-creating topics with NUM_PARTITIONS, or not."""
    config = replace(log.config, auto_create_topics=request.param, num_partitions=NUM_PARTITIONS)
    with ObjectLog(config) as server_log:
        yield server_log


@pytest.fixture
def agent(served: ObjectLog) -> Iterator[AgentThread]:
    running = AgentThread(served, agent_config()).start()
    yield running
    running.stop()


@pytest.fixture
def api(served: ObjectLog) -> Iterator[str]:
    gateway = local_api(lambda: served)
    yield gateway.start(port=0)
    gateway.stop()


def partitions_of(log: ObjectLog, name: str) -> int | None:
    try:
        return log.topic(name, fresh=True).partitions
    except TopicNotFound:
        return None


def expected(served: ObjectLog) -> int | None:
    return NUM_PARTITIONS if served.config.auto_create_topics else None


def test_a_kafka_producer_creates_its_topic(served: ObjectLog, agent: AgentThread) -> None:
    from confluent_kafka import KafkaError, Producer

    producer = Producer({"bootstrap.servers": agent.address, "message.timeout.ms": 1000})
    reports: list[KafkaError | None] = []
    producer.produce("made.by.producing", b"first", on_delivery=lambda e, _: reports.append(e))
    producer.flush(10)
    assert partitions_of(served, "made.by.producing") == expected(served)
    if served.config.auto_create_topics:
        assert reports == [None]
        found = [
            r.value
            for p in range(NUM_PARTITIONS)
            for r in served.fetch("made.by.producing", p, 0).records
        ]
        assert found == [b"first"]
    else:
        assert len(reports) == 1 and reports[0] is not None
        assert reports[0].code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._MSG_TIMED_OUT)


def test_a_kafka_consumer_subscribing_creates_its_topic(
    served: ObjectLog, agent: AgentThread
) -> None:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(  # allow_auto_create_topics is kafka-python's default, as Java's
        "made.by.subscribing", bootstrap_servers=agent.address, group_id="subscriber"
    )
    try:  # its first metadata request names the topic: a second or two where it creates
        deadline = time.monotonic() + 3
        while partitions_of(served, "made.by.subscribing") is None:
            if time.monotonic() > deadline:
                break
            consumer.poll(timeout_ms=200)
    finally:
        consumer.close()
    assert partitions_of(served, "made.by.subscribing") == expected(served)


def test_metadata_creates_only_where_both_the_agent_and_the_client_allow(
    served: ObjectLog, agent: AgentThread
) -> None:
    for allowed, name in ((False, "asked.without.consent"), (True, "asked.with.consent")):
        topics = [{"name": name, "topic_id": None}]
        request = kio_request(
            3, 12, values={"topics": topics, "allow_auto_topic_creation": allowed}
        )
        answer = answer_frame(agent.address, request)
        assert answer is not None
        response, _ = entity_reader(response_schema(3, 12))(answer, 5)
        created = allowed and served.config.auto_create_topics
        error = ErrorCode.none if created else ErrorCode.unknown_topic_or_partition
        assert [(t.name, t.error_code, len(t.partitions)) for t in response.topics] == [
            (name, error, NUM_PARTITIONS if created else 0)
        ]
        assert partitions_of(served, name) == (NUM_PARTITIONS if created else None)


def post(url: str, body: object, content_type: str) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": content_type}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_http_produce_creates_its_topic_and_a_named_partition_does_not(
    served: ObjectLog, api: str
) -> None:
    value = {"value": "S2Fma2E="}
    status, _ = post(f"{api}/kafka/topics/rest.made", {"records": [value]}, REST_PROXY_BINARY)
    assert status == (200 if served.config.auto_create_topics else 404)
    assert partitions_of(served, "rest.made") == expected(served)
    status, _ = post(f"{api}/topics/native.made/records", {"records": [value]}, "application/json")
    assert status == (200 if served.config.auto_create_topics else 404)
    assert partitions_of(served, "native.made") == expected(served)
    status, body = post(
        f"{api}/kafka/topics/not.made/partitions/0", {"records": [value]}, REST_PROXY_BINARY
    )
    assert (status, body["error_code"]) == (404, 40401)
    assert partitions_of(served, "not.made") is None


def test_an_invalid_name_is_refused_and_creates_nothing(served: ObjectLog, api: str) -> None:
    status, body = post(
        f"{api}/kafka/topics/bad%20name", {"records": [{"value": "S2Fma2E="}]}, REST_PROXY_BINARY
    )
    assert status in (400, 404, 422)
    assert "bad name" in str(body["message"])
    assert "bad name" not in served.list_topics()
