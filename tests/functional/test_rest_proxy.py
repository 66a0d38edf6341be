"""Confluent REST Proxy v2 under /kafka, over real HTTP through the local API Gateway: the
requests of REST Proxy's own documentation (produce in the binary and JSON embedded formats,
topic and partition metadata), its response shapes and its error bodies; objectlog's own
routes keep their JSON."""

from __future__ import annotations

import base64
import json

import pytest
import requests

from objectlog import ObjectLog

V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"
JSON = "application/vnd.kafka.json.v2+json"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def kafka(api: str, log: ObjectLog) -> str:
    """The REST Proxy base URL, with topic "test" (2 partitions) as in REST Proxy's examples."""
    log.create_topic("test", partitions=2)
    return f"{api}/kafka"


def post(url: str, body: object, content_type: str, accept: str = V2) -> requests.Response:
    headers = {"Content-Type": content_type, "Accept": accept}
    return requests.post(url, data=json.dumps(body), headers=headers, timeout=10)


def test_binary_produce_as_documented(kafka: str, log: ObjectLog) -> None:
    # REST Proxy's example: "S2Fma2E=" is "Kafka", "bG9ncw==" is "logs"
    body = {
        "records": [
            {"key": "a2V5", "value": "Y29uZmx1ZW50"},
            {"value": "a2Fma2E=", "partition": 1},
            {"value": "bG9ncw==", "partition": 0},
        ]
    }
    response = post(f"{kafka}/topics/test", body, BINARY)
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == V2
    answer = response.json()
    assert answer["key_schema_id"] is None and answer["value_schema_id"] is None
    offsets = answer["offsets"]
    assert [o["error_code"] for o in offsets] == [None, None, None]
    assert set(offsets[1]) == {"partition", "offset", "error_code", "error"}
    assert [o["partition"] for o in offsets[1:]] == [1, 0]
    stored = {
        (o["partition"], o["offset"]): log.fetch("test", o["partition"], o["offset"]).records[0]
        for o in offsets
    }
    first = stored[(offsets[0]["partition"], offsets[0]["offset"])]
    assert (first.key, first.value) == (b"key", b"confluent")
    assert stored[(1, offsets[1]["offset"])].value == b"kafka"
    assert stored[(0, offsets[2]["offset"])].value == b"logs"


def test_json_produce_stores_the_utf8_json_bytes(kafka: str, log: ObjectLog) -> None:
    body = {
        "records": [
            {"key": "somekey", "value": {"foo": "bar"}, "partition": 0},
            {"value": ["foo", "bär"], "partition": 0},
            {"value": 53.5, "partition": 0},
            {"key": {"id": 1}, "value": None, "partition": 0},
        ]
    }
    response = post(f"{kafka}/topics/test", body, JSON, accept="application/json")
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == "application/json"
    assert [o["offset"] for o in response.json()["offsets"]] == [0, 1, 2, 3]
    records = log.fetch("test", 0, 0).records
    assert [(r.key, r.value) for r in records] == [
        (b'"somekey"', b'{"foo":"bar"}'),
        (None, '["foo","bär"]'.encode()),
        (None, b"53.5"),
        (b'{"id":1}', None),  # a null value is a tombstone
    ]


def test_produce_to_a_partition(kafka: str, log: ObjectLog) -> None:
    response = post(
        f"{kafka}/topics/test/partitions/1", {"records": [{"value": b64(b"p")}]}, BINARY
    )
    assert response.status_code == 200, response.text
    assert response.json()["offsets"][0]["partition"] == 1
    assert log.fetch("test", 1, 0).records[0].value == b"p"
    missing = post(f"{kafka}/topics/test/partitions/9", {"records": [{"value": "eA=="}]}, BINARY)
    assert missing.status_code == 400 and missing.json()["error_code"] == 42201


def test_metadata_in_rest_proxys_shapes(kafka: str, log: ObjectLog) -> None:
    post(f"{kafka}/topics/test/partitions/1", {"records": [{"value": "eA=="}] * 3}, BINARY)
    assert requests.get(f"{kafka}/topics", timeout=10).json() == ["test"]
    topic = requests.get(f"{kafka}/topics/test", timeout=10).json()
    assert topic["name"] == "test"
    assert topic["configs"]["cleanup.policy"] == "delete"
    assert all(isinstance(v, str) for v in topic["configs"].values())
    one_broker = [{"broker": 0, "leader": True, "in_sync": True}]
    partitions = [{"partition": p, "leader": 0, "replicas": one_broker} for p in (0, 1)]
    assert topic["partitions"] == partitions
    assert requests.get(f"{kafka}/topics/test/partitions", timeout=10).json() == partitions
    one = requests.get(f"{kafka}/topics/test/partitions/1", timeout=10)
    assert one.json() == partitions[1] and one.headers["Content-Type"] == V2
    offsets = requests.get(f"{kafka}/topics/test/partitions/1/offsets", timeout=10).json()
    assert offsets == {"beginning_offset": 0, "end_offset": 3}


def test_errors_are_rest_proxys_and_store_nothing(kafka: str, api: str, log: ObjectLog) -> None:
    def error(response: requests.Response) -> tuple[int, int]:
        body = response.json()
        assert set(body) == {"error_code", "message"} and body["message"], body
        return response.status_code, body["error_code"]

    record = {"records": [{"value": "eA=="}]}
    assert error(requests.get(f"{kafka}/topics/nope", timeout=10)) == (404, 40401)
    assert error(requests.get(f"{kafka}/topics/test/partitions/5", timeout=10)) == (404, 40402)
    assert error(post(f"{kafka}/topics/nope", record, BINARY)) == (404, 40401)
    for schema_format in ("avro", "jsonschema", "protobuf"):
        refused = post(
            f"{kafka}/topics/test", record, f"application/vnd.kafka.{schema_format}.v2+json"
        )
        assert error(refused) == (422, 42202)  # a schema format's value needs a value schema
    assert error(post(f"{kafka}/topics/test", record, "text/plain")) == (415, 415)
    assert error(post(f"{kafka}/topics/test", record, BINARY, accept="text/html")) == (406, 406)
    assert error(post(f"{kafka}/topics/test", {"records": []}, BINARY)) == (400, 42201)
    assert error(post(f"{kafka}/topics/test", {"records": [{"value": 5}]}, BINARY)) == (400, 42201)
    bad_base64 = post(f"{kafka}/topics/test", {"records": [{"value": "%%%"}]}, BINARY)
    assert error(bad_base64) == (400, 42201)
    assert error(requests.delete(f"{kafka}/topics/test", timeout=10)) == (405, 405)
    assert error(requests.get(f"{kafka}/brokers/0", timeout=10)) == (404, 404)
    assert [p.high_watermark for p in log.describe_topic("test").partitions] == [0, 0]
    # objectlog's own routes keep their JSON
    assert requests.get(f"{api}/topics", timeout=10).json() == {"topics": ["test"]}
    assert requests.get(f"{api}/topics/nope", timeout=10).json()["error"] == "TopicNotFound"
