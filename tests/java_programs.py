"""Kafka's Java client in the tests: a program of tests/java compiled against the jars
`make kafka-java` fetches (build/kafka-java, or OBJECTLOG_KAFKA_JAVA_JARS), and run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JARS = Path(os.environ.get("OBJECTLOG_KAFKA_JAVA_JARS", ROOT / "build" / "kafka-java"))


def compile_program(name: str, classes: Path) -> Path:
    """tests/java/<name>.java compiled into classes; a missing jar fails loudly."""
    if not (JARS / "kafka-clients.jar").exists():
        raise AssertionError(f"kafka-clients.jar is not in {JARS}: run `make kafka-java` first")
    source = ROOT / "tests" / "java" / f"{name}.java"
    subprocess.run(
        ["javac", "-cp", f"{JARS}/*", "-d", str(classes), str(source)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return classes


def run_program(classes: Path, name: str, *args: str) -> list[str]:
    """The program's output lines; its stderr in the failure when it exits non-zero."""
    done = subprocess.run(
        ["java", "-cp", f"{classes}:{JARS}/*", name, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()
