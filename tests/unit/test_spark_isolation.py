"""Spark's kafka.isolation.level on the planner and the executors' reads, without Spark: on
the in-memory stores, with transactions written by the library's transactional producer over
its coordinator (issue 36).

``transactions(log)`` writes the log that tests/e2e/test_spark_isolation.py reads through
Spark too: a committed transaction with an aborted one between its records, plain records,
and a transaction left open, which holds the last stable offset.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.clients.producer import Producer
from objectlog.clients.transactional import TransactionalProducer
from objectlog.clock import ManualClock
from objectlog.compaction.compactor import CompactionSettings
from objectlog.compaction.maintenance import run_maintenance
from objectlog.config import Config
from objectlog.errors import InvalidRequest
from objectlog.format.index import LEVEL_L1
from objectlog.format.layout import object_key
from objectlog.spark.options import ReadOptions
from objectlog.spark.planning import (
    ReadTask,
    initial_offsets,
    latest_offsets,
    plan_batch,
    plan_stream,
)
from objectlog.spark.reading import read_task
from objectlog.stores.items import ItemStores
from objectlog.stores.objects import MemoryObjectStore

TOPIC = "txns"
TP = (TOPIC, 0)
COMMITTED, UNCOMMITTED = "read_committed", "read_uncommitted"
LSO, HIGH_WATERMARK = 7, 9
# What each level reads of transactions(log), as (offset, value)
SEEN_COMMITTED = [(0, b"p0"), (1, b"c1"), (3, b"c3"), (4, b"p4")]
SEEN_UNCOMMITTED = [(0, b"p0"), (1, b"c1"), (2, b"a2"), (3, b"c3"), (4, b"p4")]
SEEN_UNCOMMITTED += [(7, b"o7"), (8, b"p8")]


def transactions(log: ObjectLog) -> TransactionalProducer:
    """Topic "txns" (one partition) as the library's producers leave it:

        0 p0 plain       1 c1 committed   2 a2 aborted     3 c3 committed   4 p4 plain
        5 commit marker  6 abort marker   7 o7 open        8 p8 plain

    The open transaction holds the last stable offset at 7, the high watermark is 9; the
    producer returned ends it (its marker at 9).
    """
    log.create_topic(TOPIC, 1)
    plain = log.producer(linger_ms=0)
    committed, aborted, open_ = (begun(log, name) for name in ("committed", "aborted", "open"))
    for producer, value in [
        (plain, b"p0"),
        (committed, b"c1"),
        (aborted, b"a2"),
        (committed, b"c3"),
        (plain, b"p4"),
    ]:
        send(producer, value)
    committed.commit_transaction()
    aborted.abort_transaction()
    send(open_, b"o7")
    send(plain, b"p8")
    for producer in (plain, committed, aborted):
        producer.close()
    head = log.metadata.get_head(TOPIC, 0)
    assert head is not None and (head.last_stable_offset, head.next_offset) == (LSO, 9)
    return open_


def begun(log: ObjectLog, transactional_id: str) -> TransactionalProducer:
    """A transactional producer of the library, its transaction begun (the longest timeout
    Kafka allows, so a slow run never expires it)."""
    producer = log.producer(
        transactional_id=transactional_id, transaction_timeout_ms=900_000, linger_ms=0
    )
    assert isinstance(producer, TransactionalProducer)
    producer.init_transactions()
    producer.begin_transaction()
    return producer


def send(producer: Producer, value: bytes) -> None:
    """value to txns/0, written before the call returns (a transaction's first record to the
    partition opens it there first: AddPartitionsToTxn)."""
    producer.send(TOPIC, value, partition=0)
    producer.flush()


class RecordedReads(MemoryObjectStore):
    """The in-memory store, remembering the keys read (every read goes through get)."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[str] = []

    def get(self, key: str) -> bytes:
        self.read.append(key)
        return super().get(key)


@pytest.fixture
def store() -> RecordedReads:
    return RecordedReads()


@pytest.fixture
def log(store: RecordedReads) -> Iterator[ObjectLog]:
    with ObjectLog(
        Config(), store=store, items=ItemStores.memory(), clock=ManualClock()
    ) as memory_log:
        yield memory_log


@pytest.fixture
def open_txn(log: ObjectLog) -> Iterator[TransactionalProducer]:
    """transactions(log): the open transaction's producer."""
    producer = transactions(log)
    yield producer
    producer.close()


