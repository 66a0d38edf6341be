"""The emulator tooling's own rules, without starting an emulator: the runner's command line,
a stop that also ends children which left the process's session, and LocalStack's pins."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest

from objectlog.tools.emulators import localstack, run
from objectlog.tools.emulators.dynamodb_local import JAR, JVM_OPTIONS, DynamoDBLocal
from objectlog.tools.emulators.processes import ManagedProcess, descendants, running


def test_the_command_is_what_follows_the_double_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, list[str], Path]] = []
    monkeypatch.setattr(run, "run", lambda e, c, w: seen.append((e, list(c), w)) or 0)
    argv = ["run", "localstack", "--work-dir", "w", "--", "pytest", "--work-dir", "x"]
    assert run.main(argv) == 0
    assert seen == [("localstack", ["pytest", "--work-dir", "x"], Path("w"))]
    with pytest.raises(SystemExit):
        run.main(["run", "localstack", "pytest"])  # no "--": an error, not a guess


def test_stop_also_ends_children_in_a_session_of_their_own(tmp_path: Path) -> None:
    """LocalStack runs DynamoDB Local in its own session: signalling LocalStack's group alone
    would orphan that JVM if LocalStack had to be killed."""
    script = "import subprocess, time; subprocess.Popen(['setsid', 'sleep', '60']); time.sleep(60)"
    process = ManagedProcess("parent", [sys.executable, "-c", script], log_path=tmp_path / "log")
    process.start()
    deadline = time.monotonic() + 10
    while not (children := descendants(process.pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert children
    process.stop()
    assert not [pid for pid in children if running(pid)]


def test_localstack_requirements_pin_every_distribution_exactly() -> None:
    lines = [
        line
        for line in localstack.REQUIREMENTS.read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[A-Za-z0-9_.+\-]+", line) for line in lines)
    assert f"localstack-core=={localstack.LOCALSTACK_VERSION}" in lines
    assert any(line.startswith("cbor2==5.") for line in lines), "cbor2 6 breaks LocalStack"


def test_missing_tool_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    with pytest.raises(localstack.EmulatorError, match="install Python"):
        localstack.install(Path("unused"))


def test_dynamodb_local_runs_on_the_jvm_options_that_halve_its_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """C1 only and the serial collector: JVM options, so before -jar (after it they would be
    DynamoDB Local's own arguments, which it refuses)."""
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    command = DynamoDBLocal(port=8000).command(Path("/opt/ddb"))
    jar = command.index("-jar")
    assert command[jar + 1] == f"/opt/ddb/{JAR}"
    assert "-XX:TieredStopAtLevel=1" in JVM_OPTIONS
    assert all(0 < command.index(option) < jar for option in JVM_OPTIONS)
    assert command[-1] == "-inMemory" and "-sharedDb" in command[jar:]
