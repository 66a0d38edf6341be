"""objectlog.schemas.serde on the in-memory registry: the JSON REST Proxy embeds, to and from the
Schema Registry's wire format. Bytes are compared with what confluent-kafka's own serializers
write (its mock registry numbers schemas from 1, as ours does) and read back with Apache Avro's
reader; every refusal says where; a schema is read from the registry once, not per record."""

from __future__ import annotations

import io
import json
from typing import Any

import avro.io
import avro.schema
import pytest
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import (
    MockSchemaRegistryClient,
)
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pool, message_factory

from objectlog.errors import SchemaMismatch, UndecodableRecord
from objectlog.schemas import serde
from objectlog.schemas.parsing import SchemaInput
from objectlog.schemas.registry import SchemaRegistry
from objectlog.stores.items import ItemStores
from objectlog.stores.schemas import SchemaReference, StoredSchema

CONTEXT = SerializationContext("t", MessageField.VALUE)
USER = {
    "type": "record",
    "name": "User",
    "namespace": "shop",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "age", "type": "int"},
        {"name": "nick", "type": ["null", "string"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
        {"name": "scores", "type": {"type": "map", "values": "long"}, "default": {}},
        {"name": "raw", "type": "bytes", "default": ""},
        {"name": "id", "type": {"type": "fixed", "name": "Id", "size": 2}, "default": "00"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]},
         "default": "A"},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}, "default": 0},
        {"name": "home", "type": ["null", {"type": "record", "name": "Address",
                                           "fields": [{"name": "city", "type": "string"}]}],
         "default": None},
        {"name": "ratio", "type": ["null", "float", "double"], "default": None},
        {"name": "lang", "type": ["string", "null"], "default": "en"},
    ],
}  # fmt: skip
ADA = {
    "name": "ada",
    "age": 36,
    "nick": {"string": "countess"},
    "tags": ["math"],
    "scores": {"engine": 2**40},
    "raw": "\u00ff\u0000A",
    "id": "ab",
    "kind": "B",
    "at": 1_700_000_000_000,
    "home": {"shop.Address": {"city": "London"}},
    "ratio": {"float": 0.5},
    "lang": {"string": "fr"},
}
ORDER_PROTO = """syntax = "proto3";
package shop;
message Order { string id = 1; int64 cents = 2; Line line = 3; message Line { int32 qty = 1; } }
message Refund { string order = 1; }
"""


@pytest.fixture
def registry() -> SchemaRegistry:
    items = ItemStores.memory()
    return SchemaRegistry(items.schemas, items.documents)


def register(
    registry: SchemaRegistry, schema: Any, kind: str = "AVRO", **given: Any
) -> StoredSchema:
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return registry.register("t-value", SchemaInput(text, kind, **given)).schema


# ---- AVRO ------------------------------------------------------------------------------


def test_avro_is_what_confluents_serializer_writes_and_reads_back(registry: SchemaRegistry) -> None:
    schema = register(registry, USER)
    written = serde.encode(registry, schema, ADA)
    # the same datum as Python objects (unions unwrapped, bytes as bytes) through Confluent's
    ada = {**ADA, "nick": "countess", "raw": b"\xff\x00A", "id": b"ab", "lang": "fr",
           "home": ("shop.Address", {"city": "London"}), "ratio": ("float", 0.5)}  # fmt: skip
    confluent = AvroSerializer(MockSchemaRegistryClient({"url": "mock://"}), json.dumps(USER))
    assert written == confluent(ada, CONTEXT)
    assert written[:5] == b"\0\0\0\0\1"
    # Apache Avro's own reader agrees
    read = avro.io.DatumReader(avro.schema.parse(json.dumps(USER)))
    apache: Any = read.read(avro.io.BinaryDecoder(io.BytesIO(written[5:])))
    assert (apache["home"], apache["raw"], apache["lang"]) == (
        {"city": "London"},
        b"\xff\x00A",
        "fr",
    )
    assert serde.decode(registry, written) == ADA


def test_avro_fields_left_out_take_their_defaults(registry: SchemaRegistry) -> None:
    schema = register(registry, USER)
    decoded = serde.decode(registry, serde.encode(registry, schema, {"name": "bob", "age": 7}))
    defaults: dict[str, Any] = {"nick": None, "tags": [], "scores": {}, "raw": "", "id": "00"}
    assert decoded == {
        **{"name": "bob", "age": 7, **defaults, "kind": "A", "at": 0, "home": None, "ratio": None},
        "lang": {"string": "en"},  # a union's default is of its first branch
    }


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        pytest.param("string", "héllo", id="string"),
        pytest.param("long", -(2**63), id="long-min"),
        pytest.param("double", "NaN", id="nan"),
        pytest.param("boolean", True, id="boolean"),
        pytest.param(["null", "int", "long"], {"int": 5}, id="int-of-int-long"),
        pytest.param({"type": "array", "items": ["null", "string"]}, [None, {"string": "x"}],
                     id="array-of-unions"),
        pytest.param({"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2},
                     "\u0004\u00d2", id="decimal-as-its-bytes"),
    ],
)  # fmt: skip
def test_avro_values_round_trip(registry: SchemaRegistry, schema: Any, value: Any) -> None:
    stored = register(registry, schema)
    assert serde.decode(registry, serde.encode(registry, stored, value)) == value


