"""Kafka transactions through the agent (issue 36) with confluent-kafka (librdkafka), unchanged:
a transactional producer commits and aborts across partitions and topics, read_committed
consumers see committed transactions whole and never an aborted record, read_uncommitted ones
see everything, send_offsets_to_transaction moves a group's offsets only on commit, and a
second producer with the same transactional id fences the first."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from objectlog import ObjectLog
from objectlog.kafka.server import AgentThread
from tests.kafka_agent_config import agent_config

IN, OUT = "tx-in", "tx-out"


@pytest.fixture
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    log.create_topic(IN, 2)
    log.create_topic(OUT, 2)
    running = AgentThread(log, agent_config()).start()
    yield running
    running.stop()


def producer(address: str, transactional_id: str) -> Producer:
    made = Producer(
        {
            "bootstrap.servers": address,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 60_000,
            "linger.ms": 5,
        }
    )
    made.init_transactions(30)
    return made


def read_all(address: str, topic: str, isolation: str, group: str = "reader") -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": address,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(2)])
    got: list[bytes] = []
    idle = 0
    try:
        while idle < 6:
            batch = consumer.consume(num_messages=100, timeout=0.25)
            messages = [m for m in batch if m.error() is None]
            got += [m.value() for m in messages]
            idle = 0 if messages else idle + 1
    finally:
        consumer.close()
    return sorted(got)


def test_committed_transactions_are_read_whole_and_aborted_ones_never(
    agent: AgentThread,
) -> None:
    p = producer(agent.address, "writer")
    p.begin_transaction()
    for i in range(6):
        p.produce(OUT if i % 2 else IN, b"committed-%d" % i, partition=i % 2)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(4):
        p.produce(OUT, b"aborted-%d" % i, partition=i % 2)
    p.flush(10)  # written, then aborted (abort_transaction drops what is still queued)
    p.abort_transaction(30)
    committed = [b"committed-1", b"committed-3", b"committed-5"]
    assert read_all(agent.address, OUT, "read_committed") == committed
    assert len(read_all(agent.address, OUT, "read_uncommitted")) == 7


def test_a_second_producer_with_the_same_id_fences_the_first_and_aborts_its_transaction(
    agent: AgentThread,
) -> None:
    first = producer(agent.address, "fenced")
    first.begin_transaction()
    first.produce(OUT, b"zombie", partition=0)
    first.flush(10)
    second = producer(agent.address, "fenced")  # a new epoch: the first's transaction aborts
    second.begin_transaction()
    second.produce(OUT, b"fresh", partition=1)
    second.commit_transaction(30)
    with pytest.raises(KafkaException) as raised:
        first.commit_transaction(10)
    assert raised.value.args[0].fatal() or "fenced" in str(raised.value).lower()
    assert read_all(agent.address, OUT, "read_committed") == [b"fresh"]


def test_offsets_sent_to_a_transaction_move_only_when_it_commits(agent: AgentThread) -> None:
    source = producer(agent.address, "source")
    source.begin_transaction()
    for i in range(4):
        source.produce(IN, b"in-%d" % i, partition=0)
    source.commit_transaction(30)

    consumer = Consumer(
        {
            "bootstrap.servers": agent.address,
            "group.id": "pipeline",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe([IN])
    inputs = []
    for _ in range(60):
        inputs += [m for m in consumer.consume(num_messages=10, timeout=0.5) if m.error() is None]
        if len(inputs) >= 4:
            break
    assert len(inputs) == 4
    transform = producer(agent.address, "transform")
    for commit in (False, True):
        transform.begin_transaction()
        for m in inputs:
            transform.produce(OUT, m.value().upper(), partition=0)
        positions = consumer.position(consumer.assignment())
        transform.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
        if commit:
            transform.commit_transaction(30)
        else:
            transform.abort_transaction(30)
            committed = consumer.committed([TopicPartition(IN, 0)], timeout=10)
            assert committed[0].offset < 0  # nothing committed by the aborted transaction
    committed = consumer.committed([TopicPartition(IN, 0)], timeout=10)
    sent = {tp.partition: tp.offset for tp in positions}
    assert committed[0].offset == sent[0] == inputs[-1].offset() + 2  # past the marker, as Kafka
    consumer.close()
    assert read_all(agent.address, OUT, "read_committed") == sorted(
        m.value().upper() for m in inputs
    )


def test_a_consumer_idle_at_a_marker_waits_instead_of_fetching_in_a_loop(
    agent: AgentThread, log: ObjectLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transaction's marker is the last offset of its partitions: a consumer whose position
    is that offset gets nothing to read there, and its long poll must wait for the next
    record, not wake at once because the high watermark is past its position."""
    import time

    p = producer(agent.address, "tail")
    p.begin_transaction()
    p.produce(OUT, b"last", partition=0)
    p.commit_transaction(30)
    consumer = Consumer(
        {
            "bootstrap.servers": agent.address,
            "group.id": "idle",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 500,
        }
    )
    consumer.assign([TopicPartition(OUT, 0, 0)])
    got = []
    for _ in range(40):
        got += [m for m in consumer.consume(num_messages=10, timeout=0.25) if m.error() is None]
        if got:
            break
    assert [m.value() for m in got] == [b"last"]
    calls = []
    fetch_many = log.fetch_many
    monkeypatch.setattr(log, "fetch_many", lambda *a, **k: calls.append(1) or fetch_many(*a, **k))
    started = time.monotonic()
    while time.monotonic() - started < 2.0:
        assert not [m for m in consumer.consume(num_messages=10, timeout=0.25) if m.error() is None]
    consumer.close()
    # measured: 8 in 2 s (a fetch and its last look per 500 ms wait); 41 when the wait was at
    # the client's position (one per round of the head watcher, every 50 ms)
    assert len(calls) < 20, len(calls)
