"""Planning a read: an offset range per partition, cut into input partitions on segment refs.

The driver resolves the options into an offset range per topic partition (the heads give the
earliest and latest offsets; the refs' timestamps give the offset for a time), then walks each
range's segment refs (the head's tail and the manifests it points at) and groups consecutive
refs into input partitions of at most maxBytesPerPartition. An executor reads one input
partition: one ranged GET per slice. Filters Spark pushes down narrow the ranges and drop refs
whose timestamps cannot match. The Spark 4 data source (batch and streaming) and the Spark 3.5
``mapInArrow`` path share this module; none of it imports pyspark.

Streaming offsets have the Kafka source's JSON shape, ``{"orders": {"0": 23, "1": 5}}``: the
next offset to read in each partition.

``kafka.isolation.level=read_committed`` (services.isolation's rules, as the library's fetch
applies them): "latest" and every range's end are the last stable offset, not the high
watermark, and the refs of aborted transactions are left out of the slices, decided from the
refs alone. Markers have nothing to read at either level.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace

from objectlog.clients.direct import ObjectLog
from objectlog.errors import (
    InvalidRequest,
    OffsetOutOfRange,
    TopicNotFound,
    UnknownPartition,
)
from objectlog.format.index import PlacedRef, SegmentRef
from objectlog.format.layout import object_key
from objectlog.services.isolation import READ_COMMITTED, READ_UNCOMMITTED, committed_plan, end_of
from objectlog.spark.options import EARLIEST, LATEST, Bound, ReadOptions, Subscription
from objectlog.stores.metadata import PartitionHead

TopicPartition = tuple[str, int]
OffsetsJson = dict[str, dict[str, int]]


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Offsets [start, end) of one topic partition."""

    topic: str
    partition: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Slice:
    """One segment ref, resolved: the bytes to GET and the offsets they cover."""

    key: str
    start: int
    length: int
    base_offset: int
    end_offset: int
    level: int


@dataclass(frozen=True, slots=True)
class Pruning:
    """What pushed-down filters allow: topics, partitions, an offset range, a time window."""

    topics: frozenset[str] | None = None
    partitions: frozenset[int] | None = None
    min_offset: int = 0
    end_offset: int | None = None  # exclusive
    min_timestamp: int | None = None  # ms, inclusive
    max_timestamp: int | None = None  # ms, inclusive

    def admits(self, topic: str, partition: int) -> bool:
        return (self.topics is None or topic in self.topics) and (
            self.partitions is None or partition in self.partitions
        )

    def clamp(self, start: int, end: int) -> tuple[int, int]:
        start = max(start, self.min_offset)
        if self.end_offset is not None:
            end = min(end, self.end_offset)
        return start, max(start, end)

    def admits_ref(self, ref: SegmentRef) -> bool:
        """False when no record of the ref can fall in the time window."""
        if self.min_timestamp is not None and ref.max_timestamp < self.min_timestamp:
            return False
        return self.max_timestamp is None or ref.min_timestamp <= self.max_timestamp


NO_PRUNING = Pruning()


@dataclass(frozen=True, slots=True)
class ReadTask:
    """One input partition: slices of one topic partition, records in [start, end) only."""

    topic: str
    partition: int
    start_offset: int
    end_offset: int
    slices: tuple[Slice, ...]
    pruning: Pruning = NO_PRUNING  # kept so a task can re-resolve its refs through the head
    isolation: str = READ_UNCOMMITTED  # likewise: a re-resolved read_committed task skips aborts

    @property
    def bytes(self) -> int:
        return sum(s.length for s in self.slices)


# ---- which partitions ------------------------------------------------------------------


def current_heads(
    log: ObjectLog, subscription: Subscription, *, streaming: bool
) -> dict[TopicPartition, PartitionHead]:
    """The heads of every subscribed partition as they are now.

    A batch read fails on a missing topic or partition; a stream skips it (it may appear).
    """
    if subscription.assign is not None:
        wanted: dict[str, list[int] | None] = {t: list(p) for t, p in subscription.assign.items()}
    elif subscription.pattern is not None:
        pattern = re.compile(subscription.pattern)
        wanted = {t: None for t in log.list_topics() if pattern.fullmatch(t)}
    else:
        wanted = {t: None for t in subscription.topics}
    heads: dict[TopicPartition, PartitionHead] = {}
    for topic, partitions in sorted(wanted.items()):
        try:
            info = log.topic(topic, fresh=True)
        except TopicNotFound:
            if streaming:
                continue
            raise
        numbers = range(info.partitions) if partitions is None else partitions
        for number in numbers:
            if not 0 <= number < info.partitions and not streaming:
                raise UnknownPartition(
                    f"topic {topic!r} has {info.partitions} partitions; "
                    f"there is no partition {number}",
                    field="assign",
                )
        found = log.metadata.get_heads(topic, [n for n in numbers if 0 <= n < info.partitions])
        for number, head in found.items():
            heads[(topic, number)] = head
    return heads


