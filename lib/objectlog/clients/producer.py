"""The producer: Kafka-shaped send() into batches; one L0 object per flush.

send() only checks its arguments and queues the record (so its cost per record stays close to
a C client's); a sender thread flushes when ``batch_bytes`` are queued or ``linger_ms`` has
passed: it resolves partitions (Kafka's murmur2 for keys, sticky for null keys), builds one
slice per partition and hands them to the Appender, which writes one object and commits each
partition. Idempotence is on by default (as in Kafka 3.0+): each partition gets the next
sequence of this producer's id, so a commit that is retried never lands twice.

Flushes are pipelined three deep: while the committer thread commits one flush, the next
one's PUT is in flight on the Appender's upload thread and the sender thread encodes the one
after (Appender.stage). Sequences are assigned at commit time and commits run one flush at a
time, in order, so order per partition is kept; at most three flushes beyond
``buffer_memory`` are in flight.
"""

from __future__ import annotations

import logging
import queue
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from objectlog.clients.delivery import (
    Delivery,
    PreparedDelivery,
    RecordFuture,
    settle_records,
)
from objectlog.clients.flushing import (
    Batching,
    ProducerHost,
    Sequences,
    check_record,
    expire,
    fail_delivery,
    prepare_delivery,
    stage_table,
    table_result,
)
from objectlog.clients.values import BatchResult
from objectlog.clock import Clock, SystemClock
from objectlog.errors import (
    ObjectLogError,
    ProducerClosed,
)
from objectlog.format.partitioner import StickyPartitioner
from objectlog.format.records import (
    HeadersInput,
    RecordMetadata,
)
from objectlog.format.topics import validate_topic_name
from objectlog.services.append import AppendOutcome, StagedFlush

logger = logging.getLogger(__name__)


def new_producer_id() -> str:
    return secrets.token_hex(5)


