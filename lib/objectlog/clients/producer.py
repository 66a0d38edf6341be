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
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from objectlog.clients.delivery import (
    Delivery,
    PreparedDelivery,
    RecordFuture,
    delivery_columns,
    explicit_partitions,
    given_partitions,
    rows_by_topic,
    settle_records,
)
from objectlog.clients.values import BatchResult
from objectlog.clock import Clock, SystemClock
from objectlog.errors import (
    InvalidRequest,
    ObjectLogError,
    ProducerClosed,
    StorageUnavailable,
    UnknownOutcome,
)
from objectlog.format.partitioner import StickyPartitioner
from objectlog.format.records import (
    HeadersInput,
    RecordMetadata,
    normalize_headers,
    to_bytes,
)
from objectlog.format.topics import Topic, check_partition, validate_topic_name
from objectlog.services.append import AppendOutcome, AppendStats, PartitionBatch, StagedFlush
from objectlog.services.columnar import (
    assign_partitions,
    refuse_rows,
    refuse_unvalidated,
    table_batches,
    table_columns,
)


class BatchAppender(Protocol):
    """Writes flushes: the S3/DynamoDB Appender, or the HTTP API's."""

    stats: AppendStats

    def stage(self, batches: Sequence[PartitionBatch]) -> StagedFlush: ...

    def commit_staged(
        self, staged: StagedFlush, producer_id: str | None
    ) -> list[AppendOutcome]: ...

    def last_sequence(self, topic: str, partition: int, producer_id: str) -> int | None: ...

    def close(self) -> None: ...


class ProducerHost(Protocol):
    """What a Producer needs from its log: direct (ObjectLog) or over HTTP (HttpObjectLog)."""

    def topic(self, name: str, *, fresh: bool = False) -> Topic: ...

    def forget_topic(self, name: str) -> None: ...

    def new_appender(self, *, compression: str = "none") -> BatchAppender: ...

    def check_schemas(
        self, topic: Topic, keys: pa.Array, values: pa.Array, headers: pa.Array | None
    ) -> None:
        """Refuse records a validated topic would refuse (SchemaValidationFailed)."""


