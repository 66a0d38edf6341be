"""Avro's JSON encoding, as REST Proxy takes and answers it, to and from fastavro's datums: a
union's value is an object naming its branch ({"string": "x"}, {"ns.User": {...}}), null bare;
bytes and fixed are strings of code points 0-255; logical types appear as their underlying
type (fastavro reads and writes with them left out: the binary encoding is the same)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from objectlog.errors import SchemaMismatch, UndecodableRecord

# An avro.schema.Schema of any kind: the walks below read its attributes by its type.
AvroSchema = Any

INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)
NAMED = ("record", "error", "enum", "fixed")  # Avro's named types


def without_logical_types(node: Any) -> Any:
    """The schema's JSON without its logicalType attributes (defaults are data: kept as is)."""
    if isinstance(node, dict):
        return {
            k: v if k == "default" else without_logical_types(v)
            for k, v in node.items()
            if k != "logicalType"
        }
    if isinstance(node, list):
        return [without_logical_types(item) for item in node]
    return node


def _branch_name(schema: AvroSchema) -> str:
    """A union branch's name in Avro's JSON encoding (and fastavro's tuple notation)."""
    if schema.type in NAMED:
        return str(schema.fullname)
    return str(schema.type)


def mismatch(path: str, expected: str, value: Any) -> SchemaMismatch:
    shown = json.dumps(value, ensure_ascii=False)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return SchemaMismatch(f"{path or 'the value'}: expected {expected}, got {shown}")