def parse(isolation: str | None, *, streaming: bool = False, **extra: str) -> ReadOptions:
    given = {"subscribe": TOPIC, "startingOffsets": "earliest", **extra}
    if isolation is not None:
        given["kafka.isolation.level"] = isolation
    return ReadOptions.parse(given, streaming=streaming)


def records(log: ObjectLog, tasks: list[ReadTask]) -> list[tuple[int, bytes]]:
    """What the executors return for the tasks, as (offset, value)."""
    out: list[tuple[int, bytes]] = []
    for task in tasks:
        for batch in read_task(log, task, include_headers=False):
            out += zip(
                batch.column("offset").to_pylist(), batch.column("value").to_pylist(), strict=True
            )
    return out


def object_of(log: ObjectLog, offset: int) -> str:
    head = log.metadata.get_head(TOPIC, 0)
    assert head is not None
    return next(p for p in log.index.placed_refs(head, offset)).ref.object_id


# ---- the option ---------------------------------------------------------------------------


def test_the_default_is_the_kafka_consumers_read_uncommitted() -> None:
    assert parse(None).isolation == parse(None, streaming=True).isolation == UNCOMMITTED
    assert parse(COMMITTED).isolation == parse(COMMITTED, streaming=True).isolation == COMMITTED
    # option names are case-insensitive, as every Spark option's; the value is Kafka's
    shouted = ReadOptions.parse(
        {"subscribe": TOPIC, "KAFKA.Isolation.Level": "read_committed"}, streaming=False
    )
    assert shouted.isolation == COMMITTED


@pytest.mark.parametrize("value", ["READ_COMMITTED", "serializable", "committed"])
@pytest.mark.parametrize("streaming", [False, True], ids=["batch", "stream"])
def test_an_unknown_level_is_refused_naming_the_option(value: str, streaming: bool) -> None:
    with pytest.raises(InvalidRequest, match=r"kafka\.isolation\.level must be") as refused:
        parse(value, streaming=streaming)
    assert refused.value.field == "kafka.isolation.level"


# ---- batch --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("isolation", "seen"),
    [
        pytest.param(UNCOMMITTED, SEEN_UNCOMMITTED, id="read_uncommitted"),
        pytest.param(COMMITTED, SEEN_COMMITTED, id="read_committed"),
    ],
)
@pytest.mark.usefixtures("open_txn")
def test_a_batch_reads_what_the_level_sees(
    log: ObjectLog, store: RecordedReads, isolation: str, seen: list[Any]
) -> None:
    store.read.clear()
    tasks = plan_batch(log, parse(isolation))
    assert store.read == []  # planned from the refs alone
    assert {t.isolation for t in tasks} == {isolation}  # kept for a re-resolve after a swap
    assert records(log, tasks) == seen
    assert len(store.read) == len(seen)  # one object a record here: none read for nothing
    # an ending offset past the LSO stops there under read_committed
    ending = parse(isolation, endingOffsets=f'{{"{TOPIC}":{{"0":{HIGH_WATERMARK}}}}}')
    assert records(log, plan_batch(log, ending)) == seen


@pytest.mark.usefixtures("open_txn")
def test_read_committed_plans_no_slice_of_an_aborted_transaction(log: ObjectLog) -> None:
    aborted, open_ = object_of(log, 2), object_of(log, 7)
    for options in (parse(COMMITTED), parse(COMMITTED, minPartitions="4")):
        tasks = plan_batch(log, options)
        keys = [piece.key for task in tasks for piece in task.slices]
        assert len(keys) == 4 and not any(aborted in k or open_ in k for k in keys)
        assert {t.isolation for t in tasks} == {COMMITTED}


def test_an_abort_marker_past_the_lso_still_leaves_out_what_it_aborted(log: ObjectLog) -> None:
    """k1's record lies below the LSO that k2 (opened later, still open) holds, k1's abort
    marker past it: the plan ends at the LSO but looks for markers up to the high watermark."""
    log.create_topic(TOPIC, 1)
    k1, k2 = begun(log, "k1"), begun(log, "k2")
    send(k1, b"a0")
    send(k2, b"c1")
    k1.abort_transaction()  # marker at 2, past the LSO (1)
    assert records(log, plan_batch(log, parse(COMMITTED))) == []
    assert records(log, plan_batch(log, parse(UNCOMMITTED))) == [(0, b"a0"), (1, b"c1")]
    k2.commit_transaction()
    assert records(log, plan_batch(log, parse(COMMITTED))) == [(1, b"c1")]
    k1.close()
    k2.close()


