"""Topics, partition heads and producer state: the Protocols and their value types (the rules
every implementation shares are in stores.head_rules).

Implementations: ``stores.dynamo_metadata.DynamoMetadata`` (one DynamoDB table, single-item
calls on the hot paths) and ``stores.memory.MemoryMetadata`` (unit tests). Both pass the same
contract suite (tests/contract), so the in-memory one cannot drift from DynamoDB's
conditional-write semantics.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

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
    # A transactional Kafka batch: the producer epoch whose transaction must be open on the
    # head (KIP-890 part 1: committed only inside its transaction, stores.txn_marks)
    transaction_epoch: int | None = None


class TopicStore(Protocol):
    """Topic items and the topic registry. Raises TopicExists, TopicNotFound,
    ConcurrentModification, StorageUnavailable."""

    def put_new_topic(self, topic: Topic) -> None:
        """Store a new topic, CREATING. A repeat of the put (the same topic id: a retry whose
        first answer was lost) succeeds and changes nothing; any other topic of that name raises
        TopicExists."""
        ...

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
        first: int | None = None,
    ) -> int | None:
        """Append the open transaction's commit or abort marker and close it; the marker's
        offset, or None if that transaction is not open there. Raises TopicNotFound. first:
        the transaction's first offset there if the caller knows it (open_transaction's
        answer), which spares a store a read of the head; a wrong one is only slower."""
        ...


class MetadataStore(TopicStore, HeadStore, Protocol):
    """Topics and heads together, as the log uses them."""

    def ensure_table(self) -> None: ...

    def next_producer_id(self) -> int:
        """A Kafka producer id never handed out before (a counter: 0, 1, 2, ...)."""
        ...
