"""A long-running command stops within a step of its stop signal even when the kernel hands the
signal to a thread other than the main one (objectlog.tools.signals)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

# The main thread blocks SIGINT, so the kernel must deliver it to the worker thread; Python
# still runs the handler in the main thread, once that thread runs bytecode again.
CHILD = """
import signal, threading, time
from objectlog.tools.signals import interrupt_on_stop_signals, sleep_interruptibly

interrupt_on_stop_signals()
threading.Thread(target=time.sleep, args=(120,), daemon=True).start()
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
try:
    print("sleeping", flush=True)  # in the try: the handler may run as soon as it is read
    sleep_interruptibly(%s)
    print("woke", flush=True)
except KeyboardInterrupt:
    print("stopped", flush=True)
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_delivered_to_another_thread_ends_the_sleep_within_a_step(
    signum: signal.Signals,
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD % "60"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "sleeping"
        sent = time.monotonic()
        child.send_signal(signum)
        out, _ = child.communicate(timeout=20)
        assert out.strip() == "stopped"
        assert time.monotonic() - sent < 5
    finally:
        if child.poll() is None:
            child.kill()


def test_the_sleep_ends_on_time_without_a_signal() -> None:
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", CHILD % "0.8"], capture_output=True, text=True, timeout=30
    ).stdout
    assert out.split() == ["sleeping", "woke"]
    assert time.monotonic() - started >= 0.8
