"""The transaction coordinator's rules, as pure functions (services.transactions applies them):
each takes the transaction as read (None: no live item) and answers the record to write next,
the one read (nothing to write), or raises the refusal, with Kafka's TransactionCoordinator's
and TransactionMetadata's semantics (transaction protocol version 1)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import NamedTuple

from objectlog.errors import (
    ConcurrentTransactions,
    InvalidProducerIdMapping,
    InvalidTxnState,
    TransactionalIdFenced,
)
from objectlog.stores.groups import TopicPartition
from objectlog.stores.transactions import PendingOffset, Transaction, TxnState, check_bounds

NO_PRODUCER = -1
MAX_EPOCH = 32767  # Short.MAX_VALUE
EXHAUSTED_EPOCH = MAX_EPOCH - 1  # Kafka's isEpochExhausted: the next fence must still fit


class Expected(NamedTuple):
    """The producer id and epoch a KIP-360 InitProducerId says it holds."""

    producer_id: int
    epoch: int


def initialized(
    t: Transaction | None,
    transactional_id: str,
    timeout_ms: int,
    expected: Expected | None,
    new_producer_id: Callable[[], int],
) -> Transaction:
    """InitProducerId's step, as Kafka's prepareInitProducerIdTransit: a decided transaction
    is answered as it is (the caller completes it), an Ongoing one aborted under epoch + 1."""
    if t is None:
        return Transaction(transactional_id, new_producer_id(), 0, TxnState.EMPTY, timeout_ms)
    if expected is not None and not _may_claim(t, expected):
        raise _fenced(t, expected.producer_id, expected.epoch)
    if t.state.prepared:
        return t
    if t.state is TxnState.ONGOING:
        return fenced(t)
    if t.producer_epoch >= EXHAUSTED_EPOCH and (
        expected is None or expected.epoch == t.producer_epoch
    ):
        last = t.producer_epoch if expected is not None else NO_PRODUCER
        return _emptied(t, timeout_ms, new_producer_id(), 0, last)
    if expected is None:
        return _emptied(t, timeout_ms, t.producer_id, t.producer_epoch + 1, NO_PRODUCER)
    if expected.epoch == t.producer_epoch:
        return _emptied(t, timeout_ms, t.producer_id, t.producer_epoch + 1, t.producer_epoch)
    if expected.epoch == t.last_producer_epoch:  # a retry of the bump that made the epoch
        if t.state is TxnState.EMPTY and t.timeout_ms == timeout_ms:
            return t
        return _emptied(t, timeout_ms, t.producer_id, t.producer_epoch, t.last_producer_epoch)
    raise _fenced(t, expected.producer_id, expected.epoch)


def joined(
    t: Transaction | None,
    transactional_id: str,
    producer_id: int,
    epoch: int,
    now: int,
    *,
    partitions: frozenset[TopicPartition] = frozenset(),
    groups: frozenset[str] = frozenset(),
) -> Transaction:
    """AddPartitionsToTxn and AddOffsetsToTxn: Empty or Complete* begins a transaction
    (started now); Ongoing adds; decided is ConcurrentTransactions."""
    t = _checked(t, transactional_id, producer_id, epoch)
    if t.state.prepared:
        raise _completing(t)
    if t.state is TxnState.ONGOING and partitions <= t.partitions and groups <= t.groups:
        return t
    if t.state is not TxnState.ONGOING:
        t = dataclasses.replace(_cleared(t), state=TxnState.ONGOING, started_ms=now)
    new = dataclasses.replace(t, partitions=t.partitions | partitions, groups=t.groups | groups)
    check_bounds(new)
    return new


def with_offsets(
    t: Transaction | None,
    transactional_id: str,
    producer_id: int,
    epoch: int,
    group: str,
    offsets: Mapping[TopicPartition, PendingOffset],
    check_member: Callable[[Transaction], None],
) -> Transaction:
    """TxnOffsetCommit: pending offsets of a group added to the Ongoing transaction."""
    t = _checked(t, transactional_id, producer_id, epoch)
    if t.state.prepared:
        raise _completing(t)
    if t.state is not TxnState.ONGOING or group not in t.groups:
        raise InvalidTxnState(
            f"group {group!r} is not in a transaction of {transactional_id!r} "
            f"({t.state.value}): AddOffsetsToTxn first"
        )
    check_member(t)
    if not offsets:
        return t
    merged = {**t.offsets, group: {**t.offsets.get(group, {}), **offsets}}
    new = dataclasses.replace(t, offsets=merged)
    check_bounds(new)
    return new


def decided(
    t: Transaction | None, transactional_id: str, producer_id: int, epoch: int, commit: bool
) -> Transaction:
    """EndTxn's decision: Ongoing becomes PrepareCommit or PrepareAbort; the same decision
    taken before (decided or complete) is answered as it is."""
    t = _checked(t, transactional_id, producer_id, epoch)
    prepare, complete = (
        (TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT)
        if commit
        else (TxnState.PREPARE_ABORT, TxnState.COMPLETE_ABORT)
    )
    if t.state is TxnState.ONGOING:
        return dataclasses.replace(t, state=prepare)
    if t.state in (prepare, complete):
        return t
    raise InvalidTxnState(
        f"EndTxn({'commit' if commit else 'abort'}) of {transactional_id!r} in state "
        f"{t.state.value}"
    )


def fenced(t: Transaction) -> Transaction:
    """An Ongoing transaction aborted under epoch + 1 (Kafka's PrepareEpochFence then
    PrepareAbort): its producer's requests, and batches, are fenced from now on. An Ongoing
    epoch is at most EXHAUSTED_EPOCH (InitProducerId rotates before), so this fits."""
    return dataclasses.replace(
        t,
        state=TxnState.PREPARE_ABORT,
        producer_epoch=t.producer_epoch + 1,
        last_producer_id=t.producer_id,
        last_producer_epoch=NO_PRODUCER,
    )


def timed_out(t: Transaction, now: int) -> bool:
    """An Ongoing transaction past its deadline."""
    deadline = t.deadline_ms
    return t.state is TxnState.ONGOING and deadline is not None and deadline < now


def _may_claim(t: Transaction, expected: Expected) -> bool:
    """Kafka's isValidProducerId: the stored producer id, or the one before a rotation asked
    for with its exhausted epoch (a retry of the InitProducerId that rotated it)."""
    return expected.producer_id == t.producer_id or (
        expected.producer_id == t.last_producer_id and expected.epoch >= EXHAUSTED_EPOCH
    )


def _emptied(
    t: Transaction, timeout_ms: int, producer_id: int, epoch: int, last_epoch: int
) -> Transaction:
    """t settled in Empty at producer_id and epoch. The producer id and epoch before are
    kept for KIP-360's retries, but by a retry itself (same producer id and epoch), which
    keeps the ones it found: a second retry of a rotation still finds the old id."""
    same = (producer_id, epoch) == (t.producer_id, t.producer_epoch)
    return dataclasses.replace(
        _cleared(t),
        state=TxnState.EMPTY,
        timeout_ms=timeout_ms,
        producer_id=producer_id,
        producer_epoch=epoch,
        last_producer_id=t.last_producer_id if same else t.producer_id,
        last_producer_epoch=last_epoch,
    )


def _cleared(t: Transaction) -> Transaction:
    return dataclasses.replace(
        t, started_ms=None, partitions=frozenset(), groups=frozenset(), offsets={}
    )


def _checked(
    t: Transaction | None, transactional_id: str, producer_id: int, epoch: int
) -> Transaction:
    """The transaction, if producer_id and epoch hold it (Kafka's strict check)."""
    if t is None:
        raise InvalidProducerIdMapping(
            f"transactional id {transactional_id!r} is unknown (or expired): InitProducerId first"
        )
    if t.producer_id != producer_id:
        raise InvalidProducerIdMapping(
            f"transactional id {transactional_id!r} is held by producer {t.producer_id}, "
            f"not {producer_id}"
        )
    if t.producer_epoch != epoch:
        raise _fenced(t, producer_id, epoch)
    return t


def _fenced(t: Transaction, producer_id: int, epoch: int) -> TransactionalIdFenced:
    return TransactionalIdFenced(
        f"producer {producer_id} epoch {epoch} is fenced: transactional id "
        f"{t.transactional_id!r} is at producer {t.producer_id} epoch {t.producer_epoch}"
    )


def _completing(t: Transaction) -> ConcurrentTransactions:
    return ConcurrentTransactions(
        f"transaction of {t.transactional_id!r} is {t.state.value}: being completed, retry"
    )
