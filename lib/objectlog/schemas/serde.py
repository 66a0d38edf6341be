"""Keys and values in the Schema Registry's wire format, to and from the JSON that REST Proxy
embeds in its requests and answers (its avro, jsonschema and protobuf formats).

The wire format, as Confluent's serializers write it:

    byte 0      magic byte 0
    bytes 1-4   the schema id, a big-endian int32
    bytes 5-    AVRO      the Avro binary encoding of the datum (no container header)
                JSON      the JSON text, UTF-8
                PROTOBUF  the message indexes, then the message: the indexes are zigzag
                          varints, a count and then the message's path in the file (its index
                          among the file's messages, then among its parent's nested ones); the
                          first message, [0], is written as the single byte 0

The JSON, as REST Proxy takes and answers it:

    AVRO      Avro's JSON encoding: a union's value is an object naming its branch
              ({"string": "x"}, {"ns.User": {...}}), null bare; bytes and fixed are strings of
              code points 0-255; logical types appear as their underlying type
    JSON      the document itself (validated against the schema when encoding)
    PROTOBUF  Protobuf's JSON mapping (lowerCamelCase names, 64-bit integers as strings); an
              answer includes the fields left at their defaults, as REST Proxy's does

A schema is compiled once per registry and id (a schema never changes), so a request of many
records reads the registry once per schema, never per record. SchemaMismatch and
UndecodableRecord are raised here and nowhere else.
"""

from __future__ import annotations

import io
import json
import math
import threading
import weakref
from collections.abc import Callable
from typing import Any

from objectlog.errors import (
    SchemaMismatch,
    SchemaNotFound,
    UndecodableRecord,
)
from objectlog.format.schema_ids import message_indexes
from objectlog.schemas.registry import SchemaRegistry
from objectlog.schemas.types import AVRO, JSON, PROTOBUF, ParsedSchema
from objectlog.stores.schemas import StoredSchema

# An avro.schema.Schema of any kind: the walks below read its attributes by its type. Each
# type's libraries are imported with its first schema, as the registry loads its types.
AvroSchema = Any

MAGIC_BYTE = 0
PREFIX_BYTES = 5
CACHE_SIZE = 1_000  # compiled schemas kept per registry
INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)
NAMED = ("record", "error", "enum", "fixed")  # Avro's named types


def encode(registry: SchemaRegistry, schema: StoredSchema, value: Any) -> bytes:
    """value (JSON, as REST Proxy embeds it) in the wire format of schema; SchemaMismatch if it
    does not fit."""
    payload = _codec(registry, schema.id, schema).encode(value)
    return bytes([MAGIC_BYTE]) + schema.id.to_bytes(4, "big") + payload


def decode(registry: SchemaRegistry, data: bytes, schema_type: str | None = None) -> Any:
    """The JSON REST Proxy answers for bytes in the wire format; UndecodableRecord when they
    are not in it, name a schema the registry does not hold, are of another schema type than
    schema_type (AVRO, JSON, PROTOBUF), or do not decode with their schema."""
    if len(data) < PREFIX_BYTES or data[0] != MAGIC_BYTE:
        raise UndecodableRecord(
            "it does not carry the Schema Registry's wire format (magic byte 0, a 4-byte schema id)"
        )
    schema_id = int.from_bytes(data[1:PREFIX_BYTES], "big")
    try:
        codec = _codec(registry, schema_id)
    except SchemaNotFound:
        raise UndecodableRecord(f"schema id {schema_id} is not in the registry") from None
    if schema_type is not None and codec.schema_type != schema_type:
        raise UndecodableRecord(
            f"it was written with a {codec.schema_type} schema (id {schema_id}), not {schema_type}"
        )
    try:
        return codec.decode(bytes(data[PREFIX_BYTES:]))
    except UndecodableRecord as e:
        raise UndecodableRecord(f"{e.message} (schema id {schema_id})") from None
    except Exception as e:  # the decoders' errors are many and undocumented: bytes are bytes
        raise UndecodableRecord(
            f"it does not decode with schema id {schema_id} ({codec.schema_type}): {e}"
        ) from None


