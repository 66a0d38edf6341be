"""The benchmarks' pricing (bench.run.priced_requests, bench.costs.spending) against sums worked
out by hand: request counts and item sizes in, dollars out, no endpoint."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

from bench.costs import SECONDS_PER_MONTH, spending
from bench.meter import Tally, WrittenSizes, is_head
from bench.run import PRODUCED, READ, Priced, priced_requests, read_units, write_units

PUT, GET = 0.005 / 1000, 0.0004 / 1000  # USD per request
WRU, RRU = 0.625 / 1e6, 0.125 / 1e6  # USD per request unit


def line(lines: Sequence[Priced], kind: str) -> Priced:
    """The one priced line whose kind starts with kind (some kinds end with a measured value)."""
    (found,) = [priced for priced in lines if priced.kind.startswith(kind)]
    return found


def test_request_units_round_up_item_by_item() -> None:
    # 1 WRU per KiB of each item written, 1 RRU per 4 KiB of each item read; never below 1.
    assert write_units(Tally(written=[1024, 1025, 10])) == pytest.approx((1 + 2 + 1) / 3)
    with pytest.raises(ValueError, match="sizing_heads"):
        write_units(Tally())  # nothing sized: no figure rather than a guess
    assert read_units([4096, 4097, 0]) == 1 + 2 + 1


def test_a_write_is_billed_for_the_larger_of_the_item_before_and_after_it() -> None:
    sizes = WrittenSizes()
    assert [sizes.billed("head 0", size) for size in (300, 900, 400, 500)] == [300, 900, 900, 500]
    assert sizes.billed("head 1", 200) == 200  # each item on its own


def test_priced_requests_by_kind_and_side() -> None:
    produced = Tally(
        counts=Counter(
            {"PutObject:l0": 1000, "PutObject:index": 10, "UpdateItem": 90, "PutItem": 10}
        ),
        written=[500, 1500],  # 1 and 2 WRU: every produce-path write at 1.5
        read=[300],
    )
    read = Tally(
        counts=Counter(
            {"GetObject:l0": 2000, "GetObject:index": 5, "BatchGetItem": 7, "UpdateItem": 3}
        ),
        read=[100, 5000, 200],
        read_heads=[100, 5000],  # 1 + 2 RRU; the 200 B item is a group's
    )
    lines = priced_requests(produced, read)
    expected = {
        "S3 PUT: data": (PRODUCED, 1000, PUT),
        "S3 PUT: index": (PRODUCED, 10, PUT),
        "DynamoDB write units: commits": (PRODUCED, 100 * 1.5, WRU),
        "DynamoDB read units: the producer's": (PRODUCED, 1, RRU),
        "S3 GET: slices": (READ, 2000, GET),
        "S3 GET: index": (READ, 5, GET),
        "DynamoDB read units: heads": (READ, 3, RRU),
        "DynamoDB read units: topic metadata, group": (READ, 1, RRU),
        "DynamoDB write units: group": (READ, 3, WRU),
    }
    assert len(lines) == len(expected)
    for kind, (side, count, price) in expected.items():
        priced = line(lines, kind)
        assert (priced.side, priced.count, priced.price) == (side, pytest.approx(count), price)
    assert "1.50 WRU each" in line(lines, "DynamoDB write units: commits").kind
    by_hand = 1010 * PUT + 150 * WRU + 1 * RRU + 2005 * GET + 4 * RRU + 3 * WRU
    assert sum(priced.usd for priced in lines) == pytest.approx(by_hand)


def test_spending_per_second_per_gb_per_month_and_shares() -> None:
    lines = [
        Priced("commits", PRODUCED, 100, 0.01),
        Priced("heads", READ, 300, 0.01),
        Priced("index GETs", READ, 0, 1.0),  # nothing sent: no line
    ]
    spends = spending(lines, seconds=10, gb=2)
    assert [spend.kind for spend in spends] == ["heads", "commits"]  # largest first
    heads, commits = spends
    assert (heads.per_second, heads.per_gb, heads.usd_per_gb) == (30, 150, pytest.approx(1.5))
    assert heads.usd_per_month == pytest.approx(0.3 * SECONDS_PER_MONTH)
    assert (heads.share, commits.share) == (pytest.approx(0.75), pytest.approx(0.25))
    assert SECONDS_PER_MONTH == 730 * 3600


def test_head_reads_are_told_from_other_items() -> None:
    head = {"pk": {"S": "part#t#0"}, "sk": {"S": "head"}}
    topic = {"pk": {"S": "topic#t"}, "sk": {"S": "meta"}}
    offset = {"pk": {"S": "group#g"}, "sk": {"S": "offset#t#0"}}
    assert [is_head(item) for item in (head, topic, offset)] == [True, False, False]
    tally = Tally(read=[10], read_heads=[10])
    tally += Tally(read=[20, 30], read_heads=[30])
    assert (tally.read, tally.read_heads) == ([10, 20, 30], [10, 30])
