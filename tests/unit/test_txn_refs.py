"""format.txn: transactional refs and markers in the index, and what read_committed sees of
them from the refs alone (issue 36, docs/transactions.md)."""

from __future__ import annotations

import pytest

from objectlog.format.index import LEVEL_L0, LEVEL_MARKER, Manifest, PlacedRef, SegmentRef, place
from objectlog.format.txn import (
    AbortedRange,
    aborted_ranges,
    committed,
    is_commit,
    is_marker,
    marker,
    overlapping,
    producer_of,
    transactional,
)


def data(span: int, producer: str | None = None) -> SegmentRef:
    txn = transactional(producer) if producer else ""
    return SegmentRef(LEVEL_L0, "01OBJECT", 0, 100, span, span, 1, 2, txn)


def test_refs_encode_their_transaction_and_old_refs_decode_as_before() -> None:
    old = "0|01OBJECT|0|100|3|3|1|1"  # a ref written before transactions
    assert SegmentRef.decode(old).txn == "" and SegmentRef.decode(old).encode() == old
    for ref in (data(3, "k7"), marker(True, "k7", 10, 5), marker(False, "k7", 10, 5)):
        assert SegmentRef.decode(ref.encode()) == ref
    manifest = Manifest(0, (data(3), data(2, "k7"), marker(False, "k7", 3, 9)))
    assert Manifest.from_json(manifest.to_json()) == manifest


def test_markers_take_one_offset_and_no_object() -> None:
    commit, abort = marker(True, "k1", 4, 9), marker(False, "k1", 4, 9)
    assert commit.level == abort.level == LEVEL_MARKER and commit.span == 1
    assert commit.object_id == "" and commit.length == 0
    assert is_marker(commit) and is_commit(commit) and not is_commit(abort)
    assert producer_of(abort) == producer_of(data(1, "k1")) == "k1"
    assert producer_of(data(1)) is None and not is_marker(data(1))
    with pytest.raises(ValueError, match="producer key"):
        transactional("k|1")


# offsets:  0-1 plain, 2-3 k1 (aborted), 4 k2 (committed), 5-6 k1 (aborted), 7 k2's commit,
#           8 k1's abort marker, 9 k3 (open: its transaction holds the LSO at 9)
LOG = list(
    place(
        0,
        [
            data(2),
            data(2, "k1"),
            data(1, "k2"),
            data(2, "k1"),
            marker(True, "k2", 4, 1),
            marker(False, "k1", 2, 1),
            data(1, "k3"),
        ],
    )
)


def offsets(placed: list[PlacedRef]) -> list[int]:
    return [p.base_offset for p in placed]


def test_read_committed_skips_markers_and_the_aborted_producers_refs_only() -> None:
    aborted = aborted_ranges(LOG)
    assert aborted == [AbortedRange("k1", 2, 8)]
    assert offsets(committed(LOG, 9, aborted)) == [0, 4]  # k2's refs between k1's stay
    assert offsets(committed(LOG, 4, aborted)) == [0]  # nothing at or past the LSO


def test_an_abort_marker_past_the_lso_still_aborts_what_lies_below_it() -> None:
    """k1's records (2-3) lie below the LSO that k2's open transaction holds at 4, and its
    abort marker (8) lies past it: the ranges come from every ref up to the high watermark."""
    below_lso = [p for p in LOG if p.base_offset < 4]
    assert aborted_ranges(below_lso) == []  # looking only below the LSO would miss the abort
    assert offsets(committed(LOG, 4, aborted_ranges(LOG))) == [0]


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [(0, 2, []), (0, 3, ["k1"]), (8, 10, []), (7, 9, ["k1"]), (3, 4, ["k1"])],
)
def test_the_aborted_transactions_list_of_a_fetch_range(
    start: int, end: int, expected: list[str]
) -> None:
    assert [a.producer for a in overlapping(aborted_ranges(LOG), start, end)] == expected
