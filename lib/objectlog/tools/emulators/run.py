"""Run a command against an emulator: start it, hand the command its endpoints through the
standard AWS_ENDPOINT_URL variables (and dummy credentials), stop it by its PID afterwards,
also when the command fails or the run is interrupted.

    python -m objectlog.tools.emulators run dynamodb-local -- pytest tests/functional
    python -m objectlog.tools.emulators run localstack -- pytest
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from objectlog.tools.emulators.dynamodb_local import DynamoDBLocal
from objectlog.tools.emulators.localstack import LocalStack
from objectlog.tools.emulators.processes import EmulatorError
from objectlog.tools.signals import interrupt_on_stop_signals

Endpoints = dict[str, str]  # environment variables naming the emulator's endpoints
DUMMY_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "test",
    "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@contextmanager
def dynamodb_local(work: Path) -> Iterator[Endpoints]:
    """DynamoDB Local for DynamoDB, the embedded moto server (with no request lock: DynamoDB
    Local is linearizable by itself) for S3 and every other service."""
    from objectlog.tools.embedded import EmbeddedAWS

    with DynamoDBLocal(log_path=work / "dynamodb-local.log") as dynamodb:
        moto = EmbeddedAWS(port=0, serialize=False).start()
        try:
            yield {
                "AWS_ENDPOINT_URL": moto.endpoint_url,
                "AWS_ENDPOINT_URL_DYNAMODB": dynamodb.endpoint_url,
            }
        finally:
            moto.stop()


@contextmanager
def localstack(work: Path) -> Iterator[Endpoints]:
    """LocalStack for every service, named by AWS_ENDPOINT_URL alone."""
    with LocalStack(work) as emulator:
        yield {"AWS_ENDPOINT_URL": emulator.endpoint_url}


EMULATORS: dict[str, Callable[[Path], AbstractContextManager[Endpoints]]] = {
    "dynamodb-local": dynamodb_local,
    "localstack": localstack,
}


def run(emulator: str, command: Sequence[str], work: Path) -> int:
    """The command's exit code, run with the emulator's endpoints in its environment."""
    with EMULATORS[emulator](work) as endpoints:
        print(f"objectlog: {emulator} up: " + " ".join(f"{k}={v}" for k, v in endpoints.items()))
        env = {**os.environ, **DUMMY_CREDENTIALS, **endpoints}
        return subprocess.call(list(command), env=env)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m objectlog.tools.emulators")
    commands = parser.add_subparsers(dest="action", required=True)
    runner = commands.add_parser("run", help="run a command against an emulator")
    runner.add_argument("emulator", choices=sorted(EMULATORS))
    runner.add_argument("--work-dir", type=Path, help="logs and state (default: a temp dir)")
    runner.epilog = "the command to run follows --"
    argv = list(sys.argv[1:] if argv is None else argv)
    # The command is everything after "--", whatever options precede it.
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    if not command:
        parser.error("give the command to run after --")
    interrupt_on_stop_signals()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix=f"objectlog-{args.emulator}-"))
    try:
        return run(args.emulator, command, work)
    except EmulatorError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"objectlog: interrupted; {args.emulator} stopped", file=sys.stderr)
        return 130
