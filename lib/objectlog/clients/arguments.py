"""Argument checks every transport makes before it sends anything, so a bad argument raises
the same InvalidRequest whichever client is used (and costs no round trip)."""

from __future__ import annotations

from objectlog.errors import InvalidRequest
from objectlog.format.segment import COMPRESSIONS
from objectlog.services.fetch import FetchRequest
from objectlog.services.isolation import ISOLATION_LEVELS


def check_non_negative(name: str, value: object) -> None:
    if type(value) is not int or value < 0:
        raise InvalidRequest(f"{name} must be a non-negative integer, got {value!r}", field=name)


def check_fetch_args(
    partition: int, offset: int, max_bytes: int, max_records: int | None, max_wait_ms: int
) -> None:
    for name, value in (("partition", partition), ("offset", offset), ("max_wait_ms", max_wait_ms)):
        check_non_negative(name, value)
    if type(max_bytes) is not int or max_bytes <= 0:
        raise InvalidRequest(
            f"max_bytes must be a positive integer, got {max_bytes!r}", field="max_bytes"
        )
    if max_records is not None and (type(max_records) is not int or max_records <= 0):
        raise InvalidRequest(
            f"max_records must be a positive integer, got {max_records!r}", field="max_records"
        )


def check_fetch_request(request: FetchRequest) -> None:
    check_fetch_args(request.partition, request.offset, request.max_bytes, request.max_records, 0)
    check_non_negative("read_ahead_bytes", request.read_ahead_bytes)
    check_isolation_level(request.isolation)


def check_isolation_level(isolation_level: str) -> str:
    if isolation_level not in ISOLATION_LEVELS:
        raise InvalidRequest(
            f"isolation_level must be one of {', '.join(ISOLATION_LEVELS)}, got "
            f"{isolation_level!r}",
            field="isolation_level",
        )
    return isolation_level


def check_compression(compression: str) -> str:
    if compression not in COMPRESSIONS:
        raise InvalidRequest(
            f"compression must be one of {', '.join(COMPRESSIONS)}", field="compression"
        )
    return compression
