"""Fetch as Kafka answers it, found by librdkafka's own suite (tests 0034 and 0082), checked
with confluent-kafka (librdkafka 2.16): a partition answered with an error carries empty
records, not null (librdkafka drops a whole answer holding a null, so auto.offset.reset never
fired); the answer's max_bytes and each partition's are honoured as KIP-74 has it (soft only
for the first partition with records, which gets at least one), so an answer never outgrows a
client's receive.message.max.bytes."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from objectlog import ObjectLog
from objectlog.kafka.server import AgentThread
from tests.kafka_agent_config import agent_config

TOPIC = "limits"


@pytest.fixture
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    log.create_topic(TOPIC, partitions=3)
    running = AgentThread(log, agent_config()).start()
    yield running
    running.stop()


def test_an_offset_out_of_range_resets_the_consumer(log: ObjectLog, agent: AgentThread) -> None:
    from confluent_kafka import Consumer, TopicPartition

    producer = log.producer()
    for value in (b"a", b"b", b"c"):
        producer.send(TOPIC, value=value, partition=0)
    producer.flush()
    consumer = Consumer(
        {
            "bootstrap.servers": agent.address,
            "group.id": "resetting",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 1000)])  # past the high watermark (3)
        values: list[bytes] = []
        deadline = time.monotonic() + 15
        while len(values) < 3 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    assert values == [b"a", b"b", b"c"]


def test_the_answers_max_bytes_holds_within_the_first_partition(
    log: ObjectLog, agent: AgentThread
) -> None:
    from confluent_kafka import Consumer, TopicPartition

    size = 300 * 1024
    producer = log.producer()
    for partition in range(3):
        for i in range(3):
            producer.send(TOPIC, value=bytes([i]) * size, partition=partition)
    producer.flush()
    # as librdkafka's test 0082: a partition may answer far more than the whole answer may
    consumer = Consumer(
        {
            "bootstrap.servers": agent.address,
            "group.id": "limited",
            "enable.auto.commit": False,
            "max.partition.fetch.bytes": 20_000_000,
            "fetch.max.bytes": 400_000,
            "message.max.bytes": 400_000,
            "receive.message.max.bytes": 400_512,
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(3)])
        received = 0
        deadline = time.monotonic() + 20
        while received < 9 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            assert len(message.value()) == size
            received += 1
    finally:
        consumer.close()
    assert received == 9
