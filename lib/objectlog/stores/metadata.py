"""Topics, partition heads and producer state: the Protocols, their value types and the rules
every implementation shares.

Implementations: ``stores.dynamo_metadata.DynamoMetadata`` (one DynamoDB table, single-item
calls on the hot paths) and ``stores.memory.MemoryMetadata`` (unit tests). Both pass the same
contract suite (tests/contract), so the in-memory one cannot drift from DynamoDB's
conditional-write semantics.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from objectlog.errors import (
    HorizonPassed,
    OutOfOrderSequence,
    ProducerFenced,
    SpillRaced,
    StorageUnavailable,
    TopicNotFound,
)
from objectlog.format.index import SegmentRef
from objectlog.format.topics import Topic

ACTIVE = "ACTIVE"
CREATING = "CREATING"
DELETING = "DELETING"


KAFKA_WINDOW = 5  # the batches per Kafka producer and partition a head remembers, as Kafka


def kafka_producer(producer_id: int) -> str:
    """How a head names a Kafka producer (its idempotence window, its open transactions)."""
    return f"k{producer_id}"


@dataclass(frozen=True, slots=True)
class KafkaWindow:
    """A Kafka producer's state on a partition beyond its last sequence: its epoch, how many
    batches it committed, and the newest ones' (first sequence, base offset), oldest first."""

    epoch: int
    batches: int
    recent: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class ProducerState:
    """The last committed sequence (an objectlog producer's batch counter, or a Kafka
    producer's last record's sequence) and base offset; Kafka producers carry their window."""

    sequence: int
    base_offset: int
    last_use_s: int
    window: KafkaWindow | None = None


@dataclass(frozen=True, slots=True)
class KafkaSequence:
    """A Kafka batch's idempotence fields, and the window's batch count as the caller last saw
    it (None: unknown; the store reads the head)."""

    epoch: int
    first: int
    last: int
    batches_seen: int | None = None


@dataclass(frozen=True)
class PartitionHead:
    topic: str
    partition: int
    topic_id: str
    next_offset: int
    log_start_offset: int
    tail_base: int
    tail: tuple[SegmentRef, ...]
    manifest_list: str | None
    index_epoch: int
    gc_horizon: int
    producers: Mapping[str, ProducerState] = field(default_factory=dict)
    compactor_epoch: int | None = None
    item_bytes: int = 0  # the stored item's billed size where the store knows it (DynamoDB)
    # producer -> (epoch, first offset) of each transaction open on the partition (txn_marks)
    open_txns: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def high_watermark(self) -> int:
        return self.next_offset

    @property
    def last_stable_offset(self) -> int:
        """Where read_committed stops: the first offset of the oldest open transaction, or
        the high watermark when none is open."""
        return min((first for _, first in self.open_txns.values()), default=self.next_offset)


@dataclass(frozen=True, slots=True)
class CommitResult:
    base_offset: int
    head: PartitionHead | None
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class CarriedSpill:
    """A spill a commit carries: the head had ``tail_length`` refs at ``index_epoch``, and its
    oldest ones, ``span_removed`` offsets, are in the index at ``manifest_list`` now (written in
    the commit's own object); the tail becomes ``tail`` plus the commit's ref."""

    index_epoch: int
    tail_length: int
    tail: tuple[SegmentRef, ...]
    span_removed: int
    manifest_list: str
    expired_producers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Commit:
    """One ref appended to one partition by one producer (or none), carrying a spill or not."""

    topic_id: str
    topic: str
    partition: int
    ref: SegmentRef
    object_time_ms: int
    producer_id: str | None
    sequence: int
    now_s: int
    allow_sequence_gaps: bool = False
    kafka: KafkaSequence | None = None  # producer_id is then the Kafka producer's key
    spill: CarriedSpill | None = None
    # The head as the writer knows it from its own last commit (None: unknown). A store may pin
    # it instead of reading the head back (pinned_head): the new head is then computed.
    known_head: PartitionHead | None = None


class TopicStore(Protocol):
    """Topic items and the topic registry. Raises TopicExists, TopicNotFound,
    ConcurrentModification, StorageUnavailable."""

    def put_new_topic(self, topic: Topic) -> None: ...

    def set_topic_state(self, name: str, state: str, *, expected: str | None = None) -> None: ...

    def get_topic(self, name: str) -> Topic | None: ...

    def get_topics(self, names: Sequence[str]) -> dict[str, Topic]: ...

    def update_topic_config(
        self, name: str, set_: Mapping[str, str], delete: Iterable[str]
    ) -> None: ...

    def set_partition_count(self, name: str, old: int, new: int) -> None: ...

    def delete_topic_item(self, name: str) -> None: ...

    def register(self, name: str) -> None: ...

    def unregister(self, name: str) -> None: ...

    def registered_names(self) -> list[str]: ...


