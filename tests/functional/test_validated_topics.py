"""Validated topics (confluent.value.schema.validation): a record without the registry's wire
format, with an unknown id, or with an id of another subject is refused on every door and
nothing of what is refused is stored; the subject's ids are read once, not per record."""

from __future__ import annotations

import base64
import json
import struct
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
import requests

from objectlog import ObjectLog
from objectlog.errors import SchemaValidationFailed
from objectlog.kafka.server import AgentThread
from objectlog.schemas.parsing import SchemaInput
from objectlog.schemas.registry import SchemaRegistry
from tests.kafka_agent_config import agent_config

TOPIC = "payments"
NAME = json.dumps({"type": "record", "name": "Payment", "fields": [{"name": "n", "type": "int"}]})
OTHER = json.dumps({"type": "record", "name": "Other", "fields": [{"name": "s", "type": "string"}]})


def framed(schema_id: int, payload: bytes = b"\x02") -> bytes:
    return struct.pack(">bI", 0, schema_id) + payload


@pytest.fixture
def ids(log: ObjectLog) -> dict[str, int]:
    """The topic's subject's id, another subject's id, and an id nobody has."""
    registry = SchemaRegistry(log.items.schemas, log.items.documents)
    good = registry.register(f"{TOPIC}-value", SchemaInput(NAME)).schema.id
    other = registry.register("elsewhere-value", SchemaInput(OTHER)).schema.id
    log.create_topic(TOPIC, partitions=1, config={"confluent.value.schema.validation": "true"})
    return {"good": good, "other": other, "unknown": 999}


def refused_values(ids: dict[str, int]) -> dict[str, bytes]:
    return {
        "raw": b"not framed",
        "short": b"\x00\x00",
        "unknown id": framed(ids["unknown"]),
        "another subject's id": framed(ids["other"]),
    }


def stored(log: ObjectLog) -> list[bytes | None]:
    return [r.value for r in log.fetch(TOPIC, 0, 0).records]


def test_the_library_refuses_each_bad_record_and_stores_the_others(
    log: ObjectLog, ids: dict[str, int]
) -> None:
    producer = log.producer()
    good = producer.send(TOPIC, value=framed(ids["good"]))
    tombstone = producer.send(TOPIC, value=None, key=b"k")
    bad = {name: producer.send(TOPIC, value=value) for name, value in refused_values(ids).items()}
    producer.flush()
    assert good.result().offset == 0 and tombstone.result().offset == 1
    for future in bad.values():
        with pytest.raises(SchemaValidationFailed, match="refused"):
            future.result()
    table = pa.table({"value": pa.array([framed(ids["good"]), b"raw"], pa.binary())})
    with pytest.raises(SchemaValidationFailed, match="record 1"):
        producer.send_table(TOPIC, table)
    producer.close()
    assert stored(log) == [framed(ids["good"]), None]


def test_the_http_api_refuses_the_whole_request_with_422(
    log: ObjectLog, ids: dict[str, int], api: str
) -> None:
    for name, value in refused_values(ids).items():
        records = [{"value": base64.b64encode(framed(ids["good"])).decode()}]
        records.append({"value": base64.b64encode(value).decode()})
        answer = requests.post(f"{api}/topics/{TOPIC}/records", json={"records": records})
        assert answer.status_code == 422, name
        assert answer.json()["error"] == "SchemaValidationFailed"
        assert "record 1" in answer.json()["message"]
    assert stored(log) == []


@pytest.fixture
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    running = AgentThread(log, agent_config()).start()
    yield running
    running.stop()


def test_the_kafka_door_refuses_the_partitions_batch_with_invalid_record(
    log: ObjectLog, ids: dict[str, int], agent: AgentThread
) -> None:
    from confluent_kafka import KafkaError, Producer

    producer = Producer({"bootstrap.servers": agent.address, "linger.ms": 0})
    outcomes: list[Any] = []
    for value in [framed(ids["good"]), *refused_values(ids).values()]:
        producer.produce(TOPIC, value=value, on_delivery=lambda e, m: outcomes.append(e))
        producer.flush(10)
    assert outcomes[0] is None
    assert [e.code() for e in outcomes[1:]] == [KafkaError.INVALID_RECORD] * 4
    assert stored(log) == [framed(ids["good"])]


