"""How long-running commands stop: Ctrl-C (SIGINT) and SIGTERM both raise KeyboardInterrupt in
the main thread, which the command turns into a clean stop.

Python installs its KeyboardInterrupt handler for SIGINT only when the process starts with SIGINT
not ignored, and a script's background job (``cmd &``, ``nohup``) starts with it ignored: the
command would then never see Ctrl-C's signal. So the handler is installed here, whatever was
inherited.
"""

from __future__ import annotations

import signal
import time
from types import FrameType


def interrupt_on_stop_signals() -> None:
    """From now on SIGINT and SIGTERM raise KeyboardInterrupt (call from the main thread)."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, interrupt)


STEP_S = 0.5  # the longest a stop signal waits for the main thread to notice it


def sleep_interruptibly(seconds: float | None = None) -> None:
    """Sleep for `seconds` (for ever when None) in steps of at most STEP_S, so a stop signal's
    KeyboardInterrupt comes within STEP_S. The kernel delivers a process's signal to any thread
    that does not block it, and Python runs the handler only when the main thread next runs
    bytecode: a signal that lands on another thread (an idle worker of a thread pool) leaves a
    single time.sleep(60) in the main thread running to its end."""
    deadline = None if seconds is None else time.monotonic() + seconds
    while True:
        step = STEP_S if deadline is None else min(STEP_S, deadline - time.monotonic())
        if step <= 0:
            return
        time.sleep(step)
