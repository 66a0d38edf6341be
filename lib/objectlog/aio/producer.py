"""AIOProducer: the producer for asyncio programs, in aiokafka's shape.

    async with log.producer(linger_ms=5) as producer:
        future = await producer.send("events", b"v", key=b"k")   # queued: a future
        metadata = await future                                   # committed: its offset
        metadata = await producer.send_and_wait("events", b"w")

It batches as the threaded Producer does and shares its rules (clients/flushing.py): a sender
task takes a delivery when ``batch_bytes`` are queued or ``linger_ms`` has passed and stages it
(partitions, Parquet encoding on a worker thread, the PUT awaited on the loop), a committer task
commits staged flushes one at a time, in order, with the producer's sequences; one flush is
staged while the previous one commits. ``send()`` waits (awaitably) while ``buffer_memory`` is
full, up to ``max_block_ms``.

Cancellation: each record has its own future. Cancelling a task awaiting one cancels that
future only: the flush, and the other records in it, go on. ``flush()`` awaits the flush
shielded. ``stop(timeout)`` flushes and waits up to ``timeout``; then it cancels what is left:
a record whose commit was in flight reports UnknownOutcome (it may have landed), one never
committed ProducerClosed. A record's future never stays pending after stop().
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, Self

import pyarrow as pa

from objectlog.clients.contract import LogClient
from objectlog.clients.delivery import Delivery, PreparedDelivery, settle_records
from objectlog.clients.flushing import (
    BatchAppender,
    Batching,
    Sequences,
    check_record,
    expire,
    fail_delivery,
    prepare_delivery,
    stage_table,
    table_result,
)
from objectlog.clients.producer import new_producer_id
from objectlog.clients.values import BatchResult
from objectlog.clock import Clock
from objectlog.concurrency import bridge
from objectlog.errors import ObjectLogError, ProducerClosed, UnknownOutcome
from objectlog.format.partitioner import StickyPartitioner
from objectlog.format.records import HeadersInput, RecordMetadata
from objectlog.format.topics import validate_topic_name
from objectlog.services.append import AppendOutcome, AppendStats, StagedFlush


class AIOProducerHost(Protocol):
    """What an AIOProducer needs of its log (AIOObjectLog)."""

    @property
    def clock(self) -> Clock: ...

    @property
    def sync_log(self) -> LogClient: ...


logger = logging.getLogger(__name__)
SETTLE_CHUNK = 200  # futures resolved between two yields to the loop (about 1 ms of work)


@dataclass(eq=False)
class _Batch:
    """A delivery (the records between two flushes) with its records' futures."""

    delivery: Delivery = field(default_factory=Delivery)
    futures: list[asyncio.Future[RecordMetadata]] = field(default_factory=list)
    done: asyncio.Future[None] | None = None  # settled: every future resolved
    committing: bool = False  # its commit was sent: a teardown now leaves its outcome unknown


