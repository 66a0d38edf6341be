"""Ranged reads issued concurrently, each handed to the caller's decode as it completes.

A fetch asks for many slices at once (several partitions, several objects). Each range is read
by a worker thread through the store's own (thread-safe) client, and the caller's ``then``
(the fetch path's Parquet decode) runs on the same thread as soon as that range's bytes arrive:
reading a body and decoding Parquet both release the GIL, so slices decode in parallel while
the other GETs are still in flight.

Measured against the aioboto3 reader this replaced (docs/benchmarks.md, issue 18, sixth
increment): less client CPU per GET, nothing to open on the first multi-slice read (the
aioboto3 client took 77-131 ms), and the store's botocore hooks (request counting, fault
injection) see every read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from objectlog.concurrency import Workers
from objectlog.errors import ObjectLogError

Range = tuple[str, int, int]  # object key, start, length
Then = Callable[[int, bytes], Any]  # (the range's index, its bytes) -> what read_many returns
READ_THREADS = 32  # GETs in flight at most: the S3 client's connection pool (adapters.aws)


class ConcurrentReads:
    """``read_many`` for a fetch: concurrently where the store is remote (S3), one after
    another where reading is a dictionary lookup (the in-memory store, unit tests) or there is
    only one range."""

    def __init__(
        self,
        get_range: Callable[[str, int, int], bytes],
        threads: int = READ_THREADS,
        *,
        concurrent: bool = True,
    ) -> None:
        self.get_range = get_range
        self.threads = threads
        self.concurrent = concurrent
        self._pool: Workers | None = None

    def read_many(self, ranges: Sequence[Range], then: Then | None = None) -> list[Any]:
        """Each range's bytes, or then(index, bytes) if given, or the objectlog error reading
        it raised, in order. then runs on the reading thread; it should not raise (the fetch
        path's decode returns its errors)."""

        def read(index: int) -> Any:
            try:
                data = self.get_range(*ranges[index])
            except ObjectLogError as e:
                return e
            return data if then is None else then(index, data)

        if not self.concurrent or len(ranges) <= 1:
            return [read(index) for index in range(len(ranges))]
        if self._pool is None:
            self._pool = Workers(self.threads, thread_name_prefix="objectlog-reads")
        return list(self._pool.map(read, range(len(ranges))))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
