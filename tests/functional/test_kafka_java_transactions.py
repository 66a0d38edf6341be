"""Kafka's own Java client (kafka-clients 3.9.1) as a transactional producer and as read_committed
and read_uncommitted consumers of the agent (issue 36): commit and abort across partitions and
topics, sendOffsetsToTransaction with the consumer's ConsumerGroupMetadata, fencing by a second
producer of the same transactional id, and abandoned transactions timing out.

Marked kafka_java_txn: `make test` leaves it out (pyproject's addopts), `make
test-kafka-java-txn` runs it. tests/java/TxnChecks.java prints what the client sees, one fact a
line; each check runs in one JVM while this module's one agent serves them all. The jars:
`make kafka-java` (tests/functional/test_kafka_java.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.kafka.server import AgentThread
from tests.java_programs import compile_program, run_program
from tests.kafka_agent_config import agent_config

pytestmark = pytest.mark.kafka_java_txn

TOPICS = ("j-a", "j-b", "j-in", "j-out", "j-fence", "j-timeout")


@pytest.fixture(scope="module")
def classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TxnChecks compiled once against the jars (tests.java_programs)."""
    return compile_program("TxnChecks", tmp_path_factory.mktemp("java-txn-classes"))


@pytest.fixture(scope="module")
def agent(aws_endpoint: str) -> Iterator[AgentThread]:
    suffix = uuid.uuid4().hex[:12]
    config = Config.from_env(bucket=f"objectlog-test-{suffix}", table=f"objectlog-test-{suffix}")
    with ObjectLog(config) as log:
        log.ensure_resources()
        for topic in TOPICS:
            log.create_topic(topic, 2)
        running = AgentThread(log, agent_config()).start()
        yield running
        running.stop()


def txn_checks(classes: Path, address: str, *args: str) -> list[str]:
    return run_program(classes, "TxnChecks", address, *args)


def test_committed_transactions_are_read_whole_and_aborted_ones_never(
    classes: Path, agent: AgentThread
) -> None:
    seen = txn_checks(classes, agent.address, "commit-abort", "j-a", "j-b")
    a = ",".join(sorted([*(f"committed-{i}" for i in (1, 3, 5, 7)), "after"]))
    b = ",".join(f"committed-{i}" for i in (0, 2, 4, 6))
    aborted = ",".join(f"aborted-{i}" for i in range(4))
    assert seen == [
        f"read read_committed j-a {a}",
        f"read read_uncommitted j-a {','.join(sorted([*a.split(','), *aborted.split(',')]))}",
        f"read read_committed j-b {b}",
        f"read read_uncommitted j-b {','.join(sorted([*b.split(','), *aborted.split(',')]))}",
    ]


def test_offsets_sent_to_a_transaction_move_only_when_it_commits(
    classes: Path, agent: AgentThread
) -> None:
    seen = txn_checks(classes, agent.address, "offsets", "j-in", "j-out", "java-pipeline")
    assert seen == [
        "consumed 4",
        "committed after abort none",
        "committed after commit 4",
        "read read_committed j-out IN-0,IN-1,IN-2,IN-3",
    ]


def test_a_second_producer_with_the_same_id_fences_the_first_and_aborts_its_transaction(
    classes: Path, agent: AgentThread
) -> None:
    seen = txn_checks(classes, agent.address, "fence", "j-fence")
    assert seen == [
        "first refused ProducerFencedException",
        "read read_committed j-fence fresh",
        "read read_uncommitted j-fence fresh,zombie",
    ]


def test_abandoned_transactions_time_out_and_are_aborted(classes: Path, agent: AgentThread) -> None:
    seen = txn_checks(classes, agent.address, "timeout", "j-timeout")
    assert sorted(seen[:2]) == [
        "late refused ProducerFencedException",
        "replaced refused ProducerFencedException",
    ]
    assert seen[2:] == [
        "read read_committed j-timeout next",
        "read read_uncommitted j-timeout abandoned,late,next",
    ]
