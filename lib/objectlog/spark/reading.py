"""An executor's side of a read: one input partition's slices in, Kafka-schema Arrow out.

Slices are read ahead, a few at a time (concurrent ranged GETs, a sliding window in offset
order), and each is decoded in the thread that read it, while Spark takes the records of the
ones before: given absolute offsets (L0 slices hold positions), trimmed to the task's offset
range and converted to what Spark's Arrow conversion expects (``topic`` a plain string,
``timestamp`` microseconds in UTC). A slice whose object is gone (a compaction swap replaced
it, or retention removed it after planning) is re-resolved through a fresh head, as the fetch
path does.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from objectlog.clients.direct import ObjectLog
from objectlog.errors import ObjectLogError, ObjectNotFound, OffsetOutOfRange
from objectlog.format.index import LEVEL_L0
from objectlog.format.l1 import decode_slice
from objectlog.format.segment import SCHEMA
from objectlog.spark.planning import OffsetRange, ReadTask, Slice, slices_of
from objectlog.spark.typed import TypedColumns

# Slices read (GET and decode) ahead of the one going to Spark, each in a thread of its own.
# A sliding window, not batches: a batch waits for its slowest GET before the next one starts.
# It bounds an executor's memory per task: 8 slices (256 KiB L0 slices to 64 MiB L1 files).
READ_AHEAD = 8
RESOLVE_ATTEMPTS = 3
SPARK_TIMESTAMP = pa.timestamp("us", tz="UTC")
WITHOUT_HEADERS = pa.schema([f for f in SCHEMA if f.name != "headers"])


def read_task(
    log: ObjectLog,
    task: ReadTask,
    include_headers: bool,
    fail_on_data_loss: bool = True,
    planned: pa.DataType | None = None,
) -> Iterator[pa.RecordBatch]:
    """The task's records, in offset order, as Arrow batches in the Kafka source's schema
    (and the typed columns of spark.typed where planned gives value_decoded's type)."""
    position = task.start_offset  # everything before it has been yielded
    pending = list(task.slices)
    attempts = 0
    typed = TypedColumns(log, planned) if planned is not None else None
    with ThreadPoolExecutor(READ_AHEAD, thread_name_prefix="objectlog-spark-read") as pool:
        while pending:
            reads = _read_ahead(log, pool, pending, position, task, include_headers, typed)
            for piece, result in reads:
                if isinstance(result, ObjectNotFound):
                    attempts += 1
                    if attempts >= RESOLVE_ATTEMPTS:
                        raise result
                    position, pending = _resolve_again(log, task, position, fail_on_data_loss)
                    break
                if isinstance(result, Exception):
                    raise result
                position = max(position, min(piece.end_offset, task.end_offset))
                pending.pop(0)
                if result.num_rows:
                    yield from result.to_batches()


def _read_ahead(
    log: ObjectLog,
    pool: ThreadPoolExecutor,
    slices: Sequence[Slice],
    start: int,
    task: ReadTask,
    include_headers: bool,
    typed: TypedColumns | None = None,
) -> Iterator[tuple[Slice, Any]]:
    """Each slice with its records (or the error reading it), in order, READ_AHEAD ahead.

    Trimming every slice at start is exact: the slices of one plan are consecutive and do not
    overlap, so a later slice holds nothing below where an earlier one ended.
    """

    def read(piece: Slice) -> Any:
        try:
            footer = None if piece.level == LEVEL_L0 else log.footers.get(piece.key)
        except ObjectLogError as e:  # ObjectNotFound: a swap replaced the file, resolve again
            return e
        (data,) = log.range_reads.read_many([(piece.key, piece.start, piece.length)])
        if isinstance(data, ObjectLogError):
            return data
        try:
            table = _records(piece, data, start, task.end_offset, include_headers, footer)
            records = to_spark_arrow(table, include_headers)
            return records if typed is None else typed.add(task.topic, records)
        except Exception as e:  # raised by read_task, in the task's thread
            return e

    upcoming = iter(tuple(slices))  # read_task pops from its list as slices are done
    window: deque[tuple[Slice, Future[Any]]] = deque()
    try:
        for piece in upcoming:
            window.append((piece, pool.submit(read, piece)))
            if len(window) == READ_AHEAD:
                break
        while window:
            piece, future = window.popleft()
            following = next(upcoming, None)
            if following is not None:
                window.append((following, pool.submit(read, following)))
            yield piece, future.result()
    finally:  # the caller stopped early (a slice is gone, or Spark needs no more)
        for _, future in window:
            future.cancel()


def _records(
    piece: Slice,
    data: bytes,
    start: int,
    end: int,
    include_headers: bool = True,
    footer: pq.FileMetaData | None = None,
) -> pa.Table:
    columns = (SCHEMA if include_headers else WITHOUT_HEADERS).names
    table = decode_slice(data, piece.start, piece.base_offset, footer, columns)
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
    return position, list(slices_of(log, head, offsets, task.pruning, task.isolation))


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
