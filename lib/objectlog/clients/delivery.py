"""What send() queues and what its future reads.

send() appends a record's fields to the current Delivery (the records queued between two
flushes, one list per field) and returns a RecordFuture holding only that delivery and the
record's position in it; the sender thread writes each record's metadata or error at its
position, then sets the delivery's one event, which wakes every future of the flush and runs
their callbacks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from objectlog.errors import ObjectLogError
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
        return delivery.metadata[self._position]

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
    metadata: list[RecordMetadata] = field(default_factory=list)
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


class PreparedDelivery:
    """A delivery staged for commit: its flush and, per batch, the records' positions."""

    __slots__ = ("positions", "staged")

    def __init__(self, staged: StagedFlush, positions: list[list[int]]) -> None:
        self.staged = staged
        self.positions = positions


def settle_records(delivery: Delivery, outcome: AppendOutcome, positions: list[int]) -> None:
    """Write each record's outcome at its position in the delivery."""
    if outcome.error is not None:
        for position in positions:
            delivery.errors[position] = outcome.error
        return
    assert outcome.base_offset is not None
    batch = outcome.batch
    topic, partition, base = batch.topic.name, batch.partition, outcome.base_offset
    timestamps = batch.table.column("timestamp").cast(pa.int64()).to_pylist()
    metadata = delivery.metadata
    for index, position in enumerate(positions):
        metadata[position] = RecordMetadata(topic, partition, base + index, timestamps[index])


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
