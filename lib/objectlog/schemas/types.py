"""What the registry needs of each schema type (AVRO, JSON, PROTOBUF): parse a schema with
its references, give its stored and normalized forms, and say why data written with one
schema cannot be read with another.

Each type lives in its own module (avro_schemas, json_schemas, protobuf_schemas) and is named
here once, in ``SCHEMA_TYPES``; the registry looks a type up by Confluent's name for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

AVRO, JSON, PROTOBUF = "AVRO", "JSON", "PROTOBUF"


@dataclass(frozen=True)
class ParsedSchema:
    """A schema its type's parser accepted.

    canonical: the text the registry stores and answers (the parser's own rendering, without
    insignificant whitespace), so one schema sent twice differently spaced is one schema.
    normalized: Confluent's ``normalize=true`` form, equal for schemas that differ only in
    ways that do not change what they mean (key order, ...); it decides the schema's id when
    the registration asks to normalize.
    parsed: the type's own parsed form, handed back to its compatibility check.
    """

    schema_type: str
    canonical: str
    normalized: str
    parsed: Any


class SchemaType(Protocol):
    """A schema type's rules. Every failure to parse raises objectlog.errors.InvalidSchema
    with the parser's message."""

    name: str

    def parse(self, schema: str, references: Mapping[str, str]) -> ParsedSchema:
        """Parse schema text. references: each reference's name (Confluent's ``name`` field:
        an Avro full name, a JSON Schema ``$ref`` URL, a Protobuf import path) mapped to the
        referenced schema's canonical text, references of references included."""
        ...

    def incompatibilities(self, reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
        """Why data written with writer cannot be read with reader: one message per problem,
        none when it can. A change the rules cannot judge is a problem (fail closed)."""
        ...