@pytest.mark.usefixtures("open_txn")
def test_compacted_data_is_committed_only_for_both_levels(log: ObjectLog) -> None:
    settings = CompactionSettings(target_file_bytes=1 << 10)
    run_maintenance(log, settings=settings, gc_min_age_ms=0)
    head = log.metadata.get_head(TOPIC, 0)
    assert head is not None
    merged = [p for p in log.index.all_placed_refs(head) if p.ref.level == LEVEL_L1]
    assert merged and max(p.end_offset for p in merged) <= LSO  # nothing past the LSO
    assert records(log, plan_batch(log, parse(COMMITTED))) == SEEN_COMMITTED
    uncommitted = records(log, plan_batch(log, parse(UNCOMMITTED)))
    assert uncommitted == [*SEEN_COMMITTED, (7, b"o7"), (8, b"p8")]  # the abort is gone for all


# ---- streaming ----------------------------------------------------------------------------


def test_a_stream_starts_and_ends_its_batches_at_the_lso(
    log: ObjectLog, open_txn: TransactionalProducer
) -> None:
    latest = parse(COMMITTED, streaming=True, startingOffsets="latest")
    assert initial_offsets(log, latest) == {TP: LSO}
    assert initial_offsets(log, parse(UNCOMMITTED, streaming=True, startingOffsets="latest")) == {
        TP: HIGH_WATERMARK
    }
    committed = parse(COMMITTED, streaming=True)
    start = initial_offsets(log, committed)
    assert start == {TP: 0}
    assert latest_offsets(log, committed, start, 3) == {TP: 3}  # maxOffsetsPerTrigger
    first = latest_offsets(log, committed, start, None)
    assert first == {TP: LSO}
    assert records(log, plan_stream(log, committed, start, first)) == SEEN_COMMITTED
    assert latest_offsets(log, committed, first, None) == first  # nothing new is committed
    open_txn.commit_transaction()  # its marker at 9
    second = latest_offsets(log, committed, first, None)
    assert second == {TP: 10}
    assert records(log, plan_stream(log, committed, first, second)) == [(7, b"o7"), (8, b"p8")]


def test_a_stream_reads_nothing_of_a_transaction_aborted_at_its_end(
    log: ObjectLog, open_txn: TransactionalProducer
) -> None:
    committed = parse(COMMITTED, streaming=True)
    open_txn.abort_transaction()
    assert records(log, plan_stream(log, committed, {TP: LSO}, {TP: 10})) == [(8, b"p8")]


@pytest.mark.usefixtures("open_txn")
def test_a_batch_end_past_the_lso_is_read_to_the_lso_only(log: ObjectLog) -> None:
    """An end planned at read_uncommitted (the high watermark), replayed by a query now at
    read_committed, never reads the open transaction."""
    uncommitted, committed = parse(UNCOMMITTED, streaming=True), parse(COMMITTED, streaming=True)
    end_ = latest_offsets(log, uncommitted, {TP: 0}, None)
    assert end_ == {TP: HIGH_WATERMARK}
    assert records(log, plan_stream(log, uncommitted, {TP: 0}, end_)) == SEEN_UNCOMMITTED
    assert records(log, plan_stream(log, committed, {TP: 0}, end_)) == SEEN_COMMITTED


@pytest.mark.usefixtures("open_txn")
def test_a_task_re_resolved_after_a_compaction_swap_still_reads_committed_only(
    log: ObjectLog, store: RecordedReads
) -> None:
    """The objects planned are gone by the time the task reads (compacted, collected): the
    task re-resolves its range through a fresh head, at its own isolation level."""
    tasks = plan_batch(log, parse(COMMITTED))
    run_maintenance(log, settings=CompactionSettings(target_file_bytes=1 << 10), collect=False)
    store.delete_many(piece.key for task in tasks for piece in task.slices)  # as GC would
    kept = {info.key for info in store.list("")}
    store.read.clear()
    assert records(log, tasks) == SEEN_COMMITTED
    head = log.metadata.get_head(TOPIC, 0)
    assert head is not None
    l1 = {object_key("", LEVEL_L1, p.ref.object_id) for p in log.index.all_placed_refs(head)}
    again = {key for key in store.read if key in kept}
    assert again and again <= l1  # the planned object was gone: read again from the L1 files
