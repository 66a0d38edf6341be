"""The AWS endpoint under test: `objectlog dev` in a process of its own.

Client and server in separate processes do not share a GIL, so the client's CPU time and the
server's show up as what they are. Two endpoints (``--dynamodb`` on every bench entry point):

- ``moto`` (default): moto's server app with requests serialized (objectlog.tools.embedded)
  serves S3 and DynamoDB on one port;
- ``local``: ``objectlog dev --dynamodb local``: moto serves S3, AWS's DynamoDB Local (Java)
  serves DynamoDB. The benchmark's clients reach DynamoDB Local directly, at the
  ``AWS_ENDPOINT_URL_DYNAMODB`` the dev banner exports, not through the endpoint's forwarding.

Both are reached over loopback HTTP exactly as the library reaches AWS. `bench_config` is the
one place a benchmark's Config gets its endpoints.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.tools.emulators.processes import answers_http, free_port

START_TIMEOUT_S = 120.0  # DynamoDB Local's JVM takes a few seconds more than moto
DYNAMODB_CHOICES = ("moto", "local")
DEV_BUCKET = DEV_TABLE = "bench-dev"  # where the server's HTTP API keeps its topics


def objectlog_command() -> list[str]:
    """The venv's `objectlog` script (what `make run` starts), else the module."""
    script = Path(sys.executable).with_name("objectlog")
    if script.exists():
        return [str(script)]
    found = shutil.which("objectlog")
    return [found] if found else [sys.executable, "-m", "objectlog.tools.cli"]


@dataclass(frozen=True)
class Endpoint:
    url: str  # S3 (and DynamoDB on moto)
    api_url: str
    pid: int  # the `objectlog dev` process (DynamoDB Local is its child)
    dynamodb_url: str  # == url on moto; DynamoDB Local's own port with --dynamodb local
    dynamodb: str = "moto"  # which DynamoDB: "moto" or "local"

    def cpu_seconds(self) -> float:
        """CPU time (user + system) used so far by the endpoint's processes: `objectlog dev`
        and its children (DynamoDB Local's JVM), read from /proc."""
        return sum(_process_cpu_seconds(pid) for pid in _process_tree(self.pid))

    @property
    def description(self) -> str:
        """What serves S3 and DynamoDB, with versions: the header line of every report."""
        moto = f"moto {version('moto')}"
        if self.dynamodb == "local":
            from objectlog.tools.emulators.dynamodb_local import VERSION

            return f"{moto} (S3) + DynamoDB Local {VERSION} (DynamoDB)"
        return f"{moto} (S3, DynamoDB)"


def bench_config(endpoint: Endpoint, bucket: str, table: str, **overrides: Any) -> Config:
    """The Config of a benchmark's log on endpoint: S3 at its URL, DynamoDB where it is served
    (moto: the same URL; DynamoDB Local: directly, skipping the endpoint's forwarding hop)."""
    return Config.from_env(
        bucket=bucket,
        table=table,
        s3_endpoint=endpoint.url,
        dynamodb_endpoint=endpoint.dynamodb_url,
        **overrides,
    )


def fresh_log(endpoint: Endpoint) -> tuple[Config, ObjectLog]:
    """A new bucket and table of their own on endpoint, created: their Config and a log."""
    suffix = uuid.uuid4().hex[:10]
    config = bench_config(endpoint, f"bench-{suffix}", f"bench-{suffix}")
    log = ObjectLog(config)
    log.ensure_resources()
    return config, log


def add_endpoint_argument(parser: argparse.ArgumentParser) -> None:
    """--dynamodb moto|local, the same on every bench entry point."""
    parser.add_argument(
        "--dynamodb",
        choices=DYNAMODB_CHOICES,
        default="moto",
        help="DynamoDB from moto (one endpoint for both services), or AWS's DynamoDB Local "
        "beside moto's S3 (`objectlog dev --dynamodb local`; reached directly)",
    )


EXPORT = re.compile(r"^\s*export (.*)$", re.MULTILINE)


def _exports(output: str) -> dict[str, str] | None:
    """The variables of the dev banner's `export` line, once it is printed (the stack is up)."""
    found = EXPORT.search(output)
    if found is None:
        return None
    return dict(part.split("=", 1) for part in found.group(1).split() if "=" in part)


@contextmanager
def embedded_endpoint(dynamodb: str = "moto") -> Iterator[Endpoint]:
    """Start `objectlog dev` on free ports and without its Kafka agent, so a benchmark runs
    beside `make run` (`--dynamodb local`: with DynamoDB Local); wait until its banner is
    printed and it answers, stop it at the end."""
    if dynamodb not in DYNAMODB_CHOICES:
        raise ValueError(f"dynamodb must be one of {DYNAMODB_CHOICES}, not {dynamodb!r}")
    port, api_port = free_port(), free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1", POWERTOOLS_METRICS_DISABLED="true")
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_DYNAMODB"):
        env.pop(name, None)
    env.setdefault("AWS_ACCESS_KEY_ID", "test")
    env.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    command = [
        *objectlog_command(),
        "--bucket",
        DEV_BUCKET,
        "--table",
        DEV_TABLE,
        "dev",
        "--port",
        str(port),
        "--api-port",
        str(api_port),
        "--kafka-port",
        "0",  # no benchmark reads the dev stack's agent (bench.kafka starts its own)
        "--in-memory",
        "--dynamodb",
        dynamodb,
    ]
    # Its output goes to a file, not a pipe: a pipe nobody reads would block it when full.
    log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed in the finally below)
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            log.seek(0)
            output = log.read()
            exports = _exports(output)
            if exports is not None and answers_http(url):
                break
            if process.poll() is not None:
                raise RuntimeError(f"objectlog dev exited: {output[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"objectlog dev did not start on {url}: {output[-2000:]}")
            time.sleep(0.1)
        dynamodb_url = exports.get("AWS_ENDPOINT_URL_DYNAMODB", url)
        if dynamodb == "local" and dynamodb_url == url:
            raise RuntimeError(f"objectlog dev exported no DynamoDB Local endpoint: {output}")
        yield Endpoint(url, f"http://127.0.0.1:{api_port}", process.pid, dynamodb_url, dynamodb)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)  # it stops DynamoDB Local first, if it started one
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()


def _process_tree(root: int) -> list[int]:
    """root and every process below it (Linux /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError):
                continue
    tree, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        tree += frontier
    return tree


def _process_cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0  # gone meanwhile
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
