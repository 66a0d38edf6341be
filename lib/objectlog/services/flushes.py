"""What a flush is made of and what it answers (services.append's Appender writes them)."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field

import pyarrow as pa

from objectlog.errors import ObjectLogError
from objectlog.format.index import SegmentRef
from objectlog.format.topics import Topic
from objectlog.services.index import SpillPlan
from objectlog.stores.metadata import KafkaSequence, PartitionHead


@dataclass
class PartitionBatch:
    """Records bound for one partition, as a slice table (offset column = positions)."""

    topic: Topic
    partition: int
    table: pa.Table
    sequence: int = 0
    kafka: KafkaSequence | None = None  # a Kafka producer's batch (the Kafka agent's)
    transactional: bool = False  # a Kafka producer's transactional batch (docs/transactions.md)

    @property
    def records(self) -> int:
        return self.table.num_rows


@dataclass
class AppendOutcome:
    batch: PartitionBatch
    base_offset: int | None = None
    duplicate: bool = False
    error: ObjectLogError | None = None
    head: PartitionHead | None = None


@dataclass(frozen=True)
class Carried:
    """A spill a flush's object carries for one of its partitions, and the list's location."""

    plan: SpillPlan
    location: str


@dataclass
class StagedFlush:
    """A flush whose object is written (object_id set) or failed (every outcome's error set),
    not yet committed: Appender.stage's answer, Appender.commit_staged's input. ``carried``
    holds the spills the object carries, by outcome index."""

    outcomes: list[AppendOutcome]
    refs: list[SegmentRef] = field(default_factory=list)
    object_id: str | None = None
    carried: dict[int, Carried] = field(default_factory=dict)
    upload: Future[None] | None = None  # the PUT in flight (Appender.stage)
    # Each outcome's producer (Appender.stage's producers): None commits every outcome as the
    # producer commit_staged is given
    producers: list[str | None] | None = None


@dataclass
class AppendStats:
    """Counters for benchmarks and metrics."""

    objects_put: int = 0
    bytes_put: int = 0
    commits: int = 0
    commit_retries: int = 0
    reuploads: int = 0
    spills: int = 0
    carried_spills: int = 0  # of the spills, those a commit carried
    carried_spills_raced: int = 0  # carried spills another writer's change made void
    encode_s: float = 0.0
    put_s: float = 0.0
    commit_s: float = 0.0
    spill_s: float = 0.0
