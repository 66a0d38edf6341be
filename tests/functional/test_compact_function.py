"""The compact Lambda function and the `objectlog compact` command, against the moto server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from objectlog import ObjectLog
from objectlog.format.index import LEVEL_L1
from objectlog.functions.compact import (
    compact_handler,
)
from objectlog.tools.cli import main
from objectlog.tools.gateway import LambdaContext

EVENTS = Path(__file__).parents[1] / "events"
TOPIC = "orders"
PARTITIONS = 2
FLUSHES = 30  # past TAIL_MAX, so the tails spill into manifests the compactor can merge


def scheduled_event() -> dict[str, Any]:
    return json.loads((EVENTS / "scheduled_event.json").read_text())


def produce_flushes(log: ObjectLog, topic: str = TOPIC, flushes: int = FLUSHES) -> None:
    """Many small commits: each flush is one L0 object with a few records per partition."""
    log.create_topic(topic, PARTITIONS)
    with log.producer(linger_ms=0) as producer:
        for i in range(flushes):
            for p in range(PARTITIONS):
                for j in range(3):
                    producer.send(
                        topic,
                        key=f"k{j}",
                        value=f"value {i}-{j} of partition {p}",
                        partition=p,
                        headers=[("n", str(i).encode())],
                    )
            producer.flush()


def read_all(log: ObjectLog, topic: str, partition: int) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    offset = 0
    while True:
        result = log.fetch(topic, partition, offset, max_bytes=16 << 20)
        rows += [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in result.records]
        if result.next_offset >= result.high_watermark or result.next_offset == offset:
            return rows
        offset = result.next_offset


def snapshot(log: ObjectLog, topic: str = TOPIC) -> dict[int, list[tuple[Any, ...]]]:
    return {p: read_all(log, topic, p) for p in range(PARTITIONS)}


def levels(log: ObjectLog, topic: str = TOPIC) -> list[int]:
    out = []
    for p in range(PARTITIONS):
        head = log.metadata.get_head(topic, p)
        assert head is not None
        out += [placed.ref.level for placed in log.index.all_placed_refs(head)]
    return out


def index_epochs(log: ObjectLog, topic: str = TOPIC) -> list[int]:
    heads = [log.metadata.get_head(topic, p) for p in range(PARTITIONS)]
    return [h.index_epoch for h in heads if h is not None]


def l1_files(log: ObjectLog) -> list[str]:
    return [info.key for info in log.store.list(log.config.prefix + "topics/")]


@pytest.fixture
def connect_env(log_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """ObjectLog.connect() (what the function calls) reaches this test's bucket and table."""
    for name, value in log_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OBJECTLOG_PREFIX", raising=False)
    monkeypatch.setenv("OBJECTLOG_COMPACT_TARGET_MIB", "0.002")  # a few L1 files
    monkeypatch.setenv("OBJECTLOG_GC_MIN_AGE_MS", "0")


def context(timeout_s: float = 900.0) -> LambdaContext:
    return LambdaContext(function_name="objectlog-compact", timeout_s=timeout_s)


# ---- the function ------------------------------------------------------------------------


def test_scheduled_event_merges_and_keeps_every_record(log: ObjectLog, connect_env: None) -> None:
    produce_flushes(log)
    before = snapshot(log)
    assert sum(map(len, before.values())) == FLUSHES * PARTITIONS * 3
    assert set(levels(log)) == {0}
    handler = compact_handler()

    summary = handler(scheduled_event(), context())

    assert json.loads(json.dumps(summary)) == summary
    assert summary["finished"] and not summary["dry_run"] and summary["topics"] is None
    assert summary["segments_merged"] > 0 and summary["bytes_rewritten"] > 0
    assert summary["partitions_skipped"] == 0
    rows = {(r["topic"], r["partition"]): r for r in summary["partitions"]}
    assert set(rows) == {(TOPIC, p) for p in range(PARTITIONS)}
    for row in rows.values():
        assert row["skipped"] is None and row["refs_in"] > 1
        assert row["files_written"] > 1  # OBJECTLOG_COMPACT_TARGET_MIB took effect
        assert row["records_in"] == row["records_out"] > 0
        assert row["log_start_before"] == row["log_start_after"] == 0
    assert summary["segments_merged"] == sum(r["refs_in"] for r in rows.values())
    gc = summary["gc"]
    assert gc["scanned"] > 0 and gc["referenced"] > 0
    assert gc["deleted"] == 0  # what was replaced is still within the delete grace period
    assert LEVEL_L1 in levels(log) and l1_files(log)
    assert snapshot(log) == before

    again = handler(scheduled_event(), context())  # the container's log is reused
    assert again["segments_merged"] == 0
    assert {r["skipped"] for r in again["partitions"]} == {"idle"}
    assert snapshot(log) == before
    handler.services.close()  # type: ignore[attr-defined]


