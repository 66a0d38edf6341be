"""Kafka's default partitioning: murmur2 of the key, as the Java client computes it.

keyed record  -> toPositive(murmur2(key)) % partitions   (seed 0x9747b28c, m 0x5bd1e995, r 24)
explicit      -> the partition the caller named
null key      -> sticky: one partition per topic per flush, chosen at random (as the Java
                 client's sticky partitioner, which switches partition when a batch completes)
"""

from __future__ import annotations

import random
from functools import lru_cache

import numpy as np
import pyarrow as pa

SEED = 0x9747B28C
M = 0x5BD1E995
R = 24
MASK32 = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's murmur2, returned as the signed 32-bit int the Java client returns."""
    length = len(data)
    h = (SEED ^ length) & MASK32
    end4 = length - (length & 3)
    for i in range(0, end4, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * M) & MASK32
        k ^= k >> R
        k = (k * M) & MASK32
        h = ((h * M) & MASK32) ^ k
    tail = length & 3
    if tail:
        if tail == 3:
            h ^= data[end4 + 2] << 16
        if tail >= 2:
            h ^= data[end4 + 1] << 8
        h ^= data[end4]
        h = (h * M) & MASK32
    h ^= h >> 13
    h = (h * M) & MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    return number & 0x7FFFFFFF


@lru_cache(maxsize=65536)
def _positive_hash(key: bytes) -> int:
    return to_positive(murmur2(key))


def partition_for_key(key: bytes, partitions: int) -> int:
    """The partition the Kafka Java client's default partitioner picks for a keyed record."""
    return _positive_hash(key) % partitions


def partitions_for_keys(keys: list[bytes], partitions: int) -> np.ndarray:
    """Vectorized partition_for_key over many keys (the columnar produce path)."""
    out = np.empty(len(keys), dtype=np.int64)
    by_length: dict[int, list[int]] = {}
    for index, key in enumerate(keys):
        by_length.setdefault(len(key), []).append(index)
    for length, indexes in by_length.items():
        block = np.frombuffer(b"".join(keys[i] for i in indexes), dtype=np.uint8)
        hashes = murmur2_fixed_length(block.reshape(len(indexes), length))
        out[indexes] = (hashes & np.uint32(0x7FFFFFFF)).astype(np.int64) % partitions
    return out


def partitions_for_key_array(keys: pa.Array, partitions: int) -> np.ndarray:
    """partition_for_key over an Arrow binary array; nulls get -1 (the caller decides)."""
    keys = keys.cast(pa.binary())
    count = len(keys)
    if count == 0:
        return np.empty(0, dtype=np.int64)
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32)[
        keys.offset : keys.offset + count + 1
    ]
    lengths = np.diff(offsets)
    if keys.null_count == 0 and (lengths == lengths[0]).all():
        # Fixed-length keys (ids, zero-padded numbers): hash straight from the Arrow buffer.
        width = int(lengths[0])
        data = np.frombuffer(keys.buffers()[2], dtype=np.uint8)
        rows = data[offsets[0] : offsets[0] + width * count].reshape(count, width)
        hashes = murmur2_fixed_length(rows)
        return ((hashes & np.uint32(0x7FFFFFFF)).astype(np.int64)) % partitions
    result = partitions_for_keys([k or b"" for k in keys.to_pylist()], partitions)
    if keys.null_count:
        result[np.asarray(keys.is_null())] = -1
    return result


def murmur2_fixed_length(rows: np.ndarray) -> np.ndarray:
    """murmur2 of each row of a (n, length) uint8 array, as unsigned 32-bit values."""
    count, length = rows.shape
    m = np.uint32(M)
    h = np.full(count, (SEED ^ length) & MASK32, dtype=np.uint32)
    end4 = length - (length & 3)
    if end4:
        words = np.ascontiguousarray(rows[:, :end4]).view("<u4")
        for column in range(words.shape[1]):
            k = words[:, column] * m
            k ^= k >> np.uint32(R)
            k *= m
            h *= m
            h ^= k
    tail = length & 3
    if tail:
        if tail == 3:
            h ^= rows[:, end4 + 2].astype(np.uint32) << np.uint32(16)
        if tail >= 2:
            h ^= rows[:, end4 + 1].astype(np.uint32) << np.uint32(8)
        h ^= rows[:, end4].astype(np.uint32)
        h *= m
    h ^= h >> np.uint32(13)
    h *= m
    h ^= h >> np.uint32(15)
    return h


class StickyPartitioner:
    """Chooses the partition for null-key records: the same one until the next flush."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._current: dict[str, int] = {}

    def partition(self, topic: str, partitions: int) -> int:
        chosen = self._current.get(topic)
        if chosen is None or chosen >= partitions:
            chosen = self._rng.randrange(partitions)
            self._current[topic] = chosen
        return chosen

    def next_batch(self) -> None:
        """A flush completed: null-key records move on to another partition."""
        self._current.clear()
