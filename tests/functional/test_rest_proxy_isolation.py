"""Kafka's consumer isolation.level on REST Proxy v2 consumer instances (issue 36), over real
HTTP through the local API Gateway: an instance created with "isolation.level":
"read_committed" reads committed transactions only, up to the last stable offset, and never an
aborted record; one created without it reads every record (read_uncommitted, the Java
consumer's default); a bad value is refused with REST Proxy's 42204; and isolation costs a
read no DynamoDB request. Transactions as in test_http_isolation (the library's coordinator)."""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

from objectlog import ObjectLog
from objectlog.tools.gateway import local_api
from tests.functional.test_http_isolation import TOPIC, transactions
from tests.functional.test_rest_proxy_consumers import create, read, read_until
from tests.rest_proxy_calls import call, error

EVERY = [b"plain", b"aborted", b"committed", b"open"]


def values(records: list[dict[str, Any]]) -> list[bytes]:
    return [base64.b64decode(r["value"]) for r in records]


def subscribed(kafka: str, group: str, **settings: Any) -> str:
    instance = create(kafka, group, **{"auto.offset.reset": "earliest", **settings})
    response = call("POST", f"{instance}/subscription", {"topics": [TOPIC]})
    assert response.status_code == 204, response.text
    return instance


def test_a_read_committed_instance_reads_committed_records_only(api: str, log: ObjectLog) -> None:
    txns = transactions(log)
    kafka = f"{api}/kafka"
    committed = subscribed(kafka, "committed", **{"isolation.level": "read_committed"})
    uncommitted = subscribed(kafka, "uncommitted")  # no isolation.level: read_uncommitted
    explicit = subscribed(kafka, "explicit", **{"isolation.level": "read_uncommitted"})
    assert values(read_until(uncommitted, 4)) == EVERY
    assert values(read_until(explicit, 4)) == EVERY

    assert values(read_until(committed, 2)) == [b"plain", b"committed"]
    assert read(committed, timeout=300) == []  # the open transaction holds the rest
    txns.commit_open()
    [opened] = read_until(committed, 1)
    assert (base64.b64decode(opened["value"]), opened["offset"]) == (b"open", txns.lso)
    assert read(committed, timeout=100) == [] and read(uncommitted, timeout=100) == []


def test_a_bad_isolation_level_is_refused_with_rest_proxys_42204(api: str, log: ObjectLog) -> None:
    kafka = f"{api}/kafka"
    for bad in ("READ_COMMITTED", "read-committed", "", "snapshot"):
        response = call("POST", f"{kafka}/consumers/g", {"name": "x", "isolation.level": bad})
        assert error(response) == (400, 42204), (bad, response.text)
        assert "isolation.level" in response.json()["message"]
    not_text = {"name": "x", "isolation.level": 1}
    assert error(call("POST", f"{kafka}/consumers/g", not_text)) == (400, 42201)
    create(kafka, "g", name="x")  # no refused request left an instance of that name
    assert log.groups.list_groups() == []


def test_isolation_adds_no_dynamodb_request_to_a_read(log: ObjectLog) -> None:
    """A read of an instance at a position costs the same DynamoDB requests (its document,
    the partition's head, its document written back) at either isolation level. The API's
    log reads every head afresh (head_reuse_ms=0), so the order of the reads does not matter."""
    transactions(log)
    with ObjectLog(replace(log.config, head_reuse_ms=0)) as served:
        gateway = local_api(lambda: served)
        kafka = f"{gateway.start(port=0)}/kafka"
        try:
            made = _reads_counted(kafka, served)
        finally:
            gateway.stop()
    assert made["read_committed"] == made["read_uncommitted"], made
    assert made["read_committed"] == ["BatchGetItem", "GetItem", "PutItem"], made


def _reads_counted(kafka: str, served: ObjectLog) -> dict[str, list[str]]:
    """The DynamoDB requests of one read of an instance at each isolation level."""
    instances = {}
    for isolation in ("read_uncommitted", "read_committed"):
        instance = create(
            kafka, isolation, **{"isolation.level": isolation, "auto.commit.enable": "false"}
        )
        assign = {"partitions": [{"topic": TOPIC, "partition": 0}]}
        start = {"offsets": [{"topic": TOPIC, "partition": 0, "offset": 0}]}
        assert call("POST", f"{instance}/assignments", assign).status_code == 204
        assert call("POST", f"{instance}/positions", start).status_code == 204
        instances[isolation] = instance
    calls: list[str] = []

    def count(event_name: str, **_: Any) -> None:
        calls.append(event_name.rsplit(".", 1)[-1])

    events = served.metadata.client.meta.events
    events.register("before-call.dynamodb", count)
    made: dict[str, list[str]] = {}
    try:
        for isolation, instance in instances.items():
            calls.clear()
            assert read(instance, timeout=0)
            made[isolation] = sorted(calls)
    finally:
        events.unregister("before-call.dynamodb", count)
    return made
