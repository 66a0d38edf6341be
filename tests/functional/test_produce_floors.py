"""bench.produce_floors: the produce floor of issue 38 does the producer's work, on moto. Its
object is byte for byte the producer's for the same records (the same Parquet slices, which
decode back to those records); it makes the producer's requests per flush (one PUT, one
UpdateItem per touched partition, each landing); and it keeps as many flushes in flight as a
real Producer does, so the floor can do neither less nor more than the producer."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from bench.meter import Requests
from bench.produce_floors import (
    PARTITIONS,
    PRODUCER_DEPTH,
    RECORDS_PER_FLUSH,
    EncodingFloor,
    encode_slices,
    flush_tables,
    pipelined,
)
from objectlog import ObjectLog
from objectlog.clock import ManualClock
from objectlog.config import Config
from objectlog.format.segment import decode_parquet

RECORDS = 64
VALUE = bytes(range(200))
KEYS = [b"%016d" % i for i in range(RECORDS)]
FLUSHES = 5


def objects(log: ObjectLog, wanted: Callable[[str], bool]) -> list[bytes]:
    """The bodies of the bucket's objects whose key is wanted."""
    s3, bucket = log.store.client, log.config.bucket
    listed = s3.list_objects_v2(Bucket=bucket).get("Contents", [])
    return [
        s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
        for item in listed
        if wanted(item["Key"])
    ]


def test_the_floor_puts_the_producers_bytes_and_makes_its_requests(log_config: Config) -> None:
    clock = ManualClock()  # the producer's timestamps and the floor's tables' are one instant
    with ObjectLog(log_config, clock=clock) as log:
        log.ensure_resources()
        log.create_topic("t", partitions=PARTITIONS)
        meter = Requests(log)
        with log.producer(linger_ms=60_000) as producer:
            for i, key in enumerate(KEYS):
                producer.send("t", VALUE, key, partition=i % PARTITIONS)
            meter.take()
            producer.flush()
            stats = producer.appender.stats
        produced = meter.take().counts
        [ours] = objects(log, lambda key: key.endswith(".l0"))
        # One PUT and one commit per touched partition (its other writes are not the floor's).
        assert (produced["PutObject:l0"], stats.objects_put, stats.commits) == (1, 1, PARTITIONS)

        tables = flush_tables("t", KEYS, VALUE, clock.now_ms())
        floors = [EncodingFloor(log, tables) for _ in range(2)]
        for floor, split in zip(floors, [False, True], strict=True):  # the floor, and its split
            most = count_in_flight(floor)
            meter.take()
            floor.run_pipelined(FLUSHES, split)()
            assert meter.take().counts == Counter(
                {"PutObject:index": FLUSHES, "UpdateItem": FLUSHES * PARTITIONS}  # not in l0/
            )
            assert most[0] == PRODUCER_DEPTH
        bodies = objects(log, lambda key: key.startswith("floor/"))
        assert len(bodies) == 2 * FLUSHES and all(body == ours for body in bodies)

        sizes = [part.size for part in encode_slices(floor.tables)]
        assert sum(sizes) == len(ours)
        start = 0
        for partition, size in enumerate(sizes):
            table = decode_parquet(ours[start : start + size])
            start += size
            assert table.column("key").to_pylist() == KEYS[partition::PARTITIONS]
            assert table.column("value").to_pylist() == [VALUE] * (RECORDS // PARTITIONS)
            assert set(table.column("partition").to_pylist()) == {partition}
            assert table.column("offset").to_pylist() == list(range(RECORDS // PARTITIONS))

        for floor, partition in itertools.product(floors, range(PARTITIONS)):  # each landed
            item = log.metadata.client.get_item(
                TableName=log.config.table,
                Key={"pk": {"S": f"floor#{floor.items}#{partition}"}, "sk": {"S": "head"}},
                ConsistentRead=True,
            )["Item"]
            assert item["sq"] == {"N": str(FLUSHES - 1)}
            assert int(item["nx"]["N"]) == FLUSHES * RECORDS_PER_FLUSH // PARTITIONS


def count_in_flight(floor: EncodingFloor) -> list[int]:
    """Count the floor's flushes in flight (from its encoding to its commit's end), its commits
    slowed so that its stages run as far ahead as it lets them: the most seen, once it ran."""
    start, end, most = in_flight_counter()
    encode, commit = floor.encode, floor.commit

    def counted_encode() -> bytes:
        start()
        return encode()

    def slow_commit() -> None:
        time.sleep(0.02)
        commit()
        end()

    floor.encode, floor.commit = counted_encode, slow_commit  # type: ignore[method-assign]
    return most


def in_flight_counter() -> tuple[Callable[[], None], Callable[[], None], list[int]]:
    """start() and end() of a flush, and the most flushes seen in flight between them."""
    lock, now, most = threading.Lock(), [0], [0]

    def start() -> None:
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])

    def end() -> None:
        with lock:
            now[0] -= 1

    return start, end, most


@pytest.mark.parametrize("depth", [1, 2, PRODUCER_DEPTH])
def test_pipelined_keeps_depth_flushes_in_flight_and_commits_in_order(depth: int) -> None:
    start, end, most = in_flight_counter()
    staged: list[int] = []
    committed: list[int] = []

    def stage() -> None:
        start()
        staged.append(len(staged))

    def commit(_: None) -> None:
        time.sleep(0.01)  # slow commits: the stages run as far ahead as they may
        committed.append(len(committed))
        assert len(staged) <= len(committed) + depth
        end()

    with ThreadPoolExecutor(1) as pool:
        pipelined(8, depth, pool, stage, commit)
    assert most[0] == depth
    assert committed == staged == list(range(8))


def test_a_producer_keeps_producer_depth_flushes_in_flight(log: ObjectLog) -> None:
    """PRODUCER_DEPTH is what a real Producer does: flushes staged (Appender.stage) and not yet
    committed (commit_staged returned), while commits are slow."""
    log.create_topic("t", partitions=1)
    start, end, most = in_flight_counter()
    with log.producer(batch_bytes=2_000, linger_ms=60_000) as producer:
        appender: Any = producer.appender
        stage, commit_staged = appender.stage, appender.commit_staged

        def counted_stage(*args: Any) -> Any:
            start()
            return stage(*args)

        def slow_commit(*args: Any) -> Any:
            time.sleep(0.05)
            try:
                return commit_staged(*args)
            finally:
                end()

        appender.stage, appender.commit_staged = counted_stage, slow_commit
        for i in range(8 * 10):  # 8 flushes of 10 records of 200 B
            producer.send("t", VALUE, b"%d" % i)
        producer.flush()
    assert most[0] == PRODUCER_DEPTH
