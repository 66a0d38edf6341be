"""What a flush does between send() and the futures, for the threaded Producer and the asyncio
AIOProducer alike: a send()'s checks, a delivery's records grouped into partition batches and
staged, the producer's sequences assigned and the flush committed, a send_table's rows staged
and its offsets read. The producers differ only in how they wait (threads, or tasks on an event
loop), so every rule about a record's fate lives here once."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa

from objectlog import concurrency
from objectlog.clients.delivery import (
    Delivery,
    PreparedDelivery,
    delivery_columns,
    explicit_partitions,
    given_partitions,
    rows_by_topic,
)
from objectlog.clients.values import BatchResult
from objectlog.clock import Clock
from objectlog.errors import InvalidRequest, ObjectLogError, StorageUnavailable, UnknownOutcome
from objectlog.format.partitioner import StickyPartitioner
from objectlog.format.records import Headers, HeadersInput, normalize_headers, to_bytes
from objectlog.format.topics import Topic, check_partition
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


@dataclass(frozen=True, slots=True)
class Batching:
    """A producer's batching options (Kafka's, in seconds where Kafka says ms), and the two
    rules that use them: when the sender takes the open delivery, and when send() must wait
    for room."""

    linger_s: float
    batch_bytes: int
    buffer_memory: int  # at least batch_bytes
    max_block_s: float
    delivery_timeout_s: float

    @classmethod
    def of(
        cls,
        linger_ms: int,
        batch_bytes: int,
        buffer_memory: int,
        max_block_ms: int,
        delivery_timeout_ms: int,
    ) -> Batching:
        if batch_bytes <= 0 or linger_ms < 0:
            raise InvalidRequest("batch_bytes must be positive and linger_ms not negative")
        if type(delivery_timeout_ms) is not int or delivery_timeout_ms < max(linger_ms, 1):
            raise InvalidRequest(
                "delivery_timeout_ms must be an integer of at least linger_ms (and 1)",
                field="delivery_timeout_ms",
            )
        return cls(
            linger_ms / 1000,
            batch_bytes,
            max(buffer_memory, batch_bytes),
            max_block_ms / 1000,
            delivery_timeout_ms / 1000,
        )

    def linger_left(self, delivery: Delivery, *, hurry: bool) -> float:
        """How much longer the open delivery (with records) may wait for more: 0 when the
        sender takes it now (hurry: a flush or close asked for it)."""
        if hurry or delivery.bytes >= self.batch_bytes:
            return 0.0
        return max(0.0, self.linger_s - (time.monotonic() - delivery.first_at))

    def no_room(self, queued: Iterable[Delivery], size: int) -> bool:
        """Whether a record of size must wait: the full deliveries queued and it pass
        buffer_memory."""
        return sum(d.bytes for d in queued) + size > self.buffer_memory

    def full_for_too_long(self) -> StorageUnavailable:
        return StorageUnavailable(
            f"buffer_memory ({self.buffer_memory} bytes) stayed full for max_block_ms"
        )


def check_record(
    value: bytes | str | None,
    key: bytes | str | None,
    headers: HeadersInput,
    partition: int | None,
    timestamp_ms: int | None,
    now_ms: Callable[[], int],
) -> tuple[bytes | None, bytes | None, Headers | None, int, int]:
    """A send()'s arguments checked and normalized: (value, key, headers, timestamp_ms, the
    bytes it counts against batch_bytes and buffer_memory)."""
    if type(value) is not bytes and value is not None:
        value = to_bytes(value, "value")
    if type(key) is not bytes and key is not None:
        key = to_bytes(key, "key")
    pairs = normalize_headers(headers) if headers else None
    if partition is not None and (type(partition) is not int or partition < 0):
        raise InvalidRequest("partition must be a non-negative int", field="partition")
    if timestamp_ms is None:
        timestamp_ms = now_ms()
    elif type(timestamp_ms) is not int or timestamp_ms < 0:
        raise InvalidRequest("timestamp_ms must be a non-negative int", field="timestamp")
    size = RECORD_OVERHEAD + (len(value) if value else 0) + (len(key) if key else 0)
    return value, key, pairs, timestamp_ms, size


def expire(delivery: Delivery, delivery_timeout_s: float) -> bool:
    """Whether the delivery waited past delivery_timeout_ms; if so its records fail."""
    waited = time.monotonic() - delivery.first_at
    if waited < delivery_timeout_s:
        return False
    error = StorageUnavailable(
        f"{delivery.count} record(s) expired unwritten: {waited * 1000:.0f} ms passed since "
        f"the first was sent, past delivery_timeout_ms ({delivery_timeout_s * 1000:.0f})"
    )
    delivery.errors.update(dict.fromkeys(range(delivery.count), error))
    return True


def fail_delivery(delivery: Delivery, e: BaseException) -> None:
    """Every record of a delivery whose flush raised: its own error, or an unknown outcome."""
    logger.error("producer flush failed", exc_info=e)
    error = e if isinstance(e, ObjectLogError) else UnknownOutcome(f"sender failed: {e!r}")
    for position in range(delivery.count):
        delivery.errors[position] = error


def prepare_delivery(
    log: ProducerHost,
    appender: BatchAppender,
    sticky: StickyPartitioner,
    now_ms: int,
    delivery: Delivery,
) -> PreparedDelivery:
    """Group the delivery's records into partition batches and stage them, on the columnar
    path send_table takes (services.columnar), except that a record that cannot be written
    (its topic or partition unknown, or over max.message.bytes) fails alone."""
    columns = concurrency.offload(delivery_columns, delivery)  # the asyncio client's off loop
    explicit = explicit_partitions(delivery.partitions)
    batches: list[PartitionBatch] = []
    positions: list[np.ndarray] = []
    for topic_name, rows in rows_by_topic(delivery.topics):
        try:
            info = log.topic(topic_name)
        except ObjectLogError as e:
            delivery.errors.update(dict.fromkeys(rows.tolist(), e))
            continue
        rows, errors = refuse_rows(info, columns, explicit, rows)
        delivery.errors.update(errors)
        rows = refuse_unvalidated(log.check_schemas, info, columns, rows, delivery.errors)
        if not len(rows):
            continue
        partitions = assign_partitions(
            info,
            columns.keys.take(rows),
            None if explicit is None else given_partitions(explicit[rows]),
            _sticky_partition(sticky, info),
        )
        for group, batch in table_batches(info, columns, partitions, now_ms, rows):
            batches.append(batch)
            positions.append(rows[group])
    sticky.next_batch()
    return PreparedDelivery(appender.stage(batches), positions)


def _sticky_partition(sticky: StickyPartitioner, info: Topic) -> Callable[[int], int]:
    """assign_partitions' choice for null keys: the topic's sticky partition, for all."""
    return lambda _: sticky.partition(info.name, info.partitions)


@dataclass(slots=True)
class StagedTable:
    """A send_table's rows staged: the flush, its batches' rows, each row's partition."""

    topic: str
    staged: StagedFlush
    groups: list[tuple[np.ndarray, PartitionBatch]]
    partitions: np.ndarray
    rows: int


