"""REST Proxy v2's schema formats (avro, jsonschema, protobuf) over real HTTP through the local
API Gateway: a produce with a schema registers it under the topic's subject and answers its
id, a produce with that id reuses it, the stored bytes are what confluent-kafka's own
deserializers read, a consumer instance of the format answers the JSON back, and REST Proxy's
refusals (a value that breaks its schema, an unknown or incompatible schema) store nothing."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import requests
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

from objectlog import ObjectLog
from tests.rest_proxy_calls import BINARY, call, error

USER_AVRO = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "shop",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "age", "type": "int"},
            {"name": "email", "type": ["null", "string"], "default": None},
        ],
    }
)
USER_JSON = json.dumps(
    {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "minimum": 0},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["name", "age"],
    }
)
ORDER_PROTO = """syntax = "proto3";
package shop;
message Order { string id = 1; int64 cents = 2; repeated string tags = 3; Line line = 4; }
message Line { int32 quantity = 1; }
"""


@dataclass(frozen=True)
class Case:
    """One schema format: a schema, values (as REST Proxy takes and answers them), what
    confluent-kafka's deserializer gives for each, a value that breaks the schema, and a
    schema the first one's subject refuses as incompatible."""

    format: str
    schema: str
    values: list[Any]
    deserialized: list[Any]
    broken: Any
    incompatible: str

    @property
    def media(self) -> str:
        return f"application/vnd.kafka.{self.format}.v2+json"


CASES = [
    pytest.param(
        Case(
            "avro",
            USER_AVRO,
            # Avro's JSON encoding, as REST Proxy takes it: a union's value names its branch
            [{"name": "ada", "age": 36, "email": {"string": "ada@example.com"}},
             {"name": "bob", "age": 7, "email": None}],
            [{"name": "ada", "age": 36, "email": "ada@example.com"},
             {"name": "bob", "age": 7, "email": None}],
            {"name": "eve", "age": "old", "email": None},
            json.dumps({"type": "record", "name": "User", "namespace": "shop",
                        "fields": [{"name": "name", "type": "int"}]}),
        ),
        id="avro",
    ),
    pytest.param(
        Case(
            "jsonschema",
            USER_JSON,
            [{"name": "ada", "age": 36, "tags": ["a"]}, {"name": "bob", "age": 7}],
            [{"name": "ada", "age": 36, "tags": ["a"]}, {"name": "bob", "age": 7}],
            {"name": "eve", "age": -1},
            json.dumps({"type": "object", "properties": {"name": {"type": "integer"}}}),
        ),
        id="jsonschema",
    ),
    pytest.param(
        Case(
            "protobuf",
            ORDER_PROTO,
            # Protobuf's JSON mapping; answers carry the fields at their defaults
            [{"id": "o-1", "cents": "1250", "tags": ["gift"], "line": {"quantity": 2}},
             {"id": "o-2", "cents": "0", "tags": [], "line": {"quantity": 0}}],
            [{"id": "o-1", "cents": "1250", "tags": ["gift"], "line": {"quantity": 2}},
             {"id": "o-2", "cents": "0", "tags": [], "line": {"quantity": 0}}],
            {"id": "o-3", "cents": "lots"},
            'syntax = "proto3"; package other; message Order { string id = 1; }',
        ),
        id="protobuf",
    ),
]  # fmt: skip


@pytest.fixture
def kafka(api: str, log: ObjectLog) -> str:
    log.create_topic("orders", partitions=1)
    return f"{api}/kafka"


@pytest.fixture
def registry(api: str) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": f"{api}/schema-registry"})


def produce(kafka: str, case: Case, body: dict[str, Any], path: str = "") -> requests.Response:
    return call("POST", f"{kafka}/topics/orders{path}", body, content_type=case.media)


