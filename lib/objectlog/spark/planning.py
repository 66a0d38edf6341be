"""Planning a Kafka-source-style read of objectlog topics, without Spark.

The driver turns the Kafka source's options into offset ranges per topic partition, then cuts
each range into input partitions on segment boundaries (from the heads and manifests). An
executor reads one input partition: one ranged GET per segment slice, Arrow out. The Spark 4
data source and the Spark 3.5 ``mapInArrow`` path share this module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from objectlog.config import Config, normalize_prefix
from objectlog.errors import InvalidRequest, OffsetOutOfRange
from objectlog.index import LEVEL_L0
from objectlog.layout import object_key
from objectlog.log import ObjectLog
from objectlog.segment import decode_parquet, with_absolute_offsets

EARLIEST = -2
LATEST = -1
DEFAULT_MAX_BYTES_PER_PARTITION = 64 << 20
KAFKA_SCHEMA_DDL = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
HEADERS_DDL = ", headers array<struct<key: string, value: binary>>"


def schema_ddl(include_headers: bool) -> str:
    return KAFKA_SCHEMA_DDL + (HEADERS_DDL if include_headers else "")


def truthy(value: object) -> bool:
    return str(value).strip().lower() == "true"


def connection_config(options: Mapping[str, str]) -> Config:
    """Connection settings from the reader's options, else the environment."""
    overrides: dict[str, Any] = {}
    for option, field in (("bucket", "bucket"), ("table", "table"), ("region", "region")):
        if options.get(option):
            overrides[field] = options[option]
    if options.get("prefix"):
        overrides["prefix"] = normalize_prefix(options["prefix"])
    if options.get("endpoint"):
        overrides["s3_endpoint"] = overrides["dynamodb_endpoint"] = options["endpoint"]
    return replace(Config.from_env(), **overrides)


@dataclass(frozen=True)
class Slice:
    key: str
    start: int
    length: int
    base_offset: int
    level: int


@dataclass(frozen=True)
class ReadTask:
    """One input partition: a contiguous offset range of one topic partition."""

    topic: str
    partition: int
    start_offset: int
    end_offset: int
    slices: tuple[Slice, ...]

    @property
    def bytes(self) -> int:
        return sum(s.length for s in self.slices)


def select_topics(log: ObjectLog, options: Mapping[str, str]) -> dict[str, list[int]]:
    """subscribe / subscribePattern / assign, exactly one of them (as the Kafka source)."""
    given = [name for name in ("subscribe", "subscribePattern", "assign") if options.get(name)]
    if len(given) != 1:
        raise InvalidRequest(
            "set exactly one of the options 'subscribe', 'subscribePattern' or 'assign'",
            field="subscribe",
        )
    if options.get("assign"):
        assigned = json.loads(options["assign"])
        return {topic: sorted(int(p) for p in parts) for topic, parts in assigned.items()}
    if options.get("subscribe"):
        names = [t.strip() for t in options["subscribe"].split(",") if t.strip()]
    else:
        pattern = re.compile(options["subscribePattern"])
        names = [t for t in log.list_topics() if pattern.fullmatch(t)]
    return {name: list(range(log.topic(name).partitions)) for name in names}


def _json_offsets(text: str, field: str) -> dict[str, dict[int, int]]:
    try:
        parsed = json.loads(text)
        return {t: {int(p): int(o) for p, o in parts.items()} for t, parts in parsed.items()}
    except (ValueError, AttributeError, TypeError) as e:
        raise InvalidRequest(
            f"{field} must be earliest, latest or the Kafka source's JSON", field=field
        ) from e


def _bound(options: Mapping[str, str], kind: str, default: int) -> Any:
    """The starting or ending bound: EARLIEST, LATEST, per-partition offsets or times."""
    by_time = options.get(f"{kind}OffsetsByTimestamp")
    if by_time:
        return ("time", _json_offsets(by_time, f"{kind}OffsetsByTimestamp"))
    if options.get(f"{kind}Timestamp"):
        return ("time_all", int(options[f"{kind}Timestamp"]))
    text = options.get(f"{kind}Offsets")
    if not text or text.strip() == "earliest":
        return EARLIEST if (not text and default == EARLIEST) or text == "earliest" else default
    if text.strip() == "latest":
        return LATEST
    return ("offsets", _json_offsets(text, f"{kind}Offsets"))


def resolve(
    log: ObjectLog, bound: Any, topic: str, partition: int, earliest: int, latest: int
) -> int:
    if bound == EARLIEST:
        return earliest
    if bound == LATEST:
        return latest
    kind, value = bound
    if kind == "time_all":
        found = log.offset_for_time(topic, partition, value)
        return latest if found is None else found
    if kind == "time":
        at = value.get(topic, {}).get(partition)
        if at is None:
            return latest
        found = log.offset_for_time(topic, partition, at)
        return latest if found is None else found
    offset = value.get(topic, {}).get(partition, LATEST)
    return {EARLIEST: earliest, LATEST: latest}.get(offset, offset)