def test_many_records_cost_one_read_of_the_subject(log: ObjectLog, ids: dict[str, int]) -> None:
    validator = log.schema_validator
    reads: list[str] = []
    read = validator.subjects.read
    validator.subjects.read = lambda subject: reads.append(subject) or read(subject)  # type: ignore[method-assign]
    topic = log.topic(TOPIC)
    values = pa.array([framed(ids["good"])] * 10_000, pa.binary())
    for _ in range(20):
        validator.check(topic, pa.nulls(len(values), pa.binary()), values)
    for _ in range(20):  # an id missing: read again once, then not within the miss interval
        with pytest.raises(SchemaValidationFailed):
            validator.check(topic, pa.nulls(1, pa.binary()), pa.array([framed(ids["other"])]))
    assert reads == [f"{TOPIC}-value", f"{TOPIC}-value"]


RECORD_NAME = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
TOPIC_RECORD_NAME = "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"
SHOP_PROTO = """
syntax = "proto3";
package shop;
message Order { string id = 1; }
message Refund { string order = 1; message Line { int64 cents = 1; } }
"""


@pytest.mark.parametrize(
    ("strategy", "subject_of"),
    [
        pytest.param(RECORD_NAME, lambda name: name, id="record-name"),
        pytest.param(TOPIC_RECORD_NAME, lambda name: f"ledger-{name}", id="topic-record-name"),
    ],
)
def test_record_name_strategies_check_each_record_against_its_records_subject(
    log: ObjectLog, strategy: str, subject_of: Any
) -> None:
    """Two record types in one topic, each registered under the subject its name gives;
    an id registered under the other record's subject is refused."""
    registry = SchemaRegistry(log.items.schemas, log.items.documents)
    payment = json.loads(NAME) | {"namespace": "shop"}
    refund = json.loads(OTHER) | {"name": "Refund", "namespace": "shop"}
    payment_id = registry.register(subject_of("shop.Payment"), SchemaInput(json.dumps(payment)))
    refund_id = registry.register(subject_of("shop.Refund"), SchemaInput(json.dumps(refund)))
    stray = registry.register("unrelated", SchemaInput(json.dumps(payment | {"name": "Stray"})))
    log.create_topic(
        "ledger",
        config={
            "confluent.value.schema.validation": "true",
            "confluent.value.subject.name.strategy": strategy,
        },
    )
    producer = log.producer()
    taken = [producer.send("ledger", value=framed(s.schema.id)) for s in (payment_id, refund_id)]
    refused = producer.send("ledger", value=framed(stray.schema.id))
    producer.flush()
    assert [f.result().offset for f in taken] == [0, 1]
    with pytest.raises(SchemaValidationFailed, match="Stray"):
        refused.result()
    producer.close()


def test_protobuf_records_are_named_by_their_message_indexes(log: ObjectLog) -> None:
    registry = SchemaRegistry(log.items.schemas, log.items.documents)
    schema = SchemaInput(SHOP_PROTO, schema_type="PROTOBUF")
    for subject in ("shop.Order", "shop.Refund.Line"):
        schema_id = registry.register(subject, schema).schema.id  # one schema, both subjects
    log.create_topic(
        "shop",
        config={
            "confluent.value.schema.validation": "true",
            "confluent.value.subject.name.strategy": RECORD_NAME,
        },
    )
    zigzag = {0: b"\x00", 1: b"\x02", 2: b"\x04"}
    order = framed(schema_id, b"\x00" + b"\x0a\x01x")  # [0]: shop.Order
    line = framed(schema_id, zigzag[2] + zigzag[1] + zigzag[0])  # [1, 0]: shop.Refund.Line
    refund = framed(schema_id, zigzag[1] + zigzag[1])  # [1]: shop.Refund, not registered
    producer = log.producer()
    futures = [producer.send("shop", value=v) for v in (order, line, refund)]
    producer.flush()
    assert [f.result().offset for f in futures[:2]] == [0, 1]
    with pytest.raises(SchemaValidationFailed, match=r"subject 'shop\.Refund'"):
        futures[2].result()
    producer.close()


