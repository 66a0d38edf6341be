"""services.range_reads: ranged reads issued at once, each decoded on the thread that read it."""

from __future__ import annotations

import threading

import pytest

from objectlog.errors import ObjectNotFound
from objectlog.services.range_reads import ConcurrentReads


def test_the_reads_overlap_and_come_back_in_order_with_their_errors() -> None:
    together = threading.Barrier(4, timeout=5)  # broken unless all four reads are under way

    def get_range(key: str, start: int, length: int) -> bytes:
        together.wait()
        if key == "gone":
            raise ObjectNotFound(f"{key} is gone")
        return f"{key}:{start}+{length}".encode()

    reads = ConcurrentReads(get_range)
    try:
        got = reads.read_many([("a", 0, 3), ("gone", 0, 1), ("b", 5, 2), ("c", 1, 1)])
    finally:
        reads.close()
    assert got[0] == b"a:0+3" and got[2] == b"b:5+2" and got[3] == b"c:1+1"
    assert isinstance(got[1], ObjectNotFound)


def test_then_runs_on_the_reading_thread_as_each_range_arrives() -> None:
    reads = ConcurrentReads(lambda key, start, length: key.encode())
    seen: list[tuple[int, bytes, str]] = []

    def then(index: int, data: bytes) -> str:
        seen.append((index, data, threading.current_thread().name))
        return data.decode().upper()

    try:
        assert reads.read_many([("x", 0, 1), ("y", 0, 1)], then) == ["X", "Y"]
    finally:
        reads.close()
    assert sorted((index, data) for index, data, _ in seen) == [(0, b"x"), (1, b"y")]
    assert all(name.startswith("objectlog-reads") for _, _, name in seen)


def test_an_error_that_is_not_objectlogs_is_raised() -> None:
    def broken(key: str, start: int, length: int) -> bytes:
        raise ValueError("a bug, not a storage answer")

    reads = ConcurrentReads(broken)
    try:
        with pytest.raises(ValueError, match="a bug"):
            reads.read_many([("a", 0, 1), ("b", 0, 1)])
    finally:
        reads.close()


@pytest.mark.parametrize("concurrent", [False, True])
def test_a_local_store_or_a_single_range_is_read_on_the_callers_thread(concurrent: bool) -> None:
    """The in-memory store's reads are lookups: no thread for them; nor for one range."""
    threads: list[str] = []

    def get_range(key: str, start: int, length: int) -> bytes:
        threads.append(threading.current_thread().name)
        if key == "gone":
            raise ObjectNotFound(f"{key} is gone")
        return key.encode()

    reads = ConcurrentReads(get_range, concurrent=concurrent)
    try:
        ranges = [("a", 0, 1), ("gone", 0, 1)] if not concurrent else [("a", 0, 1)]
        got = reads.read_many(ranges, lambda index, data: data.upper())
    finally:
        reads.close()
    assert got[0] == b"A"
    if not concurrent:
        assert isinstance(got[1], ObjectNotFound)
    assert threads == [threading.current_thread().name] * len(ranges)