def plan(log: ObjectLog, options: Mapping[str, str]) -> list[ReadTask]:
    """Input partitions for a batch read, cut on segment boundaries."""
    starting = _bound(options, "starting", EARLIEST)
    ending = _bound(options, "ending", LATEST)
    fail_on_data_loss = truthy(options.get("failOnDataLoss", "true"))
    max_bytes = int(options.get("maxBytesPerPartition", DEFAULT_MAX_BYTES_PER_PARTITION))
    tasks: list[ReadTask] = []
    for topic, partitions in select_topics(log, options).items():
        heads = log.metadata.get_heads(topic, partitions)
        for partition in partitions:
            head = heads.get(partition)
            if head is None:
                raise InvalidRequest(f"{topic} has no partition {partition}", field="assign")
            earliest, latest = head.log_start_offset, head.next_offset
            start = resolve(log, starting, topic, partition, earliest, latest)
            end = resolve(log, ending, topic, partition, earliest, latest)
            if start < earliest:
                if fail_on_data_loss:
                    raise OffsetOutOfRange(
                        f"{topic}/{partition}: startingOffsets {start} is below the earliest "
                        f"offset {earliest} (set failOnDataLoss=false to skip what was removed)",
                        log_start_offset=earliest,
                        high_watermark=latest,
                    )
                start = earliest
            end = min(end, latest)
            if start < end:
                tasks.extend(_cut(log, head, topic, partition, start, end, max_bytes))
    return _split_for_min_partitions(tasks, int(options.get("minPartitions", 0) or 0))


def _cut(
    log: ObjectLog, head: Any, topic: str, partition: int, start: int, end: int, max_bytes: int
) -> Iterator[ReadTask]:
    group: list[Slice] = []
    group_bytes, group_start = 0, start
    prefix = log.config.prefix
    for placed in log.index.placed_refs(head, start):
        if placed.base_offset >= end:
            break
        ref = placed.ref
        if group and group_bytes + ref.length > max_bytes:
            yield ReadTask(topic, partition, group_start, placed.base_offset, tuple(group))
            group, group_bytes, group_start = [], 0, placed.base_offset
        group.append(
            Slice(
                object_key(prefix, ref.level, ref.object_id),
                ref.start,
                ref.length,
                placed.base_offset,
                ref.level,
            )
        )
        group_bytes += ref.length
    if group:
        yield ReadTask(topic, partition, group_start, end, tuple(group))


def _split_for_min_partitions(tasks: list[ReadTask], minimum: int) -> list[ReadTask]:
    """Split the largest tasks at segment boundaries until there are at least ``minimum``."""
    while minimum and len(tasks) < minimum:
        splittable = [t for t in tasks if len(t.slices) > 1]
        if not splittable:
            break
        task = max(splittable, key=lambda t: t.bytes)
        half = len(task.slices) // 2
        middle = task.slices[half].base_offset
        tasks.remove(task)
        tasks += [
            ReadTask(task.topic, task.partition, task.start_offset, middle, task.slices[:half]),
            ReadTask(task.topic, task.partition, middle, task.end_offset, task.slices[half:]),
        ]
    return tasks


def read_task(log: ObjectLog, task: ReadTask, include_headers: bool) -> Iterator[pa.RecordBatch]:
    """An executor's work: fetch the task's slices and yield Kafka-schema Arrow batches."""
    ranges = [(s.key, s.start, s.length) for s in task.slices]
    for piece, data in zip(task.slices, log._read_many(ranges), strict=True):
        if isinstance(data, Exception):
            raise data
        table = decode_parquet(data)
        if piece.level == LEVEL_L0:
            table = with_absolute_offsets(table, piece.base_offset)
        offsets = table.column("offset")
        mask = pc.and_(
            pc.greater_equal(offsets, task.start_offset), pc.less(offsets, task.end_offset)
        )
        table = table.filter(mask)
        if table.num_rows:
            yield from to_spark_arrow(table, include_headers).to_batches()


def to_spark_arrow(table: pa.Table, include_headers: bool) -> pa.Table:
    """The segment schema as Spark's Arrow conversion expects it (plain strings, microseconds)."""
    columns = {
        "key": table.column("key"),
        "value": table.column("value"),
        "topic": table.column("topic").cast(pa.string()),
        "partition": table.column("partition"),
        "offset": table.column("offset"),
        "timestamp": table.column("timestamp").cast(pa.timestamp("us", tz="UTC")),
        "timestampType": table.column("timestampType"),
    }
    if include_headers:
        columns["headers"] = table.column("headers")
    return pa.table(columns)
