"""The columnar write path: Arrow columns of records into one slice per partition.

Producer.send_table and the Spark sink's executors both hold records as Arrow columns, not
Python objects. Both go through the same three steps here:

1. ``assign_partitions``: an explicit partition (a null one means "not given"), else murmur2 of
   the key as Kafka's producer, else whatever the caller picks for null keys (the producer's
   sticky partition, the sink's blocks);
2. ``table_batches`` refuses the whole batch if any record is over max.message.bytes
   (format.records: key, value and headers), then
3. groups the rows by partition and builds one slice table per partition, stamped with the
   records' timestamps, or the caller's clock (always on a LogAppendTime topic).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa

from objectlog.errors import (
    InvalidRequest,
    ObjectLogError,
    SchemaValidationFailed,
    UnknownPartition,
)
from objectlog.format.partitioner import partitions_for_key_array
from objectlog.format.records import (
    check_key,
    check_keys,
    check_record_size,
    check_record_sizes,
    record_sizes,
)
from objectlog.format.segment import HEADER_TYPE, numbers, slice_table
from objectlog.format.topics import (
    LOG_APPEND_TIME,
    MESSAGE_TIMESTAMP_TYPE,
    Topic,
    check_partition,
)
from objectlog.services.append import PartitionBatch

# Producer.send_table's columns; the Spark sink takes the Kafka sink's (spark/sink.py).
TABLE_COLUMNS = ("key", "value", "timestamp", "headers", "partition")


@dataclass(frozen=True)
class RecordColumns:
    """Records as Arrow columns of one length: binary keys (null: no key) and values, and
    optionally headers (list<struct<key string, value binary>>) and timestamps (int64 ms)."""

    keys: pa.Array
    values: pa.Array
    headers: pa.Array | None = None
    timestamps: pa.Array | None = None  # None: stamped when written

    def __len__(self) -> int:
        return len(self.values)

    @cached_property
    def sizes(self) -> np.ndarray:
        """Every record's size, as max.message.bytes counts it."""
        return record_sizes(self.keys, self.values, self.headers)


