"""Child processes objectlog starts and always stops: by PID, TERM then KILL, also when the
code that started one fails or is interrupted."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Self

STOP_TIMEOUT_S = 10.0


class EmulatorError(RuntimeError):
    """An emulator could not be installed or started: the message says what to do."""


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answers_http(url: str) -> bool:
    """Whether anything answers HTTP at url (an error status counts: the server is up)."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            response.read()
        return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


class ManagedProcess:
    """One child process with its output in a log file; stop() is safe to call twice."""

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        *,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.name = name
        self.command = list(command)
        self.log_path = log_path
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None, f"{self.name} is not running"
        return self.process.pid

    def start(self) -> ManagedProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            self.command,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.env,
            cwd=self.cwd,
            start_new_session=True,  # Ctrl-C in the terminal reaches us; we stop it ourselves
            preexec_fn=_die_with_parent(),
        )
        return self

    def wait_until(self, ready: Callable[[], bool], timeout_s: float) -> None:
        """Poll ready() until it holds; EmulatorError (with the log's tail) if the process
        exits or the time runs out."""
        deadline = time.monotonic() + timeout_s
        while not ready():
            if self.process is None or self.process.poll() is not None:
                raise EmulatorError(f"{self.name} exited during start-up:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise EmulatorError(
                    f"{self.name} was not ready after {timeout_s:.0f} s:\n{self.log_tail()}"
                )
            time.sleep(0.1)

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            # Children that left its session (LocalStack starts DynamoDB Local in a session of
            # its own) are found now, while they are still its descendants.
            others = descendants(process.pid)
            _signal_group(process, signal.SIGTERM)
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait(timeout=STOP_TIMEOUT_S)
            _stop_survivors(others)
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> ManagedProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def descendants(pid: int) -> list[int]:
    """The PIDs of pid's children, grandchildren and so on (from /proc; none elsewhere)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # the fields after the command's closing parenthesis: state, ppid, ...
            fields = stat.read_text().rpartition(")")[2].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: list[int] = []
    pending = [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def running(pid: int) -> bool:
    """Running (a zombie waiting for its new parent to reap it counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _stop_survivors(pids: list[int]) -> None:
    """TERM, then KILL, the given PIDs that outlived their parent's stop."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        alive = [pid for pid in pids if running(pid)]
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while alive and time.monotonic() < deadline:
            time.sleep(0.1)
            alive = [pid for pid in alive if running(pid)]
        if not alive:
            return


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    """Signal the process and whatever it started (its own session: LocalStack forks)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signum)


class Emulator:
    """An emulator run as one ManagedProcess: subclasses start it (setting _process) and
    return self; stopping and the context manager are shared."""

    _process: ManagedProcess | None = None

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        if self._process is not None:
            self._process.stop()
            self._process = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Callable[[], None] | None:
    """On Linux, a hook that has the child killed when the process that started it dies, even
    by SIGKILL (prctl PR_SET_PDEATHSIG): kill -9 of `objectlog dev` leaves no DynamoDB Local
    behind holding its data directory. Elsewhere None (stop() still stops it by PID)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)

    def hook() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)

    return hook
