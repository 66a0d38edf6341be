"""The reliability workload (objectlog verify), its checker, and the hostile-input corpus."""

from __future__ import annotations

import logging
import os
from collections import Counter

import pytest
from click.testing import CliRunner
from rich.console import Console

from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.telemetry import SERVICE
from objectlog.tools.cli import main
from objectlog.tools.verify.aio_members import AIO_MEMBER, AIO_PRODUCER
from objectlog.tools.verify.bad_input import CORPUS, TOPIC, run_corpus
from objectlog.tools.verify.checker import FinalState, check
from objectlog.tools.verify.history import (
    ABORTED,
    COMMITTED,
    FAILED,
    OK,
    UNKNOWN,
    CommittedSample,
    History,
    Poll,
    Produce,
)
from objectlog.tools.verify.report import render
from objectlog.tools.verify.txn_checker import TXN_ANOMALIES
from objectlog.tools.verify.workload import (
    FAULT_KINDS,
    KAFKA_GROUP,
    WorkloadConfig,
    WorkloadResult,
    run_workload,
)

# The emulator subset in make test runs a briefer workload (OBJECTLOG_VERIFY_OPS, Makefile);
# every fault kind is certain to come up only in the full 2,000 operations.
SHORT_OPS = 2_000
OPS = int(os.environ.get("OBJECTLOG_VERIFY_OPS", SHORT_OPS))


@pytest.mark.emulators
def test_a_short_workload_with_every_fault_has_no_anomaly(aws_endpoint: str) -> None:
    result = run_workload(WorkloadConfig(ops=OPS, seconds=300), Config.from_env())
    Console(width=160).print()  # the table goes to the test's output (pytest -s shows it)
    render(result, Console(width=160))
    assert len(result.history.produces) >= OPS
    if OPS >= SHORT_OPS:
        assert {kind for kind in FAULT_KINDS if result.faults[kind] > 0} == set(FAULT_KINDS)
    assert sum(len(p.records) for p in result.history.polls) > 0
    assert any(" assigned " in line for line in result.kafka_trail)  # the trail listened
    assert any("objectlog member" in line for line in result.kafka_trail)
    # the transactional pipeline committed, aborted on purpose and crashed mid-transaction
    told = Counter("crashed" if t.crashed else t.outcome for t in result.history.txns)
    assert told[COMMITTED] > 0, told
    if OPS >= SHORT_OPS:  # a shorter run (the emulators') may end before the third
        assert told[ABORTED] > 0 and told["crashed"] > 0, told
    assert result.history.stable  # the output topic's last stable offsets were sampled
    # the asyncio members took part: the producer's sends were told and checked, and members
    # of the shared group read, committed, and crashed or left
    assert result.outcomes[(AIO_PRODUCER, OK)] > 0, result.outcomes
    aio_polls = [p for p in result.history.polls if p.member.startswith(f"{AIO_MEMBER}:")]
    assert sum(len(p.records) for p in aio_polls) > 0
    events = result.history.events
    assert events["aio member left"] + events["aio member crashed"] > 0, events
    assert result.verdict.ok, failure(result)


def failure(result: WorkloadResult) -> str:
    """The verdict on one line, then the members' trail of the groups among the anomalies:
    kafka-python's (where its members started reading) and objectlog's own members' (what each
    was assigned, gave up or lost)."""
    message = f"verify failed: {result.verdict.summary()}"
    own = [line for line in result.kafka_trail if "objectlog member" in line]
    if KAFKA_GROUP in message:
        kafka = [line for line in result.kafka_trail if "objectlog member" not in line]
        message += " || kafka-python: " + " | ".join(kafka[-40:])
    if " group " in message:  # objectlog's own group ("group partition 0: ...", "group 0/5")
        message += " || objectlog members: " + " | ".join(own[-40:])
    return message


def final(rows: dict[int, list[tuple[int, bytes | None]]], committed: int = 0) -> FinalState:
    return FinalState(
        partitions=rows,
        log_start={p: 0 for p in rows},
        high_watermark={p: len(r) for p, r in rows.items()},
        final_committed={p: committed for p in rows},
    )


