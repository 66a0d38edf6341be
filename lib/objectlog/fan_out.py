"""Independent single-item writes run at once: a transaction's partitions opened, marked and
settled (services.transaction_log, groups.transactional_offsets)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from objectlog.concurrency import Workers

T = TypeVar("T")

FAN_OUT = 16  # partitions opened, marked or settled at once (each one single-item write)


def fan_out(work: Callable[[T], None], items: Iterable[T]) -> None:
    """work on every item, concurrently (one conditional write each, independent of each
    other), raising the first failure once all are done: the caller's call is idempotent,
    so its retry repeats what landed harmlessly."""
    pending = list(items)
    if len(pending) <= 1:
        for item in pending:
            work(item)
        return
    with Workers(min(FAN_OUT, len(pending)), "objectlog-txn") as pool:
        futures = [pool.submit(work, item) for item in pending]
    for future in futures:
        future.result()
