"""The compact function's input: payloads, settings from the environment, the deadline. No log
is reached (a bad payload must fail before the handler connects)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.compaction.compactor import CompactionSettings
from objectlog.compaction.planning import MIB
from objectlog.errors import InvalidRequest
from objectlog.functions.compact import (
    DEADLINE_MARGIN_S,
    CompactRequest,
    compact_handler,
    deadline_for,
    parse_event,
    settings_from_env,
)
from objectlog.tools.gateway import LambdaContext

EVENTS = Path(__file__).parents[1] / "events"


def scheduled_event() -> dict[str, Any]:
    return json.loads((EVENTS / "scheduled_event.json").read_text())


def context() -> LambdaContext:
    return LambdaContext(function_name="objectlog-compact", timeout_s=900.0)


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"topics": "orders"}, "topics"),
        ({"topics": ["orders", 7]}, "topics"),
        ({"topics": []}, "topics"),
        ({"dry_run": "yes"}, "dry_run"),
        ({"dry_run": 1}, "dry_run"),
        ({"topic": ["orders"]}, "topic"),
        (["orders"], "payload"),
        ({**scheduled_event(), "detail": {"topics": 3}}, "topics"),
    ],
)
def test_bad_payload_is_invalid_request(event: Any, field: str) -> None:
    def no_log() -> ObjectLog:
        raise AssertionError("a bad payload must not reach the log")

    handler = compact_handler(no_log)
    with pytest.raises(InvalidRequest) as raised:
        handler(event, context())
    assert raised.value.field == field and raised.value.message


def test_parse_event() -> None:
    assert parse_event(scheduled_event()) == CompactRequest()
    assert parse_event(None) == parse_event({}) == CompactRequest()
    assert parse_event({"topics": ["a", "b", "a"]}) == CompactRequest(["a", "b"])
    assert parse_event({"dry_run": True, "topics": None}) == CompactRequest(None, True)


def test_settings_from_env() -> None:
    assert settings_from_env({}) == (CompactionSettings(), None)
    parsed = settings_from_env(
        {
            "OBJECTLOG_COMPACT_TARGET_MIB": "8",
            "OBJECTLOG_COMPACT_ROW_GROUP_MIB": "0.5",
            "OBJECTLOG_COMPACT_MAX_MIB_PER_RUN": " 32 ",
            "OBJECTLOG_GC_MIN_AGE_MS": "1000",
            "UNRELATED": "x",
        }
    )
    assert parsed.compaction == CompactionSettings(
        target_file_bytes=8 * MIB, row_group_bytes=MIB // 2, max_bytes_per_run=32 * MIB
    )
    assert parsed.gc_min_age_ms == 1000
    assert settings_from_env({"OBJECTLOG_COMPACT_TARGET_MIB": ""}).compaction.target_file_bytes == (
        CompactionSettings().target_file_bytes
    )
    for env in (
        {"OBJECTLOG_COMPACT_TARGET_MIB": "big"},
        {"OBJECTLOG_COMPACT_ROW_GROUP_MIB": "0"},
        {"OBJECTLOG_COMPACT_MAX_MIB_PER_RUN": "-1"},
        {"OBJECTLOG_COMPACT_TARGET_MIB": "nan"},
        {"OBJECTLOG_GC_MIN_AGE_MS": "1.5"},
        {"OBJECTLOG_GC_MIN_AGE_MS": "-1"},
    ):
        with pytest.raises(ValueError, match=next(iter(env))):
            settings_from_env(env)


def test_deadline_for() -> None:
    assert deadline_for(None) is None and deadline_for(object()) is None

    class Context:
        def __init__(self, ms: int) -> None:
            self.ms = ms

        def get_remaining_time_in_millis(self) -> int:
            return self.ms

    assert deadline_for(Context(900_000), now=100.0) == 100.0 + 900 - DEADLINE_MARGIN_S
    assert deadline_for(Context(20_000), now=100.0) == 100.0 + 20 - 5
    assert deadline_for(Context(0), now=100.0) == 100.0