def test_the_checker_finds_every_anomaly() -> None:
    """Each anomaly planted once in a history that is otherwise clean."""
    history = History()
    log = [(0, b"a"), (1, b"b"), (2, b"b"), (4, b"d")]  # b twice; offset 3 missing
    log += [(5, b"e"), (6, b"f"), (7, b"g"), (8, b"z")]  # nobody sent z: unknown value
    history.add_produce(Produce("p", 0, b"a", OK, 0))
    history.add_produce(Produce("p", 0, b"b", UNKNOWN))
    history.add_produce(Produce("p", 0, b"c", OK, 3))  # acknowledged, not in the log: lost
    history.add_produce(Produce("p", 0, b"d", FAILED, None, "StorageUnavailable"))  # readable
    history.add_produce(Produce("q", 0, b"f", OK, 6))
    history.add_produce(Produce("q", 0, b"e", OK, 5))  # q's later send got the lower offset
    history.add_produce(Produce("r", 0, b"g", OK, 7, sent_to=1))  # sent to 1, landed on 0
    history.add_poll(Poll("m", 0, ((0, 0, b"a"), (0, 1, b"x"))))  # offset 1 was b: inconsistent
    history.add_poll(Poll("m", 0, ((0, 0, b"a"),)))  # went back while owning: non-monotonic
    history.add_committed(CommittedSample(0, 2))
    history.add_committed(CommittedSample(0, 1))  # backwards
    state = final({0: log}, committed=3)  # offset 2 below it was never processed: skipped
    state.unreferenced_old_objects = ["l0/xx/OLD.l0"]
    verdict = check(history, state)
    assert verdict.counts == {
        "lost": 1,
        "wrong partition": 1,
        "duplicate": 1,
        "inconsistent offset": 1,
        "unexplained gap": 1,
        "aborted read": 1,
        "unknown value": 1,
        "non-monotonic send": 1,
        "non-monotonic": 1,
        "committed backwards": 1,
        "skipped": 1,
        "unreferenced object": 1,
        **dict.fromkeys(TXN_ANOMALIES, 0),  # tests/unit/test_verify_txn_checks.py plants them
    }, verdict.examples
    assert not verdict.ok
    assert verdict.summary().startswith("lost x1: p b'c' acked at 0/3 | wrong partition x1: r ")


def test_the_checker_accepts_a_clean_history() -> None:
    history = History()
    history.add_produce(Produce("p", 0, b"a", OK, 0, sent_to=0))
    history.add_produce(Produce("p", 0, b"b", UNKNOWN))  # unknown: may be readable
    history.add_produce(Produce("p", 0, b"c", UNKNOWN))  # unknown: may be missing
    history.add_poll(Poll("m", 0, ((0, 0, b"a"), (0, 1, b"b"))))
    history.add_poll(Poll("m", 1, ((0, 0, b"a"),)))  # a new ownership may re-read
    history.add_committed(CommittedSample(0, 2))
    assert check(history, final({0: [(0, b"a"), (1, b"b")]}, committed=2)).ok


def test_hostile_requests_get_4xx_and_store_nothing(api: str, log: ObjectLog) -> None:
    log.create_topic(TOPIC, partitions=2, config={"max.message.bytes": "1000"})
    outcomes = run_corpus(api)
    assert len(outcomes) == len(CORPUS) >= 40
    failures = [(o.case.name, o.status, o.message) for o in outcomes if not o.ok]
    assert failures == []
    assert Counter(o.status // 100 for o in outcomes) == {4: len(CORPUS)}
    assert list(log.store.list(log.config.prefix + "l0/")) == []
    assert [log.offsets(TOPIC, p).latest for p in range(2)] == [0, 0]
    assert log.list_topics() == [TOPIC] and log.groups.list_groups() == []


def test_the_verify_command_prints_its_table_and_exits_by_verdict() -> None:
    runner = CliRunner()
    args = ["--ops", "60", "--faults", "none", "--no-bad-input", "--registry-operations", "40"]
    # The command quiets the handlers' logger (to CRITICAL) for its process, here this worker's:
    # the tests after it on the worker (caplog on objectlog's logs) need its level back.
    level = logging.getLogger(SERVICE).level
    try:
        # as from a shell: tests/conftest.py turns EMF metrics off for the whole test process
        result = runner.invoke(main, ["verify", *args], env={"POWERTOOLS_METRICS_DISABLED": None})
    finally:
        logging.getLogger(SERVICE).setLevel(level)
    assert result.exit_code == 0, result.output
    assert not [line for line in result.output.splitlines() if line.startswith('{"_aws"')]
    assert "verdict" in result.output and "PASS" in result.output
    assert "anomalies" in result.output and "faults injected" in result.output
    assert AIO_PRODUCER in result.output and "of which asyncio members" in result.output
    bad = runner.invoke(main, ["verify", "--faults", "gremlins"])
    assert bad.exit_code == 2 and "unknown fault kinds" in bad.output


@pytest.mark.slow
def test_the_long_workload_has_no_anomaly(aws_endpoint: str) -> None:
    """make check-long: objectlog verify --ops 20000, every fault on."""
    result = run_workload(WorkloadConfig(ops=20_000, seconds=3_000), Config.from_env())
    render(result, Console(width=160))
    assert result.verdict.ok, failure(result)
