"""Kafka transactions through the agent (issue 36) with kafka-python and aiokafka, unchanged, as
transactional producers and as read_committed / read_uncommitted consumers (confluent-kafka's
are in test_kafka_transactions.py): commit and abort across partitions and topics, each
client's read_committed consumer never sees an aborted record and sees a committed
transaction whole, read_uncommitted sees everything; offsets sent to a transaction move the
group's only on commit; a second producer with the same transactional id fences the first and
aborts its open transaction; an abandoned transaction times out and is aborted when its
producer's next request meets it (TxnChecks.java also takes the next InitProducerId's path). One
agent serves the module; each test has its own topics and transactional ids."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioPartition
from aiokafka.errors import KafkaError as AioKafkaError
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpPartition
from kafka.errors import KafkaError as KpKafkaError
from kafka.structs import OffsetAndMetadata

from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.kafka.server import AgentThread
from tests.kafka_agent_config import agent_config

CLIENTS = ("kafka-python", "aiokafka")
PARTITIONS = 2


@pytest.fixture(scope="module")
def txlog(aws_endpoint: str) -> Iterator[ObjectLog]:
    suffix = uuid.uuid4().hex[:12]
    config = Config.from_env(bucket=f"objectlog-test-{suffix}", table=f"objectlog-test-{suffix}")
    with ObjectLog(config) as log:
        log.ensure_resources()
        yield log


@pytest.fixture(scope="module")
def agent(txlog: ObjectLog) -> Iterator[AgentThread]:
    running = AgentThread(txlog, agent_config()).start()
    yield running
    running.stop()


@pytest.fixture
def topics(txlog: ObjectLog, client: str, request: pytest.FixtureRequest) -> Callable[[str], str]:
    """Makes this test's own topic (of PARTITIONS) from a short name."""
    test = request.node.originalname.removeprefix("test_")[:24]

    def make(name: str) -> str:
        topic = f"{client}-{test}-{name}"
        txlog.create_topic(topic, PARTITIONS)
        return topic

    return make


# ---- the two clients behind one synchronous face ---------------------------------------------


class KpProducer:
    """kafka-python's transactional producer."""

    def __init__(self, address: str, transactional_id: str, timeout_ms: int = 60_000) -> None:
        self.producer = KafkaProducer(
            bootstrap_servers=address,
            transactional_id=transactional_id,
            transaction_timeout_ms=timeout_ms,
            linger_ms=5,
        )
        self.producer.init_transactions()

    def begin(self) -> None:
        self.producer.begin_transaction()

    def send(self, topic: str, value: bytes, partition: int) -> None:
        self.producer.send(topic, value, partition=partition)

    def flush(self) -> None:
        self.producer.flush(10)

    def commit(self) -> None:
        self.producer.commit_transaction()

    def abort(self) -> None:
        self.producer.abort_transaction()

    def send_offsets(self, offsets: dict[tuple[str, int], int], consumer: Any) -> None:
        self.producer.send_offsets_to_transaction(
            {KpPartition(*tp): OffsetAndMetadata(o, "", -1) for tp, o in offsets.items()},
            consumer.group_metadata(),
        )

    def close(self) -> None:
        self.producer.close(timeout=1)


class AioProducer:
    """aiokafka's transactional producer, on an event loop of its own run call by call."""

    def __init__(self, address: str, transactional_id: str, timeout_ms: int = 60_000) -> None:
        self.loop = asyncio.new_event_loop()

        async def start() -> AIOKafkaProducer:
            producer = AIOKafkaProducer(
                bootstrap_servers=address,
                transactional_id=transactional_id,
                transaction_timeout_ms=timeout_ms,
                linger_ms=5,
            )
            await producer.start()  # InitProducerId
            return producer

        self.producer = self.run(start())

    def run(self, call: Any) -> Any:
        return self.loop.run_until_complete(call)

    def begin(self) -> None:
        self.run(self.producer.begin_transaction())

    def send(self, topic: str, value: bytes, partition: int) -> None:
        self.run(self.producer.send(topic, value, partition=partition))

    def flush(self) -> None:
        self.run(self.producer.flush())

    def commit(self) -> None:
        self.run(self.producer.commit_transaction())

    def abort(self) -> None:
        self.run(self.producer.abort_transaction())

    def send_offsets(self, offsets: dict[tuple[str, int], int], consumer: Any) -> None:
        self.run(
            self.producer.send_offsets_to_transaction(
                {AioPartition(*tp): o for tp, o in offsets.items()}, consumer.group
            )
        )

    def close(self) -> None:
        try:
            self.run(self.producer.stop())
        finally:
            self.loop.close()


