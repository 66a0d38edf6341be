"""The transaction sweep (DESIGN.md section 16, docs/transactions.md): what the scheduled compact
function does, once per run, so that no transaction and no partition head waits for a request
that may never come.

1. **Expired and decided transactions.** The coordinator aborts an Ongoing transaction past its
   deadline, or finishes a decided one (PrepareCommit, PrepareAbort), when a request about its
   transactional id meets it. The sweep is that request for the ids nobody asks about (a
   producer that died, an agent that died between the decision and the markers): every listed
   item Ongoing past its deadline or decided goes through the coordinator's
   ``abort_if_expired`` (fencing the producer with epoch + 1, abort markers; a decided commit
   always completes, markers and offsets). The items come from the registry, as
   ListTransactions reads them (stores.transactions: the registry item, one BatchGetItem per
   100 ids): no Scan, no Query.

2. **Leftover head entries.** A head's open transaction (stores.txn_marks: producer "k<pid>",
   epoch, first offset) holds the partition's last stable offset until a marker closes it. An
   entry whose transaction is over (an AddPartitionsToTxn write that landed after the
   transaction's markers, say) would hold it forever. The sweep reuses the heads the run's
   compaction read (PartitionReport.open_txns; no read of its own) and judges each entry
   against the items listed *after* those reads. The coordinator writes the item (Ongoing,
   listing the partition) before it opens the partition on the head, so an entry seen in a
   head has its item written already, and the later listing shows that transaction or a later
   state: a transaction being opened now is seen Ongoing with the partition, and kept.
   ``verdict`` says what is certain:

   - no item holds the producer id (rotated, or its id expired): stale for good, since a
     producer id never returns to an item; an abort marker of the entry's epoch closes it;
   - the item holds the producer at a later epoch: stale for good, since no transaction of an
     epoch at or below the entry's can begin again; an abort marker of the entry's epoch
     (which closes entries at or below it, never a later epoch's) closes it;
   - the item holds it at the entry's epoch and is Empty or Complete*: stale, but the
     producer's next transaction could take the entry over (an open at the same epoch
     keeps it) between this judgement and the marker. So the marker is not written directly:
     the sweep decides an abort of the leftover, writing the item PrepareAbort over those
     partitions conditional on the version listed (the coordinator refuses AddPartitions to
     a decided transaction, ConcurrentTransactions, retriable), and the coordinator completes
     it as any decided transaction (abort markers at the entry's epoch, then CompleteAbort).
     A lost condition leaves the entry to the next run;
   - the item holds it at the entry's epoch, Ongoing without the partition (and not expired):
     the transaction under way takes the entry over, the partition added to its item
     conditional on the version listed; its commit or abort marker closes the entry, by its
     deadline at the latest (the sweep aborts it after). A well-behaved producer writes nothing
     there outside its transaction, so the entry's range holds nothing of another transaction;
   - Ongoing or decided with the partition: the transaction's own entry, kept (an expired or
     decided one was dealt with by step 1).

Worst-case stall of a partition's last stable offset: ``transaction.max.timeout.ms`` (900 s,
TransactionSettings.max_timeout_ms) plus the sweep's interval (the compact function's
schedule, ``compact_schedule`` in infra/terraform: rate(5 minutes) by default), so 20 minutes
by default, plus the run's own time to reach the partition. Why: an entry opens after its
transaction begins, and the transaction is open at most its timeout, which InitProducerId caps
at transaction.max.timeout.ms; the first run after the deadline lists it (every run lists every
id, whatever its deadline cut short) and aborts it, its markers closing its entries. A leftover
entry is closed by the first run whose compaction reads its head after it lands (at most an
interval), except when a transaction of its producer at the same epoch is under way then: that
transaction takes it over and closes it when it ends, at most max.timeout.ms plus an interval
later, so max.timeout.ms plus two intervals in that corner. A run cut short by its deadline
judges the entries of the partitions it reached only; the rest wait for the next run.

A failure on one transaction or entry is logged and counted (SweepReport.failed) and the sweep
goes on; compaction is done by then and garbage collection follows.

DynamoDB requests (counted in tests/unit/test_transaction_sweep.py and, for a sweep with nothing
to do, on moto in tests/functional/test_transaction_sweep.py): with nothing to do, the listing
only: 1 GetItem of the registry and one BatchGetItem per 100 ids, whatever the heads hold. On
top, per expired transaction aborted 2 GetItem and 2 PutItem on its item, per decided one
completed 1 and 1; per leftover closed directly, a head GetItem and the marker's UpdateItem;
per producer whose leftovers are aborted by a decision, 1 PutItem, then 1 GetItem and 1 PutItem
to complete it; per producer whose leftovers are handed over, 1 PutItem. Each marker the
coordinator writes costs a topic GetItem, a head GetItem and the UpdateItem
(services.transaction_log).
"""

