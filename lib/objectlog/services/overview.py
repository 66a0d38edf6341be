"""What a log holds, summed over its topics (issue 39's overview page), from the items
describe_topic reads and no more.

Besides what the log holds, the same heads and manifest lists give, with no other read:

- the produce rate now: records produced in the last minute and the last 5 minutes, by the
  activity chart's rule (services.activity_chart: a ref's count spread over its time span),
  over the refs of each head's tail and of its manifest list's inline manifest (the newest
  refs: a tail holds at most 16, then they are spilled into the inline manifest). Refs already
  written out to manifest objects are not read (one S3 GET each): a partition that spilled
  more than a manifest's worth of refs within the window, or whose window was compacted into
  an L1 file whose ref lies in a manifest object, is undercounted;
- the compactor's backlog: L0 refs waiting (not yet compacted) among those same refs, and the
  age of the oldest (its object's ULID time);
- the topics kept as Iceberg tables (their config; no table is loaded).

DynamoDB requests: the topic registry (1 GetItem), the topics (1 BatchGetItem per 100), and per
topic summed its heads (1 BatchGetItem per 100 partitions; at most MAX_SUMMED_PARTITIONS heads
in all); S3: each summed partition's manifest list (one GET, cached by the IndexStore: lists
are immutable), for the bytes the index references. No scan."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import astuple, dataclass

from objectlog.clock import ulid_time_ms
from objectlog.format.index import LEVEL_L0, SegmentRef
from objectlog.services.activity_chart import MINUTE_MS, Span, spread
from objectlog.services.index import IndexStore
from objectlog.stores.metadata import ACTIVE, MetadataStore, PartitionHead

READ_THREADS = 8  # topics whose heads are read at once (each read is one BatchGetItem)
# The heads one overview reads at most: a topic is summed whole or not at all, in name order,
# while the partitions summed stay within this; the others are counted (topics, partitions:
# from their metadata) but not summed. A log of 10,000-partition topics would otherwise cost
# 100 BatchGetItems per topic for one page view.
MAX_SUMMED_PARTITIONS = 2_000
RATE_MINUTES = 5  # the produce rate's longer window; the shorter is the last minute
NO_L0 = 2**63 - 1  # oldest_l0_ms when no L0 ref waits
SECOND_MS = 1_000  # the produce rate's resolution


@dataclass(frozen=True)
class LogTotals:
    topics: int = 0
    partitions: int = 0
    records: int = 0  # held, in the summed partitions: high watermark - log start offset
    bytes: int = 0  # referenced by the index, in the summed partitions
    segments: int = 0  # refs in the index, in the summed partitions
    summed_partitions: int = 0  # whose heads were read
    tables: int = 0  # topics kept as Iceberg tables (objectlog.table.enabled)
    last_minute: float = 0.0  # records produced in the 60 s before now (newest refs)
    last_5_minutes: float = 0.0  # ... in the RATE_MINUTES minutes before now
    l0_refs: int = 0  # L0 refs waiting for the compactor (newest refs)
    oldest_l0_ms: int = NO_L0  # the oldest waiting L0 ref's object time: a minimum, not a sum

    def __add__(self, other: LogTotals) -> LogTotals:
        sums = [a + b for a, b in zip(astuple(self), astuple(other), strict=True)]
        sums[-1] = min(self.oldest_l0_ms, other.oldest_l0_ms)
        return LogTotals(*sums)


@dataclass(frozen=True)
class TopicTotals:
    """What summarize_topics found: the counts over every topic it kept, each one's partition
    count (in name order), and the totals of the topics summed (whole, within the budget)."""

    counted: LogTotals
    partitions: dict[str, int]
    summed: dict[str, LogTotals]


def log_totals(
    metadata: MetadataStore,
    index: IndexStore,
    visible: Callable[[list[str]], list[str]] = lambda names: names,
    max_summed: int = MAX_SUMMED_PARTITIONS,
    now_ms: int = 0,
) -> LogTotals:
    """The totals of the active topics ``visible`` keeps (summarize_topics), summed."""
    found = summarize_topics(metadata, index, visible, max_summed, now_ms)
    return sum(found.summed.values(), found.counted)


def summarize_topics(
    metadata: MetadataStore,
    index: IndexStore,
    visible: Callable[[list[str]], list[str]] = lambda names: names,
    max_summed: int = MAX_SUMMED_PARTITIONS,
    now_ms: int = 0,
) -> TopicTotals:
    """The active topics ``visible`` keeps (a caller's DESCRIBE), each summed whole while the
    heads read stay within ``max_summed``; READ_THREADS topics are read at a time, so a log
    of many topics answers in a few round trips' time, not one per topic."""
    names = metadata.registered_names()
    topics = metadata.get_topics(names)
    active = visible([n for n in names if n in topics and topics[n].state == ACTIVE])
    summed, budget = [], max_summed
    for name in active:
        if topics[name].partitions <= budget:
            summed.append(name)
            budget -= topics[name].partitions

    def topic_totals(name: str) -> LogTotals:
        heads = metadata.get_heads(name, range(topics[name].partitions)).values()
        extents = [index.extent(head) for head in heads]
        return LogTotals(
            records=sum(head.next_offset - head.log_start_offset for head in heads),
            bytes=sum(size for _, size in extents),
            segments=sum(refs for refs, _ in extents),
            summed_partitions=len(extents),
        ) + newest_totals(index, heads, now_ms)

    counted = LogTotals(
        len(active),
        sum(topics[name].partitions for name in active),
        tables=sum(topics[name].config.table_enabled for name in active),
    )
    partitions = {name: topics[name].partitions for name in active}
    if not summed:
        return TopicTotals(counted, partitions, {})
    with ThreadPoolExecutor(min(READ_THREADS, len(summed))) as pool:
        totals = dict(zip(summed, pool.map(topic_totals, summed), strict=True))
    return TopicTotals(counted, partitions, totals)


def newest_refs(index: IndexStore, head: PartitionHead) -> list[SegmentRef]:
    """The head's tail and its manifest list's inline manifest (the list is read, cached, by
    IndexStore.extent already): the partition's newest refs, with no other read."""
    refs = list(head.tail)
    if head.manifest_list:
        for entry in index.manifest_list(head.manifest_list).entries:
            if entry.inline is not None and entry.end_offset > head.log_start_offset:
                refs.extend(entry.inline)
    return refs


def newest_totals(index: IndexStore, heads: Iterable[PartitionHead], now_ms: int) -> LogTotals:
    """The produce rate (per second, spread as the activity chart spreads per minute) and
    the L0 backlog of the heads' newest refs (newest_refs)."""
    refs = [ref for head in heads for ref in newest_refs(index, head)]
    seconds = RATE_MINUTES * MINUTE_MS // SECOND_MS
    start = (now_ms // SECOND_MS - (seconds - 1)) * SECOND_MS
    spans = [Span(r.records, r.min_timestamp, r.max_timestamp) for r in refs if r.has_object]
    per_second = spread(spans, start, seconds, SECOND_MS)
    waiting = [ulid_time_ms(ref.object_id) for ref in refs if ref.level == LEVEL_L0]
    return LogTotals(
        last_minute=sum(per_second[-MINUTE_MS // SECOND_MS :]),
        last_5_minutes=sum(per_second),
        l0_refs=len(waiting),
        oldest_l0_ms=min(waiting, default=NO_L0),
    )
