"""Slices read ahead of a fetch, so that one partition's GETs overlap.

A consumer fetching one partition ahead of its application keeps one fetch in flight: each
fetch waits for its GET and decode before the next can start, so a single partition's slices
are read one at a time. A fetch that asks for it (``FetchRequest.read_ahead_bytes``) also starts
reading the slices that follow its own, up to that many bytes, on a few background threads; they
land decoded in the reader's slice cache, and the next fetch takes them from there, or waits for
the one still in flight instead of reading it again.

What it costs: a slice read ahead and never fetched (the consumer stopped or seeked) is one
GET too many. At most MAX_IN_FLIGHT reads are under way at once, whatever the partitions.
What it cannot change: data is immutable below the head's high watermark, and
the refs read ahead come from the same head the fetch planned with; a slice whose object is
gone (a compaction swap, then GC) is simply not read ahead, and the fetch that wants it reads
the head again as it would anyway.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from concurrent.futures import Future

import pyarrow as pa

from objectlog.concurrency import Workers

Range = tuple[str, int, int]  # object key, start, length
READ_AHEAD_THREADS = 4
# Reads started and not yet done, at most: a consumer of many partitions reads ahead for a few
# of them at a time, so slices read ahead are not evicted from the slice cache unread.
MAX_IN_FLIGHT = 2 * READ_AHEAD_THREADS


class ReadAhead:
    def __init__(self) -> None:
        self._pool: Workers | None = None
        self._in_flight: dict[Range, Future[pa.Table]] = {}
        self._lock = threading.RLock()  # a done callback may run in start(), holding it

    def start(self, loads: dict[Range, Callable[[], pa.Table]]) -> None:
        """Run each range's load (read, decode, cache) in the background, unless it runs."""
        with self._lock:
            if self._pool is None:
                self._pool = Workers(READ_AHEAD_THREADS, thread_name_prefix="objectlog-read-ahead")
            for key, load in loads.items():
                if len(self._in_flight) >= MAX_IN_FLIGHT:
                    break
                if key not in self._in_flight:
                    future = self._pool.submit(load)
                    self._in_flight[key] = future
                    future.add_done_callback(functools.partial(self._forget, key))

    def take(self, key: Range) -> pa.Table | None:
        """The range's table if it is being read ahead (waiting for it), else None: a read
        not started yet is cancelled, so the caller reads it now rather than queue for it."""
        with self._lock:
            future = self._in_flight.get(key)
        if future is None or future.cancel():
            return None
        try:
            return future.result()
        except Exception:
            return None  # the caller reads it itself, and meets any error there

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _forget(self, key: Range, _: Future[pa.Table]) -> None:
        with self._lock:
            self._in_flight.pop(key, None)
