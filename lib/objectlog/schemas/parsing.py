"""Schemas as the registry parses them: each type's rules (loaded on first use), a schema's
references resolved to their texts, parsed schemas cached by id (a schema never changes), and
the fingerprint that makes two registrations one schema."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from dataclasses import dataclass

from objectlog.errors import (
    InvalidRequest,
    InvalidSchema,
    SchemaNotFound,
    SchemaVersionNotFound,
    SubjectNotFound,
)
from objectlog.schemas.settings import SubjectDocuments
from objectlog.schemas.types import AVRO, JSON, PROTOBUF, ParsedSchema, SchemaType
from objectlog.stores.schemas import SchemaReference, SchemaStore, StoredSchema

TYPE_NAMES = (AVRO, JSON, PROTOBUF)  # Confluent's names of the types offered
PARSED_CACHE_SIZE = 1_000

_types: dict[str, SchemaType] = {}
_types_lock = threading.Lock()


def schema_type(name: object) -> SchemaType:
    """The schema type's rules, loaded on first use (Protobuf's compiler is large)."""
    if not isinstance(name, str) or name.upper() not in TYPE_NAMES:
        raise InvalidSchema(
            f"Invalid schemaType {name!r}: use one of {', '.join(TYPE_NAMES)}",
            field="schemaType",
        )
    key = name.upper()
    with _types_lock:
        if key not in _types:
            _types[key] = _load(key)
        return _types[key]


def _load(name: str) -> SchemaType:
    if name == AVRO:
        from objectlog.schemas.avro_schemas import AvroSchemaType

        return AvroSchemaType()
    if name == JSON:
        from objectlog.schemas.json_schemas import JsonSchemaType

        return JsonSchemaType()
    from objectlog.schemas.protobuf_schemas import ProtobufSchemaType

    return ProtobufSchemaType()


@dataclass(frozen=True)
class SchemaInput:
    """A schema as a registration, lookup or compatibility test sends it."""

    schema: str
    schema_type: str = AVRO
    references: tuple[SchemaReference, ...] = ()
    metadata: str | None = None  # JSON text
    rule_set: str | None = None  # JSON text


class SchemaParser:
    def __init__(self, store: SchemaStore, subjects: SubjectDocuments) -> None:
        self.store = store
        self.subjects = subjects
        self._parsed: dict[tuple[int, bool], ParsedSchema] = {}
        self._lock = threading.Lock()

    def schema(self, schema_id: int) -> StoredSchema:
        schema = self.store.schema(schema_id)
        if schema is None:
            raise SchemaNotFound(f"Schema {schema_id} not found", field="id")
        return schema

    def parse(self, given: SchemaInput, normalize: bool) -> ParsedSchema:
        if not isinstance(given.schema, str) or not given.schema.strip():
            raise InvalidSchema("Empty schema", field="schema")
        kind = schema_type(given.schema_type)
        parsed = kind.parse(given.schema, self.resolved(given.references))
        if normalize:
            return dataclasses.replace(parsed, canonical=parsed.normalized)
        return parsed

    def parsed_schema(self, schema_id: int) -> ParsedSchema:
        with self._lock:
            cached = self._parsed.get((schema_id, False))
        if cached is not None:
            return cached
        stored = self.schema(schema_id)
        given = SchemaInput(stored.schema, stored.schema_type, stored.references)
        parsed = self.parse(given, normalize=False)
        with self._lock:
            if len(self._parsed) >= PARSED_CACHE_SIZE:
                self._parsed.clear()
            self._parsed[(schema_id, False)] = parsed
        return parsed

    def resolved(
        self, references: tuple[SchemaReference, ...], seen: frozenset[int] = frozenset()
    ) -> dict[str, str]:
        """Each reference's name -> its schema text, the references' own references first
        (a reference cycle is refused)."""
        resolved: dict[str, str] = {}
        for reference in references:
            try:
                version = self.subjects.read(reference.subject).find(
                    reference.subject, reference.version
                )
            except (SubjectNotFound, SchemaVersionNotFound, InvalidRequest) as e:
                raise InvalidSchema(
                    f"Invalid schema reference {reference.name!r}: {e.message}",
                    field="references",
                ) from e
            if version.id in seen:
                raise InvalidSchema(f"Circular reference {reference.name!r}", field="references")
            schema = self.schema(version.id)
            resolved.update(self.resolved(schema.references, seen | {version.id}))
            resolved[reference.name] = schema.schema
        return resolved


def fingerprint(parsed: ParsedSchema, given: SchemaInput) -> str:
    """What makes two registrations one schema: type, stored text, references, metadata and
    rules (Confluent's identity of a schema)."""
    identity = [
        parsed.schema_type,
        parsed.canonical,
        [[r.name, r.subject, r.version] for r in given.references],
        given.metadata,
        given.rule_set,
    ]
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()
