"""An executor's side of a read: one input partition's slices in, Kafka-schema Arrow out.

Slices are read a few at a time (concurrent ranged GETs), decoded, given absolute offsets (L0
slices hold positions), trimmed to the task's offset range and converted to what Spark's Arrow
conversion expects: ``topic`` a plain string and ``timestamp`` microseconds in UTC. A slice
whose object is gone (a compaction swap replaced it, or retention removed it after planning)
is re-resolved through a fresh head, as the fetch path does.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from objectlog.errors import ObjectLogError, ObjectNotFound, OffsetOutOfRange
from objectlog.index import LEVEL_L0
from objectlog.log import ObjectLog
from objectlog.segment import decode_parquet, with_absolute_offsets
from objectlog.spark.planning import OffsetRange, ReadTask, Slice, slices_of

READ_WINDOW = 8  # slices fetched concurrently; bounds an executor's memory per task
RESOLVE_ATTEMPTS = 3
SPARK_TIMESTAMP = pa.timestamp("us", tz="UTC")


def read_task(
    log: ObjectLog, task: ReadTask, include_headers: bool, fail_on_data_loss: bool = True
) -> Iterator[pa.RecordBatch]:
    """The task's records, in offset order, as Arrow batches in the Kafka source's schema."""
    position = task.start_offset  # everything before it has been yielded
    pending = list(task.slices)
    attempts = 0
    while pending:
        window = pending[:READ_WINDOW]
        datas = log._read_many([(s.key, s.start, s.length) for s in window])
        for piece, data in zip(window, datas, strict=True):
            if isinstance(data, ObjectNotFound):
                attempts += 1
                if attempts >= RESOLVE_ATTEMPTS:
                    raise data
                position, pending = _resolve_again(log, task, position, fail_on_data_loss)
                break
            if isinstance(data, ObjectLogError):
                raise data
            table = _records(piece, data, position, task.end_offset)
            position = max(position, min(piece.end_offset, task.end_offset))
            pending.pop(0)
            if table.num_rows:
                yield from to_spark_arrow(table, include_headers).to_batches()


def _records(piece: Slice, data: bytes, start: int, end: int) -> pa.Table:
    table = decode_parquet(data)
    if piece.level == LEVEL_L0:
        table = with_absolute_offsets(table, piece.base_offset)
    if piece.base_offset < start or piece.end_offset > end:
        offsets = table.column("offset")
        table = table.filter(pc.and_(pc.greater_equal(offsets, start), pc.less(offsets, end)))
    return table


def _resolve_again(
    log: ObjectLog, task: ReadTask, position: int, fail_on_data_loss: bool
) -> tuple[int, list[Slice]]:
    """Where to go on from, and the slices for [there, end) as the head now lists them."""
    head = log.reader.head(task.topic, task.partition)
    if position < head.log_start_offset:
        if fail_on_data_loss:
            raise OffsetOutOfRange(
                f"{task.topic}/{task.partition}: offsets from {position} were removed while "
                f"being read; the earliest is now {head.log_start_offset} (set "
                "failOnDataLoss=false to skip what is gone)",
                log_start_offset=head.log_start_offset,
                high_watermark=head.next_offset,
            )
        position = head.log_start_offset
    offsets = OffsetRange(task.topic, task.partition, position, task.end_offset)
    return position, list(slices_of(log, head, offsets, task.pruning))


def to_spark_arrow(table: pa.Table, include_headers: bool) -> pa.Table:
    """The segment schema as Spark's Arrow conversion expects it (plain strings, microseconds)."""
    columns = {
        "key": table.column("key"),
        "value": table.column("value"),
        "topic": table.column("topic").cast(pa.string()),
        "partition": table.column("partition"),
        "offset": table.column("offset"),
        "timestamp": table.column("timestamp").cast(SPARK_TIMESTAMP),
        "timestampType": table.column("timestampType"),
    }
    if include_headers:
        columns["headers"] = table.column("headers")
    return pa.table(columns)


KAFKA_SCHEMA_DDL = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
HEADERS_DDL = ", headers array<struct<key: string, value: binary>>"


def schema_ddl(include_headers: bool) -> str:
    """The Kafka source's schema (headers only with includeHeaders=true)."""
    return KAFKA_SCHEMA_DDL + (HEADERS_DDL if include_headers else "")
