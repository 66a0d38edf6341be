"""The record name a schema id gives a record, as Confluent's RecordNameStrategy and
TopicRecordNameStrategy name its subject:

- AVRO: the schema's full name (namespace.name) for a record, enum or fixed; a primitive's
  type name (``string``);
- JSON: the schema's ``title``;
- PROTOBUF: the full name of the message the record's message indexes point at (Confluent's
  wire format: after the schema id, a zigzag varint count and that many zigzag varint indexes
  into the file's messages and their nested ones; a single 0 byte is the first message).

Schemas never change, so a schema's names are worked out once per id and kept.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from objectlog.errors import ObjectLogError
from objectlog.format.schema_ids import message_indexes
from objectlog.schemas.registry import SchemaRegistry
from objectlog.schemas.types import AVRO, JSON, PROTOBUF

AVRO_NAMED = ("record", "enum", "fixed")
CACHE_SIZE = 10_000


class RecordNameUnknown(Exception):
    """The record's schema gives it no name (the message says why)."""


class RecordNames:
    def __init__(self, registry: SchemaRegistry) -> None:
        self.registry = registry
        self._namers: dict[int, Any] = {}  # id -> a name, or a Protobuf file's descriptor
        self._lock = threading.Lock()

    def record_name(self, schema_id: int, payload: bytes) -> str:
        """The record name for a record whose schema id and payload (after the id) these are."""
        namer = self._namer(schema_id)
        if isinstance(namer, str):
            return namer
        try:
            indexes, _ = message_indexes(payload)
        except ValueError as e:
            raise RecordNameUnknown(str(e)) from None
        return _message_name(namer, indexes)

    def _namer(self, schema_id: int) -> Any:
        with self._lock:
            if schema_id in self._namers:
                return self._namers[schema_id]
        namer = self._work_out(schema_id)
        with self._lock:
            if len(self._namers) >= CACHE_SIZE:
                self._namers.clear()
            self._namers[schema_id] = namer
        return namer

    def _work_out(self, schema_id: int) -> Any:
        schema = self.registry.store.schema(schema_id)
        if schema is None:
            raise RecordNameUnknown(f"schema id {schema_id} is not registered")
        if schema.schema_type == PROTOBUF:
            try:
                return self.registry.parsed(schema).parsed
            except ObjectLogError as e:
                raise RecordNameUnknown(f"schema id {schema_id}: {e.message}") from None
        decoded = json.loads(schema.schema)
        if schema.schema_type == AVRO:
            return _avro_name(decoded)
        if schema.schema_type == JSON and isinstance(decoded, dict) and decoded.get("title"):
            return str(decoded["title"])
        raise RecordNameUnknown(f"schema id {schema_id} has no record name (no title)")


def _avro_name(schema: Any) -> str:
    if isinstance(schema, str):
        return schema  # a primitive, or a named type referred to by name
    if isinstance(schema, dict) and schema.get("type") in AVRO_NAMED:
        name = str(schema["name"])
        namespace = schema.get("namespace")
        return name if "." in name or not namespace else f"{namespace}.{name}"
    if isinstance(schema, dict) and isinstance(schema.get("type"), str):
        return str(schema["type"])  # a primitive with attributes, or an array or map
    raise RecordNameUnknown("an Avro union has no record name")


def _message_name(file: Any, indexes: list[int]) -> str:
    scope, messages = file.package, file.message_type
    for index in indexes:
        if not 0 <= index < len(messages):
            raise RecordNameUnknown(f"its Protobuf message index {index} names no message")
        message = messages[index]
        scope = f"{scope}.{message.name}" if scope else message.name
        messages = message.nested_type
    return scope
