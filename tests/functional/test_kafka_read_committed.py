"""read_committed through the agent (issue 36): Kafka clients' consumers (librdkafka's default
isolation level is read_committed) read committed records only and stop at the last stable
offset; read_uncommitted ones read everything; ListOffsets' latest is the LSO for
read_committed. The transactions are written through the coordinator and the heads (the
agent's transactional producer comes next)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition

from objectlog import ObjectLog
from objectlog.kafka.server import AgentThread
from objectlog.stores.metadata import kafka_producer
from tests.functional import test_read_committed as rc
from tests.functional.test_kafka_agent import agent
from tests.functional.test_transaction_markers import coordinator

__all__ = ["agent"]
TOPIC = rc.TOPIC


@pytest.fixture
def txlog(log: ObjectLog) -> Iterator[ObjectLog]:
    log.create_topic(TOPIC, 1)
    coord = coordinator(log)
    rc.write(log, [b"plain-0"])  # 0
    for tid, commit in (("aborts", False), ("commits", True)):
        txn = coord.init_producer_id(tid, 60_000)
        coord.add_partitions(tid, txn.producer_id, txn.producer_epoch, [(TOPIC, 0)])
        rc.write(log, [f"{tid}-a".encode(), f"{tid}-b".encode()], kafka_producer(txn.producer_id))
        coord.end_txn(tid, txn.producer_id, txn.producer_epoch, commit=commit)
    # aborts: 1-2 and its marker 3; commits: 4-5 and its marker 6
    open_txn = coord.init_producer_id("open", 60_000)
    coord.add_partitions("open", open_txn.producer_id, open_txn.producer_epoch, [(TOPIC, 0)])
    rc.write(log, [b"open-7"], kafka_producer(open_txn.producer_id))  # holds the LSO at 7
    rc.write(log, [b"plain-8"])
    yield log


def consume(address: str, isolation: str, count: int) -> tuple[list[tuple[int, bytes]], int]:
    """The records a consumer at this isolation level reads, and its high watermark."""
    consumer = Consumer(
        {
            "bootstrap.servers": address,
            "group.id": f"g-{isolation}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    got: list[tuple[int, bytes]] = []
    try:
        for _ in range(40):
            for message in consumer.consume(num_messages=100, timeout=0.25):
                if message.error() is None:
                    got.append((message.offset(), message.value()))
            if len(got) >= count:
                break
        _, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=5)
    finally:
        consumer.close()
    return got, high


def test_kafka_consumers_read_committed_records_only_up_to_the_lso(
    txlog: ObjectLog, agent: AgentThread
) -> None:
    committed, high = consume(agent.address, "read_committed", 3)
    assert committed == [(0, b"plain-0"), (4, b"commits-a"), (5, b"commits-b")]
    assert high == 7  # librdkafka's high watermark for read_committed is the LSO
    uncommitted, high = consume(agent.address, "read_uncommitted", 7)
    assert [o for o, _ in uncommitted] == [0, 1, 2, 4, 5, 7, 8]  # markers are offset gaps
    assert high == 9
