"""A waiting consumer's commits through the Kafka agent: an offset committed again unchanged
costs no DynamoDB write (groups.unchanged), a changed one is stored (issue 38)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaPartition

from objectlog import ObjectLog
from objectlog.groups import TopicPartition
from objectlog.kafka.server import AgentThread
from tests.kafka_agent_config import agent_config
from tests.kafka_python_members import kafka_python_member

TOPIC = "waiting"
PARTITIONS = 4


@pytest.fixture
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    log.create_topic(TOPIC, partitions=PARTITIONS)
    running = AgentThread(log, agent_config()).start()
    yield running
    running.stop()


@pytest.fixture
def offset_writes(log: ObjectLog) -> list[str]:
    """The offset items of the DynamoDB writes that store an offset (not the fence an
    OffsetFetch sets at a classic group's join), counted as botocore sends them."""
    written: list[str] = []

    def count(params: dict[str, Any], **_: Any) -> None:
        sort_key = params.get("Key", params.get("Item", {})).get("sk", {}).get("S", "")
        if sort_key.startswith("offset#") and "off = :off" in params.get("UpdateExpression", ""):
            written.append(sort_key)

    events = log.metadata.client.meta.events
    for operation in ("UpdateItem", "PutItem"):
        events.register(f"before-parameter-build.dynamodb.{operation}", count)
    return written


def poll_for(consumer: Any, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert not consumer.poll(timeout_ms=100), "nothing was produced"


def test_unchanged_auto_commits_write_nothing_after_the_first(
    log: ObjectLog, agent: AgentThread, offset_writes: list[str]
) -> None:
    """kafka-python, like Java's consumer, auto-commits every position at each interval,
    changed or not: 4 partitions x about 15 commits here, of which only the first 4 write."""
    consumer = kafka_python_member(
        agent.address,
        TOPIC,
        "idle",
        auto_offset_reset="latest",
        enable_auto_commit=True,
        auto_commit_interval_ms=100,
    )
    try:
        poll_for(consumer, 2.0)
        assert sorted(offset_writes) == sorted(f"offset#{TOPIC}#{p}" for p in range(PARTITIONS))
        assert log.groups.unchanged.skipped >= 3 * PARTITIONS  # it committed again and again
        assert log.groups.committed("idle", [TopicPartition(TOPIC, 0)]) == {
            TopicPartition(TOPIC, 0): (0, "")
        }

        with log.producer() as producer:  # a changed offset is stored
            producer.send(TOPIC, b"one", partition=2)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not consumer.poll(timeout_ms=100):
            pass
        poll_for_commit = time.monotonic() + 10
        while time.monotonic() < poll_for_commit:
            consumer.poll(timeout_ms=100)
            if log.groups.committed("idle", [TopicPartition(TOPIC, 2)])[
                TopicPartition(TOPIC, 2)
            ] == (1, ""):
                break
        assert log.groups.committed("idle", [TopicPartition(TOPIC, 2)]) == {
            TopicPartition(TOPIC, 2): (1, "")
        }
        assert offset_writes.count(f"offset#{TOPIC}#2") == 2
        assert len(offset_writes) == PARTITIONS + 1
    finally:
        consumer.close(autocommit=False)


def test_a_confluent_consumers_repeated_commit_writes_once_and_a_change_is_stored(
    log: ObjectLog, agent: AgentThread, offset_writes: list[str]
) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": agent.address,
            "group.id": "repeats",
            "enable.auto.commit": True,
            "auto.commit.interval.ms": 100,
            "auto.offset.reset": "latest",
        }
    )
    consumer.subscribe([TOPIC])
    try:
        deadline = time.monotonic() + 20
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.1)
        assert len(consumer.assignment()) == PARTITIONS
        for _ in range(5):
            consumer.commit(offsets=[KafkaPartition(TOPIC, 1, 7)], asynchronous=False)
        assert offset_writes == [f"offset#{TOPIC}#1"]
        consumer.commit(offsets=[KafkaPartition(TOPIC, 1, 8)], asynchronous=False)
        assert offset_writes == [f"offset#{TOPIC}#1"] * 2
        assert log.groups.committed("repeats", [TopicPartition(TOPIC, 1)]) == {
            TopicPartition(TOPIC, 1): (8, "")
        }
        stored = consumer.committed([KafkaPartition(TOPIC, 1)], timeout=10)
        assert stored[0].offset == 8
    finally:
        consumer.close()
