"""A fetch that reads ahead (FetchRequest.read_ahead_bytes) against moto server: the slices
after its own are read once, in the background, and the next fetch takes them from there;
nothing is read ahead at the tail; an object gone since changes no result; the Consumer's
fetch-ahead asks for it."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from objectlog import FetchRequest, ObjectLog
from objectlog.errors import InvalidRequest, ObjectNotFound
from objectlog.format.layout import object_key

TOPIC = "ahead"
ONE_SLICE = 100  # max_bytes that plans one slice (10 records of 4-5 bytes a slice)


@pytest.fixture
def log_of_slices(log: ObjectLog) -> ObjectLog:
    """Five flushes of 10 records to partition 0: five slices in five objects."""
    log.create_topic(TOPIC, partitions=1)
    with log.producer() as producer:
        for flush in range(5):
            for i in range(flush * 10, flush * 10 + 10):
                producer.send(TOPIC, b"v%d" % i, partition=0)
            producer.flush()
    return log


class SliceGets:
    """The slice GETs the log's S3 client sends, and on which thread."""

    def __init__(self, log: ObjectLog) -> None:
        self.gets: list[tuple[str, str]] = []
        log.store.client.meta.events.register("before-send.s3.GetObject", self._sent)

    def _sent(self, request: Any, **_: Any) -> None:
        if "/l0/" in request.url:
            self.gets.append((request.url.rsplit("/", 1)[-1], threading.current_thread().name))

    def settle(self, count: int) -> None:
        deadline = time.monotonic() + 10
        while len(self.gets) < count and time.monotonic() < deadline:
            time.sleep(0.01)


def values(result: Any) -> list[bytes]:
    return [record.value for record in result.records]


def test_the_next_fetch_takes_the_slice_read_ahead_without_reading_it_again(
    log_of_slices: ObjectLog,
) -> None:
    log = log_of_slices
    gets = SliceGets(log)
    [first] = log.fetch_many([FetchRequest(TOPIC, 0, 0, ONE_SLICE, read_ahead_bytes=ONE_SLICE)])
    assert values(first) == [b"v%d" % i for i in range(10)]
    gets.settle(2)
    ahead = sorted(thread.startswith("objectlog-read-ahead") for _, thread in gets.gets)
    assert ahead == [False, True]  # its own slice, and the next one in the background
    [second] = log.fetch_many([FetchRequest(TOPIC, 0, first.next_offset, ONE_SLICE)])
    assert values(second) == [b"v%d" % i for i in range(10, 20)]
    assert len(gets.gets) == 2  # the second slice was read once, ahead
    assert len({name for name, _ in gets.gets}) == 2


def test_a_catch_up_reading_ahead_reads_every_slice_once_and_returns_the_same(
    log_of_slices: ObjectLog,
) -> None:
    log = log_of_slices
    gets = SliceGets(log)
    offset, read = 0, []
    while offset < 50:
        [result] = log.fetch_many(
            [FetchRequest(TOPIC, 0, offset, ONE_SLICE, read_ahead_bytes=2 * ONE_SLICE)]
        )
        read += values(result)
        offset = result.next_offset
    assert read == [b"v%d" % i for i in range(50)]
    names = [name for name, _ in gets.gets]
    assert sorted(names) == sorted(set(names)) and len(names) == 5


def test_nothing_is_read_ahead_at_the_tail_and_a_gone_object_changes_no_result(
    log_of_slices: ObjectLog,
) -> None:
    log = log_of_slices
    gets = SliceGets(log)
    head = log.metadata.get_head(TOPIC, 0)
    assert head is not None
    [last] = log.fetch_many([FetchRequest(TOPIC, 0, 40, ONE_SLICE, read_ahead_bytes=ONE_SLICE)])
    assert values(last) == [b"v%d" % i for i in range(40, 50)]
    time.sleep(0.2)
    assert len(gets.gets) == 1  # the tail: nothing after it to read

    # The third slice's object is deleted before a fetch reads ahead to it: that read fails in
    # the background, and the fetch that wants the slice reads it itself and meets the error.
    third = [p for p in log.index.placed_refs(head, 0)][2].ref
    log.store.delete_many([object_key(log.config.prefix, third.level, third.object_id)])
    [second] = log.fetch_many([FetchRequest(TOPIC, 0, 10, ONE_SLICE, read_ahead_bytes=ONE_SLICE)])
    assert values(second) == [b"v%d" % i for i in range(10, 20)]
    with pytest.raises(ObjectNotFound):
        log.fetch_many([FetchRequest(TOPIC, 0, 20, ONE_SLICE)])


def test_read_ahead_bytes_must_not_be_negative(log_of_slices: ObjectLog) -> None:
    with pytest.raises(InvalidRequest, match="read_ahead_bytes"):
        log_of_slices.fetch_many([FetchRequest(TOPIC, 0, 0, read_ahead_bytes=-1)])


def test_the_consumers_fetch_ahead_reads_one_fetch_ahead(log_of_slices: ObjectLog) -> None:
    log = log_of_slices
    gets = SliceGets(log)
    with log.consumer(
        auto_offset_reset="earliest", max_partition_fetch_bytes=ONE_SLICE, max_poll_records=10
    ) as consumer:
        consumer.assign([(TOPIC, 0)])
        read: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(read) < 50 and time.monotonic() < deadline:
            read += [record.value for record in consumer.poll(timeout=0.5)]
    assert read == [b"v%d" % i for i in range(50)]
    names = [name for name, _ in gets.gets]
    assert len(names) == len(set(names)) == 5
    assert any(thread.startswith("objectlog-read-ahead") for _, thread in gets.gets)


def test_a_cold_fetch_of_several_partitions_reads_their_index_objects_at_once(
    log: ObjectLog,
) -> None:
    """fetch_many from cold caches reads every partition's manifest list in one round
    (IndexStore.preload), not one partition after another, and each of them once."""
    log.create_topic("indexed", partitions=4)
    with log.producer() as producer:
        for flush in range(24):  # past TAIL_MAX: each partition's oldest refs spill
            for partition in range(4):
                producer.send("indexed", b"%d-%d" % (partition, flush), partition=partition)
            producer.flush()
    heads = log.metadata.get_heads("indexed", range(4))
    assert all(head.manifest_list for head in heads.values())
    with ObjectLog(log.config) as cold:  # nothing cached
        reads, most, in_flight, lock = [], 0, 0, threading.Lock()
        read = cold.index._read

        def overlapping_read(location: str) -> bytes:
            nonlocal most, in_flight
            with lock:
                reads.append(location)
                in_flight += 1
                most = max(most, in_flight)
            try:
                time.sleep(0.05)  # long enough for the others to start, if they are going to
                return read(location)
            finally:
                with lock:
                    in_flight -= 1

        cold.index._read = overlapping_read  # type: ignore[method-assign]
        results = cold.fetch_many([FetchRequest("indexed", p, 0) for p in range(4)])
    for partition, result in enumerate(results):
        assert [r.value for r in result.records] == [
            b"%d-%d" % (partition, flush) for flush in range(24)
        ]
    assert most == 4
    assert sorted(reads) == sorted({head.manifest_list for head in heads.values()})