def deserializer(case: Case, registry: SchemaRegistryClient, schema_id: int) -> Callable[..., Any]:
    """confluent-kafka's deserializer of the format, giving plain JSON values."""
    if case.format == "avro":
        from confluent_kafka.schema_registry.avro import AvroDeserializer

        return AvroDeserializer(registry)
    if case.format == "jsonschema":
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer

        return JSONDeserializer(None, schema_registry_client=registry)
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

    # its message class, built from the descriptor the registry serves (?format=serialized)
    served = registry.get_schema(schema_id, fmt="serialized").schema_str
    assert served is not None
    file = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(served))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    order = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))
    read = ProtobufDeserializer(order, {"use.deprecated.format": False})
    return lambda data, ctx: json_format.MessageToDict(
        read(data, ctx), always_print_fields_with_no_presence=True
    )


def end_offset(log: ObjectLog) -> int:
    return log.describe_topic("orders").partitions[0].high_watermark


@pytest.mark.parametrize("case", CASES)
def test_produce_registers_and_records_read_back_everywhere(
    case: Case, kafka: str, log: ObjectLog, registry: SchemaRegistryClient
) -> None:
    # a schema as text is registered under the topic's subject, and its id answered
    first = produce(
        kafka, case, {"value_schema": case.schema, "records": [{"value": case.values[0]}]}
    )
    assert first.status_code == 200, first.text
    registered = registry.get_latest_version("orders-value")
    assert registered.schema_id is not None
    assert first.json()["key_schema_id"] is None
    assert first.json()["value_schema_id"] == registered.schema_id
    assert registry.get_subjects() == ["orders-value"]
    # the id again, and a tombstone: null stays null
    body = {"value_schema_id": registered.schema_id, "records": [{"value": case.values[1]}, {}]}
    second = produce(kafka, case, body, "/partitions/0")
    assert second.status_code == 200, second.text
    assert second.json()["value_schema_id"] == registered.schema_id
    assert [o["offset"] for o in second.json()["offsets"]] == [1, 2]

    # the stored bytes are what Confluent's deserializers read
    records = log.fetch("orders", 0, 0).records
    assert [r.value[:5] for r in records[:2]] == [
        b"\0" + registered.schema_id.to_bytes(4, "big")
    ] * 2
    assert records[2].value is None and all(r.key is None for r in records)
    read = deserializer(case, registry, registered.schema_id)
    context = SerializationContext("orders", MessageField.VALUE)
    assert [read(r.value, context) for r in records[:2]] == case.deserialized

    # and a consumer instance of the format answers them as REST Proxy's JSON
    create = call(
        "POST",
        f"{kafka}/consumers/readers",
        {"name": "one", "format": case.format, "auto.offset.reset": "earliest"},
    )
    assert create.status_code == 200, create.text
    instance = create.json()["base_uri"]
    subscribed = call("POST", f"{instance}/subscription", {"topics": ["orders"]})
    assert subscribed.status_code == 204
    answer = call("GET", f"{instance}/records", accept=case.media, params={"timeout": 5000})
    assert answer.status_code == 200, answer.text
    assert answer.headers["Content-Type"] == case.media
    assert [(r["offset"], r["key"], r["value"]) for r in answer.json()] == [
        (0, None, case.values[0]),
        (1, None, case.values[1]),
        (2, None, None),
    ]
    mismatch = call("GET", f"{instance}/records", accept=BINARY)
    assert error(mismatch) == (406, 40601)
    assert call("DELETE", instance).status_code == 204


