"""The Schema Registry's wire format, as Confluent's serializers write it:

    byte 0      magic byte 0
    bytes 1-4   the schema id, a big-endian int32
    bytes 5-    the payload (Protobuf: its message indexes first, then the message)

Protobuf's message indexes: a zigzag varint count, then that many zigzag varint indexes
(into the file's messages, then into each one's nested messages); a count of 0 (a single 0
byte) is the first message, [0].

Read for a whole column at once (pyarrow compute, no Python object per record).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

MAGIC_BYTE = 0
PREFIX_BYTES = 5
MAX_MESSAGE_INDEXES = 100  # nesting deeper than this is not a schema anyone writes
NOT_FRAMED = b"\x01\x00\x00\x00\x00"  # what an unframed value reads as: not the magic byte
NOT_FRAMED_REASON = "not framed: it does not open with magic byte 0 and a schema id"


def framed_id(data: bytes) -> int | None:
    """The schema id a value in the Schema Registry's wire format names, None if it is not in
    it (framed_ids does the same for a whole column)."""
    if len(data) < PREFIX_BYTES or data[0] != MAGIC_BYTE:
        return None
    return int.from_bytes(data[1:PREFIX_BYTES], "big")


def framed_ids(column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids, framed, null) for each value: its schema id (int64; meaningless where not framed),
    whether it carries the wire prefix (magic byte 0 and an id), whether it is null."""
    values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    values = values.cast(pa.binary()) if values.type != pa.binary() else values
    null = values.is_null().to_numpy(zero_copy_only=False)
    long_enough = pc.fill_null(pc.greater_equal(pc.binary_length(values), PREFIX_BYTES), False)
    heads = pc.if_else(long_enough, pc.binary_slice(values, 0, PREFIX_BYTES), NOT_FRAMED)
    fixed = pc.fill_null(heads, NOT_FRAMED).cast(pa.binary(PREFIX_BYTES))
    raw = np.frombuffer(fixed.buffers()[1], dtype=np.uint8).reshape(-1, PREFIX_BYTES)
    raw = raw[fixed.offset : fixed.offset + len(fixed)]
    framed = raw[:, 0] == MAGIC_BYTE
    ids = raw[:, 1:].copy().view(">u4").reshape(-1).astype(np.int64)
    return ids, framed & ~null, null


def message_indexes(payload: bytes) -> tuple[list[int], int]:
    """The message indexes a Protobuf payload opens with, and how many bytes they took;
    ValueError if they are cut short or out of reason."""
    position = 0

    def varint() -> int:
        nonlocal position
        shift = result = 0
        while True:
            if position >= len(payload) or shift > 63:
                raise ValueError("its Protobuf message indexes are cut short")
            byte = payload[position]
            position += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return (result >> 1) ^ -(result & 1)  # zigzag
            shift += 7

    count = varint()
    if not 0 <= count <= MAX_MESSAGE_INDEXES:
        raise ValueError(f"its Protobuf message index count {count} is not valid")
    indexes = [varint() for _ in range(count)] or [0]
    return indexes, position
