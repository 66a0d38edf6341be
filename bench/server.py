"""The AWS endpoint under test: `objectlog dev` in a process of its own.

Client and server in separate processes do not share a GIL, so the client's CPU time and the
server's show up as what they are. The endpoint is moto's server app with requests serialized
(objectlog.tools.embedded), reached over loopback HTTP exactly as the library reaches AWS.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT_S = 60.0
DEV_BUCKET = DEV_TABLE = "bench-dev"  # where the server's HTTP API keeps its topics


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def objectlog_command() -> list[str]:
    """The venv's `objectlog` script (what `make run` starts), else the module."""
    script = Path(sys.executable).with_name("objectlog")
    if script.exists():
        return [str(script)]
    found = shutil.which("objectlog")
    return [found] if found else [sys.executable, "-m", "objectlog.tools.cli"]


@dataclass(frozen=True)
class Endpoint:
    url: str
    api_url: str
    pid: int


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            response.read()
        return True
    except urllib.error.HTTPError:
        return True  # any HTTP answer means the server is up
    except OSError:
        return False


@contextmanager
def embedded_endpoint() -> Iterator[Endpoint]:
    """Start `objectlog dev` on free ports, wait until it answers, stop it at the end."""
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
        "--in-memory",
    ]
    # Its output goes to a file, not a pipe: a pipe nobody reads would block it when full.
    log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed in the finally below)
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(url):
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"objectlog dev exited: {log.read()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"objectlog dev did not answer on {url}")
            time.sleep(0.1)
        yield Endpoint(url, f"http://127.0.0.1:{api_port}", process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()
