"""Kafka's isolation levels on the read path (docs/transactions.md): where a fetch ends, and
which refs read_committed reads.

read_uncommitted reads up to the high watermark; read_committed up to the last stable offset
(PartitionHead.last_stable_offset), and keeps the refs of aborted transactions in its plan as
holes: they take their offsets, hold nothing to read, and the next fetch starts past them.
Markers are holes for both (format.txn).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Protocol

from objectlog.format.index import LEVEL_MARKER, PlacedRef
from objectlog.format.txn import AbortedRange, aborted_ranges, is_aborted, is_marker, producer_of
from objectlog.stores.metadata import PartitionHead

READ_UNCOMMITTED, READ_COMMITTED = "read_uncommitted", "read_committed"  # Kafka's names
ISOLATION_LEVELS = (READ_UNCOMMITTED, READ_COMMITTED)


class PlacedRefs(Protocol):
    """What reads a head's refs in offset order (services.index.IndexStore)."""

    def placed_refs(self, head: PartitionHead, from_offset: int) -> Iterator[PlacedRef]: ...


def end_for(isolation: str, high_watermark: int, last_stable_offset: int) -> int:
    """Where a reader at this isolation level ends: Kafka's latest offset for it."""
    return last_stable_offset if isolation == READ_COMMITTED else high_watermark


def end_of(isolation: str, head: PartitionHead) -> int:
    """Where a fetch at this isolation level stops on the head."""
    return end_for(isolation, head.next_offset, head.last_stable_offset)


def committed_plan(
    index: PlacedRefs, head: PartitionHead, planned: Sequence[PlacedRef]
) -> list[PlacedRef]:
    """planned with the refs of aborted transactions made holes."""
    aborted = aborted_in(index, head, planned)
    return [hole(p) if is_aborted(p, aborted) else p for p in planned]


def aborted_in(
    index: PlacedRefs, head: PartitionHead, planned: Sequence[PlacedRef]
) -> list[AbortedRange]:
    """The aborted ranges of the transactions with refs in planned: their markers are looked
    for from the plan on, up to the high watermark, until every one is found (a transaction's
    marker follows its refs, and below the last stable offset it is written)."""
    waiting: dict[str, int] = {}  # producer -> its last transactional ref's base in the plan
    for placed in planned:
        producer = producer_of(placed.ref)
        if producer is not None and not is_marker(placed.ref):
            waiting[producer] = max(waiting.get(producer, -1), placed.base_offset)
    if not waiting:
        return []
    markers = []
    for placed in index.placed_refs(head, planned[0].base_offset):
        if placed.base_offset >= head.next_offset or not waiting:
            break
        if is_marker(placed.ref):
            markers.append(placed)
            producer = producer_of(placed.ref)
            if producer in waiting and placed.base_offset > waiting[producer]:
                del waiting[producer]
    return aborted_ranges(markers)


def hole(placed: PlacedRef) -> PlacedRef:
    """A ref as a fetch plan keeps one it must not read: its offsets, nothing to read."""
    ref = placed.ref
    return PlacedRef(placed.base_offset, replace(ref, level=LEVEL_MARKER, object_id="", txn=""))
