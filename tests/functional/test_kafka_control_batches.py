"""Transaction markers as Kafka control batches in the agent's Fetch answers (issue 36): a
consumer whose position is a marker, or an aborted transaction, with nothing after it moves to
the end at once, as a Kafka broker's control batch moves it, instead of waiting for the next
record. confluent-kafka (librdkafka), kafka-python and aiokafka consumers, read_committed and
read_uncommitted, on a partition ending in a commit marker (0) and one ending in an aborted
transaction (1), written by confluent-kafka's transactional producer:

    partition 0: plain 0, aborted 1-2, marker 3, committed 4-5, marker 6
    partition 1: plain 0, committed 1-2, marker 3, aborted 4-5, marker 6

Each consumer reads what its isolation level shows, each record once, and its position
reaches the end (7; the last stable offset is the high watermark there), the lag the client
reports 0, within END_WITHIN_S of its last record. One agent serves the module."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any, Protocol

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as AioPartition
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KpPartition

from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.kafka.server import AgentThread
from tests.kafka_agent_config import agent_config

TOPIC = "ctl"
PARTITIONS = 2
END = 7  # both partitions' high watermark and last stable offset
END_WITHIN_S = 2.0
EXPECTED = {
    "read_committed": {0: [0, 4, 5], 1: [0, 1, 2]},
    "read_uncommitted": {0: [0, 1, 2, 4, 5], 1: [0, 1, 2, 4, 5]},
}
Seen = tuple[int, int, bytes]  # partition, offset, value


@pytest.fixture(scope="module")
def agent(aws_endpoint: str) -> Iterator[AgentThread]:
    suffix = uuid.uuid4().hex[:12]
    config = Config.from_env(bucket=f"objectlog-test-{suffix}", table=f"objectlog-test-{suffix}")
    with ObjectLog(config) as log:
        log.ensure_resources()
        log.create_topic(TOPIC, PARTITIONS)
        running = AgentThread(log, agent_config()).start()
        try:
            write(running.address)
            yield running
        finally:
            running.stop()


def write(address: str) -> None:
    plain = Producer({"bootstrap.servers": address})
    for partition in range(PARTITIONS):
        plain.produce(TOPIC, b"plain", partition=partition)
    assert plain.flush(10) == 0
    txn = Producer({"bootstrap.servers": address, "transactional.id": "ctl-writer", "linger.ms": 5})
    txn.init_transactions(30)
    for partition, commit in ((0, False), (1, True), (0, True), (1, False)):
        txn.begin_transaction()
        for i in range(2):
            kind = b"committed" if commit else b"aborted"
            txn.produce(TOPIC, b"%s-%d" % (kind, i), partition=partition)
        txn.flush(10)  # written before the end (abort_transaction drops what is queued)
        if commit:
            txn.commit_transaction(30)
        else:
            txn.abort_transaction(30)


class Reader(Protocol):
    def poll(self) -> list[Seen]: ...

    def lag(self, partition: int) -> tuple[int | None, int | None]:
        """The consumer's position and the end it reports (None until it knows)."""
        ...

    def close(self) -> None: ...


class ConfluentReader:
    def __init__(self, address: str, isolation: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": address,
                "group.id": f"ctl-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "isolation.level": isolation,
            }
        )
        self.consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])

    def poll(self) -> list[Seen]:
        found = self.consumer.consume(num_messages=100, timeout=0.1)
        return [(m.partition(), m.offset(), m.value()) for m in found if m.error() is None]

    def lag(self, partition: int) -> tuple[int | None, int | None]:
        [at] = self.consumer.position([TopicPartition(TOPIC, partition)])
        # librdkafka's cached end is what its fetches reported: the LSO for read_committed
        _, high = self.consumer.get_watermark_offsets(TopicPartition(TOPIC, partition), cached=True)
        return (at.offset if at.offset >= 0 else None), (high if high >= 0 else None)

    def close(self) -> None:
        self.consumer.close()