@pytest.mark.parametrize("case", CASES)
def test_refusals_are_rest_proxys_and_store_nothing(
    case: Case, kafka: str, log: ObjectLog, registry: SchemaRegistryClient
) -> None:
    accepted = produce(
        kafka, case, {"value_schema": case.schema, "records": [{"value": case.values[0]}]}
    )
    schema_id = accepted.json()["value_schema_id"]
    good = {"value": case.values[1]}

    # a value that breaks its schema: 422 with REST Proxy's JSON conversion code, the good
    # record before it not stored either
    broken = produce(
        kafka, case, {"value_schema_id": schema_id, "records": [good, {"value": case.broken}]}
    )
    assert error(broken) == (422, 42203)
    assert "records[1].value" in broken.json()["message"]
    # a schema id the registry does not hold, or holds under another subject
    unknown = produce(kafka, case, {"value_schema_id": 9999, "records": [good]})
    assert error(unknown) == (422, 42207)
    registry_type = {"avro": "AVRO", "jsonschema": "JSON", "protobuf": "PROTOBUF"}[case.format]
    other = registry.register_schema("elsewhere-value", Schema(case.incompatible, registry_type))
    elsewhere = produce(kafka, case, {"value_schema_id": other, "records": [good]})
    assert error(elsewhere) == (422, 42207)
    # a schema the subject's compatibility (BACKWARD) refuses, and one that does not parse
    incompatible = produce(kafka, case, {"value_schema": case.incompatible, "records": [good]})
    assert error(incompatible) == (422, 42207)
    assert "incompatible" in incompatible.json()["message"]
    invalid = produce(kafka, case, {"value_schema": "{not a schema", "records": [good]})
    assert error(invalid) == (422, 42205)
    # values without a value schema, keys without a key schema
    assert error(produce(kafka, case, {"records": [good]})) == (422, 42202)
    keyed = {"value_schema_id": schema_id, "records": [{"key": case.values[0], **good}]}
    assert error(produce(kafka, case, keyed)) == (422, 42201)
    both = {"value_schema": case.schema, "value_schema_id": schema_id, "records": [good]}
    assert error(produce(kafka, case, both)) == (400, 42201)

    assert end_offset(log) == 1
    assert registry.get_versions("orders-value") == [1]


def test_an_avro_key_schema_and_unions_as_rest_proxy_writes_them(
    kafka: str, log: ObjectLog, registry: SchemaRegistryClient
) -> None:
    from confluent_kafka.schema_registry.avro import AvroDeserializer

    body = {
        "key_schema": json.dumps("string"),
        "value_schema": USER_AVRO,
        "records": [
            {"key": "k1", "value": {"name": "ada", "age": 36, "email": {"string": "a@b"}}},
            {"key": "k2", "value": {"name": "bob", "age": 7}},  # email: its default
            {"key": "k3", "value": None},
        ],
    }
    answer = call(
        "POST", f"{kafka}/topics/orders", body, content_type="application/vnd.kafka.avro.v2+json"
    )
    assert answer.status_code == 200, answer.text
    key_id, value_id = answer.json()["key_schema_id"], answer.json()["value_schema_id"]
    assert key_id == registry.get_latest_version("orders-key").schema_id
    assert value_id == registry.get_latest_version("orders-value").schema_id != key_id
    read = AvroDeserializer(registry)
    records = log.fetch("orders", 0, 0).records
    keys = [read(r.key, SerializationContext("orders", MessageField.KEY)) for r in records]
    assert keys == ["k1", "k2", "k3"]
    assert read(records[1].value, SerializationContext("orders", MessageField.VALUE)) == {
        "name": "bob",
        "age": 7,
        "email": None,
    }
    # a union value given bare, as Avro's JSON encoding does not write it, is refused
    bare = dict(body, records=[{"key": "k4", "value": {"name": "x", "age": 1, "email": "x@y"}}])
    refused = call(
        "POST", f"{kafka}/topics/orders", bare, content_type="application/vnd.kafka.avro.v2+json"
    )
    assert error(refused) == (422, 42203) and '{"string": ...}' in refused.json()["message"]
    assert log.describe_topic("orders").partitions[0].high_watermark == 3


def test_a_validated_topic_takes_what_the_schema_formats_write(kafka: str, log: ObjectLog) -> None:
    checked = {
        "confluent.key.schema.validation": "true",
        "confluent.value.schema.validation": "true",
    }
    log.create_topic("checked", partitions=1, config=checked)
    body = {
        "key_schema": json.dumps({"type": "string"}),
        "value_schema": USER_JSON,
        "records": [{"key": "k", "value": {"name": "ada", "age": 36}}, {"key": "t"}],
    }
    jsonschema = "application/vnd.kafka.jsonschema.v2+json"
    answer = call("POST", f"{kafka}/topics/checked", body, content_type=jsonschema)
    assert answer.status_code == 200, answer.text
    assert [r.value for r in log.fetch("checked", 0, 0).records][1] is None
    # the json format's bytes carry no schema id: the topic refuses them, as before
    plain = {"records": [{"key": "k", "value": {"name": "ada"}}]}
    refused = call(
        "POST", f"{kafka}/topics/checked", plain, content_type="application/vnd.kafka.json.v2+json"
    )
    assert refused.status_code == 422


