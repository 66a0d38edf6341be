"""Records as producers send them and consumers receive them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from objectlog.errors import InvalidRequest

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


def headers_size(headers: Headers) -> int:
    return sum(len(name) + len(value or b"") for name, value in headers)
