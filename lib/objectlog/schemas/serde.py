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
import threading
import weakref
from collections.abc import Callable
from typing import Any

from objectlog.errors import (
    SchemaMismatch,
    SchemaNotFound,
    UndecodableRecord,
)
from objectlog.format.schema_ids import MAGIC_BYTE, PREFIX_BYTES, framed_id, message_indexes
from objectlog.schemas.registry import SchemaRegistry
from objectlog.schemas.serde_avro_json import (
    from_avro_json,
    mismatch,
    to_avro_json,
    without_logical_types,
)
from objectlog.schemas.types import AVRO, JSON, PROTOBUF, ParsedSchema
from objectlog.stores.schemas import StoredSchema

# An avro.schema.Schema of any kind: the walks below read its attributes by its type. Each
# type's libraries are imported with its first schema, as the registry loads its types.
AvroSchema = Any

CACHE_SIZE = 1_000  # compiled schemas kept per registry


def encode(registry: SchemaRegistry, schema: StoredSchema, value: Any) -> bytes:
    """value (JSON, as REST Proxy embeds it) in the wire format of schema; SchemaMismatch if it
    does not fit."""
    payload = _codec(registry, schema.id, schema).encode(value)
    return bytes([MAGIC_BYTE]) + schema.id.to_bytes(4, "big") + payload


def decode(registry: SchemaRegistry, data: bytes, schema_type: str | None = None) -> Any:
    """The JSON REST Proxy answers for bytes in the wire format; UndecodableRecord when they
    are not in it, name a schema the registry does not hold, are of another schema type than
    schema_type (AVRO, JSON, PROTOBUF), or do not decode with their schema."""
    return _with_codec(registry, data, schema_type, lambda codec, payload: codec.decode(payload))


def check(registry: SchemaRegistry, data: bytes) -> None:
    """Whether bytes in the wire format are a record of their schema, strictly (validated
    topics' strict mode): an Avro datum that takes the whole payload, a JSON document valid
    against its schema, a Protobuf message its message class parses; UndecodableRecord if not."""
    _with_codec(registry, data, None, lambda codec, payload: codec.check(payload))


def _with_codec(
    registry: SchemaRegistry,
    data: bytes,
    schema_type: str | None,
    use: Callable[[_Codec, bytes], Any],
) -> Any:
    schema_id = framed_id(data)
    if schema_id is None:
        raise UndecodableRecord(
            "it does not carry the Schema Registry's wire format (magic byte 0, a 4-byte schema id)"
        )
    try:
        codec = _codec(registry, schema_id)
    except SchemaNotFound:
        raise UndecodableRecord(f"schema id {schema_id} is not in the registry") from None
    if schema_type is not None and codec.schema_type != schema_type:
        raise UndecodableRecord(
            f"it was written with a {codec.schema_type} schema (id {schema_id}), not {schema_type}"
        )
    try:
        return use(codec, bytes(data[PREFIX_BYTES:]))
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

    def check(self, payload: bytes) -> None:
        """Raise if the payload is not a record of the schema (decoding it, by default)."""
        self.decode(payload)


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
        self.plain = fastavro.parse_schema(without_logical_types(schema.to_json()))

    def encode(self, value: Any) -> bytes:
        datum = from_avro_json(self.schema, value, "")
        out = io.BytesIO()
        try:
            self.fastavro.schemaless_writer(out, self.plain, datum)
        except (ValueError, TypeError, KeyError, OverflowError) as e:
            raise SchemaMismatch(f"Avro cannot write it: {e}") from None
        return out.getvalue()

    def check(self, payload: bytes) -> None:
        stream = io.BytesIO(payload)
        self.fastavro.schemaless_reader(stream, self.plain)
        if stream.tell() != len(payload):
            raise UndecodableRecord(f"{len(payload) - stream.tell()} bytes after the Avro datum")

    def decode(self, payload: bytes) -> Any:
        datum = self.fastavro.schemaless_reader(
            io.BytesIO(payload), self.plain, return_named_type=True
        )
        return to_avro_json(self.schema, datum)


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

    def check(self, payload: bytes) -> None:
        error = self.best_match(self.validator.iter_errors(json.loads(payload)))
        if error is not None:
            at = "/".join(str(part) for part in error.absolute_path)
            raise UndecodableRecord(f"{error.message} (at #/{at})")


# ---- PROTOBUF --------------------------------------------------------------------------


class _Protobuf(_Codec):
    """Messages of the schema's file (protobuf_messages: a descriptor pool of its own holding
    the files it imports); REST Proxy writes the file's first message."""

    schema_type = PROTOBUF

    def __init__(self, parsed: ParsedSchema) -> None:
        from google.protobuf import json_format

        from objectlog.schemas.protobuf_messages import ProtobufMessages

        self.messages = ProtobufMessages(parsed)
        self.file = self.messages.file
        self.json_format = json_format

    def encode(self, value: Any) -> bytes:
        if not self.file.message_type:
            raise SchemaMismatch("the schema defines no message")
        if not isinstance(value, dict):
            raise mismatch("", f"an object (message {self.file.message_type[0].name})", value)
        try:
            message = self.json_format.ParseDict(value, self.messages.message_class((0,))())
        except (self.json_format.ParseError, ValueError, TypeError) as e:
            raise SchemaMismatch(str(e)) from None
        return b"\x00" + message.SerializeToString()

    def decode(self, payload: bytes) -> Any:
        try:
            indexes, start = message_indexes(payload)
        except ValueError as e:
            raise UndecodableRecord(str(e)) from None
        message = self.messages.message_class(tuple(indexes))()
        message.ParseFromString(payload[start:])
        return self.json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


_CODECS: dict[str, Callable[[ParsedSchema], _Codec]] = {
    AVRO: _Avro,
    JSON: _Json,
    PROTOBUF: _Protobuf,
}
