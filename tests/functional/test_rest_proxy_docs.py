"""docs/api.md's REST Proxy examples, run as written with curl against a stack configured as
`make run`'s (auto-created topics), with only the host and port replaced."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from objectlog import ObjectLog
from objectlog.tools.gateway import local_api

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"
DOCUMENTED_URL = "http://localhost:8080"


def documented_session() -> list[tuple[list[str], str | None]]:
    """Each curl command of the REST Proxy example block, with the answer its comment shows."""
    text = DOCS.read_text()
    section = text[text.index("REST Proxy's own examples work as written") :]
    block = section[section.index("```bash\n") + 8 : section.index("\n```\n")]
    steps: list[tuple[list[str], str | None]] = []
    for line in block.replace("\\\n", " ").splitlines():
        line = line.strip()
        if line.startswith("curl "):
            steps.append((shlex.split(line), None))
        elif line.startswith("# {") or line.startswith("# ["):
            steps[-1] = (steps[-1][0], line[2:])
    return steps


@pytest.fixture
def dev_api(log: ObjectLog):
    served = ObjectLog(replace(log.config, auto_create_topics=True))
    gateway = local_api(lambda: served)
    url = gateway.start(port=0)
    yield url
    gateway.stop()
    served.close()


def test_the_documented_session_runs_as_written(dev_api: str) -> None:
    steps = documented_session()
    assert len(steps) >= 10, "the example block was not found"
    for command, shown in steps:
        command = [part.replace(DOCUMENTED_URL, dev_api) for part in command]
        done = subprocess.run(
            [*command, "-sS", "--fail-with-body"], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, f"{shlex.join(command)}: {done.stdout} {done.stderr}"
        if shown is not None:
            expected = json.loads(shown.replace(DOCUMENTED_URL, dev_api))
            assert json.loads(done.stdout) == expected, shlex.join(command)


def test_without_auto_create_a_missing_topic_is_40401(api: str) -> None:
    done = subprocess.run(
        [
            "curl", "-sS", "-X", "POST",
            "-H", "Content-Type: application/vnd.kafka.binary.v2+json",
            "--data", '{"records":[{"value":"S2Fma2E="}]}',
            f"{api}/kafka/topics/binarytest",
        ],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert json.loads(done.stdout)["error_code"] == 40401
    assert re.search("binarytest", json.loads(done.stdout)["message"])