@pytest.mark.parametrize(
    ("value", "says"),
    [
        pytest.param({"nick": "countess"}, 'nick: expected a union value naming its branch, '
                     'such as {"string": ...}', id="bare-union"),
        pytest.param({"nick": {"int": 1}}, "nick: expected a union", id="unknown-branch"),
        pytest.param({"age": 2**31}, "age: expected an integer from -2147483648 to 2147483647",
                     id="int-range"),
        pytest.param({"age": True}, "age: expected an integer", id="bool-is-not-int"),
        pytest.param({"age": 1.5}, "age: expected an integer", id="float-is-not-int"),
        pytest.param({"extra": 1}, "unknown fields ['extra']", id="unknown-field"),
        pytest.param({"name": None}, "name: expected a string", id="null-name"),
        pytest.param({"kind": "C"}, "kind: expected one of ['A', 'B'] (enum shop.Kind)", id="enum"),
        pytest.param({"raw": "\u0100"}, "raw: expected a string of code points 0-255", id="bytes"),
        pytest.param({"id": "abc"}, "id: expected 2 bytes (fixed shop.Id)", id="fixed-size"),
        pytest.param({"tags": "math"}, "tags: expected an array", id="array"),
        pytest.param({"scores": {"x": "1"}}, "scores.x: expected an integer", id="map-value"),
        pytest.param({"home": {"shop.Address": {}}}, "home.shop.Address.city: missing",
                     id="nested"),
    ],
)  # fmt: skip
def test_avro_refusals_say_where(registry: SchemaRegistry, value: Any, says: str) -> None:
    schema = register(registry, USER)
    with pytest.raises(SchemaMismatch) as refused:
        serde.encode(registry, schema, {**ADA, **value})
    assert says in refused.value.message


def test_avro_refuses_what_is_no_record_and_a_record_missing_a_field(
    registry: SchemaRegistry,
) -> None:
    schema = register(registry, USER)
    with pytest.raises(SchemaMismatch, match="the value: expected an object"):
        serde.encode(registry, schema, [])
    with pytest.raises(SchemaMismatch, match=r"name: missing \(the field has no default\)"):
        serde.encode(registry, schema, {"age": 1})


# ---- JSON ------------------------------------------------------------------------------

ADDRESS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "email": {"type": "string", "format": "email"},
        "home": {"$ref": "address.json"},
    },
    "required": ["name"],
    "additionalProperties": False,
}


def test_json_is_what_confluents_serializer_writes(registry: SchemaRegistry) -> None:
    schema = register(registry, ADDRESS, "JSON")
    written = serde.encode(registry, schema, {"city": "Zürich"})
    assert written == b'\0\0\0\0\1{"city":"Z\xc3\xbcrich"}'  # compact UTF-8 JSON
    confluent = JSONSerializer(json.dumps(ADDRESS), MockSchemaRegistryClient({"url": "mock://"}))
    theirs = confluent({"city": "Zürich"}, CONTEXT)  # the same JSON, differently spaced
    assert theirs[:5] == written[:5] and json.loads(theirs[5:]) == json.loads(written[5:])
    assert serde.decode(registry, theirs, "JSON") == {"city": "Zürich"}


def test_json_is_validated_with_its_references_and_formats(registry: SchemaRegistry) -> None:
    registry.register("address", SchemaInput(json.dumps(ADDRESS), "JSON"))
    reference = SchemaReference("address.json", "address", 1)
    schema = register(registry, PERSON, "JSON", references=(reference,))
    value = {"name": "zoë", "email": "zoe@example.com", "home": {"city": "Paris"}}
    assert serde.decode(registry, serde.encode(registry, schema, value)) == value
    for broken, says in [
        ({"name": 1}, "1 is not of type 'string' (at #/name)"),
        ({"name": "x", "email": "nope"}, "'nope' is not a 'email' (at #/email)"),
        ({"name": "x", "home": {}}, "'city' is a required property (at #/home)"),
        ({"name": "x", "age": 3}, "Additional properties are not allowed"),
    ]:
        with pytest.raises(SchemaMismatch) as refused:
            serde.encode(registry, schema, broken)
        assert says in refused.value.message


# ---- PROTOBUF --------------------------------------------------------------------------


