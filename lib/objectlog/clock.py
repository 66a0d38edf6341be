"""Injected time and ids, so tests control leases, retention, GC horizons and object names."""

from __future__ import annotations

import random
import threading
import time
from typing import Protocol

from ulid import ULID


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        with self._lock:
            return self._now

    def advance(self, ms: int) -> None:
        with self._lock:
            self._now += ms


def new_ulid(clock: Clock) -> str:
    """A unique, time-ordered id whose time is the clock's (so GC can compare it)."""
    return str(ULID.from_timestamp(clock.now_ms()))


def ulid_time_ms(ulid: str) -> int:
    return ULID.from_str(ulid).milliseconds


def reseed() -> None:
    """Fresh entropy for the process's ``random`` state (botocore's retry jitter, anything else
    drawing from the module), from os.urandom: environments resumed from one Lambda SnapStart
    snapshot would otherwise draw the same numbers (functions.snapstart). new_ulid needs
    nothing: its random part comes from os.urandom whenever the millisecond changes."""
    random.seed()
