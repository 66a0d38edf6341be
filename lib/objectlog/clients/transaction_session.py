"""A transactional producer's transaction: Kafka's transaction calls and their state, for the
threaded TransactionalProducer and the asyncio AIOTransactionalProducer alike (each flushes its
own way; everything else, the phases, the coordinator's calls, the Kafka sequences a batch
carries and what a failure means, is here once). clients/transactional.py says how it works.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Mapping
from typing import Any

from objectlog import concurrency
from objectlog.clients.values import ConsumerGroupMetadata
from objectlog.concurrency import Lock
from objectlog.errors import (
    ConcurrentTransactions,
    InvalidRequest,
    InvalidTxnState,
    ObjectLogError,
    ProducerFenced,
    UnknownOutcome,
)
from objectlog.groups import OffsetAndMetadata, TopicPartition
from objectlog.groups.coordinator import GroupCoordinator
from objectlog.services.append import AppendOutcome, StagedFlush
from objectlog.services.transactions import TransactionCoordinator
from objectlog.stores.metadata import KafkaSequence, kafka_producer
from objectlog.stores.transactions import (
    PendingOffset,
    Transaction,
    check_transactional_id,
    offsets_mark,
)

RETRIES = 10  # of a coordinator call answered ConcurrentTransactions (retriable)
BACKOFF_S = 0.05


class TxnPhase(enum.Enum):
    UNINITIALIZED = "uninitialized"  # before init_transactions
    READY = "ready"  # between transactions
    IN_TRANSACTION = "in transaction"
    ABORTABLE = "abortable"  # a record or call failed: only abort_transaction
    FATAL = "fatal"  # fenced: only close


def check_transactional_options(transactional_id: str, options: Mapping[str, Any]) -> None:
    """Idempotence cannot be turned off, as in Kafka; the id must be a valid one."""
    if options.get("enable_idempotence") is False:
        raise InvalidRequest(
            "a transactional producer is idempotent: enable_idempotence cannot be False",
            field="enable_idempotence",
        )
    check_transactional_id(transactional_id)


class TransactionSession:
    """One transactional id's transactions, as one producer instance runs them."""

    def __init__(
        self,
        coordinator: TransactionCoordinator,
        groups: GroupCoordinator,
        transactional_id: str,
        transaction_timeout_ms: int,
    ) -> None:
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.coordinator = coordinator
        self.groups = groups
        self.producer_id: str | None = None  # no writes before init_transactions
        self._phase = TxnPhase.UNINITIALIZED
        self._failure: ObjectLogError | None = None  # what made the transaction abortable
        self._unknown = False  # a batch of this epoch may have landed unacknowledged
        self._pid = -1
        self._epoch = -1
        self._kafka_sequences: dict[tuple[str, int], int] = {}
        self._windows: dict[tuple[str, int], int] = {}  # each head's count of our batches
        self._known: Transaction | None = None  # the item as the coordinator last answered
        self._added: set[tuple[str, int]] = set()
        self._groups_added: set[str] = set()
        self._lock = Lock()  # held across the coordinator's calls

    @property
    def phase(self) -> TxnPhase:
        return self._phase

    # ---- Kafka's transaction calls (the producer flushes before commit and abort) ----

    def init(self) -> None:
        """Take the transactional id's next epoch (fencing older instances, aborting their
        open transaction); the producer is then ready to begin one."""
        if self._phase not in (TxnPhase.UNINITIALIZED, TxnPhase.READY):
            raise InvalidTxnState(f"init_transactions called while {self._phase.value}")
        self._bump_epoch(known=self._phase is not TxnPhase.UNINITIALIZED)
        self._phase = TxnPhase.READY

    def begin(self) -> None:
        self.require(TxnPhase.READY, "begin_transaction")
        with self._lock:
            self._added.clear()
            self._groups_added.clear()
            self._failure = None
            self._phase = TxnPhase.IN_TRANSACTION

    def send_offsets(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        group_metadata: ConsumerGroupMetadata | str,
    ) -> None:
        """TransactionalProducer.send_offsets_to_transaction (its docstring says what)."""
        self.require(TxnPhase.IN_TRANSACTION, "send_offsets_to_transaction")
        meta = (
            ConsumerGroupMetadata(group_metadata)
            if isinstance(group_metadata, str)
            else group_metadata
        )
        pending = {
            TopicPartition(*tp): _pending(value, meta) for tp, value in sorted(offsets.items())
        }
        if not pending:
            return
        try:
            self._call(
                self.coordinator.send_offsets,
                meta.group_id,
                pending,
                lambda txn: self.groups.transactional.hold(
                    meta.group_id,
                    offsets_mark(txn),
                    pending,
                    member_id=meta.member_id,
                    generation=meta.generation,
                ),
            )
            self._groups_added.add(meta.group_id)
        except ObjectLogError as e:
            self.fail(e)
            raise

    def commit(self) -> None:
        """End the transaction committed (the producer has flushed): InvalidTxnState if a
        record of it failed (abort it instead)."""
        if self._failure is not None:
            self._phase = TxnPhase.ABORTABLE
            raise InvalidTxnState(
                f"the transaction cannot commit, a part of it failed: {self._failure}; "
                "abort_transaction()"
            )
        self._end(commit=True)

    def check_abortable(self) -> None:
        if self._phase not in (TxnPhase.IN_TRANSACTION, TxnPhase.ABORTABLE):
            raise InvalidTxnState(f"abort_transaction called while {self._phase.value}")

    def abort(self) -> None:
        """End the transaction aborted (the producer has flushed)."""
        self._end(commit=False)
        if self._unknown:  # a batch may land late: a new epoch refuses it (KIP-360)
            self._bump_epoch(known=True)

    # ---- the producer's flushes ----------------------------------------------------------

    def commit_flush(
        self, staged: StagedFlush, commit: Callable[[StagedFlush], list[AppendOutcome]]
    ) -> list[AppendOutcome]:
        """Add the flush's new partitions to the transaction, give each batch its Kafka
        sequences, then commit. A partition the coordinator did not add is refused by its
        head (InvalidTxnState), so no batch lands outside the transaction."""
        batches = [outcome.batch for outcome in staged.outcomes]
        with self._lock:
            new = sorted({(b.topic.name, b.partition) for b in batches} - self._added)
            if new and self._phase is TxnPhase.IN_TRANSACTION:
                try:
                    self._call(self.coordinator.add_partitions, new)
                    self._added.update(new)
                except ObjectLogError as e:
                    self.fail(e)
            for batch in batches:
                key = (batch.topic.name, batch.partition)
                first = self._kafka_sequences.get(key, 0)
                last = first + batch.records - 1
                batch.kafka = KafkaSequence(self._epoch, first, last, self._windows.get(key))
                batch.transactional = True
        outcomes = commit(staged)
        for outcome in outcomes:
            self._account(outcome)
        return outcomes

    def _account(self, outcome: AppendOutcome) -> None:
        batch = outcome.batch
        assert batch.kafka is not None
        key = (batch.topic.name, batch.partition)
        if outcome.error is None:
            self._kafka_sequences[key] = batch.kafka.last + 1
            state = outcome.head.producers.get(self.producer_id or "") if outcome.head else None
            if state is not None and state.window is not None:  # the next commit's condition
                self._windows[key] = state.window.batches
            return
        self._windows.pop(key, None)
        if isinstance(outcome.error, UnknownOutcome):
            self._unknown = True
        self.fail(outcome.error)

    def delivery_failed(self, errors: Mapping[int, ObjectLogError]) -> None:
        """Records refused before their commit (unknown topic, too large) fail the transaction."""
        if errors:
            self.fail(next(iter(errors.values())))

    # ---- the coordinator -----------------------------------------------------------------

    def _bump_epoch(self, *, known: bool) -> None:
        txn = self._retried(
            self.coordinator.init_producer_id,
            self.transactional_id,
            self.transaction_timeout_ms,
            self._pid if known else -1,
            self._epoch if known else -1,
        )
        if (txn.producer_id, txn.producer_epoch) != (self._pid, self._epoch):
            self._kafka_sequences.clear()  # a new epoch's sequences start at 0
            self._windows.clear()
        self._known = txn
        self._pid, self._epoch = txn.producer_id, txn.producer_epoch
        self.producer_id = kafka_producer(txn.producer_id)
        self._unknown = False

    def _end(self, *, commit: bool) -> None:
        if self._added or self._groups_added:  # nothing begun on the coordinator: nothing to end
            self._call(self.coordinator.end_txn, commit)
        self._phase = TxnPhase.READY

    def _call(self, method: Callable[..., Any], *args: Any) -> Any:
        """A coordinator call for this producer's transactional id, producer id and epoch,
        on the item as it last answered (no read unless another wrote it since)."""
        try:
            txn = self._retried(
                functools.partial(method, known=self._known),
                self.transactional_id,
                self._pid,
                self._epoch,
                *args,
            )
        except ObjectLogError:
            self._known = None  # read it afresh next time
            raise
        self._known = txn
        return txn

    def _retried(self, method: Callable[..., Any], *args: Any) -> Any:
        for attempt in range(RETRIES):
            try:
                return method(*args)
            except ConcurrentTransactions:
                if attempt == RETRIES - 1:
                    raise
                concurrency.sleep(BACKOFF_S * (attempt + 1))
            except ProducerFenced:
                self._phase = TxnPhase.FATAL
                raise
        raise AssertionError("unreachable")

    def fail(self, error: ObjectLogError) -> None:
        """A part of the transaction failed: abortable (fatal when fenced)."""
        if isinstance(error, ProducerFenced):
            self._phase = TxnPhase.FATAL
        elif self._phase is TxnPhase.IN_TRANSACTION:
            self._phase = TxnPhase.ABORTABLE
        if self._failure is None:
            self._failure = error

    def require(self, phase: TxnPhase, call: str) -> None:
        if self._phase is phase:
            return
        why = f"{call} needs the producer {phase.value}, but it is {self._phase.value}"
        if self._phase is TxnPhase.FATAL:
            why += " (this producer was fenced: close it)"
        if self._failure is not None:
            why += f"; a part of the transaction failed: {self._failure}"
        raise InvalidTxnState(why)


def _pending(value: OffsetAndMetadata | int, meta: ConsumerGroupMetadata) -> PendingOffset:
    offset, metadata = (value, "") if isinstance(value, int) else (value[0], value[1])
    return PendingOffset(offset, -1, metadata or "", meta.generation)