def from_avro_json(schema: AvroSchema, value: Any, path: str) -> Any:
    """The fastavro datum for value in Avro's JSON encoding, checked against schema."""
    kind = schema.type
    if kind in ("union", "error_union"):
        return _union_from_json(schema, value, path)
    if kind == "record" or kind == "error":
        return _record_from_json(schema, value, path)
    if kind == "array":
        if not isinstance(value, list):
            raise mismatch(path, "an array", value)
        return [from_avro_json(schema.items, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if kind == "map":
        if not isinstance(value, dict):
            raise mismatch(path, "an object (a map)", value)
        return {k: from_avro_json(schema.values, v, f"{path}.{k}") for k, v in value.items()}
    check = _PRIMITIVES.get(kind)
    if check is not None:
        return check(schema, value, path)
    raise mismatch(path, f"a value of Avro type {kind}, which this proxy cannot write", value)


def _union_from_json(schema: AvroSchema, value: Any, path: str) -> Any:
    branches = {_branch_name(branch): branch for branch in schema.schemas}
    if value is None:
        if "null" not in branches:
            raise mismatch(path, f"one of {list(branches)} (the union has no null)", value)
        return None
    if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in branches:
        named = [name for name in branches if name != "null"] or ["null"]
        raise mismatch(
            path, f'a union value naming its branch, such as {{"{named[0]}": ...}} ({named})', value
        )
    name, inner = next(iter(value.items()))
    return (name, from_avro_json(branches[name], inner, f"{path}.{name}" if path else name))


def _record_from_json(schema: AvroSchema, value: Any, path: str) -> Any:
    if not isinstance(value, dict):
        raise mismatch(path, f"an object (record {schema.fullname})", value)
    names = {field.name for field in schema.fields}
    unknown = sorted(set(value) - names)
    if unknown:
        raise SchemaMismatch(f"{path or 'the value'}: unknown fields {unknown} ({schema.fullname})")
    datum = {}
    for field in schema.fields:
        at = f"{path}.{field.name}" if path else field.name
        if field.name in value:
            datum[field.name] = from_avro_json(field.type, value[field.name], at)
        elif field.has_default:
            datum[field.name] = _default_from_json(field.type, field.default, at)
        else:
            raise SchemaMismatch(f"{at}: missing (the field has no default)")
    return datum


def _default_from_json(schema: AvroSchema, default: Any, path: str) -> Any:
    """A field's default as a datum: in Avro's JSON encoding, except that a union's default is
    a value of its first branch, unwrapped."""
    if schema.type not in ("union", "error_union"):
        return from_avro_json(schema, default, path)
    first = schema.schemas[0]
    if first.type == "null":
        return None
    return (_branch_name(first), from_avro_json(first, default, path))


def _plain(expected: type, shown: str) -> Callable[[AvroSchema, Any, str], Any]:
    def check(schema: AvroSchema, value: Any, path: str) -> Any:
        if not isinstance(value, expected):
            raise mismatch(path, shown, value)
        return value

    return check


def _integer(schema: AvroSchema, value: Any, path: str) -> Any:
    low, high = INT_RANGE if schema.type == "int" else LONG_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise mismatch(path, f"an integer from {low} to {high} ({schema.type})", value)
    return value


def _floating(schema: AvroSchema, value: Any, path: str) -> Any:
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        return float(value.replace("Infinity", "inf"))
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise mismatch(path, f"a number ({schema.type})", value)
    return float(value)


def _octets(schema: AvroSchema, value: Any, path: str) -> Any:
    if not isinstance(value, str):
        raise mismatch(path, f"a string of code points 0-255 ({schema.type})", value)
    try:
        data = value.encode("latin-1")
    except UnicodeEncodeError:
        raise mismatch(path, f"a string of code points 0-255 ({schema.type})", value) from None
    if schema.type == "fixed" and len(data) != schema.size:
        raise mismatch(path, f"{schema.size} bytes (fixed {schema.fullname})", value)
    return data


def _enum(schema: AvroSchema, value: Any, path: str) -> Any:
    if value not in schema.symbols:
        raise mismatch(path, f"one of {list(schema.symbols)} (enum {schema.fullname})", value)
    return value


_PRIMITIVES: dict[str, Callable[[AvroSchema, Any, str], Any]] = {
    "null": _plain(type(None), "null"),
    "boolean": _plain(bool, "true or false"),
    "int": _integer,
    "long": _integer,
    "float": _floating,
    "double": _floating,
    "string": _plain(str, "a string"),
    "bytes": _octets,
    "fixed": _octets,
    "enum": _enum,
}


def to_avro_json(schema: AvroSchema, datum: Any) -> Any:
    """Avro's JSON encoding of a datum fastavro read (return_named_type: a named branch of a
    union comes as (name, datum))."""
    kind = schema.type
    if kind in ("union", "error_union"):
        if datum is None:
            return None
        branch = _branch_of(schema.schemas, datum)
        inner = datum[1] if isinstance(datum, tuple) else datum
        return {_branch_name(branch): to_avro_json(branch, inner)}
    if kind in ("record", "error"):
        return {field.name: to_avro_json(field.type, datum[field.name]) for field in schema.fields}
    if kind == "array":
        return [to_avro_json(schema.items, item) for item in datum]
    if kind == "map":
        return {key: to_avro_json(schema.values, item) for key, item in datum.items()}
    if kind in ("bytes", "fixed"):
        return bytes(datum).decode("latin-1")
    if isinstance(datum, float) and not math.isfinite(datum):
        return "NaN" if math.isnan(datum) else ("Infinity" if datum > 0 else "-Infinity")
    return datum


_PYTHON_BRANCHES: tuple[tuple[type, tuple[str, ...]], ...] = (
    (bool, ("boolean",)),
    (int, ("int", "long")),
    (float, ("float", "double")),
    (str, ("string",)),
    (bytes, ("bytes",)),
    (list, ("array",)),
    (dict, ("map",)),
)


def _branch_of(branches: list[AvroSchema], datum: Any) -> AvroSchema:
    """The union branch a datum was read from: named by fastavro for named types, else the
    first branch of its Python type (a union holding both int and long, or float and double,
    shows the first of them)."""
    if isinstance(datum, tuple):
        return next(b for b in branches if _branch_name(b) == datum[0])
    for python_type, names in _PYTHON_BRANCHES:
        if isinstance(datum, python_type):
            return next(b for b in branches if b.type in names)
    raise UndecodableRecord(f"a union value of an unexpected kind: {type(datum).__name__}")
