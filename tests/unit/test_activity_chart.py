"""The activity chart's rule (services.activity_chart): a ref's record count is spread evenly
over the minutes its time span touches, and only the window's minutes are answered."""

from __future__ import annotations

import pytest

from objectlog.services.activity_chart import MINUTE_MS, Span, spread, window_start

T0 = 1_700_000_040_000  # a minute's start (divisible by 60 000)


def test_a_ref_within_one_minute_counts_there_whole() -> None:
    counts = spread([Span(10, T0 + 1_000, T0 + 59_999)], T0, 3)
    assert counts == [10.0, 0.0, 0.0]


def test_a_ref_spanning_minutes_is_shared_evenly_by_each_minute_it_touches() -> None:
    # from the first minute's last second to the third minute's first: three minutes touched
    counts = spread([Span(9, T0 + 59_000, T0 + 2 * MINUTE_MS + 1_000)], T0, 4)
    assert counts == [3.0, 3.0, 3.0, 0.0]


def test_the_shares_outside_the_window_are_dropped_not_moved_inside() -> None:
    # 10 minutes touched, 3 inside the window (minutes 5..7 of the span)
    span = Span(100, T0 - 5 * MINUTE_MS, T0 + 4 * MINUTE_MS + 10)
    assert spread([span], T0, 3) == pytest.approx([10.0, 10.0, 10.0])


def test_refs_add_up_and_refs_outside_the_window_count_nothing() -> None:
    spans = [
        Span(4, T0, T0),
        Span(6, T0 + 10, T0 + 20),
        Span(50, T0 - 2 * MINUTE_MS, T0 - MINUTE_MS),  # before the window
        Span(7, T0 + 3 * MINUTE_MS, T0 + 3 * MINUTE_MS),  # after it
        Span(0, T0, T0),  # a ref compaction emptied
    ]
    assert spread(spans, T0, 3) == [10.0, 0.0, 0.0]


def test_a_span_whose_maximum_precedes_its_minimum_counts_in_its_minimum_minute() -> None:
    assert spread([Span(5, T0 + MINUTE_MS + 5, T0)], T0, 2) == [0.0, 5.0]


def test_the_window_ends_with_the_minute_that_holds_now() -> None:
    now = T0 + 2 * MINUTE_MS + 30_000
    start = window_start(now, 3)
    assert start == T0
    assert start + 2 * MINUTE_MS <= now < start + 3 * MINUTE_MS
    assert window_start(T0, 1) == T0
