"""A consumer's fetch-ahead: the next records of its partitions are fetched on a background
thread (for the asyncio client, a task on its loop: objectlog.concurrency) while the
application processes the last poll's, as Kafka clients prefetch.

Per partition a buffer holds fetched results in offset order, starting at the consumer's
position. The consumer names the partitions it reads and their positions before each poll
(``track``): a partition it no longer reads (revoked, lost, paused) or whose position moved
(seek) loses its buffer, and a fetch in flight for it is discarded when it lands. One fetch per
partition is in flight at a time.

Who fetches what:
- the poll's own thread (``fill``) fetches a partition the first time at a position, so a poll
  returns what is there without waiting for the background thread, and a partition at its
  high watermark (its last fetch came back empty) again once its wait is over (a tenth of the
  consumer's ``fetch_max_wait_ms``, doubling up to it while it stays caught up), only while
  the application polls: a consumer that stops polling stops issuing requests;
- the background thread fetches ahead every other partition while its buffer holds less
  than ``limit_bytes`` (decoded Arrow bytes): at most that plus one fetch per partition.

Without a background thread (``background=False``), ``fill`` fetches every partition whose
buffer is empty, a caught-up one once its wait is over: the synchronous consumer, as REST
Proxy instances use it (one poll per request).

A caught-up partition whose head has stayed still goes idle (services.activity): it is
fetched again only once its topic's activity item changed (read every half second, shared by
the process's consumers) or its fallback read is due, not every wait.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from objectlog import concurrency
from objectlog.concurrency import Background, Condition
from objectlog.groups import TopicPartition
from objectlog.services.activity import End, TopicActivity
from objectlog.services.fetch import FetchRequest, FetchResult
from objectlog.services.isolation import READ_UNCOMMITTED

FetchMany = Callable[[Sequence[FetchRequest]], list[FetchResult]]
# A caught-up partition is fetched again a tenth of the consumer's fetch_max_wait_ms after an
# empty fetch, the wait doubling up to fetch_max_wait_ms while it stays caught up (by default
# from 10 to 100 ms).
TAIL_RETRY_FIRST = 0.1  # the first wait, as a share of the longest


@dataclass
class _Buffer:
    position: int  # where the first buffered result starts: the consumer's position
    next_offset: int  # where the next fetch starts
    results: deque[FetchResult] = field(default_factory=deque)
    size: int = 0  # decoded bytes buffered
    caught_up: bool = False  # the last fetch was empty: fetch again only while polled
    retry_at: float = 0.0
    backoff: float = 0.0  # the wait after the next empty fetch (set when tracked)
    fetched: bool = False  # a fetch has landed since it was tracked at this position
    in_flight: bool = False


class FetchFailed(Exception):
    """A background fetch failed: the error, and the partitions it was for."""

    def __init__(self, error: Exception, partitions: list[TopicPartition]) -> None:
        super().__init__(str(error))
        self.error = error
        self.partitions = partitions


class FetchAhead:
    def __init__(
        self,
        fetch_many: FetchMany,
        *,
        request_bytes: int,
        limit_bytes: int,
        background: bool,
        tail_wait_s: float,
        isolation: str = READ_UNCOMMITTED,
        activity: TopicActivity | None = None,
    ) -> None:
        self._fetch_many = fetch_many
        # None (the HTTP client's logs have none): caught-up partitions are read as before
        self._activity = activity
        self._isolation = isolation
        self._request_bytes = request_bytes
        self._limit_bytes = limit_bytes
        self._background = background
        self._tail_waits = (tail_wait_s * TAIL_RETRY_FIRST, tail_wait_s)
        self._buffers: dict[TopicPartition, _Buffer] = {}
        self._failure: FetchFailed | None = None
        self._changed = Condition()
        self._thread: Background | None = None
        self._closed = False

    # ---- the consumer's side -------------------------------------------------------------

    def track(self, positions: Mapping[TopicPartition, int]) -> None:
        """The partitions read now and their positions; buffers of others, or at other
        offsets, are dropped."""
        with self._changed:
            for tp in [tp for tp in self._buffers if tp not in positions]:
                del self._buffers[tp]
            for tp, position in positions.items():
                buffer = self._buffers.get(tp)
                if buffer is None or buffer.position != position:
                    self._buffers[tp] = _Buffer(
                        position=position, next_offset=position, backoff=self._tail_waits[0]
                    )
            if self._background and positions and self._thread is None:
                self._thread = Background(self._run, "objectlog-fetch-ahead")
            self._changed.notify_all()

    def fill(self) -> None:
        """Fetch in this thread what the poll must fetch itself (above). Raises FetchFailed
        with the partitions of a failed fetch."""
        self.raise_failure()
        now = time.monotonic()
        with self._changed:
            due = {
                tp: b
                for tp, b in self._buffers.items()
                if not b.in_flight and not b.results and self._polls_fetch(b, now)
            }
        idle = self._idle({tp for tp, b in due.items() if b.caught_up})  # may read (blocks)
        with self._changed:
            due = {
                tp: b
                for tp, b in due.items()
                if tp not in idle and self._buffers.get(tp) is b and not b.in_flight
            }
            for buffer in due.values():
                buffer.in_flight = True
        if due:
            self._fetch(due)
        self.raise_failure()

    def _idle(self, caught_up: set[TopicPartition]) -> set[TopicPartition]:
        """Of the caught-up partitions, those whose heads need no read now."""
        if self._activity is None or not caught_up:
            return set()
        by_topic: dict[str, list[int]] = {}
        for tp in caught_up:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        idle: set[TopicPartition] = set()
        self._activity.refresh(list(by_topic))  # the topics' counters due a read: one request
        for topic, partitions in by_topic.items():
            due = self._activity.due(topic, partitions)
            idle.update(TopicPartition(topic, p) for p in partitions if p not in due)
        return idle

    def _polls_fetch(self, buffer: _Buffer, now: float) -> bool:
        if not buffer.fetched:
            return True
        if buffer.caught_up:  # its last fetch was empty: again once its wait is over
            return now >= buffer.retry_at
        return not self._background

    def peek(self, tp: TopicPartition) -> FetchResult | None:
        """The first buffered result of a tracked partition (at its position), if any."""
        with self._changed:
            buffer = self._buffers.get(tp)
            return buffer.results[0] if buffer is not None and buffer.results else None

    def advance(self, tp: TopicPartition, rows: int, position: int) -> None:
        """The consumer took the first rows of the first result; its position is now this."""
        with self._changed:
            buffer = self._buffers[tp]
            first = buffer.results.popleft()
            buffer.size -= first.table.nbytes
            if rows < first.table.num_rows:
                rest = _rest(first, rows)
                buffer.results.appendleft(rest)
                buffer.size += rest.table.nbytes
            buffer.position = position
            self._changed.notify_all()

    def wait(self, timeout_s: float) -> None:
        """Wait up to timeout_s, less if a background fetch lands."""
        if timeout_s <= 0:
            return
        if not self._background:
            concurrency.sleep(timeout_s)
            return
        with self._changed:
            self._changed.wait(timeout_s)

    def raise_failure(self) -> None:
        with self._changed:
            failure, self._failure = self._failure, None
            self._changed.notify_all()  # fetching resumes
        if failure is not None:
            raise failure

    def clear(self) -> None:
        self.track({})

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._buffers.clear()
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=30)

    # ---- the fetching side ---------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._closed and not (due := self._ahead_due()):
                    self._changed.wait()
                if self._closed:
                    return
                for buffer in due.values():
                    buffer.in_flight = True
            self._fetch(due)

    def _ahead_due(self) -> dict[TopicPartition, _Buffer]:
        """Partitions the background thread fetches now (called holding the lock)."""
        if self._failure is not None:
            return {}  # the consumer has not seen the last failure yet
        return {
            tp: buffer
            for tp, buffer in self._buffers.items()
            if buffer.fetched
            and not buffer.caught_up
            and not buffer.in_flight
            and buffer.size < self._limit_bytes
        }

    def _fetch(self, due: dict[TopicPartition, _Buffer]) -> None:
        """Fetch the due buffers (marked in flight by the caller) and land the results."""
        # A consumer of one partition fetching ahead also reads the next fetch's slices
        # (services.read_ahead), so that its GETs overlap. A consumer of several partitions
        # overlaps its GETs across them already; reading ahead there too cost a group
        # catch-up of 8 partitions about 10% (docs/benchmarks.md).
        ahead = self._request_bytes if self._background and len(self._buffers) == 1 else 0
        requests = [
            FetchRequest(
                tp.topic,
                tp.partition,
                b.next_offset,
                self._request_bytes,
                None,
                ahead,
                isolation=self._isolation,
            )
            for tp, b in due.items()
        ]
        started = self._activity.now() if self._activity is not None else 0.0
        try:
            results = self._fetch_many(requests)
        except Exception as e:
            with self._changed:
                for buffer in due.values():
                    buffer.in_flight = False
                self._failure = FetchFailed(e, list(due))
                self._changed.notify_all()
            return
        with self._changed:
            for (tp, buffer), request, result in zip(due.items(), requests, results, strict=True):
                buffer.in_flight = False
                if self._buffers.get(tp) is buffer and buffer.next_offset == request.offset:
                    _land(buffer, result, self._tail_waits)  # still tracked at that position
            self._changed.notify_all()
        if self._activity is not None:
            self._saw(requests, results, started)

    def _saw(
        self, requests: list[FetchRequest], results: list[FetchResult], started: float
    ) -> None:
        assert self._activity is not None
        for topic, ends in fresh_ends(requests, results).items():
            self._activity.saw(topic, ends, started)


def fresh_ends(
    requests: Sequence[FetchRequest], results: Sequence[FetchResult]
) -> dict[str, dict[int, End]]:
    """The ends of the heads a fetch read afresh, by topic, for the activity's waiters: a
    fetch at the tail always reads its head (one below the high watermark may reuse one,
    clients.direct)."""
    by_topic: dict[str, dict[int, End]] = {}
    for request, result in zip(requests, results, strict=True):
        if not result.table.num_rows and result.next_offset == request.offset:
            by_topic.setdefault(request.topic, {})[request.partition] = result.end
    return by_topic


def _land(buffer: _Buffer, result: FetchResult, tail_waits: tuple[float, float]) -> None:
    buffer.fetched = True
    moved = result.next_offset > buffer.next_offset
    if result.table.num_rows or moved:  # records, or a compaction gap skipped
        buffer.results.append(result)
        buffer.size += result.table.nbytes
        buffer.next_offset = result.next_offset
    buffer.caught_up = not result.table.num_rows and not moved
    if buffer.caught_up:
        buffer.retry_at = time.monotonic() + buffer.backoff
        buffer.backoff = min(buffer.backoff * 2, tail_waits[1])
    else:
        buffer.backoff = tail_waits[0]


def _rest(result: FetchResult, taken: int) -> FetchResult:
    return FetchResult(
        topic=result.topic,
        partition=result.partition,
        table=result.table.slice(taken),
        next_offset=result.next_offset,
        high_watermark=result.high_watermark,
        log_start_offset=result.log_start_offset,
        last_stable_offset=result.last_stable_offset,
    )


def first_rows(result: FetchResult, count: int) -> FetchResult:
    """The result's first count records."""
    if count == result.table.num_rows:
        return result
    return FetchResult(
        topic=result.topic,
        partition=result.partition,
        table=result.table.slice(0, count),
        next_offset=result.table.column("offset")[count - 1].as_py() + 1,
        high_watermark=result.high_watermark,
        log_start_offset=result.log_start_offset,
        last_stable_offset=result.last_stable_offset,
    )


def rows_within(
    table: pa.Table, most: int, budget: int | None, *, at_least_one: bool
) -> tuple[int, int]:
    """How many leading rows (at most `most`) fit the byte budget of keys and values (at
    least one if asked, as Kafka returns a record larger than max_bytes), and their bytes."""
    count = min(most, table.num_rows)
    if count == 0 or budget is None:
        return count, 0
    sizes = np.cumsum(_record_sizes(table.slice(0, count)))
    count = int(np.searchsorted(sizes, budget, side="right"))
    if count == 0 and at_least_one:
        count = 1
    return count, int(sizes[count - 1]) if count else 0


def _record_sizes(table: pa.Table) -> np.ndarray:
    """Each record's key and value bytes (what max_bytes counts)."""
    sizes = [
        pc.fill_null(pc.binary_length(table.column(name)), 0).to_numpy(zero_copy_only=False)
        for name in ("key", "value")
    ]
    return sizes[0].astype(np.int64) + sizes[1]
