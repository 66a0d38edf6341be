"""The transaction sweep (services.transaction_sweep) in a maintenance run, on the in-memory
stores: an expired transaction aborted and its producer fenced, a decision a dead agent left
completed, one not yet expired left alone, leftover head entries closed or handed over while
live ones (and ones opened during the run) are kept, a failure confined to its transaction,
and what a sweep with nothing to do costs."""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.clock import ManualClock, new_ulid
from objectlog.compaction.compactor import PartitionReport
from objectlog.compaction.maintenance import MaintenanceReport, run_maintenance
from objectlog.config import Config
from objectlog.errors import ConcurrentTransactions, StorageUnavailable, TransactionalIdFenced
from objectlog.format.index import LEVEL_L0, SegmentRef
from objectlog.format.layout import l0_key
from objectlog.format.segment import encode_parquet, records_table
from objectlog.format.txn import transactional
from objectlog.groups.coordinator import OffsetAndMetadata
from objectlog.services.transaction_log import GroupOffsets
from objectlog.services.transaction_sweep import OpenEntry, SweepReport, Verdict, verdict
from objectlog.services.transactions import TransactionCoordinator
from objectlog.stores.groups import TopicPartition as TP
from objectlog.stores.items import ItemStores
from objectlog.stores.memory_transactions import MemoryTransactionStore
from objectlog.stores.metadata import Commit, kafka_producer
from objectlog.stores.objects import MemoryObjectStore
from objectlog.stores.transactions import PendingOffset, Transaction, TxnState, offsets_mark

TOPIC = "out"
ID = "app-1"
TIMEOUT = 10_000


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def log(clock: ManualClock) -> Iterator[ObjectLog]:
    with ObjectLog(
        Config(), store=MemoryObjectStore(clock.now_ms), items=ItemStores.memory(), clock=clock
    ) as memory_log:
        memory_log.create_topic(TOPIC, 2)
        yield memory_log


def write(log: ObjectLog, partition: int, values: list[bytes], producer: str | None = None) -> int:
    """One L0 object of values committed to the partition (transactional for producer)."""
    n, now = len(values), log.clock.now_ms()
    table = records_table(
        topics=[TOPIC] * n,
        partitions=[partition] * n,
        offsets=list(range(n)),
        timestamps=[now] * n,
        timestamp_types=[0] * n,
        keys=[None] * n,
        values=list(values),
        headers=[[] for _ in range(n)],
    )
    body = encode_parquet(table)
    ulid = new_ulid(log.clock)
    log.store.put_if_absent(l0_key(log.config.prefix, ulid), body)
    ref = SegmentRef(
        LEVEL_L0, ulid, 0, len(body), n, n, now, now, transactional(producer) if producer else ""
    )
    topic = log.topic(TOPIC)
    commit = Commit(topic.topic_id, TOPIC, partition, ref, now, None, 0, now_s=1)
    return log.metadata.commit(commit).base_offset


def committed(log: ObjectLog, partition: int) -> list[bytes | None]:
    result = log.fetch(TOPIC, partition, 0, isolation_level="read_committed")
    return [r.value for r in result.records]


def lso(log: ObjectLog, partition: int) -> tuple[int, int]:
    head = log.metadata.get_head(TOPIC, partition)
    assert head is not None
    return head.last_stable_offset, head.high_watermark


def entries(log: ObjectLog, partition: int) -> dict[str, tuple[int, int]]:
    head = log.metadata.get_head(TOPIC, partition)
    assert head is not None
    return dict(head.open_txns)


def late_open(log: ObjectLog, partition: int, txn: Transaction) -> None:
    """An AddPartitionsToTxn head write landing late (after its transaction completed)."""
    log.metadata.open_transaction(
        TOPIC,
        partition,
        topic_id=log.topic(TOPIC).topic_id,
        producer=kafka_producer(txn.producer_id),
        epoch=txn.producer_epoch,
    )


def sweep(log: ObjectLog, **options: Any) -> SweepReport:
    report = run_maintenance(log, **options)
    assert report.sweep is not None and report.gc is not None
    return report.sweep


