"""The read path: head -> refs (tail, or manifests) -> ranged GETs -> Arrow -> records.

A fetch reads whole slices (ranged GETs issued concurrently across segments and partitions;
slices side by side in one object share a GET), turns L0 positions into absolute offsets and
trims to the caller's limits. An object that disappeared because a compaction swap replaced it
is re-resolved through the head. The asyncio client decodes off its loop (concurrency.offload).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from objectlog import concurrency
from objectlog.cache import LruCache
from objectlog.errors import ObjectLogError, ObjectNotFound, OffsetOutOfRange, UnknownPartition
from objectlog.format.index import LEVEL_L0, PlacedRef
from objectlog.format.l1 import decode_ref
from objectlog.format.layout import object_key
from objectlog.format.records import Record
from objectlog.format.segment import SCHEMA, table_to_records
from objectlog.services.activity import End, TopicActivity
from objectlog.services.footers import Footers
from objectlog.services.index import IndexStore
from objectlog.services.isolation import READ_COMMITTED, READ_UNCOMMITTED, committed_plan, end_of
from objectlog.services.read_ahead import ReadAhead
from objectlog.stores.metadata import MetadataStore, PartitionHead

DEFAULT_MAX_BYTES = 1 << 20
SLICE_CACHE_BYTES = 128 << 20
SLICE_CACHE_ENTRIES = 8192
RESOLVE_ATTEMPTS = 3
MAX_COALESCED_BYTES = 8 << 20  # adjacent slices read with one GET, up to this many bytes
POLL_START_S = 0.01
POLL_MAX_S = 0.1


class ReadMany(Protocol):
    """Reads byte ranges: each one's bytes, or then(index, bytes) as it arrives, or the
    ObjectLogError reading it raised."""

    def __call__(
        self,
        ranges: Sequence[tuple[str, int, int]],
        then: Callable[[int, bytes], Any] | None = None,
    ) -> list[Any]: ...


@dataclass(frozen=True)
class _Undecodable:
    """A slice whose bytes did not decode; raised by the caller, not by the reader."""

    error: Exception


@dataclass(frozen=True)
class FetchRequest:
    """``read_ahead_bytes``: also read, in the background, the slices that follow this
    fetch's, up to that many bytes (services.read_ahead), for the fetch that comes next."""

    topic: str
    partition: int
    offset: int
    max_bytes: int = DEFAULT_MAX_BYTES
    max_records: int | None = None
    read_ahead_bytes: int = 0
    # read_committed: up to the last stable offset, without aborted transactions' records
    isolation: str = READ_UNCOMMITTED


@dataclass
class FetchResult:
    """Records from one partition plus its offsets. ``table`` is the columnar form."""

    topic: str
    partition: int
    table: pa.Table
    next_offset: int
    high_watermark: int
    log_start_offset: int
    stats: dict[str, float] = field(default_factory=dict)
    last_stable_offset: int = -1  # where read_committed stops (the high watermark if none open)
    # The refs the fetch planned, in offset order: the records' refs, markers, and for
    # read_committed aborted transactions' refs as holes (isolation.hole); the Kafka agent
    # answers markers as control batches and tags transactional records with their producer.
    # They may reach past the records when a budget trimmed them.
    refs: tuple[PlacedRef, ...] = ()

    @functools.cached_property
    def records(self) -> list[Record]:
        return table_to_records(self.table)

    @property
    def end(self) -> End:  # the ends of the head it read, as services.activity keeps them
        return self.high_watermark, self.last_stable_offset, self.log_start_offset

    def __len__(self) -> int:
        return self.table.num_rows

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)


