"""L1 files: the compactor's plain Parquet files, one index ref per row group.

    topics/<topic>/<topic-id>/partition=<p>/<base offset, 20 digits>-<ULID>.parquet

    +------+-------------+-------------+-----+---------------------+
    | PAR1 | row group 0 | row group 1 | ... | footer, len, PAR1   |   one PutObject
    +------+-------------+-------------+-----+---------------------+
             ^ ref 0       ^ ref 1

A file is ordinary Parquet with the segment schema and absolute offsets, so
``spark.read.parquet`` reads it as it is. The index holds one ref per row group (its byte
range), so a fetch at any offset GETs one row group of about 1-4 MiB, not the whole file. A
row group is not self-contained: decoding it needs the file's footer, which a reader fetches
once per file with a suffix-range GET and caches (the file never changes).
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from objectlog.errors import CorruptIndex
from objectlog.format.index import LEVEL_L0, PlacedRef
from objectlog.format.layout import object_key
from objectlog.format.segment import (
    SCHEMA,
    STATISTICS,
    decode_parquet,
    with_absolute_offsets,
    write_parquet,
)
from objectlog.format.tables import FIELD_IDS

FOOTER_TAIL_BYTES = 64 << 10  # one suffix GET finds the footer of any file with < ~2,000 groups
MAGIC = b"PAR1"
# Statistics for topic and partition too: Iceberg readers prune files by them (a table filtered
# on one partition opens only that partition's files).
L1_STATISTICS = (*STATISTICS, "topic", "partition")


def _with_field_id(field: pa.Field, path: str) -> pa.Field:
    field_id = str(FIELD_IDS[path]).encode()
    kind = field.type
    if pa.types.is_list(kind):
        kind = pa.list_(_with_field_id(kind.value_field, f"{path}.element"))
    elif pa.types.is_struct(kind):
        kind = pa.struct([_with_field_id(f, f"{path}.{f.name}") for f in kind])
    return field.with_type(kind).with_metadata({b"PARQUET:field_id": field_id})


def _plain_string(field: pa.Field) -> pa.Field:
    """topic as a string in the file's Arrow schema (Iceberg has no dictionary type); Parquet
    still dictionary-encodes it (write_parquet's use_dictionary)."""
    return field.with_type(pa.string()) if pa.types.is_dictionary(field.type) else field


# The segment schema with Iceberg field ids (format.tables.FIELD_IDS) on every column.
L1_SCHEMA = pa.schema([_with_field_id(_plain_string(f), f.name) for f in SCHEMA])


@dataclass(frozen=True, slots=True)
class RowGroup:
    """One row group's bytes in its file and the records it holds."""

    start: int
    length: int
    rows: int


def encode_l1(
    table: pa.Table, row_group_bytes: int, compression: str = "zstd"
) -> tuple[bytes, list[RowGroup]]:
    """One Parquet file of table (segment schema, absolute offsets, then any typed columns a
    typed table adds: services.typed_tables) in row groups of about row_group_bytes of record
    data; returns the body and each row group's byte range. A row group's range covers its
    segment-schema columns only, which come first: fetches GET the same bytes from a typed
    table's files as from any other, and the typed columns are read by table readers."""
    sink = pa.BufferOutputStream()
    record_bytes = table.select(L1_SCHEMA.names).nbytes
    rows = max(1, int(row_group_bytes * table.num_rows / max(1, record_bytes)))
    write_parquet(
        sink, _l1_columns(table), compression, row_group_rows=rows, statistics=L1_STATISTICS
    )
    body = sink.getvalue().to_pybytes()
    metadata = pq.read_metadata(pa.BufferReader(body))
    return body, [_row_group(metadata, i) for i in range(metadata.num_row_groups)]


def _l1_columns(table: pa.Table) -> pa.Table:
    kafka = table.select(L1_SCHEMA.names).cast(L1_SCHEMA)
    extra = [name for name in table.column_names if name not in L1_SCHEMA.names]
    for name in extra:
        kafka = kafka.append_column(table.schema.field(name), table.column(name))
    return kafka


def _row_group(metadata: pq.FileMetaData, index: int) -> RowGroup:
    """A row group's byte range over its segment-schema columns (format.segment.SCHEMA)."""
    group = metadata.row_group(index)
    starts, ends = [], []
    for c in range(group.num_columns):
        column = group.column(c)
        if column.path_in_schema.split(".")[0] not in SCHEMA.names:
            continue
        start = column.dictionary_page_offset if column.has_dictionary_page else None
        start = column.data_page_offset if start is None else min(start, column.data_page_offset)
        starts.append(start)
        ends.append(start + column.total_compressed_size)
    return RowGroup(min(starts), max(ends) - min(starts), group.num_rows)


def parse_footer(tail: bytes) -> pq.FileMetaData | int:
    """The file metadata from the file's last bytes, or how many bytes it needs if more."""
    if len(tail) < 8 or tail[-4:] != MAGIC:
        raise ValueError("not a Parquet file: no PAR1 at its end")
    (footer_length,) = struct.unpack("<I", tail[-8:-4])
    if footer_length + 8 > len(tail):
        return footer_length + 8
    return pq.read_metadata(pa.BufferReader(tail[-footer_length - 8 :]))


class FooterSource(Protocol):
    """Where decode_ref finds an L1 file's footer (services.footers.Footers)."""

    def get(self, key: str) -> pq.FileMetaData: ...


def decode_row_group(
    data: bytes | memoryview, start: int, footer: pq.FileMetaData, columns: list[str] | None = None
) -> pa.Table:
    """The records of the row group whose bytes (data) begin at start in its file."""
    columns = SCHEMA.names if columns is None else columns
    schema = pa.schema([SCHEMA.field(c) for c in columns])
    if footer.num_rows == 0:  # a file whose records were all compacted away
        return schema.empty_table()
    index = _row_group_at(footer, start)
    file = pq.ParquetFile(pa.PythonFile(_Window(start, data), mode="r"), metadata=footer)
    table = file.read_row_group(index, columns=columns, use_threads=False)
    return table if table.schema.equals(schema) else table.cast(schema)


def decode_ref(
    placed: PlacedRef,
    data: bytes | memoryview,
    footers: FooterSource,
    prefix: str,
    columns: list[str] | None = None,
) -> pa.Table:
    """A ref's records with absolute offsets: an L0 slice, or an L1 row group."""
    ref = placed.ref
    footer = None
    if ref.level != LEVEL_L0:
        footer = footers.get(object_key(prefix, ref.level, ref.object_id))
    return decode_slice(data, ref.start, placed.base_offset, footer, columns)


def decode_slice(
    data: bytes | memoryview,
    start: int,
    base_offset: int,
    footer: pq.FileMetaData | None,
    columns: list[str] | None = None,
) -> pa.Table:
    """Records with absolute offsets from an L0 slice (footer None: it has its own) or from
    the L1 row group at byte start of the file whose footer is given."""
    if footer is not None:
        return decode_row_group(data, start, footer, columns)
    table = decode_parquet(data) if columns is None else _decode_columns(data, columns)
    return with_absolute_offsets(table, base_offset)


def _decode_columns(data: bytes | memoryview, columns: list[str]) -> pa.Table:
    """Not pq.read_table: its datasets path costs about 0.5 ms a call, most of decoding a
    small slice; a ParquetFile on the buffer takes a fifth of that."""
    file = pq.ParquetFile(pa.BufferReader(data), pre_buffer=False)
    table = file.read(columns=columns, use_threads=False)
    schema = pa.schema([SCHEMA.field(c) for c in columns])
    return table if table.schema.equals(schema) else table.cast(schema)


def _row_group_at(footer: pq.FileMetaData, start: int) -> int:
    for i in range(footer.num_row_groups):
        if _row_group(footer, i).start == start:
            return i
    raise CorruptIndex(f"no row group starts at byte {start} of the file")


class _Window(io.RawIOBase):
    """A file of which only [start, start + len(data)) can be read: one row group's bytes."""

    def __init__(self, start: int, data: bytes | memoryview) -> None:
        self.start = start
        self.data = memoryview(data)
        self.position = start

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, position: int, whence: int = io.SEEK_SET) -> int:
        end = self.start + len(self.data)
        self.position = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: end}[
            whence
        ] + position
        return self.position

    def tell(self) -> int:
        return self.position

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        offset = self.position - self.start
        if offset < 0:
            raise OSError(f"read at byte {self.position}, before the row group at {self.start}")
        chunk = self.data[offset : offset + len(buffer)]
        buffer[: len(chunk)] = chunk
        self.position += len(chunk)
        return len(chunk)
