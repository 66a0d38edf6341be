"""docs/transactions.md's exactly-once pipeline, run as written with confluent-kafka against
an agent configured as `make run`'s (topics created on first use), with only the bootstrap
address replaced: it prints what the page says, and the outputs are each order once."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from objectlog import ObjectLog
from objectlog.kafka.server import AgentThread
from tests.functional.test_kafka_transactions import read_all
from tests.kafka_agent_config import agent_config

DOCS = Path(__file__).resolve().parents[2] / "docs" / "transactions.md"
DOCUMENTED_BOOTSTRAP = "127.0.0.1:9092"


def documented_pipeline() -> tuple[str, str]:
    """The example's code and the line the page says it prints."""
    text = DOCS.read_text()
    section = text[text.index("## An exactly-once pipeline, against `make run`") :]
    code = section[section.index("```python\n") + 10 : section.index("\n```\n")]
    printed = section[section.index("It prints `") + 11 :]
    return code, printed[: printed.index("`")]


@pytest.fixture
def dev_agent(log: ObjectLog) -> Iterator[AgentThread]:
    served = ObjectLog(replace(log.config, auto_create_topics=True))
    running = AgentThread(served, agent_config()).start()
    yield running
    running.stop()
    served.close()


def test_the_documented_pipeline_runs_as_written(dev_agent: AgentThread, log: ObjectLog) -> None:
    code, printed = documented_pipeline()
    assert DOCUMENTED_BOOTSTRAP in code
    done = subprocess.run(
        [sys.executable, "-c", code.replace(DOCUMENTED_BOOTSTRAP, dev_agent.address)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == printed
    outputs = read_all(dev_agent.address, "orders-enriched", "read_committed", group="check")
    expected = sorted(f'{{"ORDER": {n}, "AMOUNT": {10 * n}}}'.encode() for n in range(10))
    assert outputs == expected
    committed = log.groups.committed("enricher", [("orders", 0)])
    assert [v.offset for v in committed.values() if v] == [10]
