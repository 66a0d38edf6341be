"""Readers at the tail of a still topic stop reading its heads (services.activity), and a
record produced after they went idle still reaches them at once: a library Consumer in a
group, a ``fetch(max_wait_ms=)`` long poll, and a Kafka consumer through the agent. The
writer is another ObjectLog (another process, as far as the activity can tell); the waits
are shortened so that a reader goes idle within a second."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.kafka.server import AgentThread
from tests.head_reads import FAST, HeadReads, fast_reader, fast_writer
from tests.kafka_agent_config import agent_config

TOPIC = "still"
PARTITIONS = 4
ARRIVES_WITHIN_S = 3.0  # the fallback (60 s) and the agent fetch's wait (20 s) are far longer


@pytest.fixture
def writer(log: ObjectLog) -> ObjectLog:
    return fast_writer(log, TOPIC, PARTITIONS)


@pytest.fixture
def reader(writer: ObjectLog) -> Iterator[ObjectLog]:
    with fast_reader(writer) as log:
        yield log


def until_still(reads: Callable[[], int], keep_waiting: Callable[[], object]) -> None:
    """Keep the reader waiting until half a second passes with no head read."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        before, window = reads(), time.monotonic() + 0.5
        while time.monotonic() < window:
            keep_waiting()
        if reads() == before:
            return
    raise AssertionError("the reader kept reading heads")


def produce_one(writer: ObjectLog) -> float:
    producer = writer.producer()
    producer.send(TOPIC, value=b"after the quiet", partition=2)
    producer.flush()
    return time.monotonic()


def test_a_group_consumer_gets_a_record_produced_after_it_went_idle(
    writer: ObjectLog, reader: ObjectLog
) -> None:
    heads = HeadReads(reader)
    consumer = reader.consumer(group="idle", topics=[TOPIC])
    try:
        got: list[bytes] = []
        until_still(lambda: heads.count, lambda: got.extend(r.value for r in consumer.poll(0.1)))
        assert not got
        produced = produce_one(writer)
        while not got and time.monotonic() - produced < ARRIVES_WITHIN_S:
            got.extend(r.value or b"" for r in consumer.poll(0.1))
        assert got == [b"after the quiet"]
    finally:
        consumer.close()


def test_a_long_poll_gets_a_record_produced_after_its_partition_went_idle(
    writer: ObjectLog, reader: ObjectLog
) -> None:
    heads = HeadReads(reader)
    quiet = time.monotonic() + 2 * FAST.idle_after_s
    while time.monotonic() < quiet:  # the partition's activity is the process's, kept
        reader.fetch(TOPIC, 2, 0, max_wait_ms=200)
    answer: list[Any] = []
    polling = threading.Thread(
        target=lambda: answer.append(reader.fetch(TOPIC, 2, 0, max_wait_ms=20_000))
    )
    before = heads.count
    polling.start()
    time.sleep(1.0)
    assert heads.count - before == 1  # the poll's own first read, then none while still
    produced = produce_one(writer)
    polling.join(timeout=20)
    assert [r.value for r in answer[0].records] == [b"after the quiet"]
    assert time.monotonic() - produced < ARRIVES_WITHIN_S


def test_a_kafka_consumer_through_the_agent_gets_a_record_produced_after_it_went_idle(
    writer: ObjectLog, reader: ObjectLog
) -> None:
    from confluent_kafka import Consumer, TopicPartition

    agent = AgentThread(reader, agent_config()).start()
    consumer = Consumer(
        {
            "bootstrap.servers": agent.address,
            "group.id": "idle-kafka",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 20_000,  # the wait is the watcher's: no early re-fetch
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        handlers = agent.agent.handlers
        assert handlers is not None
        watcher = handlers.fetching.watcher
        got: list[bytes] = []

        def keep_polling() -> None:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                got.append(message.value())

        until_still(lambda: watcher.reads, keep_polling)
        produced = produce_one(writer)
        while not got and time.monotonic() - produced < ARRIVES_WITHIN_S:
            keep_polling()
        assert got == [b"after the quiet"]
    finally:
        consumer.close()
        agent.stop()
