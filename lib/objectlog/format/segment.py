"""The segment format: Parquet with exactly the columns of Spark's Kafka source.

An L0 object is one producer flush: the concatenation of self-contained Parquet files
("slices"), one per (topic, partition) the flush touched, each with its own footer:

    +--------------------+--------------------+-----+
    | slice: orders/0    | slice: orders/2    | ... |   one PutObject, If-None-Match: *
    | PAR1 ... footer    | PAR1 ... footer    |     |
    +--------------------+--------------------+-----+

A reader gets one slice with one ranged GET (the byte range is in the segment ref). Offsets
are not known when the object is written: an L0 slice's ``offset`` column holds each record's
position in the slice, and absolute offset = the slice's base offset + position. L1 files
(written by the compactor) are plain Parquet files with absolute offsets.

Columns: key binary, value binary, topic string (dictionary), partition int32, offset int64,
timestamp timestamp[ms, UTC], timestampType int32, headers list<struct<key string, value binary>>.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from objectlog.format.records import Headers, Record

HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.dictionary(pa.int32(), pa.string())),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("ms", tz="UTC")),
        ("timestampType", pa.int32()),
        ("headers", HEADER_TYPE),
    ]
)
TIMESTAMP_TYPE = SCHEMA.field("timestamp").type
COMPRESSIONS = ("none", "snappy", "zstd", "lz4", "gzip")


def slice_table(
    topic: str,
    partition: int,
    keys: Sequence[bytes | None] | pa.Array,
    values: Sequence[bytes | None] | pa.Array,
    timestamps: Sequence[int] | pa.Array,
    timestamp_type: int,
    headers: Sequence[Headers] | pa.Array | None = None,
) -> pa.Table:
    """Build a slice's table; the offset column holds positions 0..n-1."""
    count = len(keys)
    if headers is None:
        header_column = _empty_headers(HEADER_TYPE, count)
    elif isinstance(headers, pa.Array):
        header_column = headers
    else:
        header_column = pa.array(headers, type=HEADER_TYPE)
    return pa.Table.from_arrays(
        [
            keys if isinstance(keys, pa.Array) else pa.array(keys, type=pa.binary()),
            values if isinstance(values, pa.Array) else pa.array(values, type=pa.binary()),
            _topic_column(topic, count),
            _int32_column(partition, count),
            _positions(0, count),
            _timestamp_array(timestamps),
            _int32_column(timestamp_type, count),
            header_column,
        ],
        schema=SCHEMA,
    )


def numbers(values: np.ndarray) -> pa.Array:
    """A 1-d numpy array of integers or floats as an Arrow array sharing its memory.

    ``pa.array(ndarray)`` looks up ``np.ma`` to refuse masked arrays, which imports numpy.ma
    (10-20 ms): a Lambda function's init and first request do without it (bench.cold_start).
    """
    if values.dtype.kind not in "iuf" or values.ndim != 1:
        raise TypeError(f"numbers takes a 1-d array of integers or floats, not {values.dtype}")
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(
        pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)]
    )


# A slice's constant columns depend only on their value and the slice's length: built once
# for the lengths a writer keeps using (a producer's flushes are much alike), never for a huge
# table (Arrow arrays are immutable, so tables share them safely).
_CACHED_LENGTH = 1 << 16


def _constant(build: Callable[..., pa.Array]) -> Callable[..., pa.Array]:
    cached = functools.lru_cache(maxsize=64)(build)

    def column(value: Any, count: int) -> pa.Array:
        return cached(value, count) if count <= _CACHED_LENGTH else build(value, count)

    return column


@_constant
def _topic_column(topic: str, count: int) -> pa.Array:
    return pa.DictionaryArray.from_arrays(
        numbers(np.zeros(count, dtype=np.int32)), pa.array([topic], type=pa.string())
    )


@_constant
def _int32_column(value: int, count: int) -> pa.Array:
    return numbers(np.full(count, value, dtype=np.int32))


@_constant
def _positions(start: int, count: int) -> pa.Array:
    return numbers(np.arange(start, start + count, dtype=np.int64))