class Reader:
    def __init__(
        self,
        metadata: MetadataStore,
        index: IndexStore,
        prefix: str,
        read_many: ReadMany,
        partition_count: Callable[[str], int],
        footers: Footers,
        sleep: Callable[[float], None] = concurrency.sleep,
        activity: TopicActivity | None = None,
    ) -> None:
        self.metadata = metadata
        self.activity = activity  # a long poll stops reading a still head (services.activity)
        self.index = index
        self.prefix = prefix
        self.footers = footers
        self.read_many = read_many
        self.partition_count = partition_count
        self.sleep = sleep
        self._slices = slice_cache()
        self._read_ahead = ReadAhead()

    def close(self) -> None:
        self._read_ahead.close()

    def head(self, topic: str, partition: int) -> PartitionHead:
        head = self.metadata.get_head(topic, partition)
        if head is None:
            count = self.partition_count(topic)  # raises TopicNotFound
            raise UnknownPartition(
                f"topic {topic!r} has {count} partitions; there is no partition {partition}",
                field="partition",
            )
        return head

    def fetch(self, request: FetchRequest, max_wait_ms: int = 0) -> FetchResult:
        head = self._wait_for_data(request, max_wait_ms)
        return self.fetch_many([request], heads={(request.topic, request.partition): head})[0]

    def fetch_many(
        self,
        requests: Sequence[FetchRequest],
        heads: dict[tuple[str, int], PartitionHead] | None = None,
    ) -> list[FetchResult]:
        """Fetch several partitions at once: their slices are read concurrently."""
        heads = dict(heads or {})
        for request in requests:
            key = (request.topic, request.partition)
            if key not in heads:
                heads[key] = self.head(*key)
        results: list[FetchResult | None] = [None] * len(requests)
        pending = list(range(len(requests)))
        for attempt in range(RESOLVE_ATTEMPTS):
            self.index.preload([(heads[_key(requests[i])], requests[i].offset) for i in pending])
            plans, missing = self._plans(requests, heads, pending)
            self._start_reading_ahead(requests, heads, plans)
            tables, unreadable = self._read_plans(plans)
            missing.update(unreadable)
            for i in pending:
                if i not in missing:
                    results[i] = self._result(
                        requests[i], heads[_key(requests[i])], plans[i], tables[i]
                    )
            pending = sorted(missing)
            if not pending:
                break
            if attempt == RESOLVE_ATTEMPTS - 1:
                raise missing[pending[0]]
            for i in pending:  # replaced by a compaction swap: the head knows the new refs
                heads[_key(requests[i])] = self.head(*_key(requests[i]))
        return [r for r in results if r is not None]

    def _plans(
        self,
        requests: Sequence[FetchRequest],
        heads: dict[tuple[str, int], PartitionHead],
        pending: Sequence[int],
    ) -> tuple[dict[int, list[PlacedRef]], dict[int, ObjectLogError]]:
        """Each pending request's refs, or the ObjectNotFound of an index object that a swap
        replaced and GC deleted since its head was read (re-resolved like a missing slice)."""
        plans: dict[int, list[PlacedRef]] = {}
        missing: dict[int, ObjectLogError] = {}
        for i in pending:
            try:
                plans[i] = self._plan(requests[i], heads[_key(requests[i])])
            except ObjectNotFound as e:
                missing[i] = e
        return plans, missing

    def _start_reading_ahead(
        self,
        requests: Sequence[FetchRequest],
        heads: dict[tuple[str, int], PartitionHead],
        plans: dict[int, list[PlacedRef]],
    ) -> None:
        """Start reading the slices after each plan that asked for it, from the same head."""
        loads: dict[tuple[str, int, int], Callable[[], pa.Table]] = {}
        for i, planned in plans.items():
            request, head = requests[i], heads[_key(requests[i])]
            if not request.read_ahead_bytes or not planned:
                continue
            end = planned[-1].end_offset
            if end >= _end(request, head):
                continue  # at the tail: nothing to read ahead
            after = FetchRequest(
                request.topic,
                request.partition,
                end,
                request.read_ahead_bytes,
                isolation=request.isolation,
            )
            try:
                ahead = self._plan(after, head)
            except ObjectLogError:
                continue  # an index object gone: the next fetch reads the head again
            for placed in ahead:
                if not placed.ref.has_object:
                    continue
                key = self._range(placed)
                if self._slices.get(key) is None:
                    loads[key] = functools.partial(self._load_ahead, placed, key)
        if loads:
            self._read_ahead.start(loads)

    def _load_ahead(self, placed: PlacedRef, key: tuple[str, int, int]) -> pa.Table:
        [data] = self.read_many([key])
        if isinstance(data, ObjectLogError):
            raise data
        table = self._decode(placed, data)
        self._slices.put(key, table)
        return table

    def _wait_for_data(self, request: FetchRequest, max_wait_ms: int) -> PartitionHead:
        head = self._watched_head(request)
        deadline = time.monotonic() + max_wait_ms / 1000
        delay = POLL_START_S
        while request.offset >= _end(request, head) and time.monotonic() < deadline:
            self._check_range(request, head)
            self.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, POLL_MAX_S)
            if self.activity is None or self.activity.due(request.topic, [request.partition]):
                head = self._watched_head(request)
        return head

    def _watched_head(self, request: FetchRequest) -> PartitionHead:
        """The partition's head, read now and shown to the activity's waiters."""
        started = self.activity.now() if self.activity is not None else 0.0
        head = self.head(request.topic, request.partition)
        if self.activity is not None:
            self.activity.saw_heads(request.topic, [head], started)
        return head

    @staticmethod
    def _check_range(request: FetchRequest, head: PartitionHead) -> None:
        if request.offset < head.log_start_offset or request.offset > head.next_offset:
            raise OffsetOutOfRange(
                f"offset {request.offset} of {request.topic}/{request.partition} is out of range: "
                f"the earliest offset is {head.log_start_offset} and the high watermark is "
                f"{head.next_offset}",
                log_start_offset=head.log_start_offset,
                high_watermark=head.next_offset,
            )

    def _plan(self, request: FetchRequest, head: PartitionHead) -> list[PlacedRef]:
        """The refs holding the fetch's offsets, up to its end and its budgets. Markers, and
        for read_committed the refs of aborted transactions, stay in the plan as holes
        (format.txn): they take offsets, hold nothing to read, and the next fetch starts past
        them."""
        self._check_range(request, head)
        planned: list[PlacedRef] = []
        budget_bytes, budget_records = request.max_bytes, request.max_records
        end = _end(request, head)
        for placed in self.index.placed_refs(head, request.offset):
            if placed.base_offset >= end:
                break
            planned.append(placed)
            budget_bytes -= placed.ref.length
            if budget_records is not None:
                budget_records -= placed.end_offset - max(placed.base_offset, request.offset)
            if budget_bytes <= 0 or (budget_records is not None and budget_records <= 0):
                break
        if request.isolation == READ_COMMITTED:
            return committed_plan(self.index, head, planned)
        return planned

    def _read_plans(
        self, plans: dict[int, list[PlacedRef]]
    ) -> tuple[dict[int, list[pa.Table]], dict[int, ObjectLogError]]:
        # Slices found in the cache are held here: putting the ones read below may evict them.
        tables_by_range: dict[tuple[str, int, int], pa.Table] = {}
        wanted: list[tuple[str, int, int]] = []
        wanted_refs: list[PlacedRef] = []
        seen: set[tuple[str, int, int]] = set()
        for placed_refs in plans.values():
            for placed in placed_refs:
                if not placed.ref.has_object:
                    continue  # a marker or an aborted transaction's ref: nothing to read
                key = self._range(placed)
                if key in seen:
                    continue
                seen.add(key)
                table = self._slices.get(key)
                if table is None:
                    table = self._read_ahead.take(key)
                if table is None:
                    wanted.append(key)
                    wanted_refs.append(placed)
                else:
                    tables_by_range[key] = table

        failed: dict[tuple[str, int, int], ObjectLogError] = self._load_footers(wanted_refs)
        if failed:
            kept = [i for i, key in enumerate(wanted) if key not in failed]
            wanted = [wanted[i] for i in kept]
            wanted_refs = [wanted_refs[i] for i in kept]

        runs = coalesce(wanted)

        def decode(index: int, data: bytes) -> list[pa.Table | _Undecodable]:
            # Runs as each GET completes, while the others are still in flight.
            run, view, decoded = runs[index], memoryview(data), []
            for member in run.members:
                key = wanted[member]
                _, start, length = key
                piece = view[start - run.start : start - run.start + length]
                try:
                    table = self._decode(wanted_refs[member], piece)
                except Exception as e:
                    decoded.append(_Undecodable(e))
                else:
                    self._slices.put(key, table)
                    decoded.append(table)
            return decoded

        read = self.read_many([run.range for run in runs], decode)
        for run, result in zip(runs, read, strict=True):
            pieces = result if isinstance(result, list) else [result] * len(run.members)
            for member, piece in zip(run.members, pieces, strict=True):
                key = wanted[member]
                if isinstance(piece, _Undecodable):
                    raise piece.error
                if isinstance(piece, ObjectLogError):
                    failed[key] = piece
                else:
                    tables_by_range[key] = piece
        tables: dict[int, list[pa.Table]] = {}
        missing: dict[int, ObjectLogError] = {}
        for i, placed_refs in plans.items():
            tables[i] = []
            for placed in placed_refs:
                if not placed.ref.has_object:
                    continue
                key = self._range(placed)
                error = failed.get(key)
                if isinstance(error, ObjectNotFound):
                    missing[i] = error
                    break
                if error is not None:
                    raise error
                tables[i].append(tables_by_range[key])
        return tables, missing

    def _range(self, placed: PlacedRef) -> tuple[str, int, int]:
        ref = placed.ref
        return object_key(self.prefix, ref.level, ref.object_id), ref.start, ref.length

    def _decode(self, placed: PlacedRef, data: bytes | memoryview) -> pa.Table:
        return concurrency.offload(decode_ref, placed, data, self.footers, self.prefix)

    def _load_footers(
        self, placed_refs: Sequence[PlacedRef]
    ) -> dict[tuple[str, int, int], ObjectLogError]:
        """Fetch (or find cached) the footer of every L1 file to read; the ranges of files
        that are gone, with their error (a compaction swap replaced them)."""
        failed: dict[tuple[str, int, int], ObjectLogError] = {}
        for placed in placed_refs:
            if placed.ref.level == LEVEL_L0:
                continue
            key = self._range(placed)
            try:
                self.footers.get(key[0])
            except ObjectNotFound as e:
                failed[key] = e
        return failed

    def _result(
        self,
        request: FetchRequest,
        head: PartitionHead,
        plan: list[PlacedRef],
        tables: list[pa.Table],
    ) -> FetchResult:
        table = pa.concat_tables(tables) if tables else SCHEMA.empty_table()
        table = _trim(_from_offset(table, request.offset), request.max_bytes, request.max_records)
        if table.num_rows:
            next_offset = table.column("offset")[-1].as_py() + 1
        else:  # nothing visible in what we read (compaction gaps): skip past it
            next_offset = max(request.offset, plan[-1].end_offset if plan else request.offset)
        return FetchResult(
            topic=request.topic,
            partition=request.partition,
            table=table,
            next_offset=next_offset,
            high_watermark=head.next_offset,
            log_start_offset=head.log_start_offset,
            last_stable_offset=head.last_stable_offset,
            refs=tuple(plan),
        )