from __future__ import annotations

import dataclasses
import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from objectlog.clock import Clock
from objectlog.errors import ObjectLogError
from objectlog.services.transaction_rules import timed_out
from objectlog.services.transactions import TransactionCoordinator
from objectlog.stores.groups import TopicPartition
from objectlog.stores.metadata import HeadStore
from objectlog.stores.transactions import Transaction, TxnState, check_bounds

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class OpenEntry:
    """A transaction open on a partition's head, as a read of the head found it."""

    topic: str
    partition: int
    topic_id: str
    producer: str  # the head's producer key, "k<producer id>"
    epoch: int
    first_offset: int

    @property
    def producer_id(self) -> int | None:
        """The Kafka producer id, None for a key that is not a Kafka producer's."""
        digits = self.producer[1:]
        return int(digits) if self.producer.startswith("k") and digits.isdigit() else None

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


def open_entries(
    topic: str, partition: int, topic_id: str, open_txns: Mapping[str, tuple[int, int]]
) -> list[OpenEntry]:
    """A head's open transactions (PartitionHead.open_txns) as entries."""
    return [
        OpenEntry(topic, partition, topic_id, producer, epoch, first)
        for producer, (epoch, first) in sorted(open_txns.items())
    ]


class Verdict(Enum):
    """What the sweep does with a head entry, given its producer's item."""

    LIVE = "live"  # its transaction's own entry: kept
    CLOSE = "close"  # stale for good: an abort marker of the entry's epoch
    RECLAIM = "reclaim"  # stale at the item's epoch: a decided abort of it, then completed
    ADOPT = "adopt"  # stale at the epoch of a transaction under way: handed to it
    WAIT = "wait"  # not certain now (a decision not yet complete): the next run


def verdict(entry: OpenEntry, item: Transaction | None, now_ms: int) -> Verdict:
    """The rule of the module docstring. item: the transaction item holding the entry's
    producer id as listed after the head was read (None: no item holds it)."""
    if item is None:
        return Verdict.CLOSE
    if item.producer_epoch > entry.epoch:
        return Verdict.CLOSE
    if item.producer_epoch < entry.epoch:  # no rule writes this: leave it, say so
        return Verdict.WAIT
    if item.state.settled:
        return Verdict.RECLAIM
    if entry.tp in item.partitions:
        return Verdict.LIVE
    if item.state is TxnState.ONGOING and not timed_out(item, now_ms):
        return Verdict.ADOPT
    return Verdict.WAIT


@dataclass
class SweepReport:
    """What one sweep did."""

    listed: int = 0  # transactional ids the registry listed
    aborted: int = 0  # Ongoing transactions past their deadline, aborted (producer fenced)
    completed: int = 0  # decided transactions completed (commit or abort)
    entries_closed: int = 0  # leftover head entries closed with an abort marker
    entries_adopted: int = 0  # leftover head entries handed to their producer's transaction
    failed: int = 0  # transactions or entries whose step failed (logged; the next run)
    failures: list[str] = field(default_factory=list)  # their ids or partitions

    def summary(self) -> dict[str, object]:
        return dataclasses.asdict(self)


