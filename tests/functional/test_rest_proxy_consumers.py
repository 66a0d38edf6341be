"""REST Proxy v2's consumer API under /kafka/consumers, over real HTTP through the local API
Gateway: the produce-and-consume sessions of REST Proxy's documentation (binary and JSON), two
instances sharing a group's partitions, an idle instance expiring, and REST Proxy's errors."""

from __future__ import annotations

import base64
import time
from typing import Any

import pytest

from objectlog import ObjectLog
from tests.rest_proxy_calls import BINARY, call, error

JSON = "application/vnd.kafka.json.v2+json"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def kafka(api: str, log: ObjectLog) -> str:
    log.create_topic("test", partitions=2)
    return f"{api}/kafka"


def create(kafka: str, group: str, **settings: Any) -> str:
    """A consumer instance; its base_uri, which must point at this API."""
    response = call("POST", f"{kafka}/consumers/{group}", settings)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["base_uri"] == f"{kafka}/consumers/{group}/instances/{answer['instance_id']}"
    return str(answer["base_uri"])


def read(instance: str, accept: str = BINARY, **params: Any) -> list[dict[str, Any]]:
    response = call("GET", f"{instance}/records", accept=accept, params=params)
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"] == accept
    records: list[dict[str, Any]] = response.json()
    return records


def read_until(instance: str, count: int, accept: str = BINARY) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    deadline = time.monotonic() + 20
    while len(records) < count and time.monotonic() < deadline:
        records += read(instance, accept, timeout=500)
    return records


def test_binary_session_as_documented(kafka: str, log: ObjectLog) -> None:
    produced = call(
        "POST",
        f"{kafka}/topics/test",
        {"records": [{"value": b64(b"kafka"), "partition": 0}, {"key": b64(b"k"), "value": None}]},
        content_type=BINARY,
    )
    assert produced.status_code == 200, produced.text
    instance = create(
        kafka,
        "my_binary_group",
        name="my_consumer_instance",
        format="binary",
        **{"auto.offset.reset": "earliest", "auto.commit.enable": "false"},
    )
    subscribed = call("POST", f"{instance}/subscription", {"topics": ["test"]})
    assert subscribed.status_code == 204, subscribed.text
    assert call("GET", f"{instance}/subscription").json() == {"topics": ["test"]}
    records = sorted(read_until(instance, 2), key=lambda r: r["value"] is None)
    assert records[0] == {
        "topic": "test",
        "key": None,
        "value": b64(b"kafka"),
        "partition": 0,
        "offset": 0,
    }
    assert records[1]["key"] == b64(b"k") and records[1]["value"] is None
    assert read(instance, timeout=0) == []  # positions moved past what was read

    assert call("POST", f"{instance}/offsets").status_code == 204  # everything read
    ends = {r["partition"]: r["offset"] + 1 for r in sorted(records, key=lambda r: r["offset"])}
    partitions = [{"topic": "test", "partition": p} for p in sorted(ends)]
    committed = call("GET", f"{instance}/offsets", {"partitions": partitions})  # a GET body
    assert committed.status_code == 200, committed.text
    assert committed.json() == {
        "offsets": [
            {"topic": "test", "partition": p, "offset": end, "metadata": ""}
            for p, end in sorted(ends.items())
        ]
    }
    assert call("DELETE", instance).status_code == 204
    assert error(call("GET", f"{instance}/records", accept=BINARY)) == (404, 40403)
    assert log.groups.describe("my_binary_group").members == ()


def test_json_session_with_explicit_commits(kafka: str, log: ObjectLog) -> None:
    values = [{"foo": "bar"}, ["foo", "bär"], 53.5]
    body = {"records": [{"key": "somekey", "value": v, "partition": 1} for v in values]}
    assert call("POST", f"{kafka}/topics/test", body, content_type=JSON).status_code == 200
    instance = create(
        kafka, "my_json_group", name="json_one", format="json", **{"auto.offset.reset": "earliest"}
    )
    call("POST", f"{instance}/subscription", {"topics": ["test"]})
    assert error(call("GET", f"{instance}/records", accept=BINARY)) == (406, 40601)
    records = read_until(instance, 3, accept=JSON)
    assert [(r["key"], r["value"], r["offset"]) for r in records] == [
        ("somekey", v, i) for i, v in enumerate(values)
    ]
    # REST Proxy's offsets name the last record processed; the group stores the next one
    commit = {"offsets": [{"topic": "test", "partition": 1, "offset": 1}]}
    assert call("POST", f"{instance}/offsets", commit).status_code == 204
    assert log.groups.committed("my_json_group", [("test", 1)])[("test", 1)].offset == 2

    # a record that is not JSON stops a json instance with an error that moves nothing
    log.producer(linger_ms=0).send("test", value=b"not json", partition=1).result()
    refused = call("GET", f"{instance}/records", accept=JSON, params={"timeout": 2000})
    assert error(refused) == (409, 40903)
    seek = {"offsets": [{"topic": "test", "partition": 1, "offset": 4}]}
    assert call("POST", f"{instance}/positions", seek).status_code == 204
    assert read(instance, JSON, timeout=0) == []
    assert call("DELETE", instance).status_code == 204
    # with auto-commit (the default) closing the instance committed its position
    assert log.groups.committed("my_json_group", [("test", 1)])[("test", 1)].offset == 4


