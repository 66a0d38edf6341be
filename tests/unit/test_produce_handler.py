"""The produce function's handler on a log with no AWS at all (memory stores): the sample
event produces, and a retried Idempotency-Key answers the first response and writes nothing."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.http.app import lambda_handler
from objectlog.http.routes import PRODUCE
from objectlog.stores.items import ItemStores
from objectlog.stores.objects import MemoryObjectStore

EVENT = json.loads((Path(__file__).parents[1] / "events" / "produce_records.json").read_text())


@pytest.fixture
def memory_log() -> ObjectLog:
    log = ObjectLog(Config(), store=MemoryObjectStore(), items=ItemStores.memory())
    log.create_topic("orders")
    return log


def invoke(handler: Any, body: dict[str, Any], key: str | None = None) -> dict[str, Any]:
    event = copy.deepcopy(EVENT)
    event["body"] = json.dumps(body)
    if key is not None:
        event["headers"]["idempotency-key"] = key
    context = SimpleNamespace(
        function_name="produce",
        memory_limit_in_mb=512,
        invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:produce",
        aws_request_id="req-1",
        get_remaining_time_in_millis=lambda: 30_000,
    )
    answer: dict[str, Any] = handler(event, context)
    return answer


def test_the_sample_event_produces_on_memory_stores(
    memory_log: ObjectLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    handler = lambda_handler(PRODUCE, lambda: memory_log)
    answer = invoke(handler, json.loads(EVENT["body"]))
    assert answer["statusCode"] == 200, answer
    assert json.loads(answer["body"])["offsets"][0]["offset"] == 0
    record = memory_log.fetch("orders", 0, 0).records[0]
    assert (record.key, record.value, record.headers) == (b"k", b"v", [("h", b"x")])


def test_a_retried_idempotency_key_writes_nothing_new(
    memory_log: ObjectLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    handler = lambda_handler(PRODUCE, lambda: memory_log)
    body = {"records": [{"value": "b25jZQ=="}]}
    first = invoke(handler, body, key="order-42")
    again = invoke(handler, body, key="order-42")
    assert first["statusCode"] == again["statusCode"] == 200
    assert json.loads(first["body"]) == json.loads(again["body"])
    assert memory_log.offsets("orders", 0).latest == 1
    other_body = invoke(handler, {"records": [{"value": "dHdv"}]}, key="order-42")
    assert other_body["statusCode"] == 400
    assert json.loads(other_body["body"])["field"] == "idempotency-key"
    assert invoke(handler, body, key="order-43")["statusCode"] == 200
    assert memory_log.offsets("orders", 0).latest == 2