class KpGroupMember:
    """A kafka-python consumer in a group, for consume-transform-produce."""

    def __init__(self, address: str, group: str, topic: str) -> None:
        self.consumer = KafkaConsumer(
            topic,
            bootstrap_servers=address,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            isolation_level="read_committed",
        )

    def group_metadata(self) -> Any:
        return self.consumer.group_metadata()

    def consume(self, count: int) -> list[tuple[str, int, int, bytes]]:
        got: list[tuple[str, int, int, bytes]] = []
        deadline = time.monotonic() + 20
        while len(got) < count and time.monotonic() < deadline:
            # a long poll: kafka-python 3.0.12 drops a rebalance's assignment when a poll's
            # timeout ends while its SyncGroup is in flight (join_group_async finds no rejoin
            # needed and never applies the finished join), and then never reads
            for records in self.consumer.poll(timeout_ms=5000).values():
                got += [(r.topic, r.partition, r.offset, r.value) for r in records]
        return got

    def committed(self, topic: str, partition: int) -> int | None:
        return self.consumer.committed(KpPartition(topic, partition))

    def close(self) -> None:
        self.consumer.close(autocommit=False)


class AioGroupMember:
    """An aiokafka consumer in a group, sharing its producer's event loop."""

    def __init__(self, address: str, group: str, topic: str, producer: AioProducer) -> None:
        self.group = group
        self.run = producer.run

        async def start() -> AIOKafkaConsumer:
            consumer = AIOKafkaConsumer(
                topic,
                bootstrap_servers=address,
                group_id=group,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                isolation_level="read_committed",
            )
            await consumer.start()
            return consumer

        self.consumer = self.run(start())

    def consume(self, count: int) -> list[tuple[str, int, int, bytes]]:
        got: list[tuple[str, int, int, bytes]] = []
        deadline = time.monotonic() + 20
        while len(got) < count and time.monotonic() < deadline:
            batches = self.run(self.consumer.getmany(timeout_ms=250))
            for records in batches.values():
                got += [(r.topic, r.partition, r.offset, r.value) for r in records]
        return got

    def committed(self, topic: str, partition: int) -> int | None:
        return self.run(self.consumer.committed(AioPartition(topic, partition)))

    def close(self) -> None:
        self.run(self.consumer.stop())


def producer(client: str, address: str, transactional_id: str, **options: Any) -> Any:
    kind = KpProducer if client == "kafka-python" else AioProducer
    return kind(address, transactional_id, **options)


def group_member(client: str, address: str, group: str, topic: str, made: Any) -> Any:
    if client == "kafka-python":
        return KpGroupMember(address, group, topic)
    return AioGroupMember(address, group, topic, made)


def fenced(client: str) -> type[BaseException]:
    return KpKafkaError if client == "kafka-python" else AioKafkaError


# ---- reading a topic whole, with each client's consumer ---------------------------------------


def read_kafka_python(address: str, topics: list[str], isolation: str, count: int) -> list[bytes]:
    consumer = KafkaConsumer(
        bootstrap_servers=address,
        isolation_level=isolation,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    consumer.assign([KpPartition(t, p) for t in topics for p in range(PARTITIONS)])
    got: list[bytes] = []
    try:
        idle, deadline = 0, time.monotonic() + 20
        while (len(got) < count or idle < 1) and time.monotonic() < deadline:
            found = [r.value for rs in consumer.poll(timeout_ms=250).values() for r in rs]
            got += found
            idle = 0 if found else idle + 1
    finally:
        consumer.close(autocommit=False)
    return sorted(got)


def read_aiokafka(address: str, topics: list[str], isolation: str, count: int) -> list[bytes]:
    async def read() -> list[bytes]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=address,
            isolation_level=isolation,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        consumer.assign([AioPartition(t, p) for t in topics for p in range(PARTITIONS)])
        got: list[bytes] = []
        try:
            idle, deadline = 0, time.monotonic() + 20
            while (len(got) < count or idle < 1) and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=250)
                found = [r.value for rs in batches.values() for r in rs]
                got += found
                idle = 0 if found else idle + 1
        finally:
            await consumer.stop()
        return sorted(got)

    return asyncio.run(read())


READERS = {"kafka-python": read_kafka_python, "aiokafka": read_aiokafka}


def read_by_every_client(
    address: str, topics: list[str], committed: list[bytes], everything: int
) -> None:
    """Each client's read_committed consumer reads exactly the committed records, and its
    read_uncommitted one all of them."""
    for client, read in READERS.items():
        assert read(address, topics, "read_committed", len(committed)) == sorted(committed), client
        assert len(read(address, topics, "read_uncommitted", everything)) == everything, client