class HeadStore(Protocol):
    """Partition heads: offsets, the index's tail and pointers, producer state."""

    def put_heads(self, topic: Topic, partitions: Iterable[int]) -> None: ...

    def delete_heads(self, topic: str, partitions: Iterable[int]) -> None: ...

    def get_head(self, topic: str, partition: int) -> PartitionHead | None: ...

    def get_heads(self, topic: str, partitions: Iterable[int]) -> dict[int, PartitionHead]: ...

    def commit(self, commit: Commit) -> CommitResult:
        """Append the ref: one conditional write assigns its offsets, not conditional on the offset
        itself (but for a commit on a known head, below, which commits again without it when
        the head moved). The condition: the head still has the topic id, its GC horizon is
        older than the object, and (with a producer id) the producer's previous sequence is
        sequence - 1 (any older one with allow_sequence_gaps). A retry of a commit that
        landed answers with the original base offset (duplicate=True); a duplicate that is
        not the producer's last commit answers base offset -1. A commit carrying a spill
        also needs the index epoch and tail length the spill was planned on (so the tail is
        exactly the one it saw): its tail is replaced, the spilled refs' span added to the
        tail base. With a known head (Commit.known_head) the store may commit on it
        (pinned_head) and answer the head computed from it. Raises TopicNotFound,
        HorizonPassed, OutOfOrderSequence, SpillRaced, StorageUnavailable, UnknownOutcome
        (the write was sent and its answer lost)."""
        ...

    def spill(
        self,
        topic: str,
        partition: int,
        *,
        expected_epoch: int,
        refs_removed: int,
        span_removed: int,
        manifest_list: str,
        object_time_ms: int,
        expired_producers: Iterable[str] = (),
    ) -> bool:
        """Move the oldest refs_removed refs out of the tail (they are in manifest_list now),
        conditional on the index epoch and on the GC horizon being older than the new index
        objects; False if a condition failed."""
        ...

    def stamp_compactor_epoch(self, topic: str, partition: int, epoch: int) -> bool:
        """Record the compactor lease epoch working on the partition; False if a newer one
        stamped it already (or the head is gone)."""
        ...

    def swap_index(
        self,
        topic: str,
        partition: int,
        *,
        topic_id: str,
        expected_index_epoch: int,
        compactor_epoch: int,
        manifest_list: str,
        log_start_offset: int,
        object_time_ms: int,
    ) -> bool:
        """Point the head at a compacted index and set its log start, conditional on topic
        id, index epoch, compactor epoch, GC horizon (never on next_offset) and on the log
        start not going back (a DeleteRecords since the compactor read the head raised it:
        the compactor plans again); False if one failed."""
        ...

    def raise_log_start(self, topic: str, partition: int, *, topic_id: str, offset: int) -> int:
        """Move the log start forward to offset (stores.log_start.TO_HIGH_WATERMARK: to the
        high watermark as the write finds it), in one conditional write applied only if
        offset is above the log start and not above the high watermark; the log start after
        it (the head's own when it was at or past offset already). Raises TopicNotFound (the
        head is gone, or is another topic's of the same name), OffsetOutOfRange (offset is
        past the high watermark)."""
        ...

    def raise_gc_horizon(self, topic: str, partition: int, horizon_ms: int) -> None:
        """Refuse commits of objects written at or before horizon_ms; a head already there, or
        gone, is left as it is."""
        ...

    def open_transaction(
        self, topic: str, partition: int, *, topic_id: str, producer: str, epoch: int
    ) -> int:
        """Open the producer's transaction on the partition at its next offset; the first
        offset (the same one again for the same epoch). Raises TopicNotFound,
        ConcurrentTransactions (stores.txn_marks)."""
        ...

    def write_marker(
        self,
        topic: str,
        partition: int,
        *,
        topic_id: str,
        producer: str,
        epoch: int,
        commit: bool,
        time_ms: int,
    ) -> int | None:
        """Append the open transaction's commit or abort marker and close it; the marker's
        offset, or None if that transaction is not open there. Raises TopicNotFound."""
        ...


class MetadataStore(TopicStore, HeadStore, Protocol):
    """Topics and heads together, as the log uses them."""

    def ensure_table(self) -> None: ...

    def next_producer_id(self) -> int:
        """A Kafka producer id never handed out before (a counter: 0, 1, 2, ...)."""
        ...


def explain_failed_commit(commit: Commit, head: PartitionHead | None) -> CommitResult:
    """Why a commit's condition failed, given the head as it was: a duplicate of a commit that
    landed (its result), or the error to raise. The one rule both implementations apply."""
    if head is None or head.topic_id != commit.topic_id:
        raise TopicNotFound(f"topic {commit.topic!r} partition {commit.partition} no longer exists")
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
    horizon and, for a carried spill, the head it was planned on."""
    if head.topic_id != commit.topic_id or head.gc_horizon >= commit.object_time_ms:
        return False
    return commit.spill is None or spill_applies(commit.spill, head)


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
        return INIT
    if state.sequence == sequence.first - 1:
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
