"""Typed Arrow columns decoded from a topic's AVRO values (issue 35, topics as typed tables):
the Arrow type an Avro schema becomes, and a binary column of framed values decoded into it.

Avro -> Arrow, keeping to what an Iceberg table can hold:

    null                            null
    ["null", T] (any order)         T, nullable
    [T] (a single branch)           T
    record / error                  struct, its fields in order
    array<T>                        list<T>
    map<V>                          map<string, V>
    enum                            string (the symbol)
    fixed, bytes                    binary
    string                          string
    int / long                      int32 / int64
    float / double                  float32 / float64
    boolean                         bool
    date                            date32
    time-millis / time-micros       time32[ms] / time64[us]
    timestamp-millis / -micros      timestamp[ms, UTC] / timestamp[us, UTC]
    local-timestamp-millis / -micros  timestamp[ms] / timestamp[us] (no time zone)
    decimal(p, s), bytes or fixed   decimal128(p, s)
    uuid (on string)                string

A struct field, list item or map value is nullable only where its Avro type admits null; the
column itself always is (a record's value may be null). A logical type on the wrong underlying
type, an invalid decimal (Avro's parser checks its precision, scale and fixed size) or one
not in the table (timestamp-nanos, uuid on fixed) is ignored: the column has the underlying
type, as the Avro spec says.

Types Iceberg cannot hold become string columns:

- a union of two or more non-null branches: a JSON string of the decoded datum;
- a recursive record (one that can contain itself), wherever it appears: a JSON string;
- a decimal of precision over 38 (Iceberg's limit): the decimal's text, such as "12.50".

The JSON is json.dumps (compact, not ASCII-escaped) of the datum as fastavro reads it with
the logical types left out (so a timestamp is its number, a decimal its bytes): bytes and
fixed are standard base64 strings, records and maps objects, a union's value is bare (its
branch not named), and NaN and the infinities are the strings "NaN", "Infinity", "-Infinity".

Values are read with the logical types left out (as objectlog.schemas.serde does) and their
logical types applied here, so the column follows Avro's parse of the schema rather than
fastavro's; Arrow takes the underlying numbers for its temporal types as they are.
"""

from __future__ import annotations

import base64
import io
import json
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import avro.schema
import pyarrow as pa

from objectlog.format.schema_ids import MAGIC_BYTE, NOT_FRAMED_REASON, PREFIX_BYTES
from objectlog.schemas.serde_avro_json import without_logical_types

MAX_DECIMAL128_PRECISION = 38  # Iceberg's too
RECORDS = ("record", "error")
UNIONS = ("union", "error_union")

Convert = Callable[[Any], Any]

_TEMPORAL: dict[tuple[str, str], pa.DataType] = {
    ("int", "date"): pa.date32(),
    ("int", "time-millis"): pa.time32("ms"),
    ("long", "time-micros"): pa.time64("us"),
    ("long", "timestamp-millis"): pa.timestamp("ms", tz="UTC"),
    ("long", "timestamp-micros"): pa.timestamp("us", tz="UTC"),
    ("long", "local-timestamp-millis"): pa.timestamp("ms"),
    ("long", "local-timestamp-micros"): pa.timestamp("us"),
}
_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "fixed": pa.binary(),
    "string": pa.string(),
    "enum": pa.string(),
}


def arrow_type(schema: avro.schema.Schema) -> pa.DataType:
    """The Arrow type of the column the schema's values decode into (the module's table)."""
    return _arrow(schema, _recursive_records(schema))


def decode_column(
    values: pa.Array | pa.ChunkedArray,
    writer: avro.schema.Schema,
    reader_type: pa.DataType | None = None,
) -> tuple[pa.Array, pa.Array]:
    """(typed, reasons) for a binary column of framed values all written with the writer
    schema (callers group the values by schema id; the id itself is not checked here).

    typed has arrow_type(writer), or reader_type when given (the table's evolved type: a
    struct field the writer lacks is null, one the reader lacks is left out). reasons is a
    string column: null where the value decoded (or was null), else why it did not, and typed
    is null there."""
    import fastavro

    target = arrow_type(writer) if reader_type is None else reader_type
    parsed = fastavro.parse_schema(without_logical_types(writer.to_json()))
    convert = _converter(writer, _recursive_records(writer)) or _same

    def read(value: bytes) -> Any:
        try:
            return convert(_read(fastavro, parsed, value))
        except Undecodable:
            raise
        except Exception as e:  # whatever a bad payload makes fastavro or a conversion raise
            raise Undecodable(f"Avro cannot read it: {type(e).__name__}: {e}") from None

    return decode_rows(values, read, target)


