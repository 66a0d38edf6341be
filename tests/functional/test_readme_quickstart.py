"""README's quick start, run as written against `objectlog dev` (issue 39, item 4).

Its shell block runs in bash from a directory laid out as a checkout is after `make run` (the
data in `.objectlog/`), its Python block then in the environment that shell exported. Only the
default port is substituted: the stack here listens on free ports, beside a `make run`.

Bash does all the shell's work (exports, `$PWD`, quoting, pipes); the checkout's
`.venv/bin/objectlog` records each call (arguments, stdin, environment) and the calls are then
run in order in this process with click's runner: a fresh interpreter per command would cost
1-3 s of imports each, five times over.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from objectlog.tools.cli import main
from objectlog.tools.embedded import free_port, start_dev_process

README = Path(__file__).resolve().parents[2] / "README.md"
BEGIN, END = "<!-- quickstart", "<!-- /quickstart -->"  # README's marks around the blocks
DEFAULT_ENDPOINT = "127.0.0.1:4566"  # `make run`'s, as README names it
# What a new user's shell does not carry: the test session's endpoint and settings.
SESSION_VARIABLES = ("AWS_ENDPOINT_URL", "OBJECTLOG_")
RECORDER = """#!/bin/sh
call="{calls}/$(ls "{calls}" | wc -l)"
mkdir "$call"
for argument in "$@"; do printf '%s\\0' "$argument"; done > "$call/args"
cat > "$call/stdin"
env -0 > "$call/env"
"""


def quickstart_blocks(readme: str) -> dict[str, str]:
    """The fenced blocks between README's quickstart marks, by language: one bash, one python."""
    section = readme.split(BEGIN, 1)[1].split(END, 1)[0]
    blocks = re.findall(r"^```(\w+)\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    assert [language for language, _ in blocks] == ["bash", "python"], blocks
    return dict(blocks)


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A directory standing for the checkout's root, its `.venv/bin/objectlog` the recorder."""
    root = tmp_path.resolve()  # as the shell's $PWD spells it
    (root / "calls").mkdir()
    command = root / ".venv" / "bin" / "objectlog"
    command.parent.mkdir(parents=True)
    command.write_text(RECORDER.format(calls=root / "calls"))
    command.chmod(0o755)
    return root


@pytest.fixture
def dev(checkout: Path) -> Iterator[str]:
    """`objectlog dev` keeping its data in the checkout's `.objectlog/`, as `make run` does;
    yields its endpoint's host:port."""
    port = free_port()
    process = start_dev_process(port, free_port(), "--data-dir", str(checkout / ".objectlog"))
    try:
        assert process.stdout is not None
        while not (line := process.stdout.readline()).startswith("  export "):
            assert line, "objectlog dev stopped before printing its banner"
        yield f"127.0.0.1:{port}"
    finally:
        process.kill()  # its data is thrown away: no checkpoint to wait for
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


def use_environment(monkeypatch: pytest.MonkeyPatch, dumped: bytes) -> None:
    """The session's endpoint and settings out of os.environ, the shell's (`env -0`) in."""
    for name in list(os.environ):
        if name.startswith(SESSION_VARIABLES):
            monkeypatch.delenv(name)
    for pair in dumped.decode().split("\0"):
        name, _, value = pair.partition("=")
        if name.startswith(SESSION_VARIABLES):
            monkeypatch.setenv(name, value)


def test_the_quick_start_runs_as_written(
    checkout: Path, dev: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = quickstart_blocks(README.read_text())
    shell = blocks["bash"].replace(DEFAULT_ENDPOINT, dev)
    assert shell != blocks["bash"], f"the quick start no longer names {DEFAULT_ENDPOINT}"
    ran = subprocess.run(
        ["bash", "-ec", f"{shell}\nenv -0 > {checkout / 'exported'}"],
        cwd=checkout,
        env={k: v for k, v in os.environ.items() if not k.startswith(SESSION_VARIABLES)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr

    printed = []
    calls = sorted((checkout / "calls").iterdir(), key=lambda call: int(call.name))
    for call in calls:
        arguments = (call / "args").read_bytes().decode().split("\0")[:-1]
        use_environment(monkeypatch, (call / "env").read_bytes())
        result = CliRunner().invoke(main, arguments, input=(call / "stdin").read_bytes())
        assert result.exit_code == 0, (arguments, result.output, result.exception)
        printed.append(result.stdout)
    assert len(calls) == 5
    assert printed[2] == "alice\t1\nbob\t2\n"  # consume
    assert "Table: objectlog.orders" in printed[4]  # describe

    use_environment(monkeypatch, (checkout / "exported").read_bytes())
    namespace: dict[str, object] = {}
    try:
        exec(compile(blocks["python"], f"{README} (quick start)", "exec"), namespace)
    finally:
        log = namespace.get("log")
        if log is not None:
            log.close()  # type: ignore[attr-defined]
    orders = namespace["orders"].scan().to_arrow()  # type: ignore[attr-defined]
    assert sorted(orders["value"].to_pylist()) == [b"1", b"2"]
