"""Records produced per minute, from the segment index alone (issue 39's topic chart): no
counter is kept anywhere, so the chart costs no write and no storage.

Each ref of the index holds a record count and the minimum and maximum timestamp of its
records. The chart spreads a ref's count evenly over the minutes its time span touches (from
the minute of its minimum timestamp to the minute of its maximum, both included, minutes
aligned on the epoch) and sums the shares per minute. A ref written in one flush spans a few
milliseconds, so its records land in one minute; a compacted L1 ref spans the hours it merged,
so its records are smeared evenly over them (the chart's approximation, said in its answer by
``resolution_seconds``). Transaction markers are not records and are left out.

Reading: a partition's head (the tail's refs) and its manifest list (one cached S3 read), and
only the manifests whose summary says they hold a record newer than the window's start (each
one cached S3 read): a window of the last hour reads the tail and at most the newest manifest.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from objectlog.format.index import LEVEL_MARKER, SegmentRef
from objectlog.services.index import IndexStore
from objectlog.stores.metadata import PartitionHead

MINUTE_MS = 60_000


@dataclass(frozen=True, slots=True)
class Span:
    """What the chart needs of a ref: how many records, over which time span (ms)."""

    records: int
    min_timestamp: int
    max_timestamp: int


def window_start(now_ms: int, minutes: int, resolution_ms: int = MINUTE_MS) -> int:
    """The first bucket's start: ``minutes`` buckets ending with the one that holds now."""
    return (now_ms // resolution_ms - (minutes - 1)) * resolution_ms


def spread(
    spans: Iterable[Span], start_ms: int, buckets: int, resolution_ms: int = MINUTE_MS
) -> list[float]:
    """Records per bucket of ``resolution_ms`` from ``start_ms`` (aligned on the resolution):
    each span's count shared evenly by the buckets its span touches, the shares that fall
    outside the window dropped. A span whose maximum precedes its minimum counts as its
    minimum's bucket alone."""
    counts = [0.0] * buckets
    first_bucket = start_ms // resolution_ms
    last_bucket = first_bucket + buckets - 1
    for span in spans:
        if span.records <= 0:
            continue
        first = span.min_timestamp // resolution_ms
        last = max(first, span.max_timestamp // resolution_ms)
        if last < first_bucket or first > last_bucket:
            continue
        share = span.records / (last - first + 1)
        for bucket in range(max(first, first_bucket), min(last, last_bucket) + 1):
            counts[bucket - first_bucket] += share
    return counts


def refs_since(index: IndexStore, head: PartitionHead, since_ms: int) -> Iterator[SegmentRef]:
    """The head's record refs holding a record at or after since_ms: the manifests whose
    summary ends before it are not read."""
    if head.manifest_list:
        for entry in index.manifest_list(head.manifest_list).entries:
            if entry.max_timestamp < since_ms or entry.end_offset <= head.log_start_offset:
                continue
            for placed in index.manifest_of(entry).placed():
                if placed.base_offset < head.tail_base:  # the tail holds the rest
                    yield placed.ref
    yield from head.tail


def spans_since(index: IndexStore, heads: Iterable[PartitionHead], since_ms: int) -> Iterator[Span]:
    """The record refs of every head with a record at or after since_ms, as spans."""
    for head in heads:
        for ref in refs_since(index, head, since_ms):
            if ref.level != LEVEL_MARKER and ref.max_timestamp >= since_ms:
                yield Span(ref.records, ref.min_timestamp, ref.max_timestamp)