# ---- compiled schemas, by registry and id ----------------------------------------------


class _Codec:
    schema_type: str

    def encode(self, value: Any) -> bytes:
        raise NotImplementedError

    def decode(self, payload: bytes) -> Any:
        raise NotImplementedError


_codecs: weakref.WeakKeyDictionary[SchemaRegistry, dict[int, _Codec]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _codec(registry: SchemaRegistry, schema_id: int, stored: StoredSchema | None = None) -> _Codec:
    with _lock:
        found = _codecs.get(registry, {}).get(schema_id)
    if found is not None:
        return found
    stored = stored or registry.schema_by_id(schema_id)
    parsed = registry.parsed(stored)
    built = _CODECS[stored.schema_type](parsed)
    with _lock:
        kept = _codecs.setdefault(registry, {})
        if len(kept) >= CACHE_SIZE:
            kept.clear()
        kept[schema_id] = built
    return built


# ---- AVRO ------------------------------------------------------------------------------


class _Avro(_Codec):
    """Avro's JSON encoding to and from fastavro's datums. fastavro reads and writes with the
    schema's logical types left out: the binary encoding is the same, and Avro's JSON shows the
    underlying values."""

    schema_type = AVRO

    def __init__(self, parsed: ParsedSchema) -> None:
        import fastavro

        schema = self.schema = parsed.parsed
        self.fastavro = fastavro
        self.plain = fastavro.parse_schema(_without_logical_types(schema.to_json()))

    def encode(self, value: Any) -> bytes:
        datum = _from_avro_json(self.schema, value, "")
        out = io.BytesIO()
        try:
            self.fastavro.schemaless_writer(out, self.plain, datum)
        except (ValueError, TypeError, KeyError, OverflowError) as e:
            raise SchemaMismatch(f"Avro cannot write it: {e}") from None
        return out.getvalue()

    def decode(self, payload: bytes) -> Any:
        datum = self.fastavro.schemaless_reader(
            io.BytesIO(payload), self.plain, return_named_type=True
        )
        return _to_avro_json(self.schema, datum)


def _without_logical_types(node: Any) -> Any:
    """The schema's JSON without its logicalType attributes (defaults are data: kept as is)."""
    if isinstance(node, dict):
        return {
            k: v if k == "default" else _without_logical_types(v)
            for k, v in node.items()
            if k != "logicalType"
        }
    if isinstance(node, list):
        return [_without_logical_types(item) for item in node]
    return node


def _branch_name(schema: AvroSchema) -> str:
    """A union branch's name in Avro's JSON encoding (and fastavro's tuple notation)."""
    if schema.type in NAMED:
        return str(schema.fullname)
    return str(schema.type)


def _mismatch(path: str, expected: str, value: Any) -> SchemaMismatch:
    shown = json.dumps(value, ensure_ascii=False)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return SchemaMismatch(f"{path or 'the value'}: expected {expected}, got {shown}")


def _from_avro_json(schema: AvroSchema, value: Any, path: str) -> Any:
    """The fastavro datum for value in Avro's JSON encoding, checked against schema."""
    kind = schema.type
    if kind in ("union", "error_union"):
        return _union_from_json(schema, value, path)
    if kind == "record" or kind == "error":
        return _record_from_json(schema, value, path)
    if kind == "array":
        if not isinstance(value, list):
            raise _mismatch(path, "an array", value)
        return [_from_avro_json(schema.items, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if kind == "map":
        if not isinstance(value, dict):
            raise _mismatch(path, "an object (a map)", value)
        return {k: _from_avro_json(schema.values, v, f"{path}.{k}") for k, v in value.items()}
    check = _PRIMITIVES.get(kind)
    if check is not None:
        return check(schema, value, path)
    raise _mismatch(path, f"a value of Avro type {kind}, which this proxy cannot write", value)


def _union_from_json(schema: AvroSchema, value: Any, path: str) -> Any:
    branches = {_branch_name(branch): branch for branch in schema.schemas}
    if value is None:
        if "null" not in branches:
            raise _mismatch(path, f"one of {list(branches)} (the union has no null)", value)
        return None
    if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in branches:
        named = [name for name in branches if name != "null"] or ["null"]
        raise _mismatch(
            path, f'a union value naming its branch, such as {{"{named[0]}": ...}} ({named})', value
        )
    name, inner = next(iter(value.items()))
    return (name, _from_avro_json(branches[name], inner, f"{path}.{name}" if path else name))


def _record_from_json(schema: AvroSchema, value: Any, path: str) -> Any:
    if not isinstance(value, dict):
        raise _mismatch(path, f"an object (record {schema.fullname})", value)
    names = {field.name for field in schema.fields}
    unknown = sorted(set(value) - names)
    if unknown:
        raise SchemaMismatch(f"{path or 'the value'}: unknown fields {unknown} ({schema.fullname})")
    datum = {}
    for field in schema.fields:
        at = f"{path}.{field.name}" if path else field.name
        if field.name in value:
            datum[field.name] = _from_avro_json(field.type, value[field.name], at)
        elif field.has_default:
            datum[field.name] = _default_from_json(field.type, field.default, at)
        else:
            raise SchemaMismatch(f"{at}: missing (the field has no default)")
    return datum


def _default_from_json(schema: AvroSchema, default: Any, path: str) -> Any:
    """A field's default as a datum: in Avro's JSON encoding, except that a union's default is
    a value of its first branch, unwrapped."""
    if schema.type not in ("union", "error_union"):
        return _from_avro_json(schema, default, path)
    first = schema.schemas[0]
    if first.type == "null":
        return None
    return (_branch_name(first), _from_avro_json(first, default, path))


def _plain(expected: type, shown: str) -> Callable[[AvroSchema, Any, str], Any]:
    def check(schema: AvroSchema, value: Any, path: str) -> Any:
        if not isinstance(value, expected):
            raise _mismatch(path, shown, value)
        return value

    return check


def _integer(schema: AvroSchema, value: Any, path: str) -> Any:
    low, high = INT_RANGE if schema.type == "int" else LONG_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _mismatch(path, f"an integer from {low} to {high} ({schema.type})", value)
    return value


def _floating(schema: AvroSchema, value: Any, path: str) -> Any:
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        return float(value.replace("Infinity", "inf"))
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _mismatch(path, f"a number ({schema.type})", value)
    return float(value)


def _octets(schema: AvroSchema, value: Any, path: str) -> Any:
    if not isinstance(value, str):
        raise _mismatch(path, f"a string of code points 0-255 ({schema.type})", value)
    try:
        data = value.encode("latin-1")
    except UnicodeEncodeError:
        raise _mismatch(path, f"a string of code points 0-255 ({schema.type})", value) from None
    if schema.type == "fixed" and len(data) != schema.size:
        raise _mismatch(path, f"{schema.size} bytes (fixed {schema.fullname})", value)
    return data


def _enum(schema: AvroSchema, value: Any, path: str) -> Any:
    if value not in schema.symbols:
        raise _mismatch(path, f"one of {list(schema.symbols)} (enum {schema.fullname})", value)
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


def _to_avro_json(schema: AvroSchema, datum: Any) -> Any:
    """Avro's JSON encoding of a datum fastavro read (return_named_type: a named branch of a
    union comes as (name, datum))."""
    kind = schema.type
    if kind in ("union", "error_union"):
        if datum is None:
            return None
        branch = _branch_of(schema.schemas, datum)
        inner = datum[1] if isinstance(datum, tuple) else datum
        return {_branch_name(branch): _to_avro_json(branch, inner)}
    if kind in ("record", "error"):
        return {field.name: _to_avro_json(field.type, datum[field.name]) for field in schema.fields}
    if kind == "array":
        return [_to_avro_json(schema.items, item) for item in datum]
    if kind == "map":
        return {key: _to_avro_json(schema.values, item) for key, item in datum.items()}
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


# ---- JSON ------------------------------------------------------------------------------


class _Json(_Codec):
    """The document validated (formats asserted, as Confluent's validator does) with its
    references resolvable by the names they were registered under."""

    schema_type = JSON

    def __init__(self, parsed: ParsedSchema) -> None:
        from jsonschema.exceptions import best_match
        from referencing import Registry

        from objectlog.schemas.json_schemas import dialect_of

        document = parsed.parsed
        found = {name: json.loads(text) for name, text in document.references.items()}
        resources = [(n, dialect_of(d).specification.create_resource(d)) for n, d in found.items()]
        validator = document.root.dialect.validator
        self.best_match = best_match
        self.validator = validator(
            document.root.schema,
            registry=Registry().with_resources(resources),
            format_checker=validator.FORMAT_CHECKER,
        )

    def encode(self, value: Any) -> bytes:
        error = self.best_match(self.validator.iter_errors(value))
        if error is not None:
            at = "/".join(str(part) for part in error.absolute_path)
            raise SchemaMismatch(f"{error.message} (at #/{at})")
        try:
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
        except UnicodeEncodeError as e:  # a lone surrogate ("\ud800") has no UTF-8
            raise SchemaMismatch(f"it cannot be written as UTF-8: {e.reason}") from None

    def decode(self, payload: bytes) -> Any:
        return json.loads(payload)


# ---- PROTOBUF --------------------------------------------------------------------------


class _Protobuf(_Codec):
    """Messages of the schema's file, built in a descriptor pool of its own holding the files
    it imports (references and well-known types); REST Proxy writes the file's first message."""

    schema_type = PROTOBUF

    def __init__(self, parsed: ParsedSchema) -> None:
        from google.protobuf import descriptor_pool, json_format, message_factory

        from objectlog.schemas.protobuf_compatibility import ProtobufParsedSchema

        assert isinstance(parsed, ProtobufParsedSchema)
        self.file = parsed.parsed
        self.pool = descriptor_pool.DescriptorPool()
        for imported in parsed.imports:
            self.pool.AddSerializedFile(imported.SerializeToString())
        self.pool.AddSerializedFile(self.file.SerializeToString())
        self.json_format = json_format
        self.message_factory = message_factory
        self._classes: dict[tuple[int, ...], Any] = {}

    def message_class(self, indexes: tuple[int, ...]) -> Any:
        found = self._classes.get(indexes)
        if found is None:
            names, container = [self.file.package] if self.file.package else [], self.file
            for index in indexes:
                types = container.message_type if container is self.file else container.nested_type
                if not 0 <= index < len(types):
                    raise UndecodableRecord(f"its message indexes {list(indexes)} name no message")
                container = types[index]
                names.append(container.name)
            descriptor = self.pool.FindMessageTypeByName(".".join(names))
            found = self._classes[indexes] = self.message_factory.GetMessageClass(descriptor)
        return found

    def encode(self, value: Any) -> bytes:
        if not self.file.message_type:
            raise SchemaMismatch("the schema defines no message")
        if not isinstance(value, dict):
            raise _mismatch("", f"an object (message {self.file.message_type[0].name})", value)
        try:
            message = self.json_format.ParseDict(value, self.message_class((0,))())
        except (self.json_format.ParseError, ValueError, TypeError) as e:
            raise SchemaMismatch(str(e)) from None
        return b"\x00" + message.SerializeToString()

    def decode(self, payload: bytes) -> Any:
        try:
            indexes, start = message_indexes(payload)
        except ValueError as e:
            raise UndecodableRecord(str(e)) from None
        message = self.message_class(tuple(indexes))()
        message.ParseFromString(payload[start:])
        return self.json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


_CODECS: dict[str, Callable[[ParsedSchema], _Codec]] = {
    AVRO: _Avro,
    JSON: _Json,
    PROTOBUF: _Protobuf,
}