def test_assignment_and_seeks(kafka: str, log: ObjectLog) -> None:
    producer = log.producer(linger_ms=0)
    for i in range(5):
        producer.send("test", value=f"{i}".encode(), partition=0)
    producer.flush()
    instance = create(kafka, "assigned", **{"auto.commit.enable": "false"})
    both = {"partitions": [{"topic": "test", "partition": 0}, {"topic": "test", "partition": 1}]}
    assert call("POST", f"{instance}/assignments", both).status_code == 204
    assert call("GET", f"{instance}/assignments").json() == both
    assert read(instance, timeout=0) == []  # auto.offset.reset latest (the default)
    first = {"partitions": [{"topic": "test", "partition": 0}]}
    assert call("POST", f"{instance}/positions/beginning", first).status_code == 204
    assert [r["offset"] for r in read(instance, max_bytes=2)] == [0, 1]  # 1 byte each
    seek = {"offsets": [{"topic": "test", "partition": 0, "offset": 4}]}
    call("POST", f"{instance}/positions", seek)
    assert [base64.b64decode(r["value"]) for r in read(instance)] == [b"4"]
    call("POST", f"{instance}/positions/beginning", first)
    call("POST", f"{instance}/positions/end", first)
    assert read(instance, timeout=0) == []
    unknown = {"offsets": [{"topic": "test", "partition": 7, "offset": 0}]}
    assert call("POST", f"{instance}/positions", unknown).status_code == 400


def assignment(instance: str) -> set[tuple[str, int]]:
    answer = call("GET", f"{instance}/assignments").json()
    return {(p["topic"], p["partition"]) for p in answer["partitions"]}


IDLE_MS = 4_000


def test_two_instances_share_a_group_and_an_idle_one_expires(kafka: str, log: ObjectLog) -> None:
    log.create_topic("shared", partitions=4)
    everything = {("shared", p) for p in range(4)}
    # long enough that a loaded 2-core CI worker answers the other instance's requests within it
    settings = {"auto.offset.reset": "earliest", "consumer.instance.timeout.ms": str(IDLE_MS)}
    first = create(kafka, "sharing", name="first", **settings)
    second = create(kafka, "sharing", name="second", **settings)
    for instance in (first, second):
        call("POST", f"{instance}/subscription", {"topics": ["shared"]})
    read(first, timeout=0)
    assert assignment(first) == everything
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # both poll, as REST Proxy clients do, until settled
        read(second, timeout=100)
        read(first, timeout=100)
        if assignment(first) and assignment(second):
            break
    assert assignment(first) | assignment(second) == everything
    assert not assignment(first) & assignment(second)

    # the first stops polling: its session (the instance timeout) lapses, its partitions move
    first_idle_since = time.monotonic()
    deadline = first_idle_since + 20
    while assignment(second) != everything and time.monotonic() < deadline:
        read(second, timeout=300)
    assert assignment(second) == everything
    time.sleep(max(0.0, first_idle_since + IDLE_MS / 1000 + 0.1 - time.monotonic()))
    assert error(call("GET", f"{first}/records", accept=BINARY)) == (404, 40403)
    assert [m.client_id for m in log.groups.describe("sharing").members] == ["second"]


def test_topic_pattern_subscription(kafka: str, log: ObjectLog) -> None:
    log.create_topic("orders-eu")
    log.create_topic("orders-us")
    instance = create(kafka, "patterned")
    assert call("POST", f"{instance}/subscription", {"topic_pattern": "orders-.*"}).ok
    assert call("GET", f"{instance}/subscription").json() == {"topics": ["orders-eu", "orders-us"]}
    assert call("DELETE", f"{instance}/subscription").status_code == 204
    assert call("GET", f"{instance}/subscription").json() == {"topics": []}
    bad = call("POST", f"{instance}/subscription", {"topic_pattern": "("})
    assert error(bad) == (400, 42201)


def test_consumer_errors_are_rest_proxys(kafka: str, log: ObjectLog) -> None:
    instance = create(kafka, "errors", name="one")
    assert error(call("POST", f"{kafka}/consumers/errors", {"name": "one"})) == (409, 40902)
    missing = f"{kafka}/consumers/errors/instances/none"
    assert error(call("GET", f"{missing}/records", accept=BINARY)) == (404, 40403)
    assert error(call("DELETE", missing)) == (404, 40403)
    assert error(call("POST", f"{kafka}/consumers/errors", {"format": "xml"})) == (400, 42204)
    reset = call("POST", f"{kafka}/consumers/errors", {"auto.offset.reset": "smallest"})
    assert error(reset) == (400, 42204)
    assert (
        error(call("GET", f"{instance}/records", accept="application/vnd.kafka.avro.v2+json"))[0]
        == 406
    )
    assert error(call("GET", f"{instance}/records", params={"timeout": -1})) == (422, 42201)
    nope = call("POST", f"{instance}/subscription", {"topics": ["nope"]})
    assert error(nope) == (404, 40401)
    assert error(call("POST", f"{instance}/subscription", {})) == (400, 42201)
    assert error(call("POST", f"{instance}/subscription", "[")) == (400, 42201)
    assert log.groups.list_groups() == []