# ---- the cases --------------------------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_committed_transactions_are_read_whole_and_aborted_ones_never(
    client: str, agent: AgentThread, topics: Callable[[str], str]
) -> None:
    first, second = topics("a"), topics("b")
    p = producer(client, agent.address, f"{client}-writer")
    try:
        p.begin()
        for i in range(8):  # both topics, both partitions
            p.send(first if i % 2 else second, b"committed-%d" % i, partition=(i // 2) % 2)
        p.commit()
        p.begin()
        for i in range(4):
            p.send(first, b"aborted-%d" % i, partition=i % 2)
            p.send(second, b"aborted-%d" % i, partition=i % 2)
        p.flush()  # written, then aborted
        p.abort()
        p.begin()
        p.send(first, b"after", partition=0)  # the partitions go on after an abort
        p.commit()
    finally:
        p.close()
    committed = [b"committed-%d" % i for i in range(8)] + [b"after"]
    read_by_every_client(agent.address, [first, second], committed, everything=17)


@pytest.mark.parametrize("client", CLIENTS)
def test_offsets_sent_to_a_transaction_move_only_when_it_commits(
    client: str, agent: AgentThread, topics: Callable[[str], str]
) -> None:
    source, sink = topics("in"), topics("out")
    feed = producer(client, agent.address, f"{client}-feed")
    feed.begin()
    for i in range(4):
        feed.send(source, b"in-%d" % i, partition=0)
    feed.commit()
    feed.close()

    transform = producer(client, agent.address, f"{client}-transform")
    member = group_member(client, agent.address, f"{client}-pipeline", source, transform)
    try:
        inputs = member.consume(4)
        assert len(inputs) == 4
        offsets = {(source, 0): inputs[-1][2] + 1}
        for commit in (False, True):
            transform.begin()
            for _, _, _, value in inputs:
                transform.send(sink, value.upper(), partition=0)
            transform.send_offsets(offsets, member)
            if commit:
                transform.commit()
            else:
                transform.abort()
                assert member.committed(source, 0) is None  # nothing moved by the abort
        assert member.committed(source, 0) == inputs[-1][2] + 1
    finally:
        member.close()
        transform.close()
    outputs = sorted(value.upper() for _, _, _, value in inputs)
    assert READERS[client](agent.address, [sink], "read_committed", 4) == outputs


@pytest.mark.parametrize("client", CLIENTS)
def test_a_second_producer_with_the_same_id_fences_the_first_and_aborts_its_transaction(
    client: str, agent: AgentThread, topics: Callable[[str], str]
) -> None:
    topic = topics("out")
    first = producer(client, agent.address, f"{client}-fenced")
    first.begin()
    first.send(topic, b"zombie", partition=0)
    first.flush()
    second = producer(client, agent.address, f"{client}-fenced")  # aborts the first's
    try:
        second.begin()
        second.send(topic, b"fresh", partition=1)
        second.commit()
        with pytest.raises(fenced(client)) as raised:
            first.commit()
        assert "fenced" in type(raised.value).__name__.lower() + str(raised.value).lower()
    finally:
        first.close()
        second.close()
    read_by_every_client(agent.address, [topic], [b"fresh"], everything=2)


@pytest.mark.parametrize("client", CLIENTS)
def test_an_abandoned_transaction_times_out_and_is_aborted(
    client: str, agent: AgentThread, topics: Callable[[str], str]
) -> None:
    """Its producer's own EndTxn, past transaction.timeout.ms, meets it (the next
    InitProducerId of its id would too: TxnChecks.java takes that path)."""
    topic = topics("out")
    abandoned = producer(client, agent.address, f"{client}-abandoned", timeout_ms=1000)
    successor = None
    try:
        abandoned.begin()
        abandoned.send(topic, b"abandoned", partition=0)
        abandoned.flush()
        time.sleep(1.2)  # past its transaction.timeout.ms
        with pytest.raises(fenced(client)) as raised:
            abandoned.commit()  # aborted and fenced as it meets the expired transaction
        assert "fenced" in type(raised.value).__name__.lower() + str(raised.value).lower()
        successor = producer(client, agent.address, f"{client}-abandoned")
        successor.begin()
        successor.send(topic, b"next", partition=0)  # the aborted one holds no LSO back
        successor.commit()
    finally:
        abandoned.close()
        if successor is not None:
            successor.close()
    read_by_every_client(agent.address, [topic], [b"next"], everything=2)
