"""The transaction coordinator (DESIGN.md section 16): Kafka's rules for transaction protocol
version 1 (KIP-98; KIP-360's InitProducerId with a producer id and epoch; KIP-447's offsets;
KIP-588's PRODUCER_FENCED), kept in one item per transactional id (stores.transactions)
instead of one broker's memory, so any agent serves any request.

    (no item) --InitProducerId--> Empty --AddPartitions, AddOffsets--> Ongoing
    Ongoing --EndTxn(commit)--> PrepareCommit --complete--> CompleteCommit
    Ongoing --EndTxn(abort), InitProducerId, timeout--> PrepareAbort --complete--> CompleteAbort
    Empty, Complete* --InitProducerId--> Empty at epoch + 1
    Complete* --AddPartitions, AddOffsets--> Ongoing (a new transaction)

Every transition reads the item and writes the next one conditional on the version read, so
agents side by side never lose each other's writes and a zombie (an older epoch) moves
nothing; a lost condition reads again and applies the rule again, at most
TransactionSettings.attempts times (then ConcurrentTransactions, retriable).

PrepareCommit or PrepareAbort is the decision. Completing it writes a marker into every
partition (MarkerWriter), applies the pending offsets on commit (OffsetApplier), then writes
Complete*. Both steps are idempotent, so whoever finds a decided transaction finishes it (the
agent that decided, a retried EndTxn, the next InitProducerId, the sweep), two at once
included; a completion that fails leaves the decision standing and answers
ConcurrentTransactions, and the next caller finishes it.

Fencing: InitProducerId bumps the epoch (a new producer id at epoch 0 once the epoch reaches
Short.MAX_VALUE - 1, as Kafka rotates it), aborting an Ongoing transaction first under
epoch + 1. An Ongoing transaction past its deadline is aborted the same way by whichever call
meets it first (the sweep's abort_if_expired, or any request about it), so the producer that
timed out is fenced, as Kafka fences it.

Where this differs from Kafka, on purpose: InitProducerId that finds a transaction Ongoing or
decided completes it and answers the new epoch at once (Kafka answers CONCURRENT_TRANSACTIONS
and the client's retry gets the same epoch); EndTxn answers once the transaction is complete
(Kafka answers at the decision), so a transaction is readable when the commit returns; an
expired transaction is aborted when met, not by a timer every 10 s.

The rules are pure functions in services.transaction_rules. Refusals, each logged with its
reason: InvalidRequest (an empty id, a producer id without its epoch),
InvalidTransactionTimeout, InvalidProducerIdMapping (an unknown or expired id, or another
producer id), TransactionalIdFenced (another epoch), ConcurrentTransactions, InvalidTxnState,
TransactionTooLarge (stores.transactions' bounds).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from objectlog.clock import Clock
from objectlog.errors import (
    ConcurrentTransactions,
    InvalidRequest,
    InvalidTransactionTimeout,
    ObjectLogError,
    TransactionalIdNotFound,
)
from objectlog.fan_out import fan_out
from objectlog.services.transaction_rules import (
    NO_PRODUCER,
    Expected,
    decided,
    fenced,
    initialized,
    joined,
    timed_out,
    with_offsets,
)
from objectlog.stores.groups import TopicPartition
from objectlog.stores.transactions import (
    PendingOffset,
    Transaction,
    TransactionStore,
    TxnState,
    check_transactional_id,
)

logger = logging.getLogger(__name__)

Rule = Callable[[Transaction | None, int], Transaction | None]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class TransactionSettings:
    """The coordinator's limits, Kafka's broker settings of the same names and defaults."""

    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    id_expiration_ms: int = 7 * 24 * 3600 * 1000  # transactional.id.expiration.ms
    attempts: int = 8  # conditional writes per transition before ConcurrentTransactions


class MarkerWriter(Protocol):
    def write_markers(self, txn: Transaction, commit: bool) -> None:
        """Write a commit (or abort) marker of txn's producer id and epoch into every
        partition of txn. Idempotent: a partition holding that marker already is left as it
        is, so a second completer (or a repeat after a crash) writes nothing twice."""
        ...


class PartitionOpener(Protocol):
    def open_partitions(self, txn: Transaction, partitions: Iterable[TopicPartition]) -> None:
        """Open txn on each partition (services.transaction_log: its head then holds the
        partition's last stable offset until the marker). Idempotent."""
        ...


class OffsetApplier(Protocol):
    def settle(self, txn: Transaction, commit: bool) -> None:
        """End txn's pending offsets in their groups: committed (commit) or dropped.
        Idempotent, as write_markers."""
        ...


def _logs_refusals(operation: str) -> Callable[[F], F]:
    """Log a refused call with its reason (INFO when retriable, else WARNING), then raise."""

    def wrap(method: F) -> F:
        @functools.wraps(method)
        def run(self: Any, transactional_id: str, *args: Any, **kwargs: Any) -> Any:
            try:
                check_transactional_id(transactional_id)
                return method(self, transactional_id, *args, **kwargs)
            except ObjectLogError as e:
                level = logging.INFO if e.retriable else logging.WARNING
                logger.log(
                    level,
                    "%s for transactional id %r refused (%s): %s",
                    operation,
                    transactional_id,
                    type(e).__name__,
                    e,
                )
                raise

        return run  # type: ignore[return-value]

    return wrap


class TransactionCoordinator:
    def __init__(
        self,
        store: TransactionStore,
        clock: Clock,
        next_producer_id: Callable[[], int],
        markers: MarkerWriter,
        offsets: OffsetApplier,
        settings: TransactionSettings = TransactionSettings(),
        opener: PartitionOpener | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.next_producer_id = next_producer_id
        self.markers = markers
        self.offsets = offsets
        self.settings = settings
        self.opener = opener

    # ---- the producer's requests -----------------------------------------------------

    @_logs_refusals("InitProducerId")
    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        producer_id: int = NO_PRODUCER,
        epoch: int = NO_PRODUCER,
    ) -> Transaction:
        """The producer id and epoch for a (new) instance of the transactional id, in Empty.
        A new id gets a fresh producer id at epoch 0; a known one epoch + 1, fencing older
        instances, after its transaction is aborted (Ongoing) or completed (decided). With
        producer_id and epoch (KIP-360: a producer bumping its own epoch) they must be the
        stored ones, or the ones before the last bump (a retry, answered without bumping
        again), else TransactionalIdFenced; one of the two without the other is
        InvalidRequest. InvalidTransactionTimeout for a timeout not in
        (0, transaction.max.timeout.ms]."""
        if not 0 < timeout_ms <= self.settings.max_timeout_ms:
            raise InvalidTransactionTimeout(
                f"transaction timeout {timeout_ms} ms is not in (0, "
                f"{self.settings.max_timeout_ms}] (transaction.max.timeout.ms)"
            )
        if (producer_id == NO_PRODUCER) != (epoch == NO_PRODUCER):
            raise InvalidRequest(
                f"producer id {producer_id} and epoch {epoch}: give both, or neither"
            )
        expected = Expected(producer_id, epoch) if producer_id != NO_PRODUCER else None
        new_producer_id = functools.cache(self.next_producer_id)  # one id for all attempts
        for _ in range(self.settings.attempts):
            txn = self._change(
                transactional_id,
                lambda t, _now: initialized(
                    t, transactional_id, timeout_ms, expected, new_producer_id
                ),
            )
            assert txn is not None
            if txn.state is TxnState.EMPTY:
                logger.info(
                    "transactional id %r: producer %d epoch %d",
                    transactional_id,
                    txn.producer_id,
                    txn.producer_epoch,
                )
                return txn
            self._settle(txn)  # an aborted or decided transaction: finish it, then bump
        raise ConcurrentTransactions(f"transactional id {transactional_id!r} kept changing")

    @_logs_refusals("AddPartitionsToTxn")
    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: Iterable[tuple[str, int]],
        *,
        known: Transaction | None = None,
    ) -> Transaction:
        """Add partitions to the transaction, beginning one (Ongoing, with its deadline) if
        none is, then open it on each partition (the opener). Partitions already in it write
        nothing to the item, and opening them again changes nothing."""
        added = frozenset(TopicPartition(*tp) for tp in partitions)
        txn = self._producer_change(
            transactional_id,
            lambda t, now: joined(t, transactional_id, producer_id, epoch, now, partitions=added),
            known,
        )
        if self.opener is not None:  # after the item lists them: a marker will close them
            self.opener.open_partitions(txn, added)
        return txn

    @_logs_refusals("AddOffsetsToTxn")
    def add_offsets(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        group: str,
        *,
        known: Transaction | None = None,
    ) -> Transaction:
        """Add the group to the transaction (beginning one if none is): its offsets may then
        be committed in it (txn_offset_commit)."""
        groups = frozenset((group,))
        return self._producer_change(
            transactional_id,
            lambda t, now: joined(t, transactional_id, producer_id, epoch, now, groups=groups),
            known,
        )

    @_logs_refusals("TxnOffsetCommit")
    def txn_offset_commit(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        group: str,
        offsets: Mapping[TopicPartition, PendingOffset],
        check_member: Callable[[Transaction], None],
        *,
        known: Transaction | None = None,
    ) -> Transaction:
        """Hold offsets for the group until the transaction ends (applied on commit, dropped
        on abort); a later offset for a partition replaces an earlier one. The group must be
        in the transaction (AddOffsetsToTxn), else InvalidTxnState. check_member(txn) is the
        group coordinator's KIP-447 check of the member id and generation (the caller binds
        them), which marks the partitions' offsets pending in txn (GroupCoordinator.
        hold_pending: stable readers wait for them) or raises to refuse."""
        return self._producer_change(
            transactional_id,
            lambda t, _now: with_offsets(
                t, transactional_id, producer_id, epoch, group, offsets, check_member
            ),
            known,
        )

    @_logs_refusals("send_offsets")
    def send_offsets(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        group: str,
        offsets: Mapping[TopicPartition, PendingOffset],
        check_member: Callable[[Transaction], None],
        *,
        known: Transaction | None = None,
    ) -> Transaction:
        """AddOffsetsToTxn and TxnOffsetCommit in one write of the item (the library's
        send_offsets_to_transaction; a Kafka client sends them apart)."""
        groups = frozenset((group,))

        def rule(t: Transaction | None, now: int) -> Transaction:
            t = joined(t, transactional_id, producer_id, epoch, now, groups=groups)
            return with_offsets(
                t, transactional_id, producer_id, epoch, group, offsets, check_member
            )

        return self._producer_change(transactional_id, rule, known)

    @_logs_refusals("EndTxn")
    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        commit: bool,
        *,
        known: Transaction | None = None,
    ) -> Transaction:
        """Decide the Ongoing transaction (PrepareCommit or PrepareAbort), then complete it.
        EndTxn of the decision already taken (a retry) completes it if needed and succeeds;
        the other decision, or nothing begun (Empty), is InvalidTxnState."""
        txn = self._producer_change(
            transactional_id,
            lambda t, _now: decided(t, transactional_id, producer_id, epoch, commit),
            known,
        )
        return self._settle(txn) if txn.state.prepared else txn

    # ---- completing, timing out, looking -------------------------------------------

    @_logs_refusals("complete")
    def complete(self, transactional_id: str) -> Transaction | None:
        """Finish a decided transaction, whoever decided it: markers, offsets on commit, then
        Complete*. A transaction in any other state is answered as it is. Raises what the
        MarkerWriter or OffsetApplier raise (the decision stands)."""
        txn = self._live(self.store.get(transactional_id), self.clock.now_ms())
        return self._complete(txn) if txn is not None and txn.state.prepared else txn

    @_logs_refusals("abort_if_expired")
    def abort_if_expired(self, transactional_id: str) -> Transaction | None:
        """The sweep's call: abort an Ongoing transaction past its deadline, fencing its
        producer (epoch + 1), and finish a decided one. The transaction as it is after."""
        txn = self._change(transactional_id, lambda t, _now: t)
        return self._settle(txn) if txn is not None and txn.state.prepared else txn

    @_logs_refusals("DescribeTransactions")
    def describe(self, transactional_id: str) -> Transaction:
        """The transactional id's state; TransactionalIdNotFound if it has none (or expired)."""
        txn = self._live(self.store.get(transactional_id), self.clock.now_ms())
        if txn is None:
            raise TransactionalIdNotFound(f"no transactional id {transactional_id!r}")
        return txn

    def list(
        self,
        states: Collection[TxnState] | None = None,
        producer_ids: Collection[int] | None = None,
    ) -> list[Transaction]:
        """ListTransactions (KIP-664): the live transactional ids, filtered by state and
        producer id (None or empty: any), by id. Reads the registry (stores.transactions)."""
        now = self.clock.now_ms()
        return [
            txn
            for txn in self.store.list(states or None)
            if self._live(txn, now) is not None
            and (not producer_ids or txn.producer_id in producer_ids)
        ]

    # ---- transitions -------------------------------------------------------------------

    def _producer_change(
        self, transactional_id: str, rule: Rule, known: Transaction | None = None
    ) -> Transaction:
        txn = self._change(transactional_id, rule, known)
        assert txn is not None, "a producer's rule refuses a missing transaction"
        return txn

    def _change(
        self, transactional_id: str, rule: Rule, known: Transaction | None = None
    ) -> Transaction | None:
        """Apply rule to the live item (None: none) and write its answer conditional on the
        version read; the rule answering the item itself writes nothing. An Ongoing
        transaction past its deadline is aborted and completed first. known: the item as
        its caller last saw it (the library's producer, which is the only writer of its id
        while it is not fenced), taken instead of a read on the first attempt: a stale one
        loses the write's condition and is read afresh."""
        for attempt in range(self.settings.attempts):
            now = self.clock.now_ms()
            stored = (
                known if attempt == 0 and known is not None else self.store.get(transactional_id)
            )
            live = self._live(stored, now)
            if live is not None and timed_out(live, now):
                aborted = self.write(stored, fenced(live), now)
                if aborted is not None:
                    logger.info(
                        "transactional id %r: transaction of producer %d epoch %d timed out "
                        "after %d ms; aborted, epoch bumped",
                        transactional_id,
                        live.producer_id,
                        live.producer_epoch,
                        live.timeout_ms,
                    )
                    self._settle(aborted)
                continue
            new = rule(live, now)
            if new is live:
                return live
            assert new is not None
            written = self.write(stored, new, now)
            if written is not None:
                return written
        raise ConcurrentTransactions(
            f"transactional id {transactional_id!r} changed under {self.settings.attempts} attempts"
        )

    def write(self, stored: Transaction | None, new: Transaction, now: int) -> Transaction | None:
        """new, stamped as a transition (version, update time, the TTL once settled) and
        written conditional on stored's version; None if it moved: every transition of the
        coordinator, and the sweep's decisions over leftover entries."""
        record = dataclasses.replace(
            new,
            version=(stored.version if stored is not None else 0) + 1,
            updated_ms=now,
            expires_at_s=(
                (now + self.settings.id_expiration_ms) // 1000 if new.state.settled else None
            ),
        )
        if stored is None:
            return record if self.store.put_new(record) else None
        return record if self.store.replace(record, stored.version) else None

    def _live(self, txn: Transaction | None, now: int) -> Transaction | None:
        """None for a missing item or one past its expiration (the TTL removes it later)."""
        if txn is None or (txn.expires_at_s is not None and txn.expires_at_s * 1000 <= now):
            return None
        return txn

    def _settle(self, txn: Transaction) -> Transaction:
        """Complete a decided transaction for a producer's request: ConcurrentTransactions
        (retriable; the decision stands) if that fails."""
        try:
            return self._complete(txn)
        except ObjectLogError as e:
            raise ConcurrentTransactions(
                f"transaction of {txn.transactional_id!r} is {txn.state.value} and not yet "
                f"complete: {e}"
            ) from e

    def _complete(self, txn: Transaction) -> Transaction:
        """Markers, offsets on commit, then Complete* conditional on the decided version;
        a lost condition means another completer finished it (nothing else moves a decided
        transaction), so its record is the answer."""
        commit = txn.state is TxnState.PREPARE_COMMIT
        # at once: the offsets are the group's once the decision is taken, and read_committed
        # readers of the outputs wait for the markers
        fan_out(lambda end: end(txn, commit), (self.markers.write_markers, self.offsets.settle))
        done = dataclasses.replace(
            txn,
            state=TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT,
            started_ms=None,
            partitions=frozenset(),
            groups=frozenset(),
            offsets={},
        )
        now = self.clock.now_ms()
        written = self.write(txn, done, now)
        if written is not None:
            return written
        current = self._live(self.store.get(txn.transactional_id), now)
        assert current is not None, "a completed transaction's item is kept for days"
        return current