# ---- offsets ---------------------------------------------------------------------------


def resolve(
    log: ObjectLog,
    bound: Bound,
    head: PartitionHead,
    *,
    starting: bool,
    strategy: str = "error",
    isolation: str = READ_UNCOMMITTED,
) -> int:
    """The offset a bound names in one partition (timestamps through the refs' times); latest
    is where the isolation level's reads end, as Kafka's ListOffsets answers it."""
    topic, partition = head.topic, head.partition
    timestamp = bound.timestamp_for(topic, partition)
    if timestamp is not None:
        found = log.offset_for_time(topic, partition, timestamp)
        if found is not None:
            return found
        if starting and strategy == "error":
            raise InvalidRequest(
                f"no record of {topic}/{partition} has a timestamp >= {timestamp} (set "
                "startingOffsetsByTimestampStrategy=latest to start at the latest offset)",
                field="startingTimestamp",
            )
        return end_of(isolation, head)
    offset = bound.offset_for(topic, partition)
    if offset == EARLIEST:
        return head.log_start_offset
    if offset == LATEST:
        return end_of(isolation, head)
    return offset


def data_loss(
    options: ReadOptions, head: PartitionHead, start: int, why: str = "were removed"
) -> int:
    """Where to start when offsets from start on are gone: fail, or skip to the earliest."""
    if options.fail_on_data_loss:
        raise OffsetOutOfRange(
            f"{head.topic}/{head.partition}: offsets from {start} {why}; the earliest offset is "
            f"{head.log_start_offset} (set failOnDataLoss=false to skip what is gone)",
            log_start_offset=head.log_start_offset,
            high_watermark=head.next_offset,
        )
    return head.log_start_offset


def plan_batch(
    log: ObjectLog, options: ReadOptions, pruning: Pruning = NO_PRUNING
) -> list[ReadTask]:
    """Input partitions of a batch read: startingOffsets (inclusive) to endingOffsets."""
    heads = current_heads(log, options.subscription, streaming=False)
    ranges = []
    for (topic, partition), head in sorted(heads.items()):
        if not pruning.admits(topic, partition):
            continue
        start = resolve(
            log,
            options.starting,
            head,
            starting=True,
            strategy=options.by_timestamp_strategy,
            isolation=options.isolation,
        )
        end = resolve(log, options.ending, head, starting=False, isolation=options.isolation)
        limit = end_of(options.isolation, head)
        start, end = min(start, limit), min(end, limit)
        if end < start:
            raise InvalidRequest(
                f"{topic}/{partition}: the ending offset {end} is before the starting offset "
                f"{start}",
                field="endingOffsets",
            )
        if start < head.log_start_offset:
            start = data_loss(options, head, start)
            end = max(end, start)
        ranges.append(OffsetRange(topic, partition, *pruning.clamp(start, end)))
    return cut(log, ranges, heads, options, pruning)


def initial_offsets(log: ObjectLog, options: ReadOptions) -> dict[TopicPartition, int]:
    """Where a new streaming query starts (startingOffsets, by default latest)."""
    return {
        tp: resolve(
            log,
            options.starting,
            head,
            starting=True,
            strategy=options.by_timestamp_strategy,
            isolation=options.isolation,
        )
        for tp, head in current_heads(log, options.subscription, streaming=True).items()
    }