class AIOProducer:
    def __init__(
        self,
        log: AIOProducerHost,
        *,
        linger_ms: int = 5,
        batch_bytes: int = 1 << 20,
        enable_idempotence: bool = True,
        compression: str = "none",
        buffer_memory: int = 64 << 20,
        max_block_ms: int = 60_000,
        delivery_timeout_ms: int = 120_000,
        clock: Clock | None = None,
    ) -> None:
        """The threaded Producer's options, with its meanings (clients/producer.py)."""
        self.batching = Batching.of(
            linger_ms, batch_bytes, buffer_memory, max_block_ms, delivery_timeout_ms
        )
        self.log = log
        self.clock = clock or log.clock
        self.compression = compression
        self.producer_id = new_producer_id() if enable_idempotence else None
        self.sticky = StickyPartitioner()
        self._host = log.sync_log
        self._appender: BatchAppender | None = None
        self._sequences: Sequences | None = None
        self._current = _Batch()
        self._ready: deque[_Batch] = deque()  # full batches, oldest first
        self._sending: _Batch | None = None  # the last one the sender took
        self._unsettled: set[_Batch] = set()
        self._flush_now = False
        self._started = False
        self._closed = False
        self._known_topics: set[str] = set()
        self._wake = asyncio.Event()
        self._room = asyncio.Event()
        self._commit_lock = asyncio.Lock()
        self._staged: asyncio.Queue[tuple[_Batch, PreparedDelivery | None] | None] = asyncio.Queue(
            1
        )
        self._tasks: list[asyncio.Task[None]] = []

    # ---- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        if self._started:
            return
        await asyncio.to_thread(_arrow_warmed_up)
        self._appender = await bridge(self._host.new_appender, compression=self.compression)
        self._sequences = Sequences(self._host, self._appender)
        self._started = True
        self._tasks = [
            asyncio.create_task(self._send_loop(), name="objectlog-aio-sender"),
            asyncio.create_task(self._commit_loop(), name="objectlog-aio-committer"),
        ]

    async def stop(self, timeout: float | None = None) -> None:
        """Flush and stop, waiting up to ``timeout`` seconds (None: as long as it takes);
        records still unsettled then fail (UnknownOutcome if their commit was in flight,
        ProducerClosed if it never started)."""
        if self._closed or not self._started:
            self._closed = True
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            await self.flush(timeout)
        except TimeoutError:
            logger.warning("producer stopped before its records were acknowledged")
        self._closed = True
        self._current.delivery.limit = -1
        self._wake.set()
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        _, pending = await asyncio.wait(self._tasks, timeout=remaining)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for batch in list(self._unsettled):
            self._abandon(batch)
        assert self._appender is not None
        await bridge(self._appender.close)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def stats(self) -> AppendStats:
        assert self._appender is not None, "start() the producer first"
        return self._appender.stats

    # ---- aiokafka's API ----------------------------------------------------------------

    async def send(
        self,
        topic: str,
        value: bytes | str | None = None,
        key: bytes | str | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: HeadersInput = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Queue a record (waiting while buffer_memory is full); the future resolves to its
        RecordMetadata once committed, or raises its ObjectLogError."""
        self._may_send("send")
        if topic not in self._known_topics:
            self._known_topics.add(validate_topic_name(topic))
        value, key, pairs, timestamp_ms, size = check_record(
            value, key, headers, partition, timestamp_ms, self.clock.now_ms
        )
        batch = self._current
        if batch.delivery.bytes + size > batch.delivery.limit:
            batch = await self._admit(size)  # not started, closed, first record, full batch
        future: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
        delivery = batch.delivery
        delivery.topics.append(topic)
        delivery.partitions.append(partition)
        delivery.keys.append(key)
        delivery.values.append(value)
        delivery.headers.append(pairs)
        delivery.timestamps.append(timestamp_ms)
        delivery.bytes += size
        batch.futures.append(future)
        return future

    async def send_and_wait(
        self,
        topic: str,
        value: bytes | str | None = None,
        key: bytes | str | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: HeadersInput = None,
    ) -> RecordMetadata:
        future = await self.send(topic, value, key, partition, timestamp_ms, headers)
        return await future

    async def send_table(
        self, topic: str, table: pa.Table, partition: int | None = None
    ) -> BatchResult:
        """Produce a pyarrow Table of records at once (Producer.send_table's columns and
        rules); encoding runs on a worker thread."""
        self._require_running()
        self._may_send("send_table")
        assert self._appender is not None
        try:
            staged = await bridge(
                stage_table,
                self._host,
                self._appender,
                self.sticky,
                self.clock,
                topic,
                table,
                partition,
            )
            async with self._commit_lock:
                outcomes = await bridge(self._commit, staged.staged)
            return table_result(staged, outcomes)
        except ObjectLogError as e:
            self._settled({0: e})
            raise

    async def flush(self, timeout: float | None = None) -> None:
        """Send everything queued and wait until it is acknowledged (or failed); TimeoutError
        after ``timeout`` seconds. Cancelling the wait does not cancel the flush."""
        if self._current.delivery.count:
            batch = self._current  # the sender takes full ones first, then this
            self._flush_now = True
        elif self._ready:
            batch = self._ready[-1]
        elif self._sending is not None:
            batch = self._sending  # taken by the sender: maybe still being written
        else:
            return
        self._wake.set()
        await asyncio.wait_for(asyncio.shield(self._done(batch)), timeout)

    # ---- send()'s slow path ------------------------------------------------------------

    def _require_running(self) -> None:
        if self._closed:
            raise ProducerClosed("the producer is stopped")
        if not self._started:
            raise ProducerClosed("the producer is not started: await start() first")

    async def _admit(self, size: int) -> _Batch:
        """A first record, or a full batch: queue it and wait for room in buffer_memory."""
        while True:
            self._require_running()
            batch = self._current
            delivery = batch.delivery
            if not delivery.count:
                delivery.limit = self.batching.batch_bytes
                delivery.first_at = time.monotonic()
                self._unsettled.add(batch)
                self._wake.set()
                return batch
            if delivery.bytes + size <= delivery.limit:
                return batch  # another task made room while this one waited
            self._ready.append(batch)
            self._current = _Batch()
            self._wake.set()
            await self._wait_for_room(size)

    async def _wait_for_room(self, size: int) -> None:
        deadline = time.monotonic() + self.batching.max_block_s
        while self._ready and self.batching.no_room((b.delivery for b in self._ready), size):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self.batching.full_for_too_long()
            self._room.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._room.wait(), remaining)

    # ---- the sender and committer tasks ------------------------------------------------

    async def _send_loop(self) -> None:
        """Take each batch and stage it (partition, encode, upload), in order."""
        assert self._appender is not None
        while (batch := await self._next_batch()) is not None:
            delivery = batch.delivery
            delivery.start_settling()
            prepared = None
            if not expire(delivery, self.batching.delivery_timeout_s):  # expired: unwritten
                try:
                    prepared = await bridge(
                        prepare_delivery,
                        self._host,
                        self._appender,
                        self.sticky,
                        self.clock.now_ms(),
                        delivery,
                    )
                except Exception as e:  # never let the sender die silently
                    fail_delivery(delivery, e)
            await self._staged.put((batch, prepared))  # waits while the committer is busy
        await self._staged.put(None)

    async def _next_batch(self) -> _Batch | None:
        while True:
            if self._ready:
                batch = self._sending = self._ready.popleft()
                self._room.set()
                return batch
            batch = self._current
            delivery = batch.delivery
            timeout: float | None = None
            if delivery.count:
                hurry = self._flush_now or self._closed
                timeout = self.batching.linger_left(delivery, hurry=hurry)
                if not timeout:
                    self._current = _Batch()
                    self._flush_now = False
                    self._sending = batch
                    return batch
            elif self._closed:
                return None
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    async def _commit_loop(self) -> None:
        """Commit staged batches in order and settle them."""
        while (item := await self._staged.get()) is not None:
            batch, prepared = item
            try:
                if prepared is not None:
                    async with self._commit_lock:
                        batch.committing = True
                        outcomes = await bridge(self._commit, prepared.staged)
                    for outcome, positions in zip(outcomes, prepared.positions, strict=True):
                        settle_records(batch.delivery, outcome, positions)
            except asyncio.CancelledError:
                self._abandon(batch)
                raise
            except Exception as e:  # never let the committer die silently
                fail_delivery(batch.delivery, e)
            for start in range(0, len(batch.futures), SETTLE_CHUNK):
                await asyncio.sleep(0)  # others run between chunks (a flush of 1 MiB: 1,000)
                self._resolve(batch, start, start + SETTLE_CHUNK)
            self._settle(batch)

    def _commit(self, staged: StagedFlush) -> list[AppendOutcome]:
        """Assign sequences and commit (bridged, one flush at a time: the commit lock)."""
        assert self._sequences is not None
        return self._sequences.commit(staged, self.producer_id)

    # ---- settling ----------------------------------------------------------------------

    def _done(self, batch: _Batch) -> asyncio.Future[None]:
        if batch.done is None:
            batch.done = asyncio.get_running_loop().create_future()
            if batch not in self._unsettled and batch.delivery.count:
                batch.done.set_result(None)
        return batch.done

    @staticmethod
    def _resolve(batch: _Batch, start: int, stop: int) -> None:
        """Resolve the futures from start to stop: each record's metadata, or its error."""
        delivery = batch.delivery
        for position, future in enumerate(batch.futures[start:stop], start):
            if future.done():
                continue  # resolved, or its awaiter was cancelled (the record is written)
            error = delivery.errors.get(position)
            if error is not None:
                future.set_exception(error)
                future.exception()  # a failure nobody awaits is logged below, not by asyncio
            else:
                future.set_result(delivery.metadata(position))

    def _settle(self, batch: _Batch) -> None:
        """Resolve the batch's futures still pending, and let flush() and send() go on."""
        delivery = batch.delivery
        self._resolve(batch, 0, len(batch.futures))
        if delivery.errors:
            failed = next(iter(delivery.errors.values()))
            failures = len(delivery.errors)
            logger.warning("%d of %d record(s) failed: %s", failures, delivery.count, failed)
        self._settled(delivery.errors)
        self._unsettled.discard(batch)
        if self._sending is batch:
            self._sending = None  # settled: flush() has nothing to wait for
        if batch.done is not None and not batch.done.done():
            batch.done.set_result(None)
        self._room.set()

    # ---- the transactional producer's hooks --------------------------------------------

    def _may_send(self, call: str) -> None:
        """Refuse a send the producer's state does not allow (a transaction's phase)."""

    def _settled(self, errors: Mapping[int, ObjectLogError]) -> None:
        """Records settled with these errors (a flush's, or a send_table's)."""

    def _abandon(self, batch: _Batch) -> None:
        """Settle a batch the producer's teardown left behind, never as written."""
        if batch not in self._unsettled:
            return
        if batch.committing:
            error: ObjectLogError = UnknownOutcome(
                "the producer was stopped while the record's commit was in flight: it may "
                "have landed"
            )
        else:
            error = ProducerClosed("the producer was stopped before the record was committed")
        delivery = batch.delivery
        settled = delivery.batch_of if len(delivery.batch_of) == delivery.count else None
        for position in range(delivery.count):
            if position not in delivery.errors and (settled is None or settled[position] < 0):
                delivery.errors[position] = error
        self._settle(batch)

    def __repr__(self) -> str:
        return f"AIOProducer(producer_id={self.producer_id!r}, started={self._started})"


def _arrow_warmed_up() -> None:
    """pyarrow imports pandas at its first conversion of Python values (0.5 s, measured on the
    first send's delivery_columns): start() has it done on a thread, not on the loop."""
    pa.array([b""], type=pa.binary())
