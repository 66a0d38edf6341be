"""Kafka record batches (magic 2) to objectlog's slice tables and back, on aiokafka's C codec
(FACTS.md: it checks CRCs, exposes the producer fields and handles every compression).

A produce request's records for one partition are one or more batches; each becomes a
``ProducedBatch``: the records as a slice table (offset column = positions) and the idempotence
fields Kafka sends (producer id, epoch, base sequence). A fetch answer's records become one
uncompressed batch per partition, whose base offset is the first record's offset and whose
offset deltas keep any gaps (compacted topics) as Kafka's do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from aiokafka.record._crecords import DefaultRecordBatchBuilder, MemoryRecords

from objectlog.format.segment import slice_table

MAGIC = 2
NO_PRODUCER = -1
LOG_APPEND_TIME = 1
BASE_OFFSET_BYTES = 8  # the batch's first field; the CRC covers only what follows "attributes"
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


def encode_batch(table: pa.Table) -> bytes:
    """One uncompressed record batch holding a fetch result's records (b"" for none)."""
    if table.num_rows == 0:
        return b""
    columns = table.select(["key", "value", "offset", "headers"]).to_pydict()
    millis = table.column("timestamp").cast(pa.int64()).to_pylist()
    offsets = columns["offset"]
    base = offsets[0]
    builder = DefaultRecordBatchBuilder(
        MAGIC, 0, 0, NO_PRODUCER, NO_PRODUCER, NO_PRODUCER, MAX_BATCH_BYTES
    )
    for key, value, offset, stamp, headers in zip(
        columns["key"], columns["value"], offsets, millis, columns["headers"], strict=True
    ):
        pairs = [(h["key"], h["value"]) for h in headers or ()]
        builder.append(offset - base, stamp, key, value, pairs)
    batch = bytearray(builder.build())
    batch[0:BASE_OFFSET_BYTES] = base.to_bytes(BASE_OFFSET_BYTES, "big", signed=True)
    return bytes(batch)
