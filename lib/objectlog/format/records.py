"""Records as producers send them and consumers receive them, and what a record weighs.

A record's size, the one measure every path holds against the topic's ``max.message.bytes``
(the producer's send() and send_table(), the HTTP API, the Spark sink), is its key plus its
value plus the names and values of its headers; a missing key, value or header value counts 0,
and header names count in characters (``len`` of the str), as the producer has always counted.
``record_size`` measures one record, ``record_sizes`` every row of Arrow columns, and
``check_record_size`` is the one place that refuses a record for its size, with one message;
``check_key`` the one place that refuses a record without a key on a compacted topic (Kafka's
INVALID_RECORD: such a record could never be compacted away).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from objectlog.errors import InvalidRecord, InvalidRequest, RecordTooLarge
from objectlog.format.topics import CLEANUP_POLICY, Topic

Headers = list[tuple[str, bytes | None]]
HeadersInput = Iterable[tuple[str, bytes | str | None]] | Mapping[str, bytes | str | None] | None


@dataclass(frozen=True, slots=True)
class Record:
    """A record read from a partition, at its absolute offset."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: Headers


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where an acknowledged record landed."""

    topic: str
    partition: int
    offset: int
    timestamp: int


def to_bytes(value: object, field: str) -> bytes | None:
    """Accept bytes-like or str (UTF-8) or None, as Kafka's Python clients do."""
    if value is None or type(value) is bytes:
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise InvalidRequest(
        f"{field} must be bytes, str or None, not {type(value).__name__}", field=field
    )


def normalize_headers(headers: HeadersInput) -> Headers:
    """A list of (str, bytes) pairs, order and duplicates kept; a dict is accepted too."""
    if not headers:
        return []
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    normalized: Headers = []
    for pair in pairs:
        try:
            name, value = pair
        except (TypeError, ValueError):
            raise InvalidRequest(
                "each header must be a (name, value) pair", field="headers"
            ) from None
        if not isinstance(name, str):
            raise InvalidRequest("header names must be str", field="headers")
        normalized.append((name, to_bytes(value, "headers")))
    return normalized


def record_size(key: bytes | None, value: bytes | None, headers: Headers | None) -> int:
    """What one record weighs against max.message.bytes (the module's docstring)."""
    size = (len(key) if key else 0) + (len(value) if value else 0)
    if headers:
        size += sum(len(name) + (len(data) if data else 0) for name, data in headers)
    return size


def record_sizes(keys: pa.Array, values: pa.Array, headers: pa.Array | None = None) -> np.ndarray:
    """record_size of every row of Arrow columns (int64), with no Python object per row.

    ``headers`` is a list<struct<key string, value binary>> column, as in the segment schema.
    """
    sizes = _lengths(keys) + _lengths(values)
    if headers is not None and len(headers):
        names, data = headers.flatten().flatten()  # the pairs of every row, in row order
        pair_sizes = pc.utf8_length(names).fill_null(0).to_numpy(zero_copy_only=False)
        pair_sizes = pair_sizes + _lengths(data)
        rows = pc.list_parent_indices(headers).to_numpy(zero_copy_only=False)
        # float weights are exact: a row's headers stay far below 2**53 bytes
        sizes += np.bincount(rows, weights=pair_sizes, minlength=len(headers)).astype(np.int64)
    return sizes


def _lengths(column: pa.Array) -> np.ndarray:
    lengths = pc.binary_length(column).fill_null(0)
    return lengths.to_numpy(zero_copy_only=False).astype(np.int64)


def check_record_size(
    topic: Topic, size: int, *, field: str = "value", record: str = "a record"
) -> None:
    """Refuse a record over the topic's max.message.bytes: the one place RecordTooLarge is
    raised. ``record`` names it in the message (``records[3]`` in an HTTP request)."""
    limit = topic.config.max_message_bytes
    if size > limit:
        raise RecordTooLarge(
            f"{record} of {size} bytes exceeds max.message.bytes ({limit}) of topic {topic.name!r}",
            field=field,
        )


def check_key(topic: Topic, key: object, *, field: str = "key", record: str = "a record") -> None:
    """Refuse a record whose key is None on a compacted topic, as Kafka's broker does."""
    if key is None and topic.config.compacted:
        raise InvalidRecord(
            f"{record} has no key, and topic {topic.name!r} is compacted "
            f"(cleanup.policy={topic.config.get(CLEANUP_POLICY)}): compaction keeps the latest "
            "record of each key, so a record without one could never be compacted",
            field=field,
        )


def check_keys(topic: Topic, keys: pa.Array | pa.ChunkedArray) -> None:
    """check_key for every key of a column (one refused refuses them all); the error names
    the positions of the keyless records."""
    if not (topic.config.compacted and keys.null_count):
        return
    keyless = np.flatnonzero(keys.is_null().to_numpy(zero_copy_only=False))
    try:
        check_key(topic, None)
    except InvalidRecord as e:
        raise InvalidRecord(
            f"{len(keyless)} of {len(keys)} records: {e.message}",
            field=e.field,
            records=tuple(keyless.tolist()),
        ) from None


def check_record_sizes(topic: Topic, sizes: np.ndarray) -> None:
    """check_record_size for the largest of many records (record_sizes' answer)."""
    if len(sizes):
        check_record_size(topic, int(sizes.max()))
