"""Filter pushdown rules of the Spark source (pure: no Spark session, no server)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from objectlog.spark.pushdown import prune


def test_pushdown_rules() -> None:
    @dataclass(frozen=True)
    class In:
        attribute: tuple[str, ...]
        value: Any

    @dataclass(frozen=True)
    class LessThanOrEqual(In):
        pass

    @dataclass(frozen=True)
    class Not:
        child: Any

    offsets_in = In(("offset",), (3, 9))
    negated = Not(In(("partition",), (1,)))
    naive = LessThanOrEqual(("timestamp",), datetime(2024, 1, 1))
    pruning, remaining = prune([In(("topic",), ("a", "b")), offsets_in, negated, naive])
    assert pruning.topics == {"a", "b"} and (pruning.min_offset, pruning.end_offset) == (3, 10)
    assert remaining == [offsets_in, negated, naive]  # IN of offsets only narrows the range
    # A naive datetime is in a session time zone we cannot see: prune 15 hours wider.
    assert pruning.max_timestamp == datetime(2024, 1, 1, 15, tzinfo=UTC).timestamp() * 1000