def begin(log: ObjectLog, *partitions: int, tid: str = ID) -> Transaction:
    coord = log.transactions
    txn = coord.init_producer_id(tid, TIMEOUT)
    return coord.add_partitions(
        tid, txn.producer_id, txn.producer_epoch, [(TOPIC, p) for p in partitions]
    )


def store(log: ObjectLog) -> MemoryTransactionStore:
    assert isinstance(log.items.transactions, MemoryTransactionStore)
    return log.items.transactions


# ---- expired and decided transactions --------------------------------------------------


def test_an_expired_transaction_is_aborted_and_its_producer_fenced(
    log: ObjectLog, clock: ManualClock
) -> None:
    txn = begin(log, 0, 1)
    producer = kafka_producer(txn.producer_id)
    write(log, 0, [b"t-1", b"t-2"], producer)
    assert lso(log, 0) == (0, 2) and lso(log, 1) == (0, 0)

    clock.advance(TIMEOUT)  # at its deadline, not past it: left alone
    first = sweep(log)
    assert (first.aborted, first.completed, first.entries_closed) == (0, 0, 0)
    assert lso(log, 0) == (0, 2) and log.transactions.describe(ID).state is TxnState.ONGOING

    clock.advance(1)
    second = sweep(log)

    assert (second.listed, second.aborted, second.failed) == (1, 1, 0)
    assert second.entries_closed == 0  # its markers closed its entries, not the leftover rule
    assert lso(log, 0) == (3, 3) and lso(log, 1) == (1, 1)  # an abort marker in each
    assert committed(log, 0) == []
    after = log.transactions.describe(ID)
    assert after.state is TxnState.COMPLETE_ABORT
    assert after.producer_epoch == txn.producer_epoch + 1
    with pytest.raises(TransactionalIdFenced):
        log.transactions.add_partitions(ID, txn.producer_id, txn.producer_epoch, [(TOPIC, 0)])
    assert sweep(log) == SweepReport(listed=1)  # nothing left to do


class DeadAgent:
    """A MarkerWriter whose agent dies before writing any marker."""

    def write_markers(self, txn: Transaction, commit: bool) -> None:
        raise StorageUnavailable("the agent died after the decision")


def test_a_commit_a_dead_agent_decided_is_completed_with_markers_and_offsets(
    log: ObjectLog,
) -> None:
    log.create_topic("in", 1)
    coord = log.transactions
    txn = begin(log, 0)
    pid, epoch = txn.producer_id, txn.producer_epoch
    coord.add_offsets(ID, pid, epoch, "g")

    def check_member(txn: Transaction) -> None:  # as the library's transactional producer
        log.groups.transactional.hold(
            "g", offsets_mark(txn), [TP("in", 0)], member_id=None, generation=-1
        )

    coord.txn_offset_commit(ID, pid, epoch, "g", {TP("in", 0): PendingOffset(42)}, check_member)
    write(log, 0, [b"t-1", b"t-2"], kafka_producer(pid))
    dead = TransactionCoordinator(
        log.items.transactions,
        log.clock,
        log.metadata.next_producer_id,
        DeadAgent(),
        GroupOffsets(log.groups),
    )
    with pytest.raises(ConcurrentTransactions):
        dead.end_txn(ID, pid, epoch, commit=True)
    assert coord.describe(ID).state is TxnState.PREPARE_COMMIT  # the decision stands
    assert lso(log, 0) == (0, 2)

    swept = sweep(log)

    assert (swept.completed, swept.aborted, swept.failed) == (1, 0, 0)
    assert coord.describe(ID).state is TxnState.COMPLETE_COMMIT
    assert coord.describe(ID).producer_epoch == epoch  # a commit fences nobody
    assert lso(log, 0) == (3, 3) and committed(log, 0) == [b"t-1", b"t-2"]
    assert log.groups.committed("g", [TP("in", 0)]) == {TP("in", 0): OffsetAndMetadata(42, "")}


