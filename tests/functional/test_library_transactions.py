"""The library's transactional producer (issue 36, docs/transactions.md), on moto: commit and
abort across topics and partitions, what read_committed and read_uncommitted readers see,
offsets sent to the transaction reaching the group only on commit, fencing by a second
instance, and the errors Kafka's producer gives for calls out of order."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from objectlog import ObjectLog
from objectlog.clients.transactional import TransactionalProducer
from objectlog.errors import (
    CommitFailed,
    InvalidRequest,
    InvalidTxnState,
    ProducerFenced,
    TopicNotFound,
)
from objectlog.groups import TopicPartition
from objectlog.services.isolation import READ_COMMITTED, READ_UNCOMMITTED

IN, OUT_A, OUT_B = "txn-in", "txn-out-a", "txn-out-b"


@pytest.fixture
def txlog(log: ObjectLog) -> Iterator[ObjectLog]:
    for name in (IN, OUT_A, OUT_B):
        log.create_topic(name, 2)
    yield log


def transactional(
    log: ObjectLog, tid: str = "pipeline", **options: object
) -> TransactionalProducer:
    producer = log.producer(transactional_id=tid, linger_ms=0, **options)
    assert isinstance(producer, TransactionalProducer)
    return producer


def values(log: ObjectLog, topic: str, isolation: str) -> list[bytes]:
    out: list[bytes] = []
    for partition in range(2):
        offset = 0
        while True:
            result = log.fetch(topic, partition, offset, isolation_level=isolation)
            out += [r.value for r in result.records if r.value is not None]
            if result.next_offset == offset:
                break
            offset = result.next_offset
    return sorted(out)


def send_all(producer: TransactionalProducer, tag: str) -> None:
    for topic in (OUT_A, OUT_B):
        for partition in range(2):
            producer.send(topic, f"{tag}-{topic}-{partition}".encode(), partition=partition)


def test_commit_is_seen_whole_and_abort_never(txlog: ObjectLog) -> None:
    with transactional(txlog) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        send_all(producer, "kept")
        producer.commit_transaction()
        producer.begin_transaction()
        send_all(producer, "dropped")
        producer.abort_transaction()
        producer.begin_transaction()
        future = producer.send(OUT_A, b"open", partition=0)
        producer.flush()
        assert future.result().offset >= 0
        committed = values(txlog, OUT_A, READ_COMMITTED) + values(txlog, OUT_B, READ_COMMITTED)
        everything = values(txlog, OUT_A, READ_UNCOMMITTED)
        assert committed == sorted(
            f"kept-{t}-{p}".encode() for t in (OUT_A, OUT_B) for p in range(2)
        )
        assert b"open" in everything and b"dropped-txn-out-a-0" in everything
        # the open transaction holds partition 0's last stable offset below its record
        head = txlog.fetch(OUT_A, 0, 0, isolation_level=READ_COMMITTED)
        assert head.last_stable_offset is not None
        assert head.last_stable_offset < head.high_watermark
        producer.commit_transaction()
    assert b"open" in values(txlog, OUT_A, READ_COMMITTED)
    head = txlog.fetch(OUT_A, 0, 0, isolation_level=READ_COMMITTED)
    assert head.last_stable_offset == head.high_watermark


def test_offsets_reach_the_group_only_on_commit(txlog: ObjectLog) -> None:
    seed = txlog.producer()
    for i in range(6):
        seed.send(IN, f"in-{i}".encode(), partition=i % 2)
    seed.close()
    consumer = txlog.consumer(group="enrich", topics=[IN], auto_offset_reset="earliest")
    records = []
    for _ in range(20):
        records += consumer.poll(0.5)
        if len(records) == 6:
            break
    assert len(records) == 6
    positions = {TopicPartition(IN, p): 3 for p in range(2)}
    with transactional(txlog) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        for record in records:
            producer.send(OUT_A, record.value, partition=record.partition)
        producer.send_offsets_to_transaction(positions, consumer.group_metadata())
        assert all(v is None for v in consumer.committed(positions).values())
        producer.abort_transaction()
        assert all(v is None for v in consumer.committed(positions).values())
        producer.begin_transaction()
        for record in records:
            producer.send(OUT_A, record.value, partition=record.partition)
        producer.send_offsets_to_transaction(positions, consumer.group_metadata())
        producer.commit_transaction()
    assert {tp: v.offset for tp, v in consumer.committed(positions).items() if v} == positions
    assert values(txlog, OUT_A, READ_COMMITTED) == sorted(r.value for r in records)
    consumer.close()


def test_offsets_of_a_member_that_lost_its_partitions_are_refused(txlog: ObjectLog) -> None:
    consumer = txlog.consumer(group="enrich", topics=[IN], auto_offset_reset="earliest")
    consumer.poll(0.5)
    stale = consumer.group_metadata()
    with transactional(txlog) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(OUT_A, b"x", partition=0)
        with pytest.raises(CommitFailed):
            producer.send_offsets_to_transaction(
                {TopicPartition(IN, 0): 1},
                type(stale)(stale.group_id, "not-a-member", stale.generation),
            )
        with pytest.raises(InvalidTxnState):
            producer.commit_transaction()
        producer.abort_transaction()
    consumer.close()
    assert values(txlog, OUT_A, READ_COMMITTED) == []


def test_a_second_instance_fences_the_first_and_aborts_its_transaction(txlog: ObjectLog) -> None:
    first = transactional(txlog)
    first.init_transactions()
    first.begin_transaction()
    first.send(OUT_A, b"zombie", partition=0)
    first.flush()
    second = transactional(txlog)
    second.init_transactions()  # aborts the first's open transaction
    with pytest.raises(ProducerFenced):
        first.commit_transaction()
    with pytest.raises(InvalidTxnState, match="fenced"):
        first.begin_transaction()
    second.begin_transaction()
    second.send(OUT_A, b"successor", partition=0)
    second.commit_transaction()
    first.close()
    second.close()
    assert values(txlog, OUT_A, READ_COMMITTED) == [b"successor"]
    assert b"zombie" in values(txlog, OUT_A, READ_UNCOMMITTED)
    head = txlog.fetch(OUT_A, 0, 0, isolation_level=READ_COMMITTED)
    assert head.last_stable_offset == head.high_watermark


def test_a_failed_record_makes_the_transaction_abortable(txlog: ObjectLog) -> None:
    with transactional(txlog) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(OUT_A, b"fine", partition=0)
        failed = producer.send("no-such-topic", b"lost")
        producer.flush()
        assert isinstance(failed.exception(), TopicNotFound)
        with pytest.raises(InvalidTxnState, match="no-such-topic"):
            producer.commit_transaction()
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send(OUT_A, b"next", partition=0)
        producer.commit_transaction()
    assert values(txlog, OUT_A, READ_COMMITTED) == [b"next"]


def test_calls_out_of_order_are_refused(txlog: ObjectLog) -> None:
    with pytest.raises(InvalidRequest, match="enable_idempotence"):
        transactional(txlog, enable_idempotence=False)
    with transactional(txlog) as producer:
        with pytest.raises(InvalidTxnState, match="begin_transaction"):
            producer.begin_transaction()
        producer.init_transactions()
        with pytest.raises(InvalidTxnState, match="send"):
            producer.send(OUT_A, b"outside")
        with pytest.raises(InvalidTxnState, match="commit_transaction"):
            producer.commit_transaction()
        producer.begin_transaction()
        producer.commit_transaction()  # an empty transaction: nothing to end
    assert values(txlog, OUT_A, READ_UNCOMMITTED) == []


def test_a_member_taking_over_waits_for_the_offsets_a_transaction_holds(
    txlog: ObjectLog,
) -> None:
    """KIP-447's stable offsets: the partition's new owner (read_committed) neither starts
    from the old committed offset while a transaction holds a new one pending (it would read
    the inputs again, and the pipeline produce their outputs twice), nor waits past the
    transaction's end; after an abort it starts from the old offset."""
    seed = txlog.producer()
    for i in range(4):
        seed.send(IN, f"in-{i}".encode(), partition=0)
    seed.close()
    tp = TopicPartition(IN, 0)
    options = {"topics": [IN], "auto_offset_reset": "earliest", "enable_auto_commit": False}
    for commit in (True, False):
        group = f"takeover-{commit}"
        first = txlog.consumer(group=group, isolation_level=READ_COMMITTED, **options)
        inputs = []
        for _ in range(20):
            inputs += [r for r in first.poll(0.3) if r.topic == IN and r.partition == 0]
            if len(inputs) == 4:
                break
        with transactional(txlog, f"takeover-{commit}") as producer:
            producer.init_transactions()
            producer.begin_transaction()
            producer.send(OUT_B, b"out", partition=0)
            producer.send_offsets_to_transaction({tp: 4}, first.group_metadata())
            first.close()  # its partitions move while the transaction is open
            second = txlog.consumer(group=group, isolation_level=READ_COMMITTED, **options)
            early = [r for r in second.poll(1.0) if r.topic == IN and r.partition == 0]
            assert early == []  # waiting: it has no position on the partition yet
            assert tp in second.assignment()
            described = {(o.topic, o.partition): o for o in txlog.groups.describe(group).offsets}
            assert described[(IN, 0)].pending_transaction == f"takeover-{commit}"
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
        assert second.position(tp, timeout=10) == (4 if commit else 0)
        uncommitted = txlog.consumer(group=group, **options)  # read_uncommitted: no wait
        uncommitted.close()
        second.close()


def test_a_read_committed_consumer_resets_to_the_last_stable_offset(txlog: ObjectLog) -> None:
    """Kafka's latest offset for read_committed is the last stable offset: a consumer that
    starts at latest while a transaction is open reads that transaction once it commits."""
    tp = TopicPartition(OUT_A, 0)
    with transactional(txlog, "reset") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(OUT_A, b"pending", partition=0)
        producer.flush()
        latest = txlog.consumer(auto_offset_reset="latest")
        committed = txlog.consumer(auto_offset_reset="latest", isolation_level=READ_COMMITTED)
        latest.assign([tp])
        committed.assign([tp])
        assert latest.position(tp) == txlog.offsets(OUT_A, 0).latest
        assert committed.position(tp) == txlog.offsets(OUT_A, 0).last_stable < latest.position(tp)
        producer.commit_transaction()
    records = []
    for _ in range(20):
        records += committed.poll(0.2)
        if records:
            break
    assert [r.value for r in records] == [b"pending"]
    committed.seek_to_end([tp])
    assert committed.position(tp) == txlog.offsets(OUT_A, 0).last_stable
    latest.close()
    committed.close()