@dataclass(frozen=True)
class _Run:
    """Adjacent ranges of one object read with one GET: members index the ranges, in order."""

    key: str
    start: int
    length: int
    members: tuple[int, ...]

    @property
    def range(self) -> tuple[str, int, int]:
        return self.key, self.start, self.length


def coalesce(ranges: Sequence[tuple[str, int, int]]) -> list[_Run]:
    """Ranges that follow each other in one object, joined into runs of at most
    MAX_COALESCED_BYTES: one GET for the slices of several partitions that one flush wrote
    side by side, or for consecutive row groups of an L1 file (GETs are billed per request)."""
    runs: list[_Run] = []
    for i in sorted(range(len(ranges)), key=ranges.__getitem__):
        key, start, length = ranges[i]
        last = runs[-1] if runs else None
        if (
            last is not None
            and last.key == key
            and last.start + last.length == start
            and last.length + length <= MAX_COALESCED_BYTES
        ):
            runs[-1] = _Run(key, last.start, last.length + length, (*last.members, i))
        else:
            runs.append(_Run(key, start, length, (i,)))
    return runs


def slice_cache() -> LruCache[tuple[str, int, int], pa.Table]:
    """Decoded slices by object range, bounded by their Arrow bytes: a small slice (a low-rate
    partition's flush) costs what it holds, so a reader serving many consumers (the Kafka
    agent) keeps thousands of them, and a few large L1 row groups cannot exceed the bound."""
    return LruCache(SLICE_CACHE_ENTRIES, max_bytes=SLICE_CACHE_BYTES, size_of=_buffer_bytes)