class KafkaPythonReader:
    def __init__(self, address: str, isolation: str) -> None:
        self.consumer = KafkaConsumer(
            bootstrap_servers=address,
            isolation_level=isolation,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        self.partitions = [KpPartition(TOPIC, p) for p in range(PARTITIONS)]
        self.consumer.assign(self.partitions)

    def poll(self) -> list[Seen]:
        found = self.consumer.poll(timeout_ms=100)
        return [(r.partition, r.offset, r.value) for rs in found.values() for r in rs]

    def lag(self, partition: int) -> tuple[int | None, int | None]:
        tp = self.partitions[partition]
        return self.consumer.position(tp), self.consumer.highwater(tp)

    def close(self) -> None:
        self.consumer.close()


class AiokafkaReader:
    def __init__(self, address: str, isolation: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.partitions = [AioPartition(TOPIC, p) for p in range(PARTITIONS)]
        self.committed = isolation == "read_committed"

        async def start() -> AIOKafkaConsumer:
            consumer = AIOKafkaConsumer(
                bootstrap_servers=address,
                isolation_level=isolation,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
            )
            await consumer.start()
            consumer.assign(self.partitions)
            return consumer

        self.consumer = self.loop.run_until_complete(start())

    def poll(self) -> list[Seen]:
        found = self.loop.run_until_complete(self.consumer.getmany(timeout_ms=100))
        return [(r.partition, r.offset, r.value) for rs in found.values() for r in rs]

    def lag(self, partition: int) -> tuple[int | None, int | None]:
        tp = self.partitions[partition]
        at = self.loop.run_until_complete(self.consumer.position(tp))
        end = (
            self.consumer.last_stable_offset(tp) if self.committed else self.consumer.highwater(tp)
        )
        return at, end

    def close(self) -> None:
        self.loop.run_until_complete(self.consumer.stop())
        self.loop.close()


READERS: dict[str, Any] = {
    "confluent-kafka": ConfluentReader,
    "kafka-python": KafkaPythonReader,
    "aiokafka": AiokafkaReader,
}


def read_to_the_end(reader: Reader, isolation: str) -> tuple[dict[int, list[Seen]], float, dict]:
    """What the reader sees, how long after its last expected record its positions reached the
    end with lag 0 (inf if they did not within END_WITHIN_S), and the last (position, end)
    of each partition."""
    want = sum(len(offsets) for offsets in EXPECTED[isolation].values())
    seen: dict[int, list[Seen]] = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + 20
    last_record = None
    lags: dict[int, tuple[int | None, int | None]] = {}
    while time.monotonic() < deadline:
        for record in reader.poll():
            seen[record[0]].append(record)
        if last_record is None and sum(map(len, seen.values())) >= want:
            last_record = time.monotonic()
            deadline = last_record + END_WITHIN_S
        if last_record is not None:
            lags = {p: reader.lag(p) for p in range(PARTITIONS)}
            if all(at == END and end == END for at, end in lags.values()):
                return seen, time.monotonic() - last_record, lags
    return seen, float("inf"), lags


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
@pytest.mark.parametrize("client", list(READERS))
def test_a_consumer_moves_past_a_tail_marker_or_aborted_range_at_once(
    agent: AgentThread, client: str, isolation: str
) -> None:
    reader = READERS[client](agent.address, isolation)
    try:
        seen, took, lags = read_to_the_end(reader, isolation)
        for _ in range(3):  # nothing more comes, and nothing twice
            for record in reader.poll():
                seen[record[0]].append(record)
    finally:
        reader.close()
    offsets = {p: [offset for _, offset, _ in records] for p, records in seen.items()}
    assert offsets == EXPECTED[isolation]
    values = [value for records in seen.values() for _, _, value in records]
    if isolation == "read_committed":
        assert not [v for v in values if v.startswith(b"aborted")]
    assert took <= END_WITHIN_S, f"positions and ends {lags}, not at {END} (lag 0)"