def binary_column(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """One binary array from a (chunked) string or binary column, large types included."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_large_string(column.type) or pa.types.is_large_binary(column.type):
        column = column.cast(pa.large_binary())
    return column.cast(pa.binary())


def headers_column(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column.cast(HEADER_TYPE)


def table_columns(table: pa.Table) -> tuple[RecordColumns, pa.Array | None]:
    """Producer.send_table's table as columns, and its partition column if it has one.

    ``value`` is required; ``key``, ``partition``, ``timestamp`` (int64 ms or a timestamp) and
    ``headers`` are optional; any other column is refused.
    """
    names = table.column_names
    if "value" not in names:
        raise InvalidRequest("a record batch needs a 'value' column", field="value")
    for name in names:
        if name not in TABLE_COLUMNS:
            raise InvalidRequest(f"unknown column {name!r} in record batch", field=name)
    timestamps = None
    if "timestamp" in names:
        column = table.column("timestamp").combine_chunks()
        if not pa.types.is_integer(column.type):
            column = column.cast(pa.timestamp("ms", tz="UTC"))
        timestamps = column.cast(pa.int64())
    columns = RecordColumns(
        keys=binary_column(table.column("key"))
        if "key" in names
        else pa.nulls(table.num_rows, pa.binary()),
        values=binary_column(table.column("value")),
        headers=headers_column(table.column("headers")) if "headers" in names else None,
        timestamps=timestamps,
    )
    explicit = table.column("partition").combine_chunks() if "partition" in names else None
    return columns, explicit


def refuse_rows(
    info: Topic, columns: RecordColumns, explicit: np.ndarray | None, rows: np.ndarray
) -> tuple[np.ndarray, dict[int, ObjectLogError]]:
    """The rows (positions in columns) that can be written, and the error of each one that
    fails alone, as send() refuses a record: a partition the topic lacks, then a record over
    max.message.bytes. ``explicit`` holds each row's partition, -1 where none was given."""
    sizes = columns.sizes[rows]
    refused = sizes > info.config.max_message_bytes
    if explicit is not None:
        refused |= explicit[rows] >= info.partitions
    keyless = None  # on a compacted topic, which rows have no key (check_key refuses them)
    if info.config.compacted:
        keyless = columns.keys.is_null().to_numpy(zero_copy_only=False)
        refused |= keyless[rows]
    if not refused.any():
        return rows, {}
    errors: dict[int, ObjectLogError] = {}
    for row, size in zip(rows[refused].tolist(), sizes[refused].tolist(), strict=True):
        try:  # the rules themselves decide, and name the error
            if explicit is not None and explicit[row] >= 0:
                check_partition(info, int(explicit[row]))
            check_record_size(info, size)
            check_key(info, None if keyless is not None and keyless[row] else b"")
        except ObjectLogError as e:
            errors[row] = e
    return rows[np.isin(rows, list(errors), invert=True)], errors


def refuse_unvalidated(
    check: Callable[[Topic, pa.Array, pa.Array, pa.Array | None], None],
    info: Topic,
    columns: RecordColumns,
    rows: np.ndarray,
    errors: dict[int, ObjectLogError],
) -> np.ndarray:
    """The rows a validated topic's schema check (schemas.validation's) takes; each refused
    one's error goes to errors, and it fails alone. Nothing to do on other topics."""
    if not info.config.schema_validated:
        return rows
    try:
        headers = None if columns.headers is None else columns.headers.take(rows)
        check(info, columns.keys.take(rows), columns.values.take(rows), headers)
    except SchemaValidationFailed as e:
        refused = rows[list(e.records)]
        errors.update(dict.fromkeys(refused.tolist(), e))
        return rows[np.isin(rows, refused, invert=True)]
    return rows


def assign_partitions(
    info: Topic,
    keys: pa.Array,
    explicit: pa.Array | None,
    null_keys: Callable[[int], np.ndarray | int],
) -> np.ndarray:
    """Each row's partition: ``explicit`` where given (not null), else murmur2 of the key,
    else ``null_keys(n)`` for the n rows left (one partition for all, or one each)."""
    count = len(keys)
    if explicit is None and not keys.null_count:
        return partitions_for_key_array(keys, info.partitions)  # the common case, at once
    result = np.full(count, -1, dtype=np.int64)
    if explicit is not None:
        given = explicit.cast(pa.int64())
        valid = given.drop_null().to_numpy(zero_copy_only=False)
        if ((valid < 0) | (valid >= info.partitions)).any():
            raise UnknownPartition(
                f"partition column has values outside 0..{info.partitions - 1} for topic "
                f"{info.name!r}",
                field="partition",
            )
        result[:] = given.fill_null(-1).to_numpy(zero_copy_only=False)
    unset = result < 0
    if unset.any() and keys.null_count < count:
        hashed = partitions_for_key_array(keys, info.partitions)
        result[unset] = hashed[unset]
        unset = result < 0
    if unset.any():
        result[unset] = null_keys(int(unset.sum()))
    return result


def table_batches(
    info: Topic,
    columns: RecordColumns,
    partitions: np.ndarray,
    now_ms: int,
    rows: np.ndarray | None = None,
) -> list[tuple[np.ndarray, PartitionBatch]]:
    """Check the records' sizes, then one PartitionBatch per partition, in partition order,
    each with the positions in ``partitions`` of its rows (their order kept).

    ``partitions`` holds the partition of each of ``rows`` of the columns (all rows if None),
    so a caller can write part of a table (one topic's rows) without copying it first.
    """
    sizes = columns.sizes if rows is None else columns.sizes[rows]
    check_record_sizes(info, sizes)
    check_keys(info, columns.keys if rows is None else columns.keys.take(rows))
    given = columns.timestamps
    if info.config.get(MESSAGE_TIMESTAMP_TYPE) == LOG_APPEND_TIME:
        given = None  # the log's time, whatever the records say
    order = np.argsort(partitions, kind="stable")
    placed = partitions[order]
    starts = np.flatnonzero(np.diff(placed)) + 1
    # One take per column for all partitions, then each partition's rows are a slice of it
    # (no copy): a flush is grouped in as many Arrow calls whatever its partitions.
    take = numbers(order if rows is None else rows[order])
    keys, values = columns.keys.take(take), columns.values.take(take)
    headers = columns.headers.take(take) if columns.headers is not None else None
    stamped = given.take(take) if given is not None else None
    batches: list[tuple[np.ndarray, PartitionBatch]] = []
    for begin, end in zip([0, *starts.tolist()], [*starts.tolist(), len(order)], strict=True):
        if begin == end:
            continue
        count, partition = end - begin, int(placed[begin])
        table = slice_table(
            info.name,
            partition,
            keys.slice(begin, count),
            values.slice(begin, count),
            numbers(np.full(count, now_ms, dtype=np.int64))
            if stamped is None
            else stamped.slice(begin, count),
            info.config.timestamp_type,
            headers.slice(begin, count) if headers is not None else None,
        )
        batches.append((order[begin:end], PartitionBatch(info, partition, table)))
    return batches
