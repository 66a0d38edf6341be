"""The HTTP API over real HTTP: local API Gateway (payload v2) -> handlers -> moto server."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import requests

from objectlog import ObjectLog
from objectlog.http.routes import FETCH, PRODUCE, ROUTES
from objectlog.tools.gateway import LambdaContext, LocalGateway
from tests.faults import FaultInjector, both, commits, on_partition

EVENTS = Path(__file__).parents[1] / "events"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def high_watermarks(log: ObjectLog, topic: str) -> list[int]:
    return [p.high_watermark for p in log.describe_topic(topic).partitions]


def test_topic_routes(api: str, log: ObjectLog) -> None:
    created = requests.post(
        f"{api}/topics",
        json={"name": "orders", "partitions": 3, "config": {"retention.ms": "1000"}},
    )
    assert created.status_code == 201, created.text
    assert created.json()["partition_count"] == 3
    assert requests.get(f"{api}/topics").json() == {"topics": ["orders"]}
    described = requests.get(f"{api}/topics/orders").json()
    assert described["config"]["retention.ms"] == "1000" and len(described["partitions"]) == 3
    altered = requests.patch(
        f"{api}/topics/orders",
        json={"set": {"cleanup.policy": "compact"}, "delete": ["retention.ms"], "partitions": 4},
    )
    assert altered.status_code == 200, altered.text
    assert altered.json()["config"]["cleanup.policy"] == "compact"
    assert altered.json()["config"]["retention.ms"] == "604800000"
    assert altered.json()["partition_count"] == 4
    assert requests.post(f"{api}/topics", json={"name": "orders"}).status_code == 409
    assert requests.delete(f"{api}/topics/orders").status_code == 204
    assert requests.get(f"{api}/topics/orders").status_code == 404
    assert log.list_topics() == []


def test_produce_and_fetch_every_field(api: str) -> None:
    requests.post(f"{api}/topics", json={"name": "t", "partitions": 2})
    records = [
        {
            "key": b64(b"k"),
            "value": b64(b"v"),
            "headers": [{"key": "h", "value": b64(b"x")}],
            "partition": 1,
            "timestamp": 1234,
        },
        {"key": None, "value": None, "partition": 1},
        {
            "key": b64(bytes(range(256))),
            "value": b64("ü✓".encode()),
            "partition": 1,
            "headers": [{"key": "n", "value": None}],
        },
    ]
    produced = requests.post(f"{api}/topics/t/records", json={"records": records})
    assert produced.status_code == 200, produced.text
    assert [(o["partition"], o["offset"]) for o in produced.json()["offsets"]] == [
        (1, 0),
        (1, 1),
        (1, 2),
    ]
    assert produced.json()["offsets"][0]["timestamp"] == 1234
    fetched = requests.get(f"{api}/topics/t/partitions/1/records", params={"offset": 0}).json()
    assert (
        fetched["next_offset"] == 3
        and fetched["high_watermark"] == 3
        and fetched["log_start_offset"] == 0
    )
    got = fetched["records"]
    assert [r["offset"] for r in got] == [0, 1, 2]
    assert (
        got[0]["key"] == b64(b"k") and got[0]["value"] == b64(b"v") and got[0]["timestamp"] == 1234
    )
    assert got[0]["headers"] == [{"key": "h", "value": b64(b"x")}]
    assert got[1]["key"] is None and got[1]["value"] is None
    assert got[2]["key"] == b64(bytes(range(256))) and got[2]["headers"] == [
        {"key": "n", "value": None}
    ]
    limited = requests.get(
        f"{api}/topics/t/partitions/1/records", params={"offset": 1, "max_records": 1}
    ).json()
    assert [r["offset"] for r in limited["records"]] == [1] and limited["next_offset"] == 2


def test_offsets_route(api: str) -> None:
    requests.post(f"{api}/topics", json={"name": "t"})
    for ts in (1000, 2000, 3000):
        requests.post(
            f"{api}/topics/t/records", json={"records": [{"value": b64(b"x"), "timestamp": ts}]}
        )
    assert requests.get(f"{api}/topics/t/partitions/0/offsets").json() == {
        "earliest": 0,
        "latest": 3,
        "last_stable_offset": 3,
        "timestamp": None,
        "offset": None,
    }
    by_time = requests.get(
        f"{api}/topics/t/partitions/0/offsets", params={"timestamp": 1500}
    ).json()
    assert by_time["offset"] == 1


def test_rest_proxy_v2_binary_produce(api: str, log: ObjectLog) -> None:
    requests.post(f"{api}/topics", json={"name": "t", "partitions": 2})
    response = requests.post(
        f"{api}/topics/t",
        data=json.dumps(
            {
                "records": [
                    {"key": b64(b"k"), "value": b64(b"v")},
                    {"value": b64(b"w"), "partition": 1},
                ]
            }
        ),
        headers={
            "Content-Type": "application/vnd.kafka.binary.v2+json",
            "Accept": "application/vnd.kafka.v2+json",
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["key_schema_id"] is None and body["value_schema_id"] is None
    assert body["offsets"][1] == {"partition": 1, "offset": 0, "error_code": None, "error": None}
    assert log.fetch("t", 1, 0).records[0].value == b"w"
    wrong_type = requests.post(f"{api}/topics/t", json={"records": [{"value": b64(b"v")}]})
    assert wrong_type.status_code == 415 and wrong_type.json()["field"] == "content-type"


def test_idempotency_key_retry_writes_nothing_new(api: str, log: ObjectLog) -> None:
    requests.post(f"{api}/topics", json={"name": "t"})
    body = {"records": [{"value": b64(b"once")}]}
    headers = {"Idempotency-Key": "order-42"}
    first = requests.post(f"{api}/topics/t/records", json=body, headers=headers)
    second = requests.post(f"{api}/topics/t/records", json=body, headers=headers)
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()
    assert high_watermarks(log, "t") == [1]
    reused = requests.post(
        f"{api}/topics/t/records", json={"records": [{"value": b64(b"other")}]}, headers=headers
    )
    assert reused.status_code == 400 and reused.json()["field"] == "idempotency-key"
    other_key = requests.post(
        f"{api}/topics/t/records", json=body, headers={"Idempotency-Key": "order-43"}
    )
    assert other_key.json()["offsets"][0]["offset"] == 1
    assert high_watermarks(log, "t") == [2]


def test_a_retried_key_does_not_store_again_what_its_failed_run_stored(
    api: str, log: ObjectLog
) -> None:
    """One partition's batch fails after the other's committed: the answer is a 5xx, and the
    retry with the same key sends only the failed record, answering the first run's offset
    for the one that landed."""
    requests.post(f"{api}/topics", json={"name": "t", "partitions": 2})
    body = {
        "records": [{"value": b64(b"p0"), "partition": 0}, {"value": b64(b"p1"), "partition": 1}]
    }
    headers = {"Idempotency-Key": "order-44"}
    faults = FaultInjector()
    faults.crash_before(log.metadata.client, "UpdateItem", when=both(commits, on_partition(1)))
    try:
        failed = requests.post(f"{api}/topics/t/records", json=body, headers=headers)
    finally:
        faults.remove()
    assert failed.status_code >= 500, failed.text
    landed, lost = failed.json()["offsets"]
    assert landed["offset"] == 0 and lost["offset"] is None and lost["error"]
    assert high_watermarks(log, "t") == [1, 0]

    retried = requests.post(f"{api}/topics/t/records", json=body, headers=headers)
    assert retried.status_code == 200, retried.text
    assert retried.json()["offsets"][0] == landed
    assert retried.json()["offsets"][1]["offset"] == 0
    assert high_watermarks(log, "t") == [1, 1]  # each record stored once
    again = requests.post(f"{api}/topics/t/records", json=body, headers=headers)
    assert again.json() == retried.json()


BAD_PRODUCE = [
    pytest.param(b"{not json", "application/json", 400, None, id="bad-json"),
    pytest.param(
        json.dumps({"records": [{"value": "%%%"}]}),
        "application/json",
        400,
        "records[0].value",
        id="bad-base64",
    ),
    pytest.param(
        json.dumps({"records": [{"value": "eA==", "surprise": 1}]}),
        "application/json",
        422,
        "records.0.surprise",
        id="unknown-field",
    ),
    pytest.param(json.dumps({"records": []}), "application/json", 422, "records", id="no-records"),
    pytest.param(
        json.dumps({"records": [{"value": "eA==", "partition": 9}]}),
        "application/json",
        400,
        "records[0].partition",
        id="no-such-partition",
    ),
    pytest.param(
        json.dumps({"records": [{"value": "eA==", "partition": -1}]}),
        "application/json",
        422,
        "records.0.partition",
        id="negative-partition",
    ),
    pytest.param(
        json.dumps({"records": [{"value": "eA==", "timestamp": 2**64}]}),
        "application/json",
        422,
        "records.0.timestamp",
        id="timestamp-overflow",
    ),
    pytest.param(
        json.dumps({"records": [{"value": b64(b"x" * 2000)}]}),
        "application/json",
        413,
        "records[0]",
        id="record-too-large",
    ),
    pytest.param(
        json.dumps({"records": [{"value": "eA=="}]}),
        "text/plain",
        415,
        "content-type",
        id="wrong-content-type",
    ),
]


@pytest.mark.parametrize(("body", "content_type", "status", "field"), BAD_PRODUCE)
def test_bad_produce_requests_store_nothing(
    api: str, log: ObjectLog, body, content_type, status, field
) -> None:
    requests.post(
        f"{api}/topics",
        json={"name": "t", "partitions": 2, "config": {"max.message.bytes": "1000"}},
    )
    response = requests.post(
        f"{api}/topics/t/records", data=body, headers={"Content-Type": content_type}
    )
    assert response.status_code == status, response.text
    error = response.json()
    assert error["message"]
    if field is not None:
        assert error["field"] == field
    assert high_watermarks(log, "t") == [0, 0]
    assert list(log.store.list(log.config.prefix + "l0/")) == []


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/topics/t/partitions/0/records?offset=-1", 422),
        ("GET", "/topics/t/partitions/0/records?offset=99999999999999999999", 422),
        ("GET", "/topics/t/partitions/0/records", 422),
        ("GET", "/topics/t/partitions/0/records?offset=5", 416),
        ("GET", "/topics/t/partitions/7/records?offset=0", 404),
        ("GET", "/topics/t/partitions/0/records?offset=0&max_wait_ms=999999", 422),
        ("GET", "/topics/missing/partitions/0/records?offset=0", 404),
        ("GET", "/topics/..%2F..%2Fetc/partitions/0/records?offset=0", 404),
        ("GET", "/topics/bad%20name/partitions/0/records?offset=0", 400),
        ("GET", "/topics/%2E%2E", 400),
        ("POST", "/topics/missing/records", 404),
        ("PUT", "/topics/t", 405),
        ("GET", "/nowhere", 404),
        ("POST", "/topics", 400),
    ],
)
def test_error_paths(api: str, method: str, path: str, status: int) -> None:
    requests.post(f"{api}/topics", json={"name": "t"})
    body = (
        json.dumps({"records": [{"value": "eA=="}]})
        if method == "POST" and "records" in path
        else None
    )
    if path == "/topics":
        body = json.dumps({"name": "bad name"})
    response = requests.request(
        method, f"{api}{path}", data=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == status, response.text
    assert response.json()["message"]
    if status == 405:
        assert response.headers["Allow"] == "DELETE, GET, PATCH, POST"


def test_body_over_lambdas_limit_is_413(api: str) -> None:
    requests.post(f"{api}/topics", json={"name": "t"})
    response = requests.post(
        f"{api}/topics/t/records",
        data=b"x" * (6 * 1024 * 1024 + 1),
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 413


def test_a_5xx_carries_a_request_id_and_no_stack_trace(
    gateway: LocalGateway, api: str, log: ObjectLog, monkeypatch
) -> None:
    requests.post(f"{api}/topics", json={"name": "t"})

    def explode(*args, **kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(log, "describe_topic", explode)
    response = requests.get(f"{api}/topics/t")
    assert response.status_code == 500
    body = response.json()
    assert body["error"] == "InternalError" and body["request_id"]
    assert "secret" not in response.text and "Traceback" not in response.text


def test_openapi_document_lists_every_route(api: str) -> None:
    document = requests.get(f"{api}/openapi.json").json()
    documented = {
        (method.upper(), path) for path, item in document["paths"].items() for method in item
    }
    for method, path, _ in ROUTES:
        if path.endswith("/{proxy+}"):  # a greedy route: its own routes are documented
            prefix = path.removesuffix("{proxy+}")
            assert any(m == method and p.startswith(prefix) for m, p in documented), path
        elif path not in ("/docs", "/openapi.json"):
            assert (method, path) in documented
    docs = requests.get(f"{api}/docs")
    assert docs.status_code == 200 and "swagger-ui" in docs.text.lower()
    assert "cdn" not in docs.text.lower() and "unpkg" not in docs.text.lower()


def test_handler_runs_on_a_sample_api_gateway_event(log: ObjectLog) -> None:
    from objectlog.http.app import lambda_handler

    log.create_topic("orders")
    handler = lambda_handler(PRODUCE, lambda: log)
    event = json.loads((EVENTS / "produce_records.json").read_text())
    result = handler(event, LambdaContext(function_name="objectlog-produce"))
    assert result["statusCode"] == 200, result
    assert json.loads(result["body"])["offsets"][0]["offset"] == 0
    fetch = lambda_handler(FETCH, lambda: log)
    assert (
        fetch(
            {
                **event,
                "rawPath": "/topics",
                "requestContext": {
                    **event["requestContext"],
                    "http": {**event["requestContext"]["http"], "method": "GET", "path": "/topics"},
                },
            },
            LambdaContext("f"),
        )["statusCode"]
        == 200
    )


def test_produce_emits_emf_metrics(log: ObjectLog, monkeypatch, capsys) -> None:
    from objectlog.http.app import lambda_handler
    from objectlog.telemetry import metrics

    metrics.clear_metrics()  # what earlier tests recorded while metrics were disabled
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    log.create_topic("orders")
    handler = lambda_handler(PRODUCE, lambda: log)
    event = json.loads((EVENTS / "produce_records.json").read_text())
    capsys.readouterr()
    assert handler(event, LambdaContext(function_name="objectlog-produce"))["statusCode"] == 200
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert emf, "no EMF metrics printed"
    names = {
        m["Name"] for doc in emf for d in doc["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]
    }
    assert {"records", "bytes", "commit_retries", "requests", "latency"} <= names
    assert emf[-1]["records"] == [1.0] and emf[-1]["function"] == "produce"