logger = logging.getLogger(__name__)
# Bytes a record costs beyond its key and value, for batch accounting: what a full batch's
# Parquet slice spends per record (28-35 B measured for 10 B to 1 KiB values, 963-10,000
# records; docs/benchmarks.md), rounded up. A slice's fixed footer (about 2 KiB) is not spread
# over its records: batch_bytes bounds a flush's records, not its object to the byte.
RECORD_OVERHEAD = 40


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
        if batch_bytes <= 0 or linger_ms < 0:
            raise InvalidRequest("batch_bytes must be positive and linger_ms not negative")
        if type(delivery_timeout_ms) is not int or delivery_timeout_ms < max(linger_ms, 1):
            raise InvalidRequest(
                "delivery_timeout_ms must be an integer of at least linger_ms (and 1)",
                field="delivery_timeout_ms",
            )
        self.log = log
        self.clock: Clock = clock or getattr(log, "clock", None) or SystemClock()
        self._now_ms = self.clock.now_ms  # bound once: send() calls it per record
        self.linger_s = linger_ms / 1000
        self.batch_bytes = batch_bytes
        self.buffer_memory = max(buffer_memory, batch_bytes)
        self.max_block_s = max_block_ms / 1000
        self.delivery_timeout_s = delivery_timeout_ms / 1000
        self.producer_id = new_producer_id() if enable_idempotence else None
        self.appender = log.new_appender(compression=compression)
        self.sticky = StickyPartitioner()
        self._sequences: dict[tuple[str, int], int] = {}
        self._resync: set[tuple[str, int]] = set()
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
        if type(value) is not bytes and value is not None:
            value = to_bytes(value, "value")
        if type(key) is not bytes and key is not None:
            key = to_bytes(key, "key")
        pairs = normalize_headers(headers) if headers else None
        if partition is not None and (type(partition) is not int or partition < 0):
            raise InvalidRequest("partition must be a non-negative int", field="partition")
        if timestamp_ms is None:
            timestamp_ms = self._now_ms()
        elif type(timestamp_ms) is not int or timestamp_ms < 0:
            raise InvalidRequest("timestamp_ms must be a non-negative int", field="timestamp")
        size = RECORD_OVERHEAD + (len(value) if value else 0) + (len(key) if key else 0)
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
                delivery.limit = self.batch_bytes
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
        info = self.log.topic(topic)
        columns, explicit = table_columns(table)
        if partition is not None:
            check_partition(info, partition)
            partitions = np.full(len(columns), partition, dtype=np.int64)
        else:
            partitions = assign_partitions(
                info,
                columns.keys,
                explicit,
                lambda _: self.sticky.partition(info.name, info.partitions),
            )
        self.log.check_schemas(info, columns.keys, columns.values, columns.headers)  # all or none
        groups = table_batches(info, columns, partitions, self.clock.now_ms())
        outcomes = self._commit(self.appender.stage([batch for _, batch in groups]))
        offsets = np.empty(len(columns), dtype=np.int64)
        for outcome, (rows, _) in zip(outcomes, groups, strict=True):
            if outcome.error is not None:
                raise outcome.error
            assert outcome.base_offset is not None
            offsets[rows] = outcome.base_offset + np.arange(len(rows))
        return BatchResult(topic, partitions, offsets)

    # ---- the sender thread -------------------------------------------------------------

    def _wait_for_room(self, size: int) -> None:
        deadline = time.monotonic() + self.max_block_s
        self._wake.set()
        while self._ready and sum(d.bytes for d in self._ready) + size > self.buffer_memory:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StorageUnavailable(
                    f"buffer_memory ({self.buffer_memory} bytes) stayed full for max_block_ms"
                )
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
            if not self._expired(delivery):  # an expired one is settled in order, unwritten
                try:
                    prepared = self._prepare(delivery)
                except Exception as e:  # never let the sender die silently
                    self._fail(delivery, e)
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
                self._fail(delivery, e)
            finally:
                self._settle_delivery(delivery)

    def _expired(self, delivery: Delivery) -> bool:
        """Whether the delivery waited past delivery_timeout_ms; if so its records fail."""
        waited = time.monotonic() - delivery.first_at
        if waited < self.delivery_timeout_s:
            return False
        error = StorageUnavailable(
            f"{delivery.count} record(s) expired unwritten: {waited * 1000:.0f} ms passed since "
            f"the first was sent, past delivery_timeout_ms ({self.delivery_timeout_s * 1000:.0f})"
        )
        delivery.errors.update(dict.fromkeys(range(delivery.count), error))
        return True

    @staticmethod
    def _fail(delivery: Delivery, e: Exception) -> None:
        logger.exception("producer sender failed")
        error = e if isinstance(e, ObjectLogError) else UnknownOutcome(f"sender failed: {e}")
        for position in range(delivery.count):
            delivery.errors[position] = error

    def _next_delivery(self) -> Delivery | None:
        while True:
            with self._lock:
                if self._ready:
                    delivery = self._sending = self._ready.popleft()
                    return delivery
                delivery = self._delivery
                if delivery.count:
                    waited = time.monotonic() - delivery.first_at
                    if (
                        self._flush_now
                        or self._closed
                        or delivery.bytes >= self.batch_bytes
                        or waited >= self.linger_s
                    ):
                        self._delivery = Delivery()
                        self._flush_now = False
                        self._sending = delivery
                        return delivery
                    timeout: float | None = self.linger_s - waited
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
        """Group the delivery's records into partition batches and stage them, on the columnar
        path send_table takes (services.columnar), except that a record that cannot be written
        (its topic or partition unknown, or over max.message.bytes) fails alone."""
        columns = delivery_columns(delivery)
        explicit = explicit_partitions(delivery.partitions)
        now_ms = self.clock.now_ms()
        batches: list[PartitionBatch] = []
        positions: list[np.ndarray] = []
        for topic_name, rows in rows_by_topic(delivery.topics):
            try:
                info = self.log.topic(topic_name)
            except ObjectLogError as e:
                delivery.errors.update(dict.fromkeys(rows.tolist(), e))
                continue
            rows, errors = refuse_rows(info, columns, explicit, rows)
            delivery.errors.update(errors)
            rows = refuse_unvalidated(self.log.check_schemas, info, columns, rows, delivery.errors)
            if not len(rows):
                continue
            partitions = assign_partitions(
                info,
                columns.keys.take(rows),
                None if explicit is None else given_partitions(explicit[rows]),
                self._sticky_partition(info),
            )
            for group, batch in table_batches(info, columns, partitions, now_ms, rows):
                batches.append(batch)
                positions.append(rows[group])
        self.sticky.next_batch()
        return PreparedDelivery(self.appender.stage(batches), positions)

    def _sticky_partition(self, info: Topic) -> Callable[[int], int]:
        """assign_partitions' choice for null keys: the topic's sticky partition, for all."""
        return lambda _: self.sticky.partition(info.name, info.partitions)

    def _commit(self, staged: StagedFlush) -> list[AppendOutcome]:
        """Assign sequences and commit; sequences are serialized across both send paths."""
        batches = [outcome.batch for outcome in staged.outcomes]
        with self._commit_lock:
            for batch in batches:
                batch.sequence = self._sequence_for(batch)
            try:
                outcomes = self.appender.commit_staged(staged, self.producer_id)
            except Exception:
                # Some partitions may have committed before this: their outcome is unknown.
                self._resync.update((b.topic.name, b.partition) for b in batches)
                raise
            for outcome in outcomes:
                key = (outcome.batch.topic.name, outcome.batch.partition)
                if outcome.error is None:
                    self._sequences[key] = outcome.batch.sequence + 1
                elif isinstance(outcome.error, UnknownOutcome):
                    self._resync.add(key)  # it may have landed: ask the head next time
                if (
                    isinstance(outcome.error, ObjectLogError)
                    and outcome.error.kind.name == "NOT_FOUND"
                ):
                    self.log.forget_topic(key[0])
            return outcomes

    def _sequence_for(self, batch: PartitionBatch) -> int:
        key = (batch.topic.name, batch.partition)
        if key in self._resync and self.producer_id is not None:
            last = self.appender.last_sequence(*key, self.producer_id)
            self._sequences[key] = last + 1 if last is not None else self._sequences.get(key, 0)
            self._resync.discard(key)
        return self._sequences.get(key, 0)


def _metadata_or_none(future: RecordFuture) -> RecordMetadata | None:
    return None if future.exception() is not None else future.result()