def test_a_failure_on_one_transaction_stops_neither_the_sweep_nor_the_run(
    log: ObjectLog, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, caplog
) -> None:
    broken, fine = begin(log, 0, tid="broken"), begin(log, 1, tid="fine")
    clock.advance(TIMEOUT + 1)
    write_marker = log.metadata.write_marker

    def failing(topic: str, partition: int, **kwargs: Any) -> int | None:
        if partition == 0:
            raise StorageUnavailable("DynamoDB is unavailable")
        return write_marker(topic, partition, **kwargs)

    monkeypatch.setattr(log.metadata, "write_marker", failing)
    with caplog.at_level(logging.ERROR, logger="objectlog.services.transaction_sweep"):
        swept = sweep(log)  # GC ran too (sweep() checks it)

    assert (swept.aborted, swept.failed, swept.failures) == (1, 1, ["broken"])
    assert any("'broken'" in r.getMessage() for r in caplog.records)
    assert log.transactions.describe("fine").state is TxnState.COMPLETE_ABORT
    assert log.transactions.describe("broken").state is TxnState.PREPARE_ABORT  # decided
    assert lso(log, 0) == (0, 0) and lso(log, 1) == (1, 1)

    monkeypatch.setattr(log.metadata, "write_marker", write_marker)
    again = sweep(log)
    assert (again.completed, again.failed) == (1, 0)
    assert lso(log, 0) == (1, 1)
    assert {broken.producer_id, fine.producer_id} == {t.producer_id for t in store(log).list()}


# ---- leftover head entries ---------------------------------------------------------------


def test_a_leftover_at_the_items_epoch_is_aborted_without_fencing_the_producer(
    log: ObjectLog,
) -> None:
    coord = log.transactions
    txn = begin(log, 1)
    pid, epoch = txn.producer_id, txn.producer_epoch
    coord.end_txn(ID, pid, epoch, commit=True)
    write(log, 0, [b"other"])
    late_open(log, 0, txn)  # lands after the commit's markers
    assert lso(log, 0) == (1, 1)

    swept = sweep(log)

    assert (swept.entries_closed, swept.aborted, swept.completed) == (1, 0, 0)
    assert lso(log, 0) == (2, 2) and entries(log, 0) == {}
    after = coord.describe(ID)
    assert (after.state, after.producer_epoch) == (TxnState.COMPLETE_ABORT, epoch)
    again = coord.add_partitions(ID, pid, epoch, [(TOPIC, 0)])  # the producer goes on
    assert again.state is TxnState.ONGOING and entries(log, 0) == {kafka_producer(pid): (0, 2)}


def test_leftovers_of_an_older_epoch_or_of_no_transactional_id_are_closed(
    log: ObjectLog,
) -> None:
    old = begin(log, 1)
    log.transactions.init_producer_id(ID, TIMEOUT)  # epoch + 1, aborting the old transaction
    late_open(log, 0, old)  # the old epoch's late write
    gone = dataclasses.replace(old, producer_id=old.producer_id + 1000)  # no item holds it
    late_open(log, 1, gone)

    swept = sweep(log)

    assert swept.entries_closed == 2 and swept.failed == 0
    assert entries(log, 0) == {} and entries(log, 1) == {}
    assert lso(log, 0) == (1, 1) and lso(log, 1) == (2, 2)


def test_a_live_entry_is_kept(log: ObjectLog) -> None:
    txn = begin(log, 0)
    write(log, 0, [b"t-1"], kafka_producer(txn.producer_id))

    swept = sweep(log)

    assert swept == SweepReport(listed=1)
    assert lso(log, 0) == (0, 1)
    log.transactions.end_txn(ID, txn.producer_id, txn.producer_epoch, commit=True)
    assert committed(log, 0) == [b"t-1"]