def test_a_record_the_instance_cannot_decode_fails_the_read_and_moves_nothing(
    kafka: str, log: ObjectLog
) -> None:
    avro = "application/vnd.kafka.avro.v2+json"
    producer = log.producer(linger_ms=0)
    producer.send("orders", value=b"not framed", partition=0).result()
    written = call(
        "POST",
        f"{kafka}/topics/orders",
        {"value_schema": json.dumps("string"), "records": [{"value": "hello"}]},
        content_type=avro,
    )
    assert written.status_code == 200, written.text
    producer.send("orders", value=b"\0\0\0\x03\xe7{}", partition=0).result()  # id 999
    create = call(
        "POST",
        f"{kafka}/consumers/readers",
        {"name": "one", "format": "avro", "auto.offset.reset": "earliest"},
    )
    instance = create.json()["base_uri"]
    assign = {"partitions": [{"topic": "orders", "partition": 0}]}
    assert call("POST", f"{instance}/assignments", assign).status_code == 204

    def read(**params: Any) -> requests.Response:
        return call("GET", f"{instance}/records", accept=avro, params={"timeout": 2000, **params})

    def seek(offset: int) -> None:
        to = {"offsets": [{"topic": "orders", "partition": 0, "offset": offset}]}
        assert call("POST", f"{instance}/positions", to).status_code == 204

    for offset, reason in ((0, "wire format"), (2, "schema id 999 is not in the registry")):
        for _ in range(2):  # nothing moved: the same record fails the read again
            refused = read()
            assert error(refused) == (409, 40903)
            assert f"value of orders/0 at offset {offset}" in refused.json()["message"]
            assert reason in refused.json()["message"]
        seek(offset + 1)
        if offset == 0:  # one record per read (max_bytes), so the good one comes alone
            assert [r["value"] for r in read(max_bytes=1).json()] == ["hello"]
    assert read(timeout=0).json() == []
    assert call("DELETE", instance).status_code == 204


def test_an_answer_too_large_for_a_function_is_refused_and_moves_nothing(
    kafka: str, log: ObjectLog
) -> None:
    avro = "application/vnd.kafka.avro.v2+json"
    body = {"value_schema": json.dumps("bytes"), "records": [{"value": "\u0000"}]}
    written = call("POST", f"{kafka}/topics/orders", body, content_type=avro)
    assert written.status_code == 200, written.text
    # a million zero bytes: 1 MB stored, 6 MB as Avro's JSON ("\u0000" each)
    size, length = 1_000_000, bytearray()
    zigzag = size << 1
    while zigzag >= 0x80:
        length.append(zigzag & 0x7F | 0x80)
        zigzag >>= 7
    length.append(zigzag)
    prefix = b"\0" + written.json()["value_schema_id"].to_bytes(4, "big")
    big = prefix + bytes(length) + bytes(size)
    log.producer(linger_ms=0).send("orders", value=big, partition=0).result()
    create = call(
        "POST",
        f"{kafka}/consumers/readers",
        {"name": "one", "format": "avro", "auto.offset.reset": "earliest"},
    )
    instance = create.json()["base_uri"]
    assign = {"partitions": [{"topic": "orders", "partition": 0}]}
    assert call("POST", f"{instance}/assignments", assign).status_code == 204
    first = call("GET", f"{instance}/records", accept=avro, params={"max_bytes": 10})
    assert [r["value"] for r in first.json()] == ["\u0000"]
    for _ in range(2):  # nothing moves
        refused = call("GET", f"{instance}/records", accept=avro, params={"timeout": 2000})
        assert error(refused) == (413, 413) and "binary" in refused.json()["message"]
    seek = {"offsets": [{"topic": "orders", "partition": 0, "offset": 2}]}
    assert call("POST", f"{instance}/positions", seek).status_code == 204
    assert call("GET", f"{instance}/records", accept=avro, params={"timeout": 0}).json() == []