# ---- decoding (every schema type's) ------------------------------------------------------


class Undecodable(Exception):
    """Why a value does not decode (its row's reason)."""


def decode_rows(
    values: pa.Array | pa.ChunkedArray, read: Callable[[bytes], Any], target: pa.DataType
) -> tuple[pa.Array, pa.Array]:
    """(typed, reasons) of values, each read (or raising Undecodable) and typed as target;
    a null value is a null row with no reason."""
    column = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    decoded: list[Any] = []
    reasons: list[str | None] = []
    for value in column.to_pylist():
        datum, reason = None, None
        if value is not None:
            try:
                datum = read(value)
            except Undecodable as e:
                reason = str(e)
        decoded.append(datum)
        reasons.append(reason)
    return to_arrow(decoded, reasons, target), pa.array(reasons, type=pa.string())


def self_containing(graph: dict[str, set[str]]) -> set[str]:
    """The names in graph (name -> the names it contains) that can reach themselves."""
    found = set()
    for start, children in graph.items():
        seen: set[str] = set()
        todo = list(children)
        while todo:
            name = todo.pop()
            if name == start:
                found.add(start)
                break
            if name not in seen:
                seen.add(name)
                todo.extend(graph[name])
    return found


def _read(fastavro: Any, parsed: Any, value: bytes) -> Any:
    if len(value) < PREFIX_BYTES or value[0] != MAGIC_BYTE:
        raise Undecodable(NOT_FRAMED_REASON)
    stream = io.BytesIO(value)
    stream.seek(PREFIX_BYTES)
    try:
        datum = fastavro.schemaless_reader(stream, parsed)
    except EOFError:
        raise Undecodable("the Avro payload is cut short") from None
    left = len(value) - stream.tell()
    if left:
        raise Undecodable(f"{left} bytes after the Avro datum")
    return datum


def to_arrow(decoded: list[Any], reasons: list[str | None], target: pa.DataType) -> pa.Array:
    """The array of the decoded values; a value Arrow cannot hold as target (an int over
    int32's range in an evolved type, a decimal over its precision) is null, with a reason."""
    try:
        return pa.array(decoded, type=target)
    except (pa.ArrowException, OverflowError, ValueError, TypeError):
        pass
    for i, datum in enumerate(decoded):
        if datum is None:
            continue
        try:
            pa.array([datum], type=target)
        except (pa.ArrowException, OverflowError, ValueError, TypeError) as e:
            decoded[i] = None
            reasons[i] = f"its value does not fit {target}: {e}"
    return pa.array(decoded, type=target)


# ---- the schema's walks ----------------------------------------------------------------


def _arrow(schema: Any, recursive: set[str]) -> pa.DataType:
    kind = schema.type
    if kind in UNIONS:
        branches = _non_null(schema)
        if len(branches) >= 2:
            return pa.string()
        return _arrow(branches[0], recursive) if branches else pa.null()
    if kind in RECORDS:
        if schema.fullname in recursive:
            return pa.string()
        return pa.struct([_field(f.name, f.type, recursive) for f in schema.fields])
    if kind == "array":
        return pa.list_(_field("item", schema.items, recursive))
    if kind == "map":
        return pa.map_(pa.string(), _field("value", schema.values, recursive))
    decimal = _decimal(schema)
    if decimal is not None:
        precision, scale = decimal
        if precision > MAX_DECIMAL128_PRECISION:
            return pa.string()
        return pa.decimal128(precision, scale)
    temporal = _TEMPORAL.get((kind, _logical(schema)))
    if temporal is not None:
        return temporal
    return _PRIMITIVES[kind]


def _field(name: str, schema: Any, recursive: set[str]) -> pa.Field:
    return pa.field(name, _arrow(schema, recursive), nullable=_admits_null(schema))


