"""Fuzz the HTTP API from its own OpenAPI document: no 5xx, and rejected requests store nothing."""

from __future__ import annotations

import json

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from objectlog import ObjectLog
from objectlog.http.app import build_app
from objectlog.http.routes import Services
from objectlog.tools.gateway import LocalGateway

EXAMPLES_PER_OPERATION = 40
REQUESTS = {"count": 0}


def _document() -> dict:
    app = build_app("fetch", Services(lambda: None))  # type: ignore[arg-type, return-value]
    return json.loads(app.get_openapi_json_schema(title="objectlog", version="1"))


schema = schemathesis.openapi.from_dict(_document())


@pytest.fixture(scope="module")
def fuzz_target(aws_endpoint: str):
    """One log and gateway for the whole module, with a topic the fuzzer can hit."""
    import uuid

    from objectlog.config import Config
    from objectlog.tools.gateway import local_api

    suffix = uuid.uuid4().hex[:12]
    log = ObjectLog(
        Config.from_env(bucket=f"objectlog-fuzz-{suffix}", table=f"objectlog-fuzz-{suffix}")
    )
    log.ensure_resources()
    log.create_topic("t", partitions=2, config={"max.message.bytes": "1000"})
    gateway: LocalGateway = local_api(lambda: log)
    url = gateway.start(port=0)
    yield url, log
    gateway.stop()
    log.close()


# The routes that write records: a rejected request to one must store no object. (Counting
# the bucket's objects is a LIST: done for these only, it keeps the fuzz run short.)
PRODUCE_ROUTES = frozenset(
    {
        "/topics/{topic}/records",
        "/kafka/topics/{topic}",
        "/kafka/topics/{topic}/partitions/{partition}",
    }
)


def _l0_objects(log: ObjectLog) -> int:
    return sum(1 for _ in log.store.list(log.config.prefix + "l0/"))


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_api_never_fails_with_5xx_and_rejections_store_nothing(case, fuzz_target) -> None:
    url, log = fuzz_target
    produces = case.method == "POST" and case.path in PRODUCE_ROUTES
    before = _l0_objects(log) if produces else 0
    response = case.call(base_url=url, timeout=30)
    REQUESTS["count"] += 1
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path}: {response.status_code} {response.text}"
    )
    content_type = response.headers.get("content-type") or [""]
    if isinstance(content_type, list):
        content_type = content_type[0]
    if content_type.startswith("application/json") and response.content:
        body = response.json()
        if response.status_code >= 400:
            assert body.get("message"), body
    if produces and response.status_code >= 400:
        assert _l0_objects(log) == before, "a rejected produce stored an object"


def test_report_generated_requests() -> None:
    """Runs after the fuzz cases (file order): prints how many requests they sent."""
    print(f"\nAPI fuzz: {REQUESTS['count']} generated requests")
    assert REQUESTS["count"] >= EXAMPLES_PER_OPERATION, (
        "the fuzzer sent fewer requests than one operation's examples"
    )