@_constant
def _empty_headers(header_type: pa.DataType, count: int) -> pa.Array:
    """count empty header lists, built from offsets (no Python list per row)."""
    offsets = numbers(np.zeros(count + 1, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array([], type=header_type.value_type))


def _timestamp_array(timestamps: Sequence[int] | pa.Array) -> pa.Array:
    if isinstance(timestamps, pa.Array):
        if timestamps.type == TIMESTAMP_TYPE:
            return timestamps
        if timestamps.type == pa.int64():
            return timestamps.view(TIMESTAMP_TYPE)  # the same 8 bytes a value: no copy
        return timestamps.cast(pa.int64()).cast(TIMESTAMP_TYPE)
    return pa.array(timestamps, type=pa.int64()).view(TIMESTAMP_TYPE)


def encode_parquet(
    table: pa.Table, compression: str = "none", row_group_rows: int | None = None
) -> bytes:
    sink = pa.BufferOutputStream()
    write_parquet(sink, table, compression, row_group_rows)
    return sink.getvalue().to_pybytes()


STATISTICS = ("offset", "timestamp")


def write_parquet(
    sink: pa.NativeFile,
    table: pa.Table,
    compression: str = "none",
    row_group_rows: int | None = None,
    statistics: tuple[str, ...] = STATISTICS,
) -> None:
    """Append one self-contained Parquet file (a slice) to sink, with min/max statistics for
    the named columns."""
    pq.write_table(
        table,
        sink,
        compression=compression,
        use_dictionary=["topic"],
        write_statistics=list(statistics),
        row_group_size=row_group_rows,
    )


def decode_parquet(data: bytes | memoryview) -> pa.Table:
    """A slice's records. A ParquetFile on the buffer, not pq.read_table: the datasets path
    of read_table costs about 0.6 ms more a call, more than decoding a 256 KiB slice of 1 KiB
    records takes (0.43 against 1.08 ms); read_table remains for a file whose columns are not
    exactly SCHEMA's (it fills what is missing with nulls)."""
    table = pq.ParquetFile(pa.BufferReader(data), pre_buffer=False).read(use_threads=False)
    if table.schema.equals(SCHEMA):
        return table
    return pq.read_table(pa.BufferReader(data), schema=SCHEMA)


def concat_slices(tables: Sequence[pa.Table]) -> pa.Table:
    """Slice tables one after the other as one slice: the offset column's positions run on."""
    if len(tables) == 1:
        return tables[0]
    table = pa.concat_tables(tables)
    index = table.schema.get_field_index("offset")
    return table.set_column(index, "offset", _positions(0, table.num_rows))


def with_absolute_offsets(table: pa.Table, base_offset: int) -> pa.Table:
    """Turn an L0 slice's positions into absolute offsets."""
    if base_offset == 0:
        return table
    index = table.schema.get_field_index("offset")
    absolute = pc.add(table.column(index), pa.scalar(base_offset, pa.int64()))
    return table.set_column(index, "offset", absolute)


def table_to_records(table: pa.Table) -> list[Record]:
    """Materialize Python records (the columnar path keeps the table instead)."""
    columns = [
        (
            table.column(name).cast(pa.int64()) if name == "timestamp" else table.column(name)
        ).to_pylist()
        for name in SCHEMA.names
    ]
    keys, values, topics, partitions, offsets, timestamps, types, headers = columns
    return [
        Record(
            topic=topics[i],
            partition=partitions[i],
            offset=offsets[i],
            timestamp=timestamps[i],
            timestamp_type=types[i],
            key=keys[i],
            value=values[i],
            headers=[(h["key"], h["value"]) for h in headers[i]] if headers[i] else [],
        )
        for i in range(table.num_rows)
    ]


def records_table(
    *,
    topics: list[str],
    partitions: list[int],
    offsets: list[int],
    timestamps: list[int],
    timestamp_types: list[int],
    keys: list[bytes | None],
    values: list[bytes | None],
    headers: list[list[dict[str, object]]],
) -> pa.Table:
    """A table in the segment schema from per-record columns (absolute offsets)."""
    return pa.Table.from_arrays(
        [
            pa.array(keys, type=pa.binary()),
            pa.array(values, type=pa.binary()),
            pa.array(topics, type=pa.string()).dictionary_encode().cast(SCHEMA.field("topic").type),
            pa.array(partitions, type=pa.int32()),
            pa.array(offsets, type=pa.int64()),
            _timestamp_array(timestamps),
            pa.array(timestamp_types, type=pa.int32()),
            pa.array(headers, type=HEADER_TYPE),
        ],
        schema=SCHEMA,
    )
