"""Kafka record batches (magic 2) to objectlog's slice tables and back, on aiokafka's C codec
(FACTS.md: it checks CRCs, exposes the producer fields and handles every compression).

A produce request's records for one partition are one or more batches; each becomes a
``ProducedBatch``: the records as a slice table (offset column = positions) and the idempotence
fields Kafka sends (producer id, epoch, base sequence). A fetch answer's records become
uncompressed batches in offset order (encode_records): one per run of plain records, or of one
producer's transactional records (the transactional bit and the producer id set, as Kafka
clients need to match an aborted transaction to its batches), and a control batch for each
transaction marker. A batch's base offset is its first record's and its offset deltas keep any
gaps (compacted topics, markers, read_committed's aborted records) as Kafka's do.

A control batch (Kafka's transaction marker, KIP-98) is a record batch v2 at the marker's
offset with the transactional and control attribute bits set, the producer id of the
transaction and one record:

    key   = version: int16 (0), type: int16 (0 abort, 1 commit)
    value = version: int16 (0), coordinator epoch: int32

Clients skip it, move their position past it, and under read_committed stop skipping the
producer's batches at an abort (librdkafka's rdkafka_msgset_reader.c, kafka-python's and
aiokafka's fetchers read the key only). Refs keep neither the transaction's producer epoch nor
a coordinator epoch, so both go as 0; consumers read neither.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from aiokafka.record._crecords import DefaultRecordBatchBuilder, MemoryRecords
from aiokafka.record.util import calc_crc32c

from objectlog.format.index import PlacedRef
from objectlog.format.segment import slice_table
from objectlog.format.txn import marker_of, producer_of
from objectlog.stores.metadata import kafka_producer

MAGIC = 2
NO_PRODUCER = -1
LOG_APPEND_TIME = 1
BASE_OFFSET_BYTES = 8  # the batch's first field; the CRC covers "attributes" to the end
CRC_AT, ATTRIBUTES_AT = 17, 21  # after base offset, length, leader epoch (int32), magic (int8)
CONTROL_BIT = 0x20  # of the attributes; the builder sets the transactional bit (0x10)
NO_SEQUENCE = -1
UNKNOWN_EPOCH = 0  # a transaction's producer epoch, which refs do not keep
COORDINATOR_EPOCH = 0
ABORT_TYPE, COMMIT_TYPE = 0, 1
CONTROL_KEY, CONTROL_VALUE = struct.Struct(">hh"), struct.Struct(">hi")  # version 0 of both
MAX_BATCH_BYTES = (1 << 31) - 1
# The most a record adds on the wire beyond its key, value and header bytes: varints for its
# length (5), timestamp delta (10), offset delta, key and value lengths and header count (5
# each) and an attributes byte; each header adds two length varints. A batch adds its header.
RECORD_OVERHEAD_BYTES = 5 + 1 + 10 + 5 + 5 + 5 + 5
HEADER_OVERHEAD_BYTES = 5 + 5
BATCH_OVERHEAD_BYTES = 61


class InvalidBatch(ValueError):
    """The records are not valid Kafka record batches (Kafka's CORRUPT_MESSAGE)."""


@dataclass(frozen=True)
class ProducedBatch:
    table: pa.Table
    producer_id: int
    producer_epoch: int
    base_sequence: int
    transactional: bool

    @property
    def records(self) -> int:
        return self.table.num_rows


def decode_batches(
    data: bytes, topic: str, partition: int, *, log_append_ms: int | None = None
) -> list[ProducedBatch]:
    """The batches of one partition's produce data; InvalidBatch when any is not magic 2, fails
    its CRC, is a control batch, or does not parse. With log_append_ms (a LogAppendTime topic)
    every record gets that timestamp, as the broker stamps it in Kafka."""
    try:
        return list(_decoded(data, topic, partition, log_append_ms))
    except InvalidBatch:
        raise
    except Exception as e:  # the codec's own errors (CorruptRecordException, struct errors)
        raise InvalidBatch(f"{topic}/{partition}: {type(e).__name__}: {e}") from e


def _decoded(data: bytes, topic: str, partition: int, log_append_ms: int | None) -> Any:
    records = MemoryRecords(bytes(data))
    found = False
    while (batch := records.next_batch()) is not None:
        found = True
        if batch.magic != MAGIC:
            raise InvalidBatch(f"{topic}/{partition}: record batch magic {batch.magic}, not 2")
        if not batch.validate_crc():
            raise InvalidBatch(f"{topic}/{partition}: a record batch failed its CRC")
        if batch.is_control_batch:
            raise InvalidBatch(f"{topic}/{partition}: control batches need transactions")
        keys, values, timestamps, headers = [], [], [], []
        for record in batch:
            keys.append(record.key)
            values.append(record.value)
            timestamps.append(record.timestamp if log_append_ms is None else log_append_ms)
            headers.append([(key, value) for key, value in record.headers])
        yield ProducedBatch(
            table=slice_table(
                topic,
                partition,
                keys,
                values,
                timestamps,
                batch.timestamp_type if log_append_ms is None else LOG_APPEND_TIME,
                headers,
            ),
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            transactional=bool(batch.is_transactional),
        )
    if not found:
        raise InvalidBatch(f"{topic}/{partition}: no record batch in the produce data")


def records_within(table: pa.Table, max_bytes: int, *, at_least_one: bool) -> pa.Table:
    """The longest prefix of a fetch result's records whose batch (encode_batch) is at most
    max_bytes, counting each record at its largest size on the wire; with at_least_one, the
    first record even when it alone is larger (Kafka's rule for the first partition of a
    fetch answer that has records, so a consumer always makes progress)."""
    if table.num_rows == 0:
        return table
    sizes = (
        _lengths(table.column("key"))
        + _lengths(table.column("value"))
        + _header_bytes(table.column("headers").combine_chunks())
        + RECORD_OVERHEAD_BYTES
    )
    cumulative = np.cumsum(sizes) + BATCH_OVERHEAD_BYTES
    fitting = int(np.searchsorted(cumulative, max_bytes, side="right"))
    keep = max(fitting, 1 if at_least_one else 0)
    return table if keep >= table.num_rows else table.slice(0, keep)


def _lengths(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(pc.binary_length(column), 0), dtype=np.int64)


def _header_bytes(headers: pa.ListArray) -> np.ndarray:
    """Each record's headers on the wire at most: keys, values and their length varints."""
    counts = np.asarray(pc.fill_null(pc.list_value_length(headers), 0), dtype=np.int64)
    total = counts * HEADER_OVERHEAD_BYTES
    flat = pc.list_flatten(headers)
    if len(flat):
        owners = np.asarray(pc.list_parent_indices(headers), dtype=np.int64)
        payload = _lengths(pc.struct_field(flat, "key")) + _lengths(pc.struct_field(flat, "value"))
        np.add.at(total, owners, payload)
    return total


def encode_records(
    table: pa.Table, refs: Sequence[PlacedRef], start: int, reached: int | None = None
) -> bytes:
    """A fetch answer's record batches in offset order: table's records (a prefix of what
    refs hold, from start) in one batch per run of one producer's transaction or of plain
    records, and a control batch for each marker among refs from start up to the first ref
    holding records not sent. reached is where the records end (the fetch result's next
    offset when table is all of it); by default after table's last record. Markers and holes
    past it are sent (they cost no read), so a consumer moves past a transaction's last
    marker, and the aborted records before it, at once."""
    if not refs:  # a result without its plan: its records as one plain batch
        return encode_batch(table)
    offsets = table.column("offset").to_numpy()
    if reached is None:
        reached = int(offsets[-1]) + 1 if len(offsets) else start
    parts: list[bytes | tuple[int, int, int]] = []  # control batches, (producer id, rows)
    row = 0
    for placed in refs:
        found = marker_of(placed.ref)
        if found is not None and placed.base_offset >= start:
            commit, producer = found
            stamp = placed.ref.min_timestamp
            parts.append(
                encode_control(placed.base_offset, commit, kafka_producer_id(producer), stamp)
            )
        elif placed.ref.has_object:
            end = int(np.searchsorted(offsets, placed.end_offset, side="left"))
            if end > row:
                producer_id = kafka_producer_id(producer_of(placed.ref))
                last = parts[-1] if parts else None
                if isinstance(last, tuple) and last[0] == producer_id:
                    parts[-1] = (producer_id, last[1], end)  # the same producer's run
                else:
                    parts.append((producer_id, row, end))
                row = end
            if placed.end_offset > reached:
                break  # records beyond reached are not sent, nor what follows them
    if row < len(offsets):  # records no ref holds (none from the library's fetch)
        parts.append((NO_PRODUCER, row, len(offsets)))
    return b"".join(
        part
        if isinstance(part, bytes)
        else encode_batch(table.slice(part[1], part[2] - part[1]), part[0])
        for part in parts
    )


def kafka_producer_id(producer: str | None) -> int:
    """The Kafka producer id of a ref's producer key (stores.metadata.kafka_producer), or
    NO_PRODUCER for none and for a producer that is not a Kafka client's."""
    if producer is None or not producer[1:].isdigit():
        return NO_PRODUCER
    producer_id = int(producer[1:])
    return producer_id if kafka_producer(producer_id) == producer else NO_PRODUCER


def encode_control(offset: int, commit: bool, producer_id: int, timestamp_ms: int) -> bytes:
    """A transaction marker's control batch at offset (the layout above)."""
    builder = DefaultRecordBatchBuilder(
        MAGIC, 0, 1, producer_id, UNKNOWN_EPOCH, NO_SEQUENCE, MAX_BATCH_BYTES
    )
    key = CONTROL_KEY.pack(0, COMMIT_TYPE if commit else ABORT_TYPE)
    builder.append(0, timestamp_ms, key, CONTROL_VALUE.pack(0, COORDINATOR_EPOCH), [])
    batch = bytearray(builder.build())  # transactional; the builder sets no control bit
    batch[0:BASE_OFFSET_BYTES] = offset.to_bytes(BASE_OFFSET_BYTES, "big", signed=True)
    attributes = int.from_bytes(batch[ATTRIBUTES_AT : ATTRIBUTES_AT + 2], "big") | CONTROL_BIT
    batch[ATTRIBUTES_AT : ATTRIBUTES_AT + 2] = attributes.to_bytes(2, "big")
    crc = calc_crc32c(bytes(batch[ATTRIBUTES_AT:]))
    batch[CRC_AT:ATTRIBUTES_AT] = crc.to_bytes(4, "big")
    return bytes(batch)


def encode_batch(table: pa.Table, producer_id: int = NO_PRODUCER) -> bytes:
    """One uncompressed record batch holding a fetch result's records (b"" for none);
    transactional, of that producer, when producer_id is one."""
    if table.num_rows == 0:
        return b""
    columns = table.select(["key", "value", "offset", "headers"]).to_pydict()
    millis = table.column("timestamp").cast(pa.int64()).to_pylist()
    offsets = columns["offset"]
    base = offsets[0]
    transactional = producer_id != NO_PRODUCER
    epoch = UNKNOWN_EPOCH if transactional else NO_PRODUCER
    builder = DefaultRecordBatchBuilder(
        MAGIC, 0, int(transactional), producer_id, epoch, NO_SEQUENCE, MAX_BATCH_BYTES
    )
    for key, value, offset, stamp, headers in zip(
        columns["key"], columns["value"], offsets, millis, columns["headers"], strict=True
    ):
        pairs = [(h["key"], h["value"]) for h in headers or ()]
        builder.append(offset - base, stamp, key, value, pairs)
    batch = bytearray(builder.build())
    batch[0:BASE_OFFSET_BYTES] = base.to_bytes(BASE_OFFSET_BYTES, "big", signed=True)
    return bytes(batch)
