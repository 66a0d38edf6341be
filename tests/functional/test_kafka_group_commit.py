"""The agent's group commit with real clients (kafka/coalesce.py): many producers' requests
share objects and commits, and each producer still gets every record acknowledged once, in
its order, with its own errors: plain and idempotent confluent-kafka producers and a
kafka-python producer write at once while one request, refused for a keyless record on a
compacted topic, is answered INVALID_RECORD and changes nothing for the others."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.kafka.server import AgentThread
from tests.kafka_agent_config import agent_config

TOPIC = "events"
COMPACTED = "latest"
PARTITIONS = 2
RECORDS = 16  # per producer, one at a time (linger.ms=0, each waited for)


@pytest.fixture
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    log.create_topic(TOPIC, partitions=PARTITIONS)
    log.create_topic(COMPACTED, partitions=1, config={"cleanup.policy": "compact"})
    running = AgentThread(log, agent_config()).start()
    yield running
    running.stop()


def confluent_writer(address: str, name: str, idempotent: bool) -> Any:
    import confluent_kafka

    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": address,
            "acks": "all",
            "linger.ms": 0,
            "enable.idempotence": idempotent,
        }
    )

    def send(partition: int, value: bytes) -> None:
        errors: list[Any] = []
        producer.produce(
            TOPIC,
            value,
            key=name.encode(),
            partition=partition,
            on_delivery=lambda e, _m: errors.append(e),
        )
        producer.flush(30)
        assert errors == [None], errors

    return send


def kafka_python_writer(address: str) -> Any:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=address, acks="all", linger_ms=0)

    def send(partition: int, value: bytes) -> None:
        producer.send(TOPIC, value, key=b"kp", partition=partition).get(timeout=30)

    return send


def test_many_writers_share_flushes_and_each_keeps_its_records_and_errors(
    log: ObjectLog, agent: AgentThread
) -> None:
    import confluent_kafka

    writers = {f"plain{i}": confluent_writer(agent.address, f"plain{i}", False) for i in range(6)}
    writers |= {f"idem{i}": confluent_writer(agent.address, f"idem{i}", True) for i in range(4)}
    writers["kp"] = kafka_python_writer(agent.address)
    failures: list[BaseException] = []

    def write(name: str) -> None:
        try:
            for n in range(RECORDS):
                writers[name](n % PARTITIONS, f"{name}:{n}".encode())
        except BaseException as e:  # reported below, not lost on the thread
            failures.append(e)

    threads = [threading.Thread(target=write, args=(name,)) for name in writers]
    for thread in threads:
        thread.start()
    refused = confluent_kafka.Producer({"bootstrap.servers": agent.address, "linger.ms": 0})
    errors: list[Any] = []
    for _ in range(5):  # keyless records on a compacted topic, while the others write
        refused.produce(COMPACTED, b"no key", on_delivery=lambda e, _m: errors.append(e))
        refused.flush(30)
    for thread in threads:
        thread.join(120)
    assert not failures, failures
    assert [e.code() for e in errors] == [confluent_kafka.KafkaError.INVALID_RECORD] * 5
    assert log.fetch(COMPACTED, 0, 0).records == []

    seen: dict[tuple[str, int], list[int]] = defaultdict(list)
    offsets: set[tuple[int, int]] = set()
    for partition in range(PARTITIONS):
        for record in log.fetch(TOPIC, partition, 0, max_records=10_000).records:
            name, n = (record.value or b"").decode().split(":")
            seen[(name, partition)].append(int(n))
            offsets.add((partition, record.offset))
    for name in writers:  # every record once, each writer's in its order, per partition
        for partition in range(PARTITIONS):
            assert seen[(name, partition)] == list(range(partition, RECORDS, PARTITIONS)), name
    assert len(offsets) == len(writers) * RECORDS

    handlers = agent.agent.handlers
    assert handlers is not None
    stats, appended = handlers.producing.group_commit.stats, handlers.producing.appender.stats
    # the writers' requests (the refused producer's never reach a flush) overlapped: fewer
    # objects than requests, and the plain producers' records shared commits
    assert stats.requests == len(writers) * RECORDS
    assert appended.objects_put < stats.requests * 0.8, (appended.objects_put, stats)
    assert appended.commits < len(writers) * RECORDS, appended
