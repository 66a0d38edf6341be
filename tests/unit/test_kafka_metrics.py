"""The agent's per-API metrics: counts, errors found anywhere in an answer, EMF lines."""

from __future__ import annotations

import json

from objectlog.kafka.metrics import NAMESPACE, ApiMetrics, carries_error


def test_errors_are_found_at_any_depth_of_an_answer() -> None:
    assert not carries_error({"error_code": 0, "topics": [{"partitions": [{"error_code": 0}]}]})
    assert carries_error({"error_code": 0, "topics": [{"partitions": [{"error_code": 3}]}]})
    assert carries_error({"error_code": -1})
    assert not carries_error(None)


def test_counts_become_one_emf_line_per_api_and_start_afresh() -> None:
    metrics = ApiMetrics()
    metrics.record(0, 0.010, error=False)
    metrics.record(0, 0.030, error=True)
    metrics.record(1, 0.002, error=False)
    lines = [json.loads(line) for line in metrics.emf_lines("agent")]
    by_api = {line["Api"]: line for line in lines}
    assert set(by_api) == {"produce", "fetch"}
    produce = by_api["produce"]
    assert (produce["Requests"], produce["Errors"]) == (2, 1)
    assert produce["Latency"]["Sum"] == 40.0 and produce["Latency"]["Max"] == 30.0
    assert produce["_aws"]["CloudWatchMetrics"][0]["Namespace"] == NAMESPACE
    assert metrics.emf_lines("agent") == []  # counting started afresh