def test_ids_in_headers_are_validated_too(log: ObjectLog, api: str, agent: AgentThread) -> None:
    """confluent-kafka 2.16 can carry the schema's guid in a __value_schema_id header (magic
    byte 1) instead of the payload's prefix: such records are checked by the guid's id."""
    from confluent_kafka import KafkaError, Producer, SerializingProducer
    from confluent_kafka.schema_registry import SchemaRegistryClient, header_schema_id_serializer
    from confluent_kafka.schema_registry.avro import AvroSerializer

    log.create_topic("audited", config={"confluent.value.schema.validation": "true"})
    client = SchemaRegistryClient({"url": f"{api}/schema-registry"})
    serializer = AvroSerializer(
        client, NAME, conf={"schema.id.serializer": header_schema_id_serializer}
    )
    producer = SerializingProducer(
        {"bootstrap.servers": agent.address, "value.serializer": serializer}
    )
    errors: list[Any] = []
    deliver = errors.append
    producer.produce("audited", value={"n": 7}, headers=[], on_delivery=lambda e, m: deliver(e))
    producer.flush(10)
    assert errors == [None]
    (record,) = log.fetch("audited", 0, 0).records
    assert dict(record.headers)["__value_schema_id"][0] == 1  # magic byte 1: a guid follows
    raw = Producer({"bootstrap.servers": agent.address})
    unknown_guid = b"\x01" + bytes(16)
    raw.produce(
        "audited",
        value=b"\x0e",
        headers=[("__value_schema_id", unknown_guid)],
        on_delivery=lambda e, m: errors.append(e),
    )
    raw.flush(10)
    assert errors[1].code() == KafkaError.INVALID_RECORD
    assert len(log.fetch("audited", 0, 0).records) == 1


def test_the_library_and_the_http_api_read_ids_in_headers(
    log: ObjectLog, ids: dict[str, int], api: str
) -> None:
    registry = SchemaRegistry(log.items.schemas, log.items.documents)
    guid = registry.schema_by_id(ids["good"]).guid
    other_guid = registry.schema_by_id(ids["other"]).guid
    header = ("__value_schema_id", b"\x01" + uuid.UUID(guid).bytes)
    stray = ("__value_schema_id", b"\x01" + uuid.UUID(other_guid).bytes)
    producer = log.producer()
    taken = producer.send(TOPIC, value=b"\x02", headers=[header])
    refused = producer.send(TOPIC, value=b"\x02", headers=[stray])
    producer.flush()
    assert taken.result().offset == 0
    with pytest.raises(SchemaValidationFailed, match="not registered under"):
        refused.result()
    producer.close()

    def record(pair: tuple[str, bytes]) -> dict[str, Any]:
        encoded = base64.b64encode(pair[1]).decode()
        return {"value": "Ag==", "headers": [{"key": pair[0], "value": encoded}]}

    answer = requests.post(
        f"{api}/topics/{TOPIC}/records", json={"records": [record(header), record(stray)]}
    )
    assert answer.status_code == 422 and "record 1" in answer.json()["message"]
    assert stored(log) == [b"\x02"]


@pytest.mark.parametrize(
    ("schema_type", "schema", "good", "bad"),
    [
        pytest.param("AVRO", NAME, [b"\x02", b"\x80\x01"], [b"", b"\x02\x00", b"\x80"], id="avro"),
        pytest.param(
            "JSON",
            json.dumps(
                {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
            ),
            [b'{"n": 1}', b'{"n": -5, "extra": true}'],
            [b'{"n": "one"}', b"{}", b"not json"],
            id="json-schema",
        ),
        pytest.param(
            "PROTOBUF",
            'syntax = "proto3"; message P { int32 n = 1; }',
            [b"\x00\x08\x01", b"\x00"],
            [b"\x00\x08", b"\x00\xff\xff", b"\x06"],
            id="protobuf",
        ),
    ],
)
def test_strict_mode_refuses_payloads_that_do_not_decode(
    log: ObjectLog, schema_type: str, schema: str, good: list[bytes], bad: list[bytes]
) -> None:
    registry = SchemaRegistry(log.items.schemas, log.items.documents)
    schema_id = registry.register("strict-value", SchemaInput(schema, schema_type)).schema.id
    config = {
        "confluent.value.schema.validation": "true",
        "objectlog.schema.validation.strict": "true",
    }
    log.create_topic("strict", config=config)
    producer = log.producer()
    taken = [producer.send("strict", value=framed(schema_id, payload)) for payload in good]
    refused = [producer.send("strict", value=framed(schema_id, payload)) for payload in bad]
    producer.flush()
    assert [f.result().offset for f in taken] == list(range(len(good)))
    for future in refused:
        with pytest.raises(SchemaValidationFailed, match="does not decode with its schema"):
            future.result()
    producer.close()
