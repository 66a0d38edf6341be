"""Transactions in the index (DESIGN.md section 16, docs/transactions.md): which refs a
transaction wrote, its markers, and what read_committed sees, all from the refs alone (no
data is read to decide it).

A ref's ``txn`` field:

    ""                       not transactional
    "T<producer>"            a transactional batch, written by producer (a Kafka producer's
                             key, "k<producer id>", as the head's idempotence windows name it)
    "C<producer>"            a commit marker: level LEVEL_MARKER, one offset, no object
    "A<producer>@<first>"    an abort marker; the producer's transaction on this partition
                             began at offset first

What read_committed sees of refs below the last stable offset (LSO): no markers, and no
transactional ref of a producer P that an abort marker ``A<P>@f`` at offset m covers
(f <= the ref's base offset < m). Other producers' refs between f and m are not aborted: an
abort covers its own producer's batches only, as Kafka's aborted-transactions list does.

An abort's marker can lie past the LSO while records it aborts lie below it (another
transaction, begun before the marker and still open, holds the LSO back), so aborted ranges
are collected from the refs up to the high watermark, not the LSO. A transaction's marker
follows its refs by at most ``transaction.max.timeout.ms`` of writes, which bounds how far a
reader looks ahead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from objectlog.format.index import LEVEL_MARKER, PlacedRef, SegmentRef

TRANSACTIONAL, COMMIT, ABORT = "T", "C", "A"


@dataclass(frozen=True, slots=True)
class AbortedRange:
    """A producer's aborted transaction on one partition: its batches from first_offset up to
    the abort marker at marker_offset."""

    producer: str
    first_offset: int
    marker_offset: int

    def covers(self, placed: PlacedRef) -> bool:
        return (
            producer_of(placed.ref) == self.producer
            and self.first_offset <= placed.base_offset < self.marker_offset
        )


def transactional(producer: str) -> str:
    """The txn field of a transactional batch's ref."""
    _check_producer(producer)
    return f"{TRANSACTIONAL}{producer}"


def marker(commit: bool, producer: str, first_offset: int, time_ms: int) -> SegmentRef:
    """The ref of a commit or abort marker: one offset, one (control) record, no object."""
    _check_producer(producer)
    txn = f"{COMMIT}{producer}" if commit else f"{ABORT}{producer}@{first_offset}"
    return SegmentRef(LEVEL_MARKER, "", 0, 0, 1, 1, time_ms, time_ms, txn)


def is_marker(ref: SegmentRef) -> bool:
    return ref.level == LEVEL_MARKER


def producer_of(ref: SegmentRef) -> str | None:
    """The producer of a transactional batch's ref or a marker; None for any other ref."""
    if not ref.txn:
        return None
    return ref.txn[1:].split("@", 1)[0]


def is_commit(ref: SegmentRef) -> bool:
    return is_marker(ref) and ref.txn.startswith(COMMIT)


def marker_of(ref: SegmentRef) -> tuple[bool, str] | None:
    """A marker's (commit, producer); None for any other ref, a fetch plan's holes included
    (they take a marker's level without its txn)."""
    producer = producer_of(ref)
    if not is_marker(ref) or producer is None:
        return None
    return is_commit(ref), producer


def aborted_ranges(placed: Iterable[PlacedRef]) -> list[AbortedRange]:
    """The aborted ranges the abort markers among placed name, in marker order."""
    found = []
    for each in placed:
        ref = each.ref
        if is_marker(ref) and ref.txn.startswith(ABORT):
            producer, first = ref.txn[1:].split("@", 1)
            found.append(AbortedRange(producer, int(first), each.base_offset))
    return found


def is_aborted(placed: PlacedRef, aborted: Sequence[AbortedRange]) -> bool:
    return bool(placed.ref.txn) and any(a.covers(placed) for a in aborted)


def committed(
    placed: Sequence[PlacedRef], last_stable: int, aborted: Sequence[AbortedRange]
) -> list[PlacedRef]:
    """The refs read_committed reads of placed: below the last stable offset, no markers, none
    an aborted range covers."""
    return [
        each
        for each in placed
        if each.base_offset < last_stable
        and not is_marker(each.ref)
        and not is_aborted(each, aborted)
    ]


def overlapping(aborted: Sequence[AbortedRange], start: int, end: int) -> list[AbortedRange]:
    """The aborted ranges holding offsets in [start, end): Kafka's aborted-transactions list
    for a fetch of that range."""
    return [a for a in aborted if a.first_offset < end and a.marker_offset > start]


def _check_producer(producer: str) -> None:
    if not producer or any(c in producer for c in "|@"):
        raise ValueError(f"a producer key must be non-empty without '|' or '@': {producer!r}")
