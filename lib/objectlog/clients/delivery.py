"""What send() queues and what its future reads.

send() appends a record's fields to the current Delivery (the records queued between two
flushes, one list per field) and returns a RecordFuture holding only that delivery and the
record's position in it; the committer writes, per partition batch, where its records landed
(and each failed record's error), then sets the delivery's one event, which wakes every future
of the flush and runs their callbacks. A record's RecordMetadata is built when its future is
asked for it, not for every record: most applications never ask.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from objectlog.errors import ObjectLogError, UnknownOutcome
from objectlog.format.records import Headers, RecordMetadata
from objectlog.format.segment import HEADER_TYPE
from objectlog.services.append import AppendOutcome, StagedFlush
from objectlog.services.columnar import RecordColumns


class RecordFuture:
    """The outcome of one send(): result() blocks until the record is acknowledged.

    It holds only its delivery and position (send() creates one per record, so it stays
    small); the sender writes outcomes into the delivery.
    """

    __slots__ = ("_delivery", "_position")

    def __init__(self, delivery: Delivery, position: int) -> None:
        self._delivery = delivery
        self._position = position

    def done(self) -> bool:
        return self._delivery.event.is_set()

    def result(self, timeout: float | None = None) -> RecordMetadata:
        delivery = self._delivery
        if not delivery.event.wait(timeout):
            raise TimeoutError("record not acknowledged within the timeout")
        error = delivery.errors.get(self._position)
        if error is not None:
            raise error
        return delivery.metadata(self._position)

    get = result  # kafka-python's name

    def exception(self, timeout: float | None = None) -> ObjectLogError | None:
        self._delivery.event.wait(timeout)
        return self._delivery.errors.get(self._position)

    def add_done_callback(self, callback: Callable[[RecordFuture], Any]) -> None:
        delivery = self._delivery
        with delivery.lock:
            if not delivery.event.is_set():
                delivery.callbacks.append((self, callback))
                return
        callback(self)


@dataclass(slots=True)
class Delivery:
    """Records queued between two flushes; one event wakes all their futures.

    A record is a position in the field lists. Columns, not an object per record: send()
    appends to lists as fast as it would build a tuple, and leaves the garbage collector
    nothing to track per record (a NamedTuple per record, live until its flush, made full
    collections frequent enough to slow send() by half while the sender worked).
    """

    topics: list[str] = field(default_factory=list)
    partitions: list[int | None] = field(default_factory=list)  # None: the sender picks
    keys: list[bytes | None] = field(default_factory=list)
    values: list[bytes | None] = field(default_factory=list)
    headers: list[Headers | None] = field(default_factory=list)
    timestamps: list[int] = field(default_factory=list)  # ms
    bytes: int = 0
    # send() takes its slow path when bytes would pass this: -1 until the first record.
    limit: int = -1
    landed: list[Landed] = field(default_factory=list)  # each committed batch, in order
    # Per record: its batch's index in landed (-1 until settled) and its index in the batch.
    batch_of: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    index_in: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    errors: dict[int, ObjectLogError] = field(default_factory=dict)
    callbacks: list[tuple[RecordFuture, Callable[[RecordFuture], Any]]] = field(
        default_factory=list
    )
    first_at: float = 0.0
    event: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def count(self) -> int:
        return len(self.topics)

    def start_settling(self) -> None:
        """Room for every record's place, once the delivery stops growing (the sender took it)."""
        self.batch_of = np.full(self.count, -1, dtype=np.int64)
        self.index_in = np.zeros(self.count, dtype=np.int64)

    def metadata(self, position: int) -> RecordMetadata:
        """Where the record at position landed (it has no error)."""
        batch = int(self.batch_of[position])
        if batch < 0:
            raise UnknownOutcome("the record was neither committed nor failed")
        landed, index = self.landed[batch], int(self.index_in[position])
        return RecordMetadata(
            landed.topic,
            landed.partition,
            landed.base_offset + index,
            int(landed.timestamps[index]),
        )


@dataclass(frozen=True, slots=True)
class Landed:
    """A committed partition batch: its records' offsets follow base_offset in batch order."""

    topic: str
    partition: int
    base_offset: int
    timestamps: np.ndarray  # ms, in batch order


class PreparedDelivery:
    """A delivery staged for commit: its flush and, per batch, the records' positions."""

    __slots__ = ("positions", "staged")

    def __init__(self, staged: StagedFlush, positions: list[np.ndarray]) -> None:
        self.staged = staged
        self.positions = positions


def settle_records(delivery: Delivery, outcome: AppendOutcome, positions: np.ndarray) -> None:
    """Record where the batch's records landed (or their error), by position in the delivery."""
    if outcome.error is not None:
        delivery.errors.update(dict.fromkeys(positions.tolist(), outcome.error))
        return
    assert outcome.base_offset is not None
    batch = outcome.batch
    timestamps = batch.table.column("timestamp").cast(pa.int64()).to_numpy()
    delivery.batch_of[positions] = len(delivery.landed)
    delivery.index_in[positions] = np.arange(len(positions))
    delivery.landed.append(
        Landed(batch.topic.name, batch.partition, outcome.base_offset, timestamps)
    )


def delivery_columns(delivery: Delivery) -> RecordColumns:
    """The delivery's records as Arrow columns (send() stamped every record's timestamp)."""
    headers = None
    if any(delivery.headers):
        headers = pa.array(
            [
                [{"key": name, "value": data} for name, data in pairs] if pairs else []
                for pairs in delivery.headers
            ],
            type=HEADER_TYPE,
        )
    return RecordColumns(
        keys=pa.array(delivery.keys, type=pa.binary()),
        values=pa.array(delivery.values, type=pa.binary()),
        headers=headers,
        timestamps=pa.array(delivery.timestamps, type=pa.int64()),
    )


def explicit_partitions(partitions: list[int | None]) -> np.ndarray | None:
    """Each record's partition as send() was given it, -1 where none was; None if none was."""
    if partitions.count(None) == len(partitions):
        return None
    return np.array([-1 if p is None else p for p in partitions], dtype=np.int64)


def given_partitions(explicit: np.ndarray) -> pa.Array:
    """assign_partitions' explicit column: null where no partition was given."""
    return pa.array(explicit, mask=explicit < 0)


def rows_by_topic(topics: list[str]) -> list[tuple[str, np.ndarray]]:
    """Each topic of a delivery with the positions of its records, in order."""
    first = topics[0]
    if topics.count(first) == len(topics):  # one topic: the common case, without a loop
        return [(first, np.arange(len(topics)))]
    codes: dict[str, int] = {}
    coded = np.array([codes.setdefault(topic, len(codes)) for topic in topics])
    return [(topic, np.flatnonzero(coded == code)) for topic, code in codes.items()]
