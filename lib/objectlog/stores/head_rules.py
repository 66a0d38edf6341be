"""The rules of a commit on a partition head that both head stores apply (stores.metadata's
types): whether its condition holds, the head after it, why it failed; a Kafka producer's
window (five batches, as Kafka keeps); a transactional batch only inside its transaction
(KIP-890 part 1, stores.txn_marks). DynamoMetadata states the same rules in its conditional
UpdateItems; MemoryMetadata applies them to the heads it holds."""

from __future__ import annotations

from dataclasses import replace

from objectlog.errors import (
    HorizonPassed,
    InvalidTxnState,
    OutOfOrderSequence,
    ProducerFenced,
    SpillRaced,
    StorageUnavailable,
    TopicNotFound,
)
from objectlog.stores.metadata import (
    KAFKA_WINDOW,
    CarriedSpill,
    Commit,
    CommitResult,
    KafkaWindow,
    PartitionHead,
    ProducerState,
)


def explain_failed_commit(commit: Commit, head: PartitionHead | None) -> CommitResult:
    """Why a commit's condition failed, given the head as it was: a duplicate of a commit that
    landed (its result), or the error to raise. The one rule both implementations apply."""
    if head is None or head.topic_id != commit.topic_id:
        raise TopicNotFound(f"topic {commit.topic!r} partition {commit.partition} no longer exists")
    check_in_its_transaction(commit, head)
    state = head.producers.get(commit.producer_id) if commit.producer_id is not None else None
    if state is not None and state.sequence == commit.sequence:
        return CommitResult(state.base_offset, head, duplicate=True)
    if commit.allow_sequence_gaps and state is not None and state.sequence > commit.sequence:
        return CommitResult(-1, head, duplicate=True)
    if head.gc_horizon >= commit.object_time_ms:
        raise HorizonPassed(
            f"object written at {commit.object_time_ms} is behind the GC horizon {head.gc_horizon}"
        )
    check_carried_spill(commit, head)
    if commit.producer_id is not None:
        last = state.sequence if state else None
        raise OutOfOrderSequence(
            f"producer {commit.producer_id} sent sequence {commit.sequence} to "
            f"{commit.topic}/{commit.partition}, but its last committed sequence there is {last}"
        )
    raise StorageUnavailable(f"commit to {commit.topic}/{commit.partition} failed its condition")


def head_condition_holds(commit: Commit, head: PartitionHead) -> bool:
    """The part of the condition every commit shares (stores.head_commit): the topic, the GC
    horizon, a transactional batch's open transaction and, for a carried spill, the head it
    was planned on."""
    if head.topic_id != commit.topic_id or head.gc_horizon >= commit.object_time_ms:
        return False
    if not in_its_transaction(commit, head):
        return False
    return commit.spill is None or spill_applies(commit.spill, head)


def in_its_transaction(commit: Commit, head: PartitionHead) -> bool:
    """A transactional batch's producer has a transaction of the batch's epoch open on the
    head; any other commit is in none and needs none."""
    if commit.transaction_epoch is None:
        return True
    held = head.open_txns.get(commit.producer_id or "")
    return held is not None and held[0] == commit.transaction_epoch


def check_in_its_transaction(commit: Commit, head: PartitionHead) -> None:
    """InvalidTxnState for a transactional batch outside its transaction (KIP-890 part 1: a
    batch that is not in an open transaction cannot leave one hanging)."""
    if not in_its_transaction(commit, head):
        raise InvalidTxnState(
            f"producer {commit.producer_id} has no transaction of epoch "
            f"{commit.transaction_epoch} open on {commit.topic}/{commit.partition}: a "
            "transactional batch needs its partition added to the transaction first"
        )


def commit_applies(commit: Commit, head: PartitionHead | None) -> bool:
    """The commit's condition, as DynamoMetadata's ConditionExpression states it."""
    if head is None or not head_condition_holds(commit, head):
        return False
    if commit.producer_id is None:
        return True
    state = head.producers.get(commit.producer_id)
    if state is None:
        return True
    if commit.allow_sequence_gaps:
        return state.sequence < commit.sequence
    return state.sequence == commit.sequence - 1


def pinned_head(commit: Commit) -> PartitionHead | None:
    """The known head a commit can be conditional on, instead of reading the head back:
    one its condition would hold on. A store pins its next offset and index epoch, the two
    that every other change of a head moves (appends move next; spills and compaction swaps
    the epoch), so the new head is committed(commit, known), but for what moves neither: the
    GC horizon, the compactor epoch and other Kafka producers' windows (writers plan nothing
    from them). A Kafka batch's own window stays in its condition (its batch count, epoch and
    last sequence), so a window started or moved since is noticed too."""
    known = commit.known_head
    if known is None:
        return None
    applies = kafka_applies if commit.kafka is not None else commit_applies
    return known if applies(commit, known) else None


def committed(commit: Commit, known: PartitionHead) -> PartitionHead:
    """The head after a commit whose condition held on the known head (pinned_head's)."""
    if commit.kafka is None:
        return apply_commit(commit, known)
    _, new = kafka_commit(commit, known)
    assert new is not None, "a pinned Kafka batch follows its window"
    return new


def spill_applies(spill: CarriedSpill, head: PartitionHead) -> bool:
    """The head is the one the spill was planned on: only spills and swaps move the index
    epoch and appends only add at the end, so the same epoch and length mean the same tail."""
    return head.index_epoch == spill.index_epoch and len(head.tail) == spill.tail_length