class TransactionSweep:
    """One sweep over the transaction registry and the head entries a run read."""

    def __init__(self, coordinator: TransactionCoordinator, heads: HeadStore, clock: Clock) -> None:
        self.coordinator = coordinator
        self.store = coordinator.store
        self.heads = heads
        self.clock = clock

    def run(self, entries: Iterable[OpenEntry]) -> SweepReport:
        """Sweep the registry, then judge entries (read from heads before this call)."""
        report = SweepReport()
        entries = list(entries)
        try:
            listed = self.store.list()
        except ObjectLogError as e:
            logger.warning("transaction sweep: the registry could not be read: %s", e)
            report.failed += 1
            report.failures.append("registry")
            return report
        report.listed = len(listed)
        now = self.clock.now_ms()
        current = {txn.transactional_id: txn for txn in listed}
        for txn in listed:
            if txn.state.prepared or timed_out(txn, now):
                after = self._settle(txn, report)
                if after is not None:
                    current[txn.transactional_id] = after
        if entries:
            self._leftovers(entries, listed, list(current.values()), report)
        if report.aborted or report.completed or report.entries_closed or report.failed:
            logger.info("transaction sweep: %s", report.summary())
        return report

    # ---- step 1: expired and decided transactions ------------------------------------

    def _settle(self, txn: Transaction, report: SweepReport) -> Transaction | None:
        try:
            after = self.coordinator.abort_if_expired(txn.transactional_id)
        except Exception:
            logger.exception(
                "transaction sweep: the %s transaction of %r (producer %d epoch %d) could not "
                "be %s; the next run retries",
                txn.state.value,
                txn.transactional_id,
                txn.producer_id,
                txn.producer_epoch,
                "completed" if txn.state.prepared else "aborted",
            )
            report.failed += 1
            report.failures.append(txn.transactional_id)
            return None
        if after is not None and after.state.settled:
            if txn.state is TxnState.ONGOING:
                report.aborted += 1
            else:
                report.completed += 1
        return after

    # ---- step 2: leftover head entries -------------------------------------------------

    def _leftovers(
        self,
        entries: list[OpenEntry],
        listed: list[Transaction],
        current: list[Transaction],
        report: SweepReport,
    ) -> None:
        """Judge each entry; an entry its transaction held as listed is left alone (step 1
        closed it if that transaction was expired or decided)."""
        now = self.clock.now_ms()
        as_listed = {txn.producer_id: txn for txn in listed}
        by_producer = {txn.producer_id: txn for txn in current}
        reclaim: dict[int, list[OpenEntry]] = defaultdict(list)
        adopt: dict[int, list[OpenEntry]] = defaultdict(list)
        for entry in entries:
            pid = entry.producer_id
            if pid is None:
                logger.warning("transaction sweep: %s is no Kafka producer; left", entry)
                continue
            if verdict(entry, as_listed.get(pid), now) is Verdict.LIVE:
                continue
            item = by_producer.get(pid)
            judged = verdict(entry, item, now)
            if judged is Verdict.CLOSE:
                self._close(entry, report)
            elif judged is Verdict.RECLAIM:
                reclaim[pid].append(entry)
            elif judged is Verdict.ADOPT:
                adopt[pid].append(entry)
            elif item is not None and item.producer_epoch < entry.epoch:  # no rule writes it
                logger.warning("transaction sweep: %s is newer than its item %s; left", entry, item)
            else:
                logger.info("transaction sweep: %s left for the next run (%s)", entry, item)
        for pid, held in sorted(reclaim.items()):
            self._reclaim(by_producer[pid], held, report)
        for pid, held in sorted(adopt.items()):
            self._adopt(by_producer[pid], held, report)

    def _close(self, entry: OpenEntry, report: SweepReport) -> None:
        """An abort marker of the entry's epoch: closes that entry, or one of an older epoch,
        never a later epoch's (stores.txn_marks.marker_to_write)."""
        try:
            offset = self.heads.write_marker(
                entry.topic,
                entry.partition,
                topic_id=entry.topic_id,
                producer=entry.producer,
                epoch=entry.epoch,
                commit=False,
                time_ms=self.clock.now_ms(),
            )
        except Exception:
            self._failed(entry, report)
            return
        if offset is not None:
            logger.info("transaction sweep: closed %s with an abort marker at %d", entry, offset)
            report.entries_closed += 1

    def _reclaim(self, item: Transaction, held: list[OpenEntry], report: SweepReport) -> None:
        """Decide an abort of the leftover entries (conditional on the item as listed), then
        complete it as the coordinator completes any decided transaction."""
        decision = dataclasses.replace(
            item,
            state=TxnState.PREPARE_ABORT,
            started_ms=None,
            partitions=frozenset(entry.tp for entry in held),
            groups=frozenset(),
            offsets={},
        )
        if not self._replace(item, decision, held, report):
            return
        try:
            done = self.coordinator.complete(item.transactional_id)
        except Exception:
            self._failed(held[0], report)  # the decision stands: step 1 of a later run
            return
        if done is not None and done.state.settled:
            logger.info("transaction sweep: aborted leftover entries %s", held)
            report.entries_closed += len(held)

    def _adopt(self, item: Transaction, held: list[OpenEntry], report: SweepReport) -> None:
        """The transaction under way takes the entries over: its marker closes them."""
        adopted = dataclasses.replace(
            item, partitions=item.partitions | {entry.tp for entry in held}
        )
        try:
            check_bounds(adopted)
        except ObjectLogError as e:
            logger.warning("transaction sweep: %s left for the next run: %s", held, e)
            return
        if self._replace(item, adopted, held, report):
            logger.info("transaction sweep: %r takes over %s", item.transactional_id, held)
            report.entries_adopted += len(held)

    def _replace(
        self, item: Transaction, new: Transaction, held: list[OpenEntry], report: SweepReport
    ) -> bool:
        """new written over item as the coordinator writes a transition (conditional on
        item's version); False (logged) when the item moved meanwhile."""
        try:
            written = self.coordinator.write(item, new, self.clock.now_ms()) is not None
        except Exception:
            self._failed(held[0], report)
            return False
        if not written:
            logger.info(
                "transaction sweep: %r changed since it was listed; %s left for the next run",
                item.transactional_id,
                held,
            )
        return written

    def _failed(self, entry: OpenEntry, report: SweepReport) -> None:
        logger.exception("transaction sweep: %s could not be closed; the next run retries", entry)
        report.failed += 1
        report.failures.append(f"{entry.topic}/{entry.partition} {entry.producer}")
