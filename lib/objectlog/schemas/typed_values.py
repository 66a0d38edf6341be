"""A topic's values as typed columns (issue 35, topics as typed tables; DESIGN.md section 15).

``objectlog.table.mode`` chooses, as Redpanda's ``redpanda.iceberg.mode`` does:

    key_value                the Kafka columns only (the default)
    value_schema_id_prefix   each value decoded by the schema id its wire prefix carries
                             (magic byte 0 and the id, as Confluent's serializers write it)
    value_schema_latest      each value, written without the prefix, decoded by the latest
                             version of the topic's value subject (``<topic>-value``)

Three columns go beside the Kafka ones:

    value_decoded     the value decoded (a struct of a record's fields, ...), null where it
                      did not decode
    value_schema_id   the schema it was decoded with (null where the value names none)
    value_error       why it did not decode: not framed, an id the registry does not hold (a
                      permanently deleted schema), a payload its schema does not read, a schema
                      the column's type cannot take; null where it decoded or the value is null

The column's type is the merge of every writer schema's type (merge_types): a struct gains
the fields a newer schema adds (appended, in the order met), an int widens to a long and a
float to a double (Iceberg's promotions); any other change (a field's type changed under
compatibility NONE) leaves the type as it was, and the rows written with that schema get
value_error saying so. Fields are all optional (a newer schema may drop one).

Each type's decoding lives in its own module (typed_columns for AVRO, typed_json, typed_protobuf);
schemas are read from the registry once per id and kept (a schema never changes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from objectlog.errors import ObjectLogError, SchemaNotFound
from objectlog.format.schema_ids import MAGIC_BYTE, NOT_FRAMED_REASON, framed_ids
from objectlog.format.topic_configs import KEY_VALUE, VALUE_SCHEMA_LATEST
from objectlog.format.topics import Topic
from objectlog.schemas.registry import SchemaRegistry
from objectlog.schemas.types import AVRO, JSON, PROTOBUF, ParsedSchema

DECODED, SCHEMA_ID, ERROR = "value_decoded", "value_schema_id", "value_error"
TYPED_COLUMNS = (DECODED, SCHEMA_ID, ERROR)
PROTOBUF_FIRST_MESSAGE = b"\x00"  # the message indexes [0], as Confluent writes them
CACHE_SIZE = 1_000

Decode = Callable[[pa.Array, ParsedSchema, pa.DataType | None], tuple[pa.Array, pa.Array]]


def typed_schema(decoded: pa.DataType | None) -> pa.Schema:
    """The typed columns, value_decoded of the given type (left out for None)."""
    fields = [pa.field(SCHEMA_ID, pa.int32()), pa.field(ERROR, pa.string())]
    return pa.schema(fields if decoded is None else [pa.field(DECODED, decoded), *fields])


# ---- the schema types' decoders --------------------------------------------------------


def natural_type(parsed: ParsedSchema) -> pa.DataType:
    """The Arrow type a schema's values decode into, ready for a table (iceberg_ready)."""
    return iceberg_ready(_module(parsed.schema_type).arrow_type(_argument(parsed)))


def decode_values(
    values: pa.Array, parsed: ParsedSchema, target: pa.DataType
) -> tuple[pa.Array, pa.Array]:
    """(typed, reasons) of framed values all written with parsed, typed as target (a merge
    of the schema's natural type with others: its fields by name, wider numbers)."""
    natural, reasons = _module(parsed.schema_type).decode_column(values, _argument(parsed))
    return conform(natural, target), reasons


def _module(schema_type: str) -> Any:
    if schema_type == AVRO:
        from objectlog.schemas import typed_columns

        return typed_columns
    if schema_type == JSON:
        from objectlog.schemas import typed_json

        return typed_json
    if schema_type == PROTOBUF:
        from objectlog.schemas import typed_protobuf

        return typed_protobuf
    raise ValueError(f"no typed columns for schema type {schema_type}")


def _argument(parsed: ParsedSchema) -> Any:
    """What the type's module takes: the Avro schema itself, else the parsed schema."""
    return parsed.parsed if parsed.schema_type == AVRO else parsed


# ---- types: what a table can hold, merging, conforming ---------------------------------


def iceberg_ready(kind: pa.DataType) -> pa.DataType:
    """kind with every field optional and the units Iceberg keeps (microsecond times and
    timestamps); a null type (Avro's "null") becomes a string that is always null."""
    if pa.types.is_struct(kind):
        return pa.struct([_optional(f.with_type(iceberg_ready(f.type))) for f in kind])
    if pa.types.is_map(kind):
        return pa.map_(
            iceberg_ready(kind.key_type),
            _optional(kind.item_field).with_type(iceberg_ready(kind.item_type)),
        )
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return pa.list_(_optional(kind.value_field).with_type(iceberg_ready(kind.value_type)))
    if pa.types.is_time(kind):
        return pa.time64("us")
    if pa.types.is_timestamp(kind):
        return pa.timestamp("us", tz=kind.tz)
    if pa.types.is_null(kind):
        return pa.string()
    return kind