def apply_commit(commit: Commit, head: PartitionHead) -> PartitionHead:
    """The head after a commit whose condition held (the in-memory store's write)."""
    producers = dict(head.producers)
    if commit.producer_id is not None:
        producers[commit.producer_id] = ProducerState(
            commit.sequence, head.next_offset, commit.now_s
        )
    new = replace(
        head,
        next_offset=head.next_offset + commit.ref.span,
        tail=(*head.tail, commit.ref),
        producers=producers,
    )
    return with_carried_spill(commit, head, new)


def with_carried_spill(commit: Commit, old: PartitionHead, new: PartitionHead) -> PartitionHead:
    """new (old with the commit's ref appended) after the spill the commit carries, if any:
    the spilled refs gone from the tail, the new manifest list, the next index epoch, and the
    expired producers' state dropped."""
    spill = commit.spill
    if spill is None:
        return new
    return replace(
        new,
        tail=(*spill.tail, commit.ref),
        tail_base=old.tail_base + spill.span_removed,
        manifest_list=spill.manifest_list,
        index_epoch=old.index_epoch + 1,
        producers={p: s for p, s in new.producers.items() if p not in spill.expired_producers},
    )


def check_carried_spill(commit: Commit, head: PartitionHead) -> None:
    """SpillRaced if the commit carries a spill planned on another head (the writer commits
    again without it)."""
    if commit.spill is not None and not spill_applies(commit.spill, head):
        raise SpillRaced(
            f"{commit.topic}/{commit.partition} changed since the carried spill was planned"
        )


# ---- Kafka producers: sequences per record, a window of five batches ----------------------

INIT = "init"  # the head holds no state for this producer epoch: start its window first
APPLY = "apply"  # the batch follows the last one: commit it at the window's batch count


def kafka_verdict(commit: Commit, head: PartitionHead) -> str | CommitResult:
    """What a Kafka producer's batch means against the head, the one rule both stores apply:
    INIT, APPLY, a duplicate's original result, or the error (ProducerFenced for an older
    epoch, OutOfOrderSequence for a gap, or for a new epoch not starting at 0)."""
    sequence = commit.kafka
    assert sequence is not None and commit.producer_id is not None
    state = head.producers.get(commit.producer_id)
    window = state.window if state is not None else None
    if state is None or window is None:
        check_in_its_transaction(commit, head)
        return INIT  # no state (new, or expired: accepted from any sequence, as KIP-360)
    if window.epoch > sequence.epoch:
        raise ProducerFenced(
            f"producer {commit.producer_id} epoch {sequence.epoch} is fenced by epoch "
            f"{window.epoch} on {commit.topic}/{commit.partition}"
        )
    if window.epoch < sequence.epoch:
        if sequence.first != 0:
            raise OutOfOrderSequence(
                f"producer {commit.producer_id} began epoch {sequence.epoch} at sequence "
                f"{sequence.first}, not 0"
            )
        check_in_its_transaction(commit, head)
        return INIT
    if state.sequence == sequence.first - 1:
        check_in_its_transaction(commit, head)
        return APPLY
    for first, base in window.recent:
        if first == sequence.first:
            return CommitResult(base, head, duplicate=True)
    if sequence.first <= state.sequence:  # older than the window: a duplicate, offset unknown
        return CommitResult(-1, head, duplicate=True)
    raise OutOfOrderSequence(
        f"producer {commit.producer_id} sent sequence {sequence.first} to "
        f"{commit.topic}/{commit.partition}, but its last committed sequence there is "
        f"{state.sequence}"
    )


def kafka_applies(commit: Commit, head: PartitionHead | None) -> bool:
    """A Kafka batch's condition, as KafkaCommits states it once the window is started: the
    topic, the GC horizon, the head a carried spill was planned on, and a window the batch
    follows (kafka_verdict's APPLY)."""
    if head is None or not head_condition_holds(commit, head):
        return False
    try:
        return kafka_verdict(commit, head) == APPLY
    except (ProducerFenced, OutOfOrderSequence):  # on this head: not one to pin
        return False


def kafka_commit(
    commit: Commit, head: PartitionHead | None
) -> tuple[CommitResult, PartitionHead | None]:
    """The Kafka commit on a head held in memory: its result and the new head (None when
    nothing changed). DynamoMetadata states the same in its conditional UpdateItems."""
    sequence = commit.kafka
    assert sequence is not None and commit.producer_id is not None
    if head is None or head.topic_id != commit.topic_id or head.gc_horizon >= commit.object_time_ms:
        return explain_failed_commit(replace(commit, kafka=None, producer_id=None), head), None
    verdict = kafka_verdict(commit, head)
    if isinstance(verdict, CommitResult):
        return verdict, None
    check_carried_spill(commit, head)
    state = head.producers.get(commit.producer_id)
    window = state.window if verdict == APPLY and state is not None else None
    window = window or KafkaWindow(sequence.epoch, 0, ())
    recent = (*window.recent, (sequence.first, head.next_offset))[-KAFKA_WINDOW:]
    producers = dict(head.producers)
    producers[commit.producer_id] = ProducerState(
        sequence.last,
        head.next_offset,
        commit.now_s,
        KafkaWindow(window.epoch, window.batches + 1, recent),
    )
    new = replace(
        head,
        next_offset=head.next_offset + commit.ref.span,
        tail=(*head.tail, commit.ref),
        producers=producers,
    )
    new = with_carried_spill(commit, head, new)
    return CommitResult(head.next_offset, new), new