def test_a_leftover_is_handed_to_the_transaction_under_way(log: ObjectLog) -> None:
    coord = log.transactions
    first = begin(log, 1)
    pid, epoch = first.producer_id, first.producer_epoch
    coord.end_txn(ID, pid, epoch, commit=True)
    late_open(log, 0, first)
    coord.add_partitions(ID, pid, epoch, [(TOPIC, 1)])  # the next transaction, without 0
    write(log, 1, [b"t-1"], kafka_producer(pid))

    swept = sweep(log)

    assert (swept.entries_adopted, swept.entries_closed) == (1, 0)
    assert TP(TOPIC, 0) in coord.describe(ID).partitions
    assert lso(log, 0) == (0, 0)  # held until that transaction ends
    coord.end_txn(ID, pid, epoch, commit=True)
    assert lso(log, 0) == (1, 1) and committed(log, 1) == [b"t-1"]


def test_a_transaction_opened_during_the_run_is_never_closed(log: ObjectLog) -> None:
    """Its item and its head entry land after partition 0's head was read and before
    partition 1's: the entry is judged by items listed after the heads were read, so it is
    seen Ongoing with its partition. (Items listed before the heads would miss it and
    close a live transaction's entry.)"""
    opened: list[Transaction] = []

    def after_partition(report: PartitionReport) -> None:
        if report.partition == 0:
            opened.append(begin(log, 1))

    report = run_maintenance(log, on_partition=after_partition)

    assert report.sweep is not None and report.sweep.entries_closed == 0
    [txn] = opened
    producer = kafka_producer(txn.producer_id)
    assert entries(log, 1) == {producer: (txn.producer_epoch, 0)}
    write(log, 1, [b"t-1"], producer)
    log.transactions.end_txn(ID, txn.producer_id, txn.producer_epoch, commit=True)
    assert committed(log, 1) == [b"t-1"]


def test_an_open_whose_head_write_lands_after_the_head_read_is_kept(log: ObjectLog) -> None:
    """The coordinator writes the item, then the head: the run reads the head between the two,
    then the entry lands. Neither this run nor the next closes it."""
    coord = log.transactions
    txn = coord.init_producer_id(ID, TIMEOUT)
    pid, epoch = txn.producer_id, txn.producer_epoch
    slow = TransactionCoordinator(
        log.items.transactions, log.clock, log.metadata.next_producer_id, DeadAgent(), DeadAgent()
    )  # no opener: the item only
    ongoing = slow.add_partitions(ID, pid, epoch, [(TOPIC, 0)])

    def after_partition(report: PartitionReport) -> None:
        if report.partition == 0:
            late_open(log, 0, ongoing)

    first = run_maintenance(log, on_partition=after_partition)
    second = run_maintenance(log)

    for report in (first, second):
        assert report.sweep is not None and report.sweep.entries_closed == 0
    write(log, 0, [b"t-1"], kafka_producer(pid))
    coord.end_txn(ID, pid, epoch, commit=True)
    assert committed(log, 0) == [b"t-1"] and lso(log, 0) == (2, 2)