def _buffer_bytes(table: pa.Table) -> int:
    """A decoded slice's memory: its buffers' sizes (Table.nbytes walks every array's
    offsets to count only what a slice references: 37 us a slice against 1 us; a cached slice
    is never a slice of a larger table, so both count the same)."""
    return int(table.get_total_buffer_size())


def _end(request: FetchRequest, head: PartitionHead) -> int:
    return end_of(request.isolation, head)


def _key(request: FetchRequest) -> tuple[str, int]:
    return request.topic, request.partition


def _from_offset(table: pa.Table, offset: int) -> pa.Table:
    """The records at offset and after. A partition's offsets ascend, so this is a slice of
    the table, not a copy of what it keeps (a fetch that starts inside a slice, as each one
    after a trimmed fetch does, would otherwise copy about max_bytes)."""
    if not table.num_rows or table.column("offset")[0].as_py() >= offset:
        return table
    first = int(np.searchsorted(table.column("offset").to_numpy(), offset, side="left"))
    return table.slice(first)


def _trim(table: pa.Table, max_bytes: int, max_records: int | None) -> pa.Table:
    """Keep whole records up to max_bytes (at least one, as Kafka does) and max_records."""
    if max_records is not None and table.num_rows > max_records:
        table = table.slice(0, max_records)
    if not table.num_rows:
        return table
    sizes = pc.add(
        pc.fill_null(pc.binary_length(table.column("key")), 0),
        pc.fill_null(pc.binary_length(table.column("value")), 0),
    )
    cumulative = np.cumsum(sizes.to_numpy())
    keep = max(1, int(np.searchsorted(cumulative, max_bytes, side="right")))
    return table.slice(0, keep) if keep < table.num_rows else table