def test_protobuf_is_what_confluents_serializer_writes(registry: SchemaRegistry) -> None:
    schema = register(registry, ORDER_PROTO, "PROTOBUF")
    parsed = registry.parsed(schema).parsed
    pool = descriptor_pool.DescriptorPool()
    pool.Add(parsed)
    order = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))
    value = {"id": "o-1", "cents": "1250", "line": {"qty": 2}}
    written = serde.encode(registry, schema, value)
    confluent = ProtobufSerializer(order, MockSchemaRegistryClient({"url": "mock://"}),
                                   {"use.deprecated.format": False})  # fmt: skip
    assert written == confluent(order(id="o-1", cents=1250, line={"qty": 2}), CONTEXT)
    assert written[5] == 0  # the first message's indexes: the single byte 0
    assert serde.decode(registry, written) == value
    # fields at their defaults are answered, as REST Proxy's printer includes them
    assert serde.decode(registry, serde.encode(registry, schema, {})) == {"id": "", "cents": "0"}
    with pytest.raises(SchemaMismatch, match='no field named "nope"'):
        serde.encode(registry, schema, {"nope": 1})
    with pytest.raises(SchemaMismatch, match="cents"):
        serde.encode(registry, schema, {"cents": "lots"})


@pytest.mark.parametrize(
    ("indexes", "message", "value"),
    [
        pytest.param(b"\x02\x02", b"\x0a\x02o1", {"order": "o1"}, id="second-message-[1]"),
        pytest.param(b"\x04\x00\x00", b"\x08\x07", {"qty": 7}, id="nested-message-[0,0]"),
    ],
)
def test_protobuf_message_indexes_name_the_message(
    registry: SchemaRegistry, indexes: bytes, message: bytes, value: Any
) -> None:
    schema = register(registry, ORDER_PROTO, "PROTOBUF")
    prefix = b"\0" + schema.id.to_bytes(4, "big")
    assert serde.decode(registry, prefix + indexes + message) == value


def test_protobuf_with_a_well_known_import(registry: SchemaRegistry) -> None:
    text = 'syntax = "proto3"; import "google/protobuf/timestamp.proto";\n'
    text += "message Event { google.protobuf.Timestamp at = 1; }"
    schema = register(registry, text, "PROTOBUF")
    value = {"at": "2024-05-01T12:00:00Z"}
    assert serde.decode(registry, serde.encode(registry, schema, value)) == value


# ---- what cannot be decoded ------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "says"),
    [
        pytest.param(b"plain text", "does not carry the Schema Registry's wire", id="unframed"),
        pytest.param(b"\0\0\0", "does not carry", id="too-short"),
        pytest.param(b"\0\0\0\x03\xe7{}", "schema id 999 is not in the registry", id="unknown-id"),
        pytest.param(b"\0\0\0\0\1\x06ad", "does not decode with schema id 1 (AVRO)",
                     id="truncated"),
        pytest.param(b"\0\0\0\0\2\x02\x08", "message indexes [4] name no message", id="bad-index"),
        pytest.param(b"\0\0\0\0\2\x02", "message indexes are cut short", id="cut-indexes"),
        pytest.param(b"\0\0\0\0\3{", "does not decode with schema id 3 (JSON)", id="bad-json"),
    ],
)  # fmt: skip
def test_undecodable_records_say_why(registry: SchemaRegistry, data: bytes, says: str) -> None:
    register(registry, USER)
    registry.register("p", SchemaInput(ORDER_PROTO, "PROTOBUF"))
    registry.register("j", SchemaInput(json.dumps(ADDRESS), "JSON"))
    with pytest.raises(UndecodableRecord) as refused:
        serde.decode(registry, data)
    assert says in refused.value.message


def test_a_record_of_another_schema_type_is_undecodable(registry: SchemaRegistry) -> None:
    schema = register(registry, "string")
    with pytest.raises(UndecodableRecord, match="written with a AVRO schema"):
        serde.decode(registry, serde.encode(registry, schema, "x"), "JSON")


# ---- reads of the registry -------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "kind", "value"),
    [
        pytest.param(USER, "AVRO", ADA, id="avro"),
        pytest.param(ADDRESS, "JSON", {"city": "Oslo"}, id="json"),
        pytest.param(ORDER_PROTO, "PROTOBUF", {"id": "o", "cents": "0"}, id="protobuf"),
    ],
)
def test_the_registry_is_read_once_per_schema_not_per_record(
    registry: SchemaRegistry, monkeypatch: pytest.MonkeyPatch, schema: Any, kind: str, value: Any
) -> None:
    stored = register(registry, schema, kind)
    reads: list[int] = []
    read = registry.store.schema

    def counted(schema_id: int) -> StoredSchema | None:
        reads.append(schema_id)
        return read(schema_id)

    monkeypatch.setattr(registry.store, "schema", counted)
    written = [serde.encode(registry, stored, value) for _ in range(200)]
    assert [serde.decode(registry, data) for data in written] == [value] * 200
    assert len(reads) <= 2, reads  # the schema item, and the registry's parse of it
    # another registry (another table) does not see this one's schemas
    other = SchemaRegistry(*(lambda items: (items.schemas, items.documents))(ItemStores.memory()))
    with pytest.raises(UndecodableRecord, match="not in the registry"):
        serde.decode(other, written[0])
