"""The Schema Registry over the local API Gateway, as Confluent's clients and docs use it:
confluent-kafka's SchemaRegistryClient and Avro serializers through the Kafka agent, and REST
calls with Confluent's error bodies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.error import SchemaRegistryError

from objectlog import ObjectLog
from objectlog.kafka.server import AgentThread
from tests.kafka_agent_config import agent_config

MEDIA = "application/vnd.schemaregistry.v1+json"
USER = json.dumps(
    {
        "type": "record",
        "name": "User",
        "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}],
    }
)


@pytest.fixture
def registry(api: str) -> str:
    return f"{api}/schema-registry"


@pytest.fixture
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    log.create_topic("users", partitions=1)
    running = AgentThread(log, agent_config()).start()
    yield running
    running.stop()


def post(url: str, body: object) -> requests.Response:
    return requests.post(url, data=json.dumps(body), headers={"Content-Type": MEDIA}, timeout=10)


def test_avro_records_round_trip_through_the_agent(registry: str, agent: AgentThread) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

    client = SchemaRegistryClient({"url": registry})
    sent = [{"name": f"user-{i}", "age": i} for i in range(5)]
    serializer, deserializer = AvroSerializer(client, USER), AvroDeserializer(client)
    assert round_trip(agent, "users", serializer, deserializer, sent) == sent
    assert client.get_subjects() == ["users-value"]
    assert client.get_latest_version("users-value").version == 1


def test_an_incompatible_change_is_refused_with_409_and_registers_under_none(
    registry: str,
) -> None:
    assert post(f"{registry}/subjects/users-value/versions", {"schema": USER}).json()["id"] == 1
    changed = json.loads(USER)
    changed["fields"].append({"name": "email", "type": "string"})
    refused = post(f"{registry}/subjects/users-value/versions", {"schema": json.dumps(changed)})
    assert refused.status_code == 409
    assert refused.json()["error_code"] == 409
    assert "reader_field_missing_default_value" in refused.json()["message"]
    verbose = post(
        f"{registry}/compatibility/subjects/users-value/versions/latest?verbose=true",
        {"schema": json.dumps(changed)},
    ).json()
    assert verbose["is_compatible"] is False and verbose["messages"]
    config = requests.put(
        f"{registry}/config/users-value", json={"compatibility": "NONE"}, timeout=10
    )
    assert config.json() == {"compatibility": "NONE"}
    again = post(f"{registry}/subjects/users-value/versions", {"schema": json.dumps(changed)})
    assert again.json()["version"] == 2


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code"),
    [
        pytest.param("GET", "/subjects/nope/versions", None, 404, 40401, id="no-subject"),
        pytest.param("GET", "/schemas/ids/999", None, 404, 40403, id="no-schema"),
        pytest.param("GET", "/subjects/s/versions/zero", None, 422, 42202, id="bad-version"),
        pytest.param(
            "POST",
            "/subjects/s/versions",
            {"schema": '{"type":"recrd"}'},
            422,
            42201,
            id="bad-schema",
        ),
        pytest.param(
            "POST",
            "/subjects/s/versions",
            {"schema": "1", "schemaType": "XML"},
            422,
            42201,
            id="bad-type",
        ),
        pytest.param("PUT", "/config", {"compatibility": "SIDEWAYS"}, 422, 42203, id="bad-level"),
        pytest.param("PUT", "/mode", {"mode": "OFF"}, 422, 42204, id="bad-mode"),
        pytest.param("GET", "/nothing/here", None, 404, 404, id="no-route"),
    ],
)
def test_errors_are_confluents_and_store_nothing(
    registry: str, method: str, path: str, body: object, status: int, code: int
) -> None:
    data = None if body is None else json.dumps(body)
    answer = requests.request(
        method, registry + path, data=data, headers={"Content-Type": MEDIA}, timeout=10
    )
    assert (answer.status_code, answer.json()["error_code"]) == (status, code)
    assert answer.json()["message"]
    assert requests.get(f"{registry}/subjects?deleted=true", timeout=10).json() == []


def test_a_subject_may_hold_a_slash_sent_encoded(registry: str) -> None:
    registered = post(f"{registry}/subjects/team%2Forders-value/versions", {"schema": '"string"'})
    assert registered.json()["subject"] == "team/orders-value"
    found = requests.get(f"{registry}/subjects/team%2Forders-value/versions/latest", timeout=10)
    assert found.json()["schema"] == '"string"'
    assert requests.get(f"{registry}/subjects", timeout=10).json() == ["team/orders-value"]


def test_other_media_types_are_refused_with_415(registry: str) -> None:
    answer = requests.post(
        f"{registry}/subjects/s/versions",
        data="schema",
        headers={"Content-Type": "text/plain"},
        timeout=10,
    )
    assert (answer.status_code, answer.json()["error_code"]) == (415, 415)


ORDER_PROTO = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order {
  string id = 1;
  int64 amount = 2;
  google.protobuf.Timestamp placed = 3;
  map<string, string> labels = 4;
}
"""


