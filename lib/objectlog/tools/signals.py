"""How long-running commands stop: Ctrl-C (SIGINT) and SIGTERM both raise KeyboardInterrupt in
the main thread, which the command turns into a clean stop.

Python installs its KeyboardInterrupt handler for SIGINT only when the process starts with SIGINT
not ignored, and a script's background job (``cmd &``, ``nohup``) starts with it ignored: the
command would then never see Ctrl-C's signal. So the handler is installed here, whatever was
inherited.
"""

from __future__ import annotations

import signal
from types import FrameType


def interrupt_on_stop_signals() -> None:
    """From now on SIGINT and SIGTERM raise KeyboardInterrupt (call from the main thread)."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, interrupt)
