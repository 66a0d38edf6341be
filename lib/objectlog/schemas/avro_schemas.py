"""The AVRO schema type: parsed by the Apache Avro project's own Python package, judged by its
schema-resolution checker (avro.compatibility), as Confluent's registry judges Avro with the
Java library's.

References are named types defined in other schemas (Confluent's Avro references: each one's
name is the full name of a type it defines); they are parsed first, in the order given, and the
schema may then use their names. The stored form renders the referenced types by name only,
as Confluent stores a schema with references.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import avro.errors
import avro.name
import avro.schema
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from objectlog.errors import InvalidSchema
from objectlog.schemas.types import AVRO, ParsedSchema


class AvroSchemaType:
    name = AVRO

    def parse(self, schema: str, references: Mapping[str, str]) -> ParsedSchema:
        names = avro.name.Names()
        for reference_name, text in references.items():
            _parse(text, names, f"reference {reference_name!r}")
        referenced = set(names.names)
        parsed = _parse(schema, names, "schema")
        rendered = parsed.to_json(_names_of(names, referenced))
        return ParsedSchema(
            schema_type=AVRO,
            canonical=json.dumps(rendered, separators=(",", ":")),
            normalized=json.dumps(rendered, separators=(",", ":"), sort_keys=True),
            parsed=parsed,
        )

    def incompatibilities(self, reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
        result = ReaderWriterCompatibilityChecker().get_compatibility(reader.parsed, writer.parsed)
        if result.compatibility is SchemaCompatibilityType.compatible:
            return []
        kinds = ", ".join(sorted(kind.name for kind in result.incompatibilities))
        where = ", ".join(sorted(result.locations))
        return [f"{kinds} at {where}: {'; '.join(sorted(result.messages))}"]


def _parse(text: str, names: avro.name.Names, what: str) -> avro.schema.Schema:
    try:
        decoded: Any = json.loads(text)
    except json.JSONDecodeError:
        decoded = text  # a bare primitive name, such as string, as Avro's parser takes it
    try:
        return avro.schema.make_avsc_object(decoded, names)
    except (avro.errors.AvroException, TypeError, ValueError, KeyError, AttributeError) as e:
        raise InvalidSchema(f"Invalid schema ({what}): {e}", field="schema") from e


def _names_of(names: avro.name.Names, keep: set[str]) -> avro.name.Names:
    """A Names holding only the referenced types, so rendering names them instead of
    repeating their definitions."""
    only = avro.name.Names(default_namespace=names.default_namespace)
    only.names = {name: names.names[name] for name in keep}
    return only