def order_class() -> type:
    """A generated-style message class for ORDER_PROTO, compiled as the registry compiles it."""
    from google.protobuf import descriptor_pool, message_factory, timestamp_pb2

    from objectlog.schemas.protobuf_schemas import parse

    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    descriptor = parse(ORDER_PROTO, {}).parsed
    descriptor.name = "shop/order.proto"
    pool.Add(descriptor)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def round_trip(
    agent: AgentThread, topic: str, serializer: Any, deserializer: Any, sent: list
) -> list:
    from confluent_kafka import DeserializingConsumer, SerializingProducer

    producer = SerializingProducer(
        {"bootstrap.servers": agent.address, "value.serializer": serializer}
    )
    for value in sent:
        producer.produce(topic, value=value)
    producer.flush(10)
    consumer = DeserializingConsumer(
        {
            "bootstrap.servers": agent.address,
            "group.id": f"{topic}-readers",
            "auto.offset.reset": "earliest",
            "value.deserializer": deserializer,
        }
    )
    consumer.subscribe([topic])
    received = []
    try:
        while len(received) < len(sent):
            message = consumer.poll(10)
            assert message is not None and message.error() is None
            received.append(message.value())
    finally:
        consumer.close()
    return received


def test_json_schema_records_round_trip_through_the_agent(
    log: ObjectLog, registry: str, agent: AgentThread
) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer

    schema = json.dumps(
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "title": "Click",
            "type": "object",
            "properties": {"page": {"type": "string"}, "ms": {"type": "integer"}},
            "required": ["page"],
        }
    )
    log.create_topic("clicks", partitions=1)
    client = SchemaRegistryClient({"url": registry})
    sent = [{"page": f"/p/{i}", "ms": i} for i in range(3)]
    received = round_trip(
        agent, "clicks", JSONSerializer(schema, client), JSONDeserializer(schema), sent
    )
    assert received == sent
    latest = client.get_latest_version("clicks-value")
    assert latest.schema.schema_type == "JSON"
    with pytest.raises(SchemaRegistryError, match="409"):  # a required property added: not BACKWARD
        changed = json.loads(schema)
        changed["required"] = ["page", "ms"]
        client.register_schema("clicks-value", Schema(json.dumps(changed), "JSON"))


def test_protobuf_records_round_trip_through_the_agent(
    log: ObjectLog, registry: str, agent: AgentThread
) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer

    order = order_class()
    log.create_topic("orders", partitions=1)
    client = SchemaRegistryClient({"url": registry})
    sent = [order(id=f"o-{i}", amount=100 * i, labels={"n": str(i)}) for i in range(3)]
    for i, message in enumerate(sent):
        message.placed.seconds = 1_700_000_000 + i
    serializer = ProtobufSerializer(order, client, {"use.deprecated.format": False})
    deserializer = ProtobufDeserializer(order, {"use.deprecated.format": False})
    assert round_trip(agent, "orders", serializer, deserializer, sent) == sent
    stored = requests.get(f"{registry}/subjects/orders-value/versions/latest", timeout=10).json()
    assert stored["schemaType"] == "PROTOBUF"
    assert "message Order" in stored["schema"]  # registered as a descriptor, kept as .proto text
    serialized = requests.get(
        f"{registry}/schemas/ids/{stored['id']}?format=serialized", timeout=10
    ).json()["schema"]
    assert serialized != stored["schema"]
    again = post(
        f"{registry}/subjects/orders-value", {"schema": serialized, "schemaType": "PROTOBUF"}
    )
    assert again.json()["id"] == stored["id"]  # the descriptor is the same schema as its text