def _optional(field: pa.Field) -> pa.Field:
    return field.with_nullable(True)


_WIDER = {(pa.int32(), pa.int64()), (pa.float32(), pa.float64())}


def merge_types(table: pa.DataType, writer: pa.DataType) -> pa.DataType | str:
    """The table's type widened to also hold the writer's values, or why it cannot be."""
    if pa.types.is_struct(table) and pa.types.is_struct(writer):
        return _merge_structs(table, writer)
    if pa.types.is_list(table) and pa.types.is_list(writer):
        item = merge_types(table.value_type, writer.value_type)
        return item if isinstance(item, str) else pa.list_(table.value_field.with_type(item))
    if pa.types.is_map(table) and pa.types.is_map(writer):
        if table.key_type != writer.key_type:
            return f"map keys {writer.key_type} where the table has {table.key_type}"
        item = merge_types(table.item_type, writer.item_type)
        if isinstance(item, str):
            return item
        return pa.map_(table.key_type, table.item_field.with_type(item))
    if table == writer or (writer, table) in _WIDER:
        return table
    if (table, writer) in _WIDER:
        return writer
    if pa.types.is_decimal(table) and pa.types.is_decimal(writer) and table.scale == writer.scale:
        return pa.decimal128(max(table.precision, writer.precision), table.scale)
    return f"{writer} where the table has {table}"


def _merge_structs(table: pa.DataType, writer: pa.DataType) -> pa.DataType | str:
    fields = {f.name: f for f in table}
    for field in writer:
        held = fields.get(field.name)
        if held is None:
            fields[field.name] = field
            continue
        merged = merge_types(held.type, field.type)
        if isinstance(merged, str):
            return f"field {field.name!r}: {merged}"
        fields[field.name] = held.with_type(merged)
    return pa.struct(list(fields.values()))


def conform(array: pa.Array, target: pa.DataType) -> pa.Array:
    """array (a merged-from type) as target: struct fields by name (those target lacks left
    out, those array lacks null), lists and maps item by item, numbers widened."""
    if array.type == target:
        return array
    if pa.types.is_struct(target):
        children = [
            conform(array.field(f.name), f.type)
            if array.type.get_field_index(f.name) >= 0
            else pa.nulls(len(array), f.type)
            for f in target
        ]
        return pa.StructArray.from_arrays(
            children, fields=list(target), mask=array.is_null() if array.null_count else None
        )
    if pa.types.is_list(target):
        items = conform(array.flatten(), target.value_type)
        offsets = _offsets_with_nulls(array)
        return pa.ListArray.from_arrays(offsets, items, type=target)
    if pa.types.is_map(target):
        keys = conform(array.keys, target.key_type)
        items = conform(array.items, target.item_type)
        return pa.MapArray.from_arrays(_offsets_with_nulls(array), keys, items, type=target)
    return array.cast(target)


def _offsets_with_nulls(array: pa.Array) -> pa.Array:
    """A list or map array's offsets, null where the list is (from_arrays reads that)."""
    offsets = array.offsets
    if array.offset:  # a slice: from_arrays wants offsets starting at its first item
        offsets = pc.subtract(offsets, offsets[0])
    if not array.null_count:
        return offsets
    valid = np.append(array.is_valid().to_numpy(zero_copy_only=False), True)
    return pa.array(offsets.to_numpy(), mask=~valid)


# ---- a topic's values ------------------------------------------------------------------


@dataclass(frozen=True)
class Writer:
    """A schema values were written with: parsed and its type, or why it cannot be used."""

    schema_id: int
    parsed: ParsedSchema | None
    kind: pa.DataType | None
    problem: str | None = None