class Producer:
    def __init__(
        self,
        log: ProducerHost,
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
        """``clock`` stamps records sent without a timestamp (and every record of a
        LogAppendTime topic): by default the log's (ObjectLog.clock), else the system's.

        ``delivery_timeout_ms`` (Kafka's ``delivery.timeout.ms``): a flush whose first record
        was sent this long ago when the sender takes it fails all its records with
        StorageUnavailable, unwritten, instead of waiting its turn behind flushes that a slow
        or unavailable store holds up. A flush already being written finishes its own bounded
        attempts (its records may have landed: they are not failed early)."""
        self.batching = Batching.of(
            linger_ms, batch_bytes, buffer_memory, max_block_ms, delivery_timeout_ms
        )
        self.log = log
        self.clock: Clock = clock or getattr(log, "clock", None) or SystemClock()
        self._now_ms = self.clock.now_ms  # bound once: send() calls it per record
        self.producer_id = new_producer_id() if enable_idempotence else None
        self.appender = log.new_appender(compression=compression)
        self.sticky = StickyPartitioner()
        self._sequences = Sequences(log, self.appender)
        self._lock = threading.Lock()
        self._commit_lock = threading.Lock()
        self._wake = threading.Event()
        self._drained = threading.Condition(self._lock)
        self._delivery = Delivery()
        self._ready: deque[Delivery] = deque()  # full deliveries, oldest first
        self._sending: Delivery | None = None  # the last one the sender took
        self._flush_now = False
        self._closed = False
        self._known_topics: set[str] = set()
        # Staged flushes wait here for the committer: one at most, so two are in flight.
        self._staged: queue.Queue[tuple[Delivery, PreparedDelivery | None] | None] = queue.Queue(1)
        self._sender = threading.Thread(target=self._run, name="objectlog-sender", daemon=True)
        self._committer = threading.Thread(
            target=self._commit_loop, name="objectlog-committer", daemon=True
        )
        self._sender.start()
        self._committer.start()

    # ---- the Kafka-shaped API ----------------------------------------------------------

    def send(
        self,
        topic: str,
        value: bytes | str | None = None,
        key: bytes | str | None = None,
        headers: HeadersInput = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> RecordFuture:
        """Queue a record; the future resolves to its RecordMetadata once committed.

        The hot path of every producer (a call per record): checks inline, one lock, six
        list appends; no object but the future."""
        if topic not in self._known_topics:
            self._known_topics.add(validate_topic_name(topic))
        value, key, pairs, timestamp_ms, size = check_record(
            value, key, headers, partition, timestamp_ms, self._now_ms
        )
        with self._lock:
            delivery = self._delivery
            if delivery.bytes + size > delivery.limit:
                delivery = self._admit(size)  # first record, full batch, or closed
            future = RecordFuture(delivery, len(delivery.topics))
            delivery.topics.append(topic)
            delivery.partitions.append(partition)
            delivery.keys.append(key)
            delivery.values.append(value)
            delivery.headers.append(pairs)
            delivery.timestamps.append(timestamp_ms)
            delivery.bytes += size
        return future

    def produce(
        self,
        topic: str,
        value: bytes | str | None = None,
        key: bytes | str | None = None,
        headers: HeadersInput = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        on_delivery: Callable[[ObjectLogError | None, RecordMetadata | None], Any] | None = None,
    ) -> None:
        """Queue a record without a future, as confluent-kafka's produce(): the outcome goes to
        ``on_delivery(error, metadata)`` (from the sender thread) if given."""
        future = self.send(topic, value, key, headers, partition, timestamp_ms)
        if on_delivery is not None:
            future.add_done_callback(
                lambda done: on_delivery(done.exception(), _metadata_or_none(done))
            )

    def _admit(self, size: int) -> Delivery:
        """The rare cases of send(), under the lock: closed, a first record, a full batch.

        A full batch is queued and replaced before waiting for buffer room, so senders on other
        threads (which run while this one waits) never queue the same batch twice.
        """
        while True:
            if self._closed:
                raise ProducerClosed("the producer is closed")
            delivery = self._delivery
            if not delivery.count:
                delivery.limit = self.batching.batch_bytes
                delivery.first_at = time.monotonic()
                self._wake.set()
                return delivery
            if delivery.bytes + size <= delivery.limit:
                return delivery  # another thread made room while we waited
            self._ready.append(delivery)
            self._delivery = Delivery()
            self._wake.set()
            self._wait_for_room(size)

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued and wait until it is acknowledged (or failed)."""
        with self._lock:
            if self._delivery.count:
                delivery = self._delivery  # the sender takes full ones first, then this
                self._flush_now = True
            elif self._ready:
                delivery = self._ready[-1]
            elif self._sending is not None:
                delivery = self._sending  # taken by the sender: maybe still being written
            else:
                return
        self._wake.set()
        if not delivery.event.wait(timeout):
            raise TimeoutError("flush did not complete within the timeout")

    def close(self, timeout: float | None = None) -> None:
        if self._closed:
            return
        self.flush(timeout)
        with self._lock:
            self._closed = True
            self._delivery.limit = -1
        self._wake.set()
        self._sender.join(timeout)
        self._committer.join(timeout)
        self.appender.close()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def stats(self) -> Any:
        return self.appender.stats

    # ---- the columnar path -------------------------------------------------------------

    def send_table(self, topic: str, table: pa.Table, partition: int | None = None) -> BatchResult:
        """Produce a pyarrow Table of records synchronously, without Python objects per row.

        Columns: ``value`` (binary, required); ``key``, ``partition`` (a null one: chosen as if
        absent), ``timestamp`` (int64 ms or timestamp), ``headers`` (list<struct<key string,
        value binary>>) optional. The rows take the columnar path the Spark sink takes
        (services.columnar); a record over max.message.bytes fails the whole table.
        """
        staged = stage_table(
            self.log, self.appender, self.sticky, self.clock, topic, table, partition
        )
        return table_result(staged, self._commit(staged.staged))

    # ---- the sender thread -------------------------------------------------------------

    def _wait_for_room(self, size: int) -> None:
        deadline = time.monotonic() + self.batching.max_block_s
        self._wake.set()
        while self._ready and self.batching.no_room(self._ready, size):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self.batching.full_for_too_long()
            self._drained.wait(remaining)

    def _run(self) -> None:
        """The sender thread: take each delivery and stage it (partition, encode, upload)."""
        while True:
            delivery = self._next_delivery()
            if delivery is None:
                self._staged.put(None)
                return
            delivery.start_settling()
            prepared = None
            # an expired one is settled in order, unwritten
            if not expire(delivery, self.batching.delivery_timeout_s):
                try:
                    prepared = self._prepare(delivery)
                except Exception as e:  # never let the sender die silently
                    fail_delivery(delivery, e)
            self._staged.put((delivery, prepared))  # waits while the committer is busy

    def _commit_loop(self) -> None:
        """The committer thread: commit staged deliveries in order and settle them."""
        while (item := self._staged.get()) is not None:
            delivery, prepared = item
            try:
                if prepared is not None:
                    outcomes = self._commit(prepared.staged)
                    for outcome, positions in zip(outcomes, prepared.positions, strict=True):
                        settle_records(delivery, outcome, positions)
            except Exception as e:  # never let the committer die silently
                fail_delivery(delivery, e)
            finally:
                self._settle_delivery(delivery)

    def _next_delivery(self) -> Delivery | None:
        while True:
            with self._lock:
                if self._ready:
                    delivery = self._sending = self._ready.popleft()
                    return delivery
                delivery = self._delivery
                if delivery.count:
                    hurry = self._flush_now or self._closed
                    timeout: float | None = self.batching.linger_left(delivery, hurry=hurry)
                    if not timeout:
                        self._delivery = Delivery()
                        self._flush_now = False
                        self._sending = delivery
                        return delivery
                elif self._closed:
                    return None
                else:
                    timeout = None
                self._wake.clear()
            self._wake.wait(timeout)

    def _settle_delivery(self, delivery: Delivery) -> None:
        with self._lock:
            self._drained.notify_all()
        with delivery.lock:
            delivery.event.set()
        with self._lock:
            if self._sending is delivery:
                self._sending = None  # settled: flush() has nothing to wait for
        for future, callback in delivery.callbacks:
            try:
                callback(future)
            except Exception:
                logger.exception("a send() callback raised")

    def _prepare(self, delivery: Delivery) -> PreparedDelivery:
        return prepare_delivery(self.log, self.appender, self.sticky, self.clock.now_ms(), delivery)

    def _commit(self, staged: StagedFlush) -> list[AppendOutcome]:
        """Assign sequences and commit; sequences are serialized across both send paths."""
        with self._commit_lock:
            return self._sequences.commit(staged, self.producer_id)


def _metadata_or_none(future: RecordFuture) -> RecordMetadata | None:
    return None if future.exception() is not None else future.result()