def stage_table(
    log: ProducerHost,
    appender: BatchAppender,
    sticky: StickyPartitioner,
    clock: Clock,
    topic: str,
    table: pa.Table,
    partition: int | None,
) -> StagedTable:
    """A send_table's rows checked (all or none), partitioned and staged."""
    info = log.topic(topic)
    columns, explicit = table_columns(table)
    if partition is not None:
        check_partition(info, partition)
        partitions = np.full(len(columns), partition, dtype=np.int64)
    else:
        partitions = assign_partitions(
            info, columns.keys, explicit, _sticky_partition(sticky, info)
        )
    log.check_schemas(info, columns.keys, columns.values, columns.headers)  # all or none
    groups = table_batches(info, columns, partitions, clock.now_ms())
    staged = appender.stage([batch for _, batch in groups])
    return StagedTable(topic, staged, groups, partitions, len(columns))


def table_result(table: StagedTable, outcomes: Sequence[AppendOutcome]) -> BatchResult:
    """A committed send_table's offsets; the first failed batch's error."""
    offsets = np.empty(table.rows, dtype=np.int64)
    for outcome, (rows, _) in zip(outcomes, table.groups, strict=True):
        if outcome.error is not None:
            raise outcome.error
        assert outcome.base_offset is not None
        offsets[rows] = outcome.base_offset + np.arange(len(rows))
    return BatchResult(table.topic, table.partitions, offsets)


class Sequences:
    """A producer's sequence per partition, assigned at commit and learned from the outcomes;
    commits of one producer go through here one at a time, in order."""

    def __init__(self, log: ProducerHost, appender: BatchAppender) -> None:
        self.log = log
        self.appender = appender
        self._next: dict[tuple[str, int], int] = {}
        self._resync: set[tuple[str, int]] = set()

    def commit(self, staged: StagedFlush, producer_id: str | None) -> list[AppendOutcome]:
        """Assign sequences and commit the staged flush."""
        batches = [outcome.batch for outcome in staged.outcomes]
        for batch in batches:
            batch.sequence = self._sequence_for(batch, producer_id)
        try:
            outcomes = self.appender.commit_staged(staged, producer_id)
        except BaseException:
            # Some partitions may have committed before this: their outcome is unknown.
            self._resync.update((b.topic.name, b.partition) for b in batches)
            raise
        for outcome in outcomes:
            key = (outcome.batch.topic.name, outcome.batch.partition)
            if outcome.error is None:
                self._next[key] = outcome.batch.sequence + 1
            elif isinstance(outcome.error, UnknownOutcome):
                self._resync.add(key)  # it may have landed: ask the head next time
            if isinstance(outcome.error, ObjectLogError) and outcome.error.kind.name == "NOT_FOUND":
                self.log.forget_topic(key[0])
        return outcomes

    def _sequence_for(self, batch: PartitionBatch, producer_id: str | None) -> int:
        key = (batch.topic.name, batch.partition)
        if key in self._resync and producer_id is not None:
            last = self.appender.last_sequence(*key, producer_id)
            self._next[key] = last + 1 if last is not None else self._next.get(key, 0)
            self._resync.discard(key)
        return self._next.get(key, 0)
