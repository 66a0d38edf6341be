"""The record names Confluent's record-name strategies give (schemas.record_names)."""

from __future__ import annotations

import json

import pytest

from objectlog.schemas.parsing import SchemaInput
from objectlog.schemas.record_names import RecordNames, RecordNameUnknown
from objectlog.schemas.registry import SchemaRegistry
from objectlog.stores.items import ItemStores

PROTO = 'syntax = "proto3"; package p; message A { message B { int32 x = 1; } } message C {}'


@pytest.fixture
def registry() -> SchemaRegistry:
    items = ItemStores.memory()
    return SchemaRegistry(items.schemas, items.documents)


@pytest.mark.parametrize(
    ("schema", "schema_type", "payload", "name"),
    [
        pytest.param(
            {"type": "record", "name": "R", "namespace": "n", "fields": []},
            "AVRO",
            b"",
            "n.R",
            id="avro-record",
        ),
        pytest.param(
            {"type": "enum", "name": "x.E", "namespace": "n", "symbols": ["A"]},
            "AVRO",
            b"",
            "x.E",
            id="avro-dotted-name",
        ),
        pytest.param("string", "AVRO", b"", "string", id="avro-primitive"),
        pytest.param({"title": "Click", "type": "object"}, "JSON", b"{}", "Click", id="json"),
        pytest.param(PROTO, "PROTOBUF", b"\x00", "p.A", id="proto-first"),
        pytest.param(PROTO, "PROTOBUF", b"\x04\x00\x00", "p.A.B", id="proto-nested"),
        pytest.param(PROTO, "PROTOBUF", b"\x02\x02", "p.C", id="proto-second"),
    ],
)
def test_each_type_names_its_records(
    registry: SchemaRegistry, schema: object, schema_type: str, payload: bytes, name: str
) -> None:
    text = schema if isinstance(schema, str) and schema_type == "PROTOBUF" else json.dumps(schema)
    schema_id = registry.register("s", SchemaInput(text, schema_type)).schema.id
    assert RecordNames(registry).record_name(schema_id, payload) == name


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        pytest.param(b"", "cut short", id="empty"),
        pytest.param(b"\x02", "cut short", id="count-without-index"),
        pytest.param(b"\x02\x08", "names no message", id="index-out-of-range"),
        pytest.param(b"\x80\x02", "count", id="huge-count"),
    ],
)
def test_broken_message_indexes_name_nothing(
    registry: SchemaRegistry, payload: bytes, reason: str
) -> None:
    schema_id = registry.register("s", SchemaInput(PROTO, "PROTOBUF")).schema.id
    with pytest.raises(RecordNameUnknown, match=reason):
        RecordNames(registry).record_name(schema_id, payload)


def test_a_json_schema_without_title_or_an_unknown_id_names_nothing(
    registry: SchemaRegistry,
) -> None:
    schema_id = registry.register("s", SchemaInput('{"type": "object"}', "JSON")).schema.id
    names = RecordNames(registry)
    with pytest.raises(RecordNameUnknown, match="no title"):
        names.record_name(schema_id, b"{}")
    with pytest.raises(RecordNameUnknown, match="not registered"):
        names.record_name(12345, b"")