def latest_offsets(
    log: ObjectLog,
    options: ReadOptions,
    start: Mapping[TopicPartition, int] | None,
    max_offsets: int | None,
    target: Mapping[TopicPartition, int] | None = None,
) -> dict[TopicPartition, int]:
    """The end of the next micro-batch: the high watermarks (read_committed: the last stable
    offsets), at most max_offsets past start.

    Partitions that appeared since start (new topics, added partitions) count from their
    earliest offset. target, when set (Trigger.AvailableNow), is never passed.
    """
    heads = current_heads(log, options.subscription, streaming=True)
    latest = {tp: end_of(options.isolation, head) for tp, head in heads.items()}
    if target is not None:
        latest = {tp: min(end, target.get(tp, end)) for tp, end in latest.items()}
    if start is None or max_offsets is None:
        return latest
    begins = {tp: start.get(tp, heads[tp].log_start_offset) for tp in latest}
    return rate_limit(max_offsets, begins, latest)


def rate_limit(
    limit: int, begins: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int]
) -> dict[TopicPartition, int]:
    """Kafka source's maxOffsetsPerTrigger: share limit by each partition's backlog."""
    sizes = {tp: max(0, end - begins[tp]) for tp, end in ends.items()}
    total = sum(sizes.values())
    if total <= limit:
        return dict(ends)
    limited = {}
    for tp, end in ends.items():
        prorate = limit * (sizes[tp] / total)
        share = int(-(-prorate // 1)) if prorate < 1 else int(prorate)
        limited[tp] = min(end, begins[tp] + share) if sizes[tp] else end
    return limited


def plan_stream(
    log: ObjectLog,
    options: ReadOptions,
    start: Mapping[TopicPartition, int],
    end: Mapping[TopicPartition, int],
) -> list[ReadTask]:
    """Input partitions of the micro-batch (start, end], checking for data loss as Kafka does."""
    if start == end:
        return []
    heads = current_heads(log, options.subscription, streaming=True)
    ranges = []
    for tp in sorted(set(start) - set(end)):
        if options.fail_on_data_loss:
            raise TopicNotFound(
                f"{tp[0]}/{tp[1]} is gone (deleted topic or partition); set failOnDataLoss=false "
                "to go on without it",
                field="subscribe",
            )
    for tp, until in sorted(end.items()):
        head = heads.get(tp)
        if head is None:
            if options.fail_on_data_loss:
                raise TopicNotFound(
                    f"{tp[0]}/{tp[1]} is gone (deleted topic or partition); set "
                    "failOnDataLoss=false to go on without it",
                    field="subscribe",
                )
            continue
        begin = start.get(tp, 0)  # a partition new to the query is read from its beginning
        if until < begin:
            begin = data_loss(options, head, begin, why=f"were reset (now {until})")
            until = max(until, begin)
        if begin < head.log_start_offset:
            begin = data_loss(options, head, begin)
            until = max(until, begin)
        # read_committed never passes the LSO, even for an end planned at the other level
        until = min(until, end_of(options.isolation, head))
        if begin < until:
            ranges.append(OffsetRange(tp[0], tp[1], begin, until))
    return cut(log, ranges, heads, options)


# ---- cutting on segment boundaries, packing by bytes --------------------------------------


InputSplit = tuple[ReadTask, ...]  # one Spark input partition: tasks read one after another


def cut(
    log: ObjectLog,
    ranges: list[OffsetRange],
    heads: Mapping[TopicPartition, PartitionHead],
    options: ReadOptions,
    pruning: Pruning = NO_PRUNING,
) -> list[ReadTask]:
    """Each range's slices, grouped into tasks of at most split_bytes (one slice at least)."""

    def sliced_range(offsets: OffsetRange) -> list[Slice]:
        head = heads[(offsets.topic, offsets.partition)]
        return list(slices_of(log, head, offsets, pruning, options.isolation))

    sliced = [(offsets, sliced_range(offsets)) for offsets in ranges if offsets.start < offsets.end]
    total = sum(piece.length for _, pieces in sliced for piece in pieces)
    limit = split_bytes(total, len(sliced), options)
    tasks: list[ReadTask] = []
    for offsets, pieces in sliced:
        tasks.extend(group_slices(offsets, pieces, limit, pruning, options.isolation))
    return split_for_min_partitions(tasks, options.min_partitions)


def split_count(total: int, options: ReadOptions) -> int:
    """How many input partitions: one per core of the session (or minPartitions, if more),
    more when the data would put over maxBytesPerPartition in one."""
    by_size = -(-total // options.max_bytes_per_partition)
    return max(1, options.parallelism, options.min_partitions, by_size)


def split_bytes(total: int, files: int, options: ReadOptions) -> int:
    """The most bytes one task reads: the data, each topic partition counted like a file with
    its open cost, spread over split_count input partitions, at least the open cost and at
    most maxBytesPerPartition (Spark's maxSplitBytes rule)."""
    if not (options.parallelism or options.min_partitions):
        return options.max_bytes_per_partition
    per_split = (total + files * options.open_cost_bytes) // split_count(total, options)
    return min(options.max_bytes_per_partition, max(options.open_cost_bytes, per_split))


def pack(tasks: list[ReadTask], options: ReadOptions) -> list[InputSplit]:
    """Tasks dealt into split_count input partitions, largest first, each to the one with the
    fewest bytes so far (a task costs its bytes plus the open cost): balanced splits, one per
    core where the data allows (FACTS.md: one input partition per core reads fastest). With
    minPartitions above the tasks there are, one task per input partition."""
    if not tasks:
        return []
    count = min(len(tasks), split_count(sum(task.bytes for task in tasks), options))
    splits: list[list[ReadTask]] = [[] for _ in range(count)]
    loads = [0] * count
    for task in sorted(tasks, key=lambda t: t.bytes, reverse=True):
        lightest = loads.index(min(loads))
        splits[lightest].append(task)
        loads[lightest] += task.bytes + options.open_cost_bytes
    return [tuple(split) for split in splits]


def slices_of(
    log: ObjectLog,
    head: PartitionHead,
    offsets: OffsetRange,
    pruning: Pruning,
    isolation: str = READ_UNCOMMITTED,
) -> Iterator[Slice]:
    """The slices holding [start, end) of one partition, in offset order (read_committed:
    none of an aborted transaction's)."""
    prefix = log.config.prefix
    planned: Iterator[PlacedRef] = itertools.takewhile(
        lambda placed: placed.base_offset < offsets.end,
        log.index.placed_refs(head, offsets.start),
    )
    if isolation == READ_COMMITTED:  # aborted refs become holes, as markers are
        planned = iter(committed_plan(log.index, head, list(planned)))
    for placed in planned:
        ref = placed.ref
        if ref.has_object and pruning.admits_ref(ref):  # a marker, a hole: nothing to read
            yield Slice(
                object_key(prefix, ref.level, ref.object_id),
                ref.start,
                ref.length,
                placed.base_offset,
                placed.end_offset,
                ref.level,
            )


def group_slices(
    offsets: OffsetRange,
    slices: Iterable[Slice],
    max_bytes: int,
    pruning: Pruning = NO_PRUNING,
    isolation: str = READ_UNCOMMITTED,
) -> Iterator[ReadTask]:
    """Consecutive slices grouped into tasks of at most max_bytes (one slice at least)."""
    group: list[Slice] = []
    size = 0

    def task() -> ReadTask:
        start = max(offsets.start, group[0].base_offset)
        end = min(offsets.end, group[-1].end_offset)
        return ReadTask(
            offsets.topic, offsets.partition, start, end, tuple(group), pruning, isolation
        )

    for piece in slices:
        if group and size + piece.length > max_bytes:
            yield task()
            group, size = [], 0
        group.append(piece)
        size += piece.length
    if group:
        yield task()


def split_for_min_partitions(tasks: list[ReadTask], minimum: int) -> list[ReadTask]:
    """Split the largest tasks at slice boundaries until there are at least ``minimum``."""
    tasks = list(tasks)
    while minimum and len(tasks) < minimum:
        splittable = [t for t in tasks if len(t.slices) > 1]
        if not splittable:
            break
        task = max(splittable, key=lambda t: t.bytes)
        half = len(task.slices) // 2
        middle = task.slices[half].base_offset
        at = tasks.index(task)
        tasks[at : at + 1] = [
            replace(task, end_offset=middle, slices=task.slices[:half]),
            replace(task, start_offset=middle, slices=task.slices[half:]),
        ]
    return tasks


# ---- the Kafka source's offset JSON -------------------------------------------------------


def to_json(offsets: Mapping[TopicPartition, int]) -> OffsetsJson:
    """{"topic": {"partition": offset}} in a stable order (Spark compares offsets as text)."""
    out: OffsetsJson = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def from_json(offsets: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    try:
        return {
            (str(topic), int(partition)): int(offset)
            for topic, parts in offsets.items()
            for partition, offset in parts.items()
        }
    except (AttributeError, TypeError, ValueError) as e:
        raise InvalidRequest(f"not an objectlog/Kafka offset: {offsets!r}") from e