def test_direct_invoke_dry_run_changes_nothing(log: ObjectLog, connect_env: None) -> None:
    produce_flushes(log, flushes=20)
    log.create_topic("other")
    before, epochs = snapshot(log), index_epochs(log)
    handler = compact_handler()

    summary = handler({"topics": [TOPIC, TOPIC], "dry_run": True}, context())

    assert summary["dry_run"] and summary["topics"] == [TOPIC]
    assert {r["topic"] for r in summary["partitions"]} == {TOPIC}
    assert summary["segments_merged"] > 0 and summary["bytes_rewritten"] == 0
    assert summary["gc"]["dry_run"]
    assert index_epochs(log) == epochs and snapshot(log) == before
    assert l1_files(log) == [] and set(levels(log)) == {0}
    handler.services.close()  # type: ignore[attr-defined]


def test_stops_at_the_deadline(log: ObjectLog, connect_env: None) -> None:
    log.create_topic(TOPIC, PARTITIONS)
    handler = compact_handler()
    summary = handler(scheduled_event(), context(timeout_s=0))
    assert summary["partitions"] == [] and summary["gc"] is None and not summary["finished"]
    handler.services.close()  # type: ignore[attr-defined]


def test_emits_emf_metrics(
    log: ObjectLog, connect_env: None, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from objectlog.telemetry import metrics

    produce_flushes(log, flushes=20)
    metrics.clear_metrics()  # what earlier tests recorded while metrics were disabled
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    handler = compact_handler()
    capsys.readouterr()

    summary = handler(scheduled_event(), context())

    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert len(emf) == 1, "expected one EMF document per invocation"
    doc = emf[0]
    units = {
        m["Name"]: m.get("Unit") for d in doc["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]
    }
    assert units["segments_merged"] == "Count" and units["bytes_rewritten"] == "Bytes"
    assert units["objects_deleted"] == "Count" and units["duration"] == "Milliseconds"
    assert units["partitions_skipped"] == "Count" and "write_amplification" in units
    assert summary["segments_merged"] > 0 and summary["bytes_rewritten"] > 0
    assert doc["segments_merged"] == [summary["segments_merged"]]
    assert doc["bytes_rewritten"] == [summary["bytes_rewritten"]]
    assert doc["partitions_skipped"] == [0] and doc["objects_deleted"] == [0]
    assert units["records_undecodable"] == "Count" and doc["records_undecodable"] == [0]
    assert doc["function"] == "compact" and doc["dry_run"] is False
    handler.services.close()  # type: ignore[attr-defined]


# ---- the command -------------------------------------------------------------------------


@pytest.fixture
def run(log_env: dict[str, str]):
    runner = CliRunner()

    def invoke(*args: str, **extra_env: str):
        return runner.invoke(main, list(args), env=log_env | extra_env, catch_exceptions=False)

    return invoke


def test_cli_dry_run_then_compact(run, log: ObjectLog) -> None:
    produce_flushes(log)
    log.create_topic("idle")
    before, epochs = snapshot(log), index_epochs(log)

    dry = run("compact", "--once", "--dry-run", "--gc-min-age-ms", "0")
    assert dry.exit_code == 0, dry.output
    lines = dry.stdout.splitlines()
    assert lines[0].split() == ["TOPIC", "PARTITION", "RESULT", "BYTES", "LOG-START"]
    assert sum("would merge" in line for line in lines) == PARTITIONS
    assert any(line.startswith("idle ") and "skipped: idle" in line for line in lines)
    assert any(line.startswith("GC (dry run): would delete") for line in lines)
    assert "Would merge" in dry.stderr and "Would merge" not in dry.stdout
    assert index_epochs(log) == epochs and snapshot(log) == before
    assert l1_files(log) == [] and set(levels(log)) == {0}

    real = run("compact", "--once", "--topic", TOPIC, "--target-mib", "0.002")
    assert real.exit_code == 0, real.output
    lines = real.stdout.splitlines()
    merged = [line for line in lines if "merged" in line]
    assert len(merged) == PARTITIONS and all(" -> " in line for line in merged)
    assert not any(line.startswith("idle ") for line in lines)  # only --topic orders
    assert any(line.startswith("GC: deleted 0 object(s)") for line in lines)
    assert LEVEL_L1 in levels(log) and len(l1_files(log)) > PARTITIONS
    assert all(a > b for a, b in zip(index_epochs(log), epochs, strict=True))
    assert snapshot(log) == before


def test_cli_dry_run_lists_what_gc_would_delete(run, log: ObjectLog) -> None:
    log.create_topic(TOPIC)
    orphan = log.config.prefix + "l0/00/01ARZ3NDEKTSV4RRFFQ69G5F00.l0"  # a ULID of 2016
    log.store.put_if_absent(orphan, b"never committed")
    dry = run("compact", "--once", "--dry-run", "--gc-min-age-ms", "0")
    assert dry.exit_code == 0, dry.output
    listed = [line.strip() for line in dry.stdout.splitlines() if line.startswith("  ")]
    assert "would delete" in dry.stdout and listed == [orphan]
    assert [info.key for info in log.store.list(log.config.prefix + "l0/")] == [orphan]


def test_cli_repeats_until_interrupted(run, log: ObjectLog, monkeypatch) -> None:
    log.create_topic(TOPIC)
    waits: list[float] = []

    def wait(interval_s: float) -> None:
        waits.append(interval_s)
        if len(waits) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr("objectlog.tools.cli._wait_for_next_run", wait)
    result = run("compact", "--interval", "5")
    assert result.exit_code == 0, result.output
    assert waits == [5.0, 5.0]
    assert result.stdout.count("TOPIC") == 2 and "stopped." in result.stderr  # two runs


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_compaction_loop_stops_on_ctrl_c_or_sigterm_even_started_with_sigint_ignored(
    log: ObjectLog, log_env: dict[str, str], signum: signal.Signals
) -> None:
    """As a script's background job starts: with SIGINT ignored, which Python then leaves
    ignored unless the command installs its own handler."""
    log.create_topic(TOPIC)
    inherited = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "objectlog.tools.cli", "compact", "--interval", "60"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # faulthandler: SIGABRT prints every thread's stack, for a run that does not stop
            env={**os.environ, **log_env, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"},
        )
    finally:
        signal.signal(signal.SIGINT, inherited)
    try:
        assert process.stdout is not None
        while TOPIC not in process.stdout.readline():  # the first run's report
            assert process.poll() is None, process.communicate()
        process.send_signal(signum)
        try:
            _, stderr = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)
            pytest.fail(f"still running 30 s after {signum.name}:\n{process.communicate()[1]}")
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    assert "stopped." in stderr


def test_cli_progress_goes_to_stderr(run, log: ObjectLog) -> None:
    log.create_topic(TOPIC, 3)
    log.create_topic("other", 2)
    # as on a terminal: rich draws the bar, then (transient) erases it
    result = run("compact", "--once", TTY_COMPATIBLE="1", TTY_INTERACTIVE="1")
    assert result.exit_code == 0, result.output
    assert "5/5" in result.stderr and "collecting garbage" in result.stderr
    assert "/5" not in result.stdout and "\x1b" not in result.stdout
    assert len(result.stdout.splitlines()) == 1 + 5 + 1  # header, partitions, GC


def test_cli_unknown_topic(run) -> None:
    result = run("compact", "--once", "--topic", "missing")
    assert result.exit_code == 1
    assert result.stderr.strip() == "error: topic 'missing' does not exist"


def test_cli_compacts_directly_even_with_an_api_url(run, log: ObjectLog) -> None:
    log.create_topic(TOPIC)
    result = run("compact", "--once", OBJECTLOG_API_URL="http://127.0.0.1:9")
    assert result.exit_code == 0, result.output
    assert "ignoring --api-url" in result.stderr
    assert "skipped: idle" in result.stdout
