"""What a log holds, summed over its topics (issue 39's overview page), from the items
describe_topic reads and no more.

DynamoDB requests: the topic registry (1 GetItem), the topics (1 BatchGetItem per 100), and per
topic summed its heads (1 BatchGetItem per 100 partitions; at most MAX_SUMMED_PARTITIONS heads
in all); S3: each summed partition's manifest list (one GET, cached by the IndexStore: lists
are immutable), for the bytes the index references. No scan."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import astuple, dataclass

from objectlog.services.index import IndexStore
from objectlog.stores.metadata import ACTIVE, MetadataStore

READ_THREADS = 8  # topics whose heads are read at once (each read is one BatchGetItem)
# The heads one overview reads at most: a topic is summed whole or not at all, in name order,
# while the partitions summed stay within this; the others are counted (topics, partitions:
# from their metadata) but not summed. A log of 10,000-partition topics would otherwise cost
# 100 BatchGetItems per topic for one page view.
MAX_SUMMED_PARTITIONS = 2_000


@dataclass(frozen=True)
class LogTotals:
    topics: int = 0
    partitions: int = 0
    records: int = 0  # held, in the summed partitions: high watermark - log start offset
    bytes: int = 0  # referenced by the index, in the summed partitions
    segments: int = 0  # refs in the index, in the summed partitions
    summed_partitions: int = 0  # whose heads were read

    def __add__(self, other: LogTotals) -> LogTotals:
        return LogTotals(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))


def log_totals(
    metadata: MetadataStore,
    index: IndexStore,
    visible: Callable[[list[str]], list[str]] = lambda names: names,
    max_summed: int = MAX_SUMMED_PARTITIONS,
) -> LogTotals:
    """The totals of the active topics ``visible`` keeps (a caller's DESCRIBE); the heads of
    at most ``max_summed`` partitions are read, READ_THREADS topics at a time, so a log of
    many topics answers in a few round trips' time, not one per topic."""
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
        )

    counted = LogTotals(len(active), sum(topics[name].partitions for name in active))
    if not summed:
        return counted
    with ThreadPoolExecutor(min(READ_THREADS, len(summed))) as pool:
        return sum(pool.map(topic_totals, summed), counted)