class TypedValues:
    """Decodes a topic's values by its table mode, reading each schema once."""

    def __init__(self, registry: SchemaRegistry) -> None:
        self.registry = registry
        self._writers: dict[int, Writer] = {}
        self._lock = threading.Lock()

    def writer(self, schema_id: int) -> Writer:
        with self._lock:
            known = self._writers.get(schema_id)
        if known is not None:
            return known
        found = self._read_writer(schema_id)
        with self._lock:
            if len(self._writers) >= CACHE_SIZE:
                self._writers.clear()
            self._writers[schema_id] = found
        return found

    def _read_writer(self, schema_id: int) -> Writer:
        try:
            parsed = self.registry.parsed(self.registry.schema_by_id(schema_id))
            return Writer(schema_id, parsed, natural_type(parsed))
        except SchemaNotFound:
            problem = "is not in the registry (never registered, or deleted permanently)"
            return Writer(schema_id, None, None, f"schema {schema_id} {problem}")
        except ObjectLogError as e:
            return Writer(schema_id, None, None, f"schema {schema_id}: {e.message}")
        except ValueError as e:
            return Writer(schema_id, None, None, f"schema {schema_id}: {e}")

    def decodes(self, topic: Topic) -> bool:
        """Whether the topic's table has typed columns."""
        return topic.config.table_mode != KEY_VALUE and topic.config.table_enabled

    def framed(self, topic: Topic, values: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray]:
        """(values in the wire format, ids, framed) by the topic's mode: as they are, or
        (value_schema_latest) framed with the latest id of the topic's value subject."""
        if topic.config.table_mode != VALUE_SCHEMA_LATEST:
            ids, framed, _ = framed_ids(values)
            return values, ids, framed
        latest = self.registry.version(f"{topic.name}-value", "latest").schema
        prefix = bytes([MAGIC_BYTE]) + latest.id.to_bytes(4, "big")
        if latest.schema_type == PROTOBUF:
            prefix += PROTOBUF_FIRST_MESSAGE
        framed_values = pc.binary_join_element_wise(pa.scalar(prefix), values, b"")
        present = values.is_valid().to_numpy(zero_copy_only=False)
        return framed_values, np.full(len(values), latest.id, dtype=np.int64), present

    def target(self, base: pa.DataType | None, ids: np.ndarray) -> pa.DataType | None:
        """base (the table's type, None for none yet) merged with the types of the schemas
        ids name, in id order; a schema that does not merge is left out."""
        kind = base
        for schema_id in sorted({int(i) for i in ids}):
            writer = self.writer(schema_id)
            if writer.kind is None:
                continue
            merged = writer.kind if kind is None else merge_types(kind, writer.kind)
            if not isinstance(merged, str):
                kind = merged
        return kind

    def columns(
        self, values: pa.Array, ids: np.ndarray, framed: np.ndarray, target: pa.DataType | None
    ) -> dict[str, pa.Array]:
        """The typed columns of values (wire format), value_decoded typed as target (left out
        for None: no schema has given the column a type yet)."""
        rows = len(values)
        errors = np.full(rows, None, dtype=object)
        null = values.is_null().to_numpy(zero_copy_only=False)
        errors[~framed & ~null] = NOT_FRAMED_REASON
        pieces: list[tuple[np.ndarray, pa.Array]] = []
        for schema_id in np.unique(ids[framed]):
            rows_of = np.flatnonzero(framed & (ids == schema_id))
            typed, reasons = self._decode(int(schema_id), values.take(rows_of), target)
            pieces.append((rows_of, typed))
            errors[rows_of] = np.array(reasons.to_pylist(), dtype=object)
        columns = {
            SCHEMA_ID: pa.array(np.where(framed, ids, 0), type=pa.int32(), mask=~framed),
            ERROR: pa.array(errors.tolist(), type=pa.string()),
        }
        if target is not None:
            columns[DECODED] = _scatter(rows, pieces, target)
        return columns

    def _decode(
        self, schema_id: int, values: pa.Array, target: pa.DataType | None
    ) -> tuple[pa.Array, pa.Array]:
        writer = self.writer(schema_id)
        problem = writer.problem
        if target is not None and writer.parsed is not None and writer.kind is not None:
            merged = merge_types(target, writer.kind)
            if not isinstance(merged, str) and merged == target:
                return decode_values(values, writer.parsed, target)
            problem = f"schema {schema_id} does not fit the table's column: " + (
                merged if isinstance(merged, str) else "it needs fields not added yet"
            )
        present = values.is_valid().to_pylist()
        reasons = pa.array([problem if p else None for p in present], pa.string())
        return pa.nulls(len(values), target or pa.null()), reasons


def _scatter(rows: int, pieces: list[tuple[np.ndarray, pa.Array]], target: pa.DataType) -> pa.Array:
    """One array of rows from pieces (row numbers, values), null where none gives a value."""
    order = np.full(rows, -1, dtype=np.int64)
    chunks: list[pa.Array] = []
    start = 0
    for rows_of, typed in pieces:
        order[rows_of] = np.arange(start, start + len(rows_of))
        chunks.append(typed)
        start += len(rows_of)
    chunks.append(pa.nulls(1, target))  # what the rows no piece covers take
    order[order < 0] = start
    return pa.concat_arrays(chunks).take(pa.array(order))
