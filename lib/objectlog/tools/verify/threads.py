"""The workloads' worker threads: a worker's exception is kept for the run to raise, so no
worker dies silently."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def guarded_thread(
    errors: list[BaseException], name: str, target: Callable[..., None], *args: Any
) -> threading.Thread:
    """Start target(*args) in a daemon thread; what it raises is appended to errors."""

    def guarded() -> None:
        try:
            target(*args)
        except BaseException as e:  # reported by the run: a worker must never die silently
            errors.append(e)

    thread = threading.Thread(target=guarded, name=name, daemon=True)
    thread.start()
    return thread