def test_a_leftover_taken_over_after_the_listing_is_not_closed_under_its_transaction(
    log: ObjectLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing shows the producer settled with a leftover entry; before the sweep acts,
    the producer's next transaction adds the partition and takes the entry over. The sweep's
    decision is conditional on the item as listed, so it fails and the entry stays the
    transaction's: its records commit. (An abort marker written straight away would have
    aborted them.)"""
    coord = log.transactions
    first = begin(log, 1)
    pid, epoch = first.producer_id, first.producer_epoch
    coord.end_txn(ID, pid, epoch, commit=True)
    late_open(log, 0, first)
    listing = store(log).list

    def racing(*args: Any, **kwargs: Any) -> list[Transaction]:
        listed = listing(*args, **kwargs)
        coord.add_partitions(ID, pid, epoch, [(TOPIC, 0)])  # keeps the entry (same epoch)
        write(log, 0, [b"t-1"], kafka_producer(pid))
        return listed

    monkeypatch.setattr(store(log), "list", racing)
    swept = sweep(log)

    assert (swept.entries_closed, swept.entries_adopted, swept.failed) == (0, 0, 0)
    coord.end_txn(ID, pid, epoch, commit=True)
    assert committed(log, 0) == [b"t-1"] and lso(log, 0) == (2, 2)


# ---- the rule ----------------------------------------------------------------------------

ENTRY = OpenEntry(TOPIC, 0, "tid", "k7", 3, 10)
ITEM = Transaction(ID, 7, 3, TxnState.ONGOING, TIMEOUT, started_ms=0, version=4)
NOW = 1_000


def item(**changes: Any) -> Transaction:
    return dataclasses.replace(ITEM, **changes)


@pytest.mark.parametrize(
    ("txn", "expected"),
    [
        pytest.param(None, Verdict.CLOSE, id="no-item-holds-the-producer-id"),
        pytest.param(item(producer_epoch=4, state=TxnState.EMPTY), Verdict.CLOSE, id="later"),
        pytest.param(item(producer_epoch=4), Verdict.CLOSE, id="later-epoch-ongoing"),
        pytest.param(item(producer_epoch=2), Verdict.WAIT, id="earlier-epoch"),
        pytest.param(item(state=TxnState.EMPTY), Verdict.RECLAIM, id="empty"),
        pytest.param(item(state=TxnState.COMPLETE_COMMIT), Verdict.RECLAIM, id="complete"),
        pytest.param(item(partitions=frozenset({TP(TOPIC, 0)})), Verdict.LIVE, id="ongoing"),
        pytest.param(
            item(state=TxnState.PREPARE_COMMIT, partitions=frozenset({TP(TOPIC, 0)})),
            Verdict.LIVE,
            id="decided-with-it",
        ),
        pytest.param(item(state=TxnState.PREPARE_ABORT), Verdict.WAIT, id="decided-without"),
        pytest.param(item(partitions=frozenset({TP(TOPIC, 1)})), Verdict.ADOPT, id="under-way"),
        pytest.param(item(started_ms=-TIMEOUT), Verdict.WAIT, id="under-way-but-expired"),
    ],
)
def test_verdict(txn: Transaction | None, expected: Verdict) -> None:
    assert verdict(ENTRY, txn, NOW) is expected


# ---- what it costs -----------------------------------------------------------------------


@pytest.mark.parametrize(("ids", "batches"), [(0, 0), (3, 1), (101, 2)])
def test_a_sweep_with_nothing_to_do_reads_the_registry_and_one_batch_per_100_ids(
    log: ObjectLog, ids: int, batches: int
) -> None:
    for i in range(ids):
        assert store(log).put_new(
            Transaction(f"id-{i:03}", i, 0, TxnState.EMPTY, TIMEOUT, version=1)
        )
    heads = [lso(log, p) for p in range(2)]
    requests = store(log).requests
    requests.clear()

    swept = sweep(log)

    assert swept == SweepReport(listed=ids)
    expected = Counter(GetItem=1, BatchGetItem=batches)
    assert requests == +expected
    assert [lso(log, p) for p in range(2)] == heads  # no marker written


def test_a_dry_run_sweeps_nothing(log: ObjectLog, clock: ManualClock) -> None:
    begin(log, 0)
    clock.advance(TIMEOUT + 1)
    requests = store(log).requests
    requests.clear()
    report: MaintenanceReport = run_maintenance(log, dry_run=True)
    assert report.sweep is None and requests == Counter()
    assert log.transactions.describe(ID).state is TxnState.ONGOING


def test_what_an_abort_and_a_leftovers_decision_cost_on_the_transaction_items(
    log: ObjectLog, clock: ManualClock
) -> None:
    """The listing (1 GetItem, 1 BatchGetItem), then an expired transaction: 2 GetItem and 2
    PutItem; a leftover's decided abort: 1 PutItem, then 1 GetItem and 1 PutItem."""
    txn = begin(log, 0, 1)
    clock.advance(TIMEOUT + 1)
    requests = store(log).requests
    requests.clear()
    assert sweep(log).aborted == 1
    assert +requests == Counter(GetItem=3, BatchGetItem=1, PutItem=2)

    aborted = log.transactions.describe(ID)
    assert aborted.producer_epoch == txn.producer_epoch + 1
    late_open(log, 0, aborted)  # a leftover at the item's epoch (CompleteAbort)
    requests.clear()
    assert sweep(log).entries_closed == 1
    assert +requests == Counter(GetItem=2, BatchGetItem=1, PutItem=2)
