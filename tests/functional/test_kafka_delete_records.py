"""DeleteRecords through the Kafka agent, with unmodified clients, against the AWS endpoint:
confluent-kafka's and kafka-python's admin clients move a partition's log start; consumers
that reset to the earliest offset start there, ListOffsets answers it, a fetch below it is
OFFSET_OUT_OF_RANGE; errors come back per partition, as Kafka's broker answers them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from objectlog import ObjectLog
from objectlog.kafka.handlers import DELETE_RECORDS, FETCH
from objectlog.kafka.server import AgentThread
from tests.kafka_agent_config import agent_config
from tests.kafka_frames import answer

TOPIC = "purged"
COMPACTED = "ledger"


@pytest.fixture
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    log.create_topic(TOPIC, partitions=2)
    log.create_topic(COMPACTED, config={"cleanup.policy": "compact"})
    with log.producer(linger_ms=0) as producer:
        for i in range(10):
            producer.send(TOPIC, b"v%d" % i, partition=0)
        for i in range(6):
            producer.send(TOPIC, b"w%d" % i, partition=1)
    running = AgentThread(log, agent_config()).start()
    yield running
    running.stop()


def test_confluent_kafka_deletes_records_and_a_consumer_resets_to_the_new_start(
    log: ObjectLog, agent: AgentThread
) -> None:
    from confluent_kafka import OFFSET_END, Consumer, KafkaError, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": agent.address})
    asked = [TopicPartition(TOPIC, 0, 4), TopicPartition(TOPIC, 1, OFFSET_END)]
    done = admin.delete_records(asked)
    assert {tp.partition: f.result(10).low_watermark for tp, f in done.items()} == {0: 4, 1: 6}
    assert [log.offsets(TOPIC, p).earliest for p in range(2)] == [4, 6]
    [past] = admin.delete_records([TopicPartition(TOPIC, 0, 99)]).values()
    with pytest.raises(KafkaException) as refused:
        past.result(10)
    assert refused.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE
    assert log.offsets(TOPIC, 0).earliest == 4

    consumer = Consumer(
        {
            "bootstrap.servers": agent.address,
            "group.id": "after-delete",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(TOPIC, 0)])  # no committed offset: reset to the earliest
    offsets: list[int] = []
    deadline = time.monotonic() + 20
    while len(offsets) < 6 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            offsets.append(message.offset())
    consumer.close()
    assert offsets == list(range(4, 10))


def test_kafka_python_deletes_records_and_list_offsets_answers_the_new_start(
    log: ObjectLog, agent: AgentThread
) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.errors import OffsetOutOfRangeError

    admin = KafkaAdminClient(bootstrap_servers=agent.address)
    tp0, tp1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
    answered = admin.delete_records({tp0: 7, tp1: 2})
    assert {tp: a["low_watermark"] for tp, a in answered.items()} == {tp0: 7, tp1: 2}
    assert admin.delete_records({tp0: 3})[tp0]["low_watermark"] == 7  # never back
    with pytest.raises(OffsetOutOfRangeError):
        admin.delete_records({tp1: 7})
    admin.close()
    consumer = KafkaConsumer(bootstrap_servers=agent.address)
    assert consumer.beginning_offsets([tp0, tp1]) == {tp0: 7, tp1: 2}
    assert consumer.end_offsets([tp0, tp1]) == {tp0: 10, tp1: 6}
    consumer.close()


# ---- raw frames: every version, every per-partition answer ---------------------------------


def partitions(*pairs: tuple[int, int]) -> list[dict[str, int]]:
    return [{"partition_index": p, "offset": offset} for p, offset in pairs]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_each_partition_gets_its_own_answer_as_from_kafkas_broker(
    log: ObjectLog, agent: AgentThread, version: int
) -> None:
    request = {
        "timeout": 5000,
        "topics": [
            {"name": TOPIC, "partitions": partitions((0, 5), (1, 99), (7, 1))},
            {"name": "missing", "partitions": partitions((0, 1))},
            {"name": COMPACTED, "partitions": partitions((0, -1))},
        ],
    }
    response = answer(agent.address, DELETE_RECORDS, version, request)
    answers = {
        (t.name, p.partition_index): (p.error_code, p.low_watermark)
        for t in response.topics
        for p in t.partitions
    }
    assert answers == {
        (TOPIC, 0): (ErrorCode.none, 5),
        (TOPIC, 1): (ErrorCode.offset_out_of_range, -1),  # past the high watermark, 6
        (TOPIC, 7): (ErrorCode.unknown_topic_or_partition, -1),
        ("missing", 0): (ErrorCode.unknown_topic_or_partition, -1),
        (COMPACTED, 0): (ErrorCode.policy_violation, -1),
    }
    assert [log.offsets(TOPIC, p).earliest for p in range(2)] == [5, 0]


def test_a_fetch_below_the_new_log_start_is_offset_out_of_range(
    log: ObjectLog, agent: AgentThread
) -> None:
    def fetch_at(offset: int) -> Any:
        request = {
            "max_wait": 0,
            "max_bytes": 1 << 20,
            "topics": [
                {
                    "topic": TOPIC,
                    "partitions": [
                        {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
                    ],
                }
            ],
        }
        return answer(agent.address, FETCH, 11, request).responses[0].partitions[0]

    assert fetch_at(2).error_code == ErrorCode.none  # the agent's log remembers this head
    deleted = answer(
        agent.address,
        DELETE_RECORDS,
        2,
        {
            "timeout": 5000,
            "topics": [{"name": TOPIC, "partitions": partitions((0, 3))}],
        },
    )
    assert deleted.topics[0].partitions[0].low_watermark == 3
    assert fetch_at(2).error_code == ErrorCode.offset_out_of_range
    at_start = fetch_at(3)
    assert (at_start.error_code, at_start.log_start_offset) == (ErrorCode.none, 3)
