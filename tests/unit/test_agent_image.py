"""The Kafka agent's Dockerfile (infra/agent), checked without a Docker engine: what it copies
exists, it installs the extras the agent needs, and its command is one `objectlog agent`
accepts."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from objectlog.tools.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "infra" / "agent" / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            keyword, _, rest = line.strip().partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def test_what_the_image_copies_exists_and_it_installs_the_agent_extra() -> None:
    steps = instructions()
    for keyword, rest in steps:
        if keyword == "COPY":
            *sources, _ = shlex.split(rest)
            assert all((ROOT / source).exists() for source in sources), rest
    install = " ".join(rest for keyword, rest in steps if keyword == "RUN")
    assert re.search(r"\.\[[^\]]*\bagent\b[^\]]*\]", install), install


def test_the_image_command_is_one_objectlog_agent_accepts() -> None:
    steps = dict(instructions())
    entrypoint, command = json.loads(steps["ENTRYPOINT"]), json.loads(steps["CMD"])
    assert entrypoint == ["objectlog", "agent"]
    result = CliRunner().invoke(main, ["agent", *command, "--help"])
    assert result.exit_code == 0, result.output
