"""Filters Spark pushes down (4.1+ ``DataSourceReader.pushFilters``) turned into Pruning.

Spark 4.1 hands the reader filters such as ``EqualTo(("partition",), 1)`` or
``GreaterThanOrEqual(("offset",), 100)``; Spark 4.0 never calls pushFilters, so nothing here
imports pyspark: a filter is recognised by its class name and its ``attribute`` and ``value``.

- topic, partition (=, IN) and offset (=, <, <=, >, >=, IN) are applied exactly: the planner
  skips partitions and narrows offset ranges, and the reader keeps only records in range, so
  Spark need not evaluate them again.
- timestamp (=, <, <=, >, >=) prunes whole segments by the min/max timestamps in their refs;
  Spark still evaluates it on the records that are read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from objectlog.spark.planning import Pruning

EXACT_COLUMNS = ("topic", "partition", "offset")
# A naive datetime is in some session time zone we cannot see: widen by the largest offset.
NAIVE_SLACK = timedelta(hours=15)


def prune(filters: Iterable[Any]) -> tuple[Pruning, list[Any]]:
    """The pruning the filters allow, and the filters Spark must still evaluate."""
    pruning = Pruning()
    remaining = []
    for spark_filter in filters:
        narrowed = _apply(pruning, spark_filter)
        if narrowed is None:
            remaining.append(spark_filter)
            continue
        pruning, exact = narrowed
        if not exact:
            remaining.append(spark_filter)
    return pruning, remaining


def _apply(pruning: Pruning, spark_filter: Any) -> tuple[Pruning, bool] | None:
    """(narrowed pruning, whether it is exact), or None when the filter is not ours."""
    kind = type(spark_filter).__name__
    attribute = getattr(spark_filter, "attribute", None)
    if (
        not isinstance(attribute, tuple)
        or len(attribute) != 1
        or not hasattr(spark_filter, "value")
    ):
        return None
    column, value = attribute[0], spark_filter.value
    if column == "timestamp":
        narrowed = _timestamp(pruning, kind, value)
        return None if narrowed is None else (narrowed, False)
    if column not in EXACT_COLUMNS:
        return None
    values = _values(kind, value)
    if column == "topic":
        if values is None or not all(isinstance(v, str) for v in values):
            return None
        topics = frozenset(values)
        return replace(pruning, topics=_meet(pruning.topics, topics)), True
    if kind != "In" and not _is_int(value):
        return None
    if column == "partition":
        if values is None or not all(_is_int(v) for v in values):
            return None
        return replace(pruning, partitions=_meet(pruning.partitions, frozenset(values))), True
    return _offset(pruning, kind, value)


def _values(kind: str, value: Any) -> tuple[Any, ...] | None:
    if kind == "EqualTo":
        return (value,)
    if kind == "In" and isinstance(value, tuple | list):
        return tuple(value)
    return None


def _meet(current: frozenset[Any] | None, new: frozenset[Any]) -> frozenset[Any]:
    return new if current is None else current & new


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _offset(pruning: Pruning, kind: str, value: Any) -> tuple[Pruning, bool] | None:
    low, high = pruning.min_offset, pruning.end_offset
    if kind == "In":
        if not value or not all(_is_int(v) for v in value):
            return None
        low, high = max(low, min(value)), _min(high, max(value) + 1)
        # Only the range is pruned; Spark keeps the listed offsets within it.
        return replace(pruning, min_offset=low, end_offset=high), len(set(value)) == 1
    bounds = {
        "EqualTo": (value, value + 1),
        "GreaterThan": (value + 1, None),
        "GreaterThanOrEqual": (value, None),
        "LessThan": (0, value),
        "LessThanOrEqual": (0, value + 1),
    }.get(kind)
    if bounds is None:
        return None
    low = max(low, bounds[0])
    high = _min(high, bounds[1])
    return replace(pruning, min_offset=low, end_offset=high), True


def _min(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else min(a, b)


def _timestamp(pruning: Pruning, kind: str, value: Any) -> Pruning | None:
    if not isinstance(value, datetime):
        return None
    slack = timedelta(0) if value.tzinfo is not None else NAIVE_SLACK
    at = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    low_ms = _ms(at - slack)
    high_ms = _ms(at + slack)
    lower = kind in ("EqualTo", "GreaterThan", "GreaterThanOrEqual")
    upper = kind in ("EqualTo", "LessThan", "LessThanOrEqual")
    if not (lower or upper):
        return None
    if lower:
        current = pruning.min_timestamp
        pruning = replace(
            pruning, min_timestamp=low_ms if current is None else max(current, low_ms)
        )
    if upper:
        current = pruning.max_timestamp
        high = high_ms if current is None else min(current, high_ms)
        pruning = replace(pruning, max_timestamp=high)
    return pruning


def _ms(at: datetime) -> int:
    """Milliseconds since the epoch, floored (refs hold whole milliseconds)."""
    delta = at - datetime(1970, 1, 1, tzinfo=UTC)
    return delta // timedelta(milliseconds=1)
