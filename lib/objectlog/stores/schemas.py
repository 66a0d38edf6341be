"""The Schema Registry's schemas (DESIGN.md section 15): each schema under its global id, written
once; the fingerprint and guid that find an id; the id counter; the subject list.

    schema#<id> / schema       type, schema (text), refs (JSON), guid, meta (JSON, optional),
                               rules (JSON, optional), uses (string set "<version>#<subject>":
                               the subject versions that are this schema, soft-deleted ones too)
    schemafp#<sha256> / fp     id: the schema with that fingerprint (type, text, references,
                               metadata and rules), so one schema keeps one id
    schemaguid#<guid> / guid   id
    schemas / ids              n: the last id handed out
    schemas / subjects         names (string set): every subject with a version, soft-deleted
                               ones too

A subject's versions and settings are a versioned document (stores.documents, kind
``schema-subject``), replaced whole on each registration or delete, conditional on its version.
Registration is not a hot path; every call here is a single-item read or write.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class SchemaReference:
    """Confluent's reference: the name the schema uses (an Avro full name, a JSON Schema $ref
    URL, a Protobuf import path) and the subject version that defines it."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class StoredSchema:
    id: int
    schema_type: str
    schema: str
    guid: str
    references: tuple[SchemaReference, ...] = ()
    metadata: str | None = None  # Confluent's metadata object, as JSON text
    rule_set: str | None = None  # Confluent's ruleSet object, as JSON text
    uses: frozenset[tuple[str, int]] = field(default=frozenset())  # (subject, version)


def use_key(subject: str, version: int) -> str:
    return f"{version}#{subject}"


def parse_use(text: str) -> tuple[str, int]:
    version, subject = text.split("#", 1)
    return subject, int(version)


class SchemaStore(Protocol):
    def next_id(self) -> int:
        """A schema id never handed out before (ids start at 1)."""
        ...

    def put_schema(self, schema: StoredSchema) -> bool:
        """Store the schema under its id and guid, unless its id is taken (False then)."""
        ...

    def schema(self, schema_id: int) -> StoredSchema | None: ...

    def id_by_guid(self, guid: str) -> int | None: ...

    def id_by_fingerprint(self, fingerprint: str) -> int | None: ...

    def claim_fingerprint(self, fingerprint: str, schema_id: int) -> int:
        """Give the fingerprint to schema_id unless another id has it: the id that has it."""
        ...

    def add_use(self, schema_id: int, subject: str, version: int) -> None: ...

    def remove_use(self, schema_id: int, subject: str, version: int) -> None: ...

    def subject_names(self) -> list[str]: ...

    def add_subject(self, subject: str) -> None: ...

    def remove_subject(self, subject: str) -> None: ...