def _converter(schema: Any, recursive: set[str]) -> Convert | None:
    """What turns fastavro's datum (logical types left out) into the value Arrow takes for
    the schema's column; None where it takes the datum as it is."""
    kind = schema.type
    if kind in UNIONS:
        branches = _non_null(schema)
        if len(branches) >= 2:
            return to_json
        inner = _converter(branches[0], recursive) if branches else None
        return None if inner is None else _unless_null(inner)
    if kind in RECORDS:
        if schema.fullname in recursive:
            return to_json
        fields = [(f.name, _converter(f.type, recursive)) for f in schema.fields]
        converted = [(name, c) for name, c in fields if c is not None]
        return _record_converter(converted) if converted else None
    if kind == "array":
        item = _converter(schema.items, recursive)
        return None if item is None else (lambda datum: [item(x) for x in datum])
    if kind == "map":
        value = _converter(schema.values, recursive)
        return None if value is None else (lambda datum: {k: value(v) for k, v in datum.items()})
    decimal = _decimal(schema)
    if decimal is not None:
        scale = decimal[1]
        if decimal[0] > MAX_DECIMAL128_PRECISION:
            return lambda datum: format(_to_decimal(datum, scale), "f")
        return lambda datum: _to_decimal(datum, scale)
    return None


def _record_converter(fields: list[tuple[str, Convert]]) -> Convert:
    def convert(datum: dict[str, Any]) -> dict[str, Any]:
        converted = dict(datum)
        for name, field in fields:
            converted[name] = field(datum[name])
        return converted

    return convert


def _unless_null(inner: Convert) -> Convert:
    return lambda datum: None if datum is None else inner(datum)


def _same(datum: Any) -> Any:
    return datum


def _non_null(union: Any) -> list[Any]:
    return [branch for branch in union.schemas if branch.type != "null"]


def _admits_null(schema: Any) -> bool:
    if schema.type in UNIONS:
        return any(branch.type == "null" for branch in schema.schemas)
    return bool(schema.type == "null")


def _logical(schema: Any) -> str:
    logical = schema.get_prop("logicalType")
    return logical if isinstance(logical, str) else ""


def _decimal(schema: avro.schema.Schema) -> tuple[int, int] | None:
    """(precision, scale) of a decimal Avro's parser accepted (it checks them, and a fixed's
    size), else None: an invalid decimal is its underlying bytes or fixed."""
    if not isinstance(schema, avro.schema.BytesDecimalSchema | avro.schema.FixedDecimalSchema):
        return None
    return int(schema.precision), int(schema.scale or 0)


def _to_decimal(datum: bytes, scale: int) -> Decimal:
    # exact (scaleb would round to the context's 28 digits)
    return Decimal(f"{int.from_bytes(datum, 'big', signed=True)}E-{scale}")


def to_json(datum: Any) -> str | None:
    if datum is None:
        return None
    return json.dumps(_jsonable(datum), separators=(",", ":"), ensure_ascii=False)


def _jsonable(datum: Any) -> Any:
    if isinstance(datum, bytes):
        return base64.b64encode(datum).decode("ascii")
    if isinstance(datum, float) and not math.isfinite(datum):
        return "NaN" if math.isnan(datum) else ("Infinity" if datum > 0 else "-Infinity")
    if isinstance(datum, dict):
        return {str(k): _jsonable(v) for k, v in datum.items()}
    if isinstance(datum, list | tuple):
        return [_jsonable(v) for v in datum]
    return datum


def _recursive_records(schema: Any) -> set[str]:
    """The full names of the records that can contain themselves."""
    graph: dict[str, set[str]] = {}

    def walk(node: Any, owner: str | None) -> None:
        kind = node.type
        if kind in RECORDS:
            name = node.fullname
            if owner is not None:
                graph[owner].add(name)
            if name in graph:
                return
            graph[name] = set()
            for f in node.fields:
                walk(f.type, name)
        elif kind in UNIONS:
            for branch in node.schemas:
                walk(branch, owner)
        elif kind == "array":
            walk(node.items, owner)
        elif kind == "map":
            walk(node.values, owner)

    walk(schema, None)
    return self_containing(graph)
