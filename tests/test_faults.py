"""Invariants of DESIGN.md section 9 under injected faults, on the moto server over HTTP."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from objectlog import ObjectLog
from objectlog.appender import PartitionBatch
from objectlog.clock import ulid_time_ms
from objectlog.errors import ErrorKind, ObjectLogError
from objectlog.index import LEVEL_L0
from objectlog.index_store import TAIL_MAX
from objectlog.layout import L0_DIR
from objectlog.segment import slice_table
from tests.faults import FaultInjector


def read_values(log: ObjectLog, topic: str, partition: int = 0) -> list[bytes | None]:
    values, offset = [], 0
    while True:
        result = log.fetch(topic, partition, offset)
        if not len(result):
            return values
        assert [r.offset for r in result.records] == list(range(offset, offset + len(result)))
        values.extend(r.value for r in result.records)
        offset = result.next_offset


def one_batch(log: ObjectLog, topic: str, values: list[bytes], sequence: int = 0) -> PartitionBatch:
    info = log.topic(topic)
    table = slice_table(topic, 0, [None] * len(values), values, [1] * len(values), 0)
    return PartitionBatch(info, 0, table, sequence)


def test_a_retried_commit_with_the_same_sequence_writes_nothing(log: ObjectLog) -> None:
    log.create_topic("t")
    appender = log.new_appender()
    first = appender.append([one_batch(log, "t", [b"a", b"b"])], producer_id="p1")[0]
    again = appender.append([one_batch(log, "t", [b"a", b"b"])], producer_id="p1")[0]
    assert (first.base_offset, first.duplicate) == (0, False)
    assert (again.base_offset, again.duplicate) == (0, True)
    assert log.offsets("t", 0).latest == 2
    assert read_values(log, "t") == [b"a", b"b"]
    nxt = appender.append([one_batch(log, "t", [b"c"], sequence=1)], producer_id="p1")[0]
    assert nxt.base_offset == 2
    skipped = appender.append([one_batch(log, "t", [b"d"], sequence=5)], producer_id="p1")[0]
    assert skipped.error is not None and type(skipped.error).__name__ == "OutOfOrderSequence"
    assert read_values(log, "t") == [b"a", b"b", b"c"]


def test_an_applied_commit_whose_answer_is_lost_returns_the_original_offsets(
    log: ObjectLog,
) -> None:
    log.create_topic("t")
    faults = FaultInjector()
    with log.producer() as producer:
        assert producer.send("t", b"before").result().offset == 0
        faults.lose_answer(log.metadata.client, "dynamodb", "UpdateItem", times=1)
        futures = [producer.send("t", b"v%d" % i) for i in range(3)]
        assert [f.result().offset for f in futures] == [1, 2, 3]
    assert faults.counts["lost-answer:UpdateItem"] == 1
    assert read_values(log, "t") == [b"before", b"v0", b"v1", b"v2"]


def test_a_crash_after_the_put_and_before_the_commit_loses_nothing_acknowledged(
    log: ObjectLog,
) -> None:
    log.create_topic("t")
    faults = FaultInjector()
    crashing = {"on": False}
    faults.crash_before(log.metadata.client, "dynamodb", "UpdateItem", lambda: crashing["on"])
    with log.producer() as producer:
        acked = [producer.send("t", b"ok%d" % i) for i in range(3)]
        producer.flush()
        assert [f.result().offset for f in acked] == [0, 1, 2]
        crashing["on"] = True
        lost = producer.send("t", b"never")
        producer.flush()
        error = lost.exception(timeout=10)
        assert error is not None
        crashing["on"] = False
        assert producer.send("t", b"after").result().offset == 3
    assert faults.counts["crash-before:UpdateItem"] >= 1
    assert read_values(log, "t") == [b"ok0", b"ok1", b"ok2", b"after"]
    objects = list(log.store.list(log.config.prefix + L0_DIR))
    assert len(objects) == 3  # the orphan is left for the garbage collector (issue 6)


def test_a_producer_paused_past_the_gc_horizon_cannot_commit_a_deleted_object(
    log: ObjectLog,
) -> None:
    log.create_topic("t")
    faults = FaultInjector()
    reached, release = threading.Event(), threading.Event()
    faults.pause_before(log.metadata.client, "dynamodb", "UpdateItem", reached, release)
    with log.producer() as producer:
        future = producer.send("t", b"paused")
        assert reached.wait(10), "the producer never got to its commit"
        [uploaded] = list(log.store.list(log.config.prefix + L0_DIR))
        object_time = ulid_time_ms(uploaded.key.rsplit("/", 1)[1].removesuffix(".l0"))
        # the collector: raise the horizon past the object, then delete it
        log.metadata.raise_gc_horizon("t", 0, object_time)
        log.store.delete_many([uploaded.key])
        release.set()
        assert future.result(timeout=20).offset == 0
    head = log.metadata.get_head("t", 0)
    assert head is not None and head.gc_horizon == object_time
    assert all(
        ref.level == LEVEL_L0 and ulid_time_ms(ref.object_id) > object_time for ref in head.tail
    )
    assert read_values(log, "t") == [b"paused"]
    assert producer.stats.reuploads == 1


def test_s3_slowdown_and_dynamodb_throttling_are_retried_to_success(log: ObjectLog) -> None:
    log.create_topic("t", partitions=2)
    faults = FaultInjector(seed=11)
    log.concurrent_reads = False  # every GET through the hooked boto3 client
    for operation in ("PutObject", "GetObject"):
        faults.s3_slowdown(log.store.client, operation, 0.2)
    for operation in ("UpdateItem", "GetItem"):
        faults.dynamodb_throttle(log.metadata.client, operation, 0.2)
    count = 240
    with log.producer(linger_ms=2, batch_bytes=1024) as producer:
        futures = [producer.send("t", b"%05d" % i, partition=i % 2) for i in range(count)]
        offsets = [f.result(timeout=60) for f in futures]
    for partition in (0, 1):
        mine = [md.offset for md in offsets if md.partition == partition]
        assert mine == list(range(count // 2))
    values = []
    for partition in (0, 1):
        offset = 0
        while offset < count // 2:
            result = log.fetch("t", partition, offset, max_records=12)
            values.extend(r.value for r in result.records)
            offset = result.next_offset
    assert sorted(values) == [b"%05d" % i for i in range(count)]
    for kind in (
        "s3-503:PutObject",
        "s3-503:GetObject",
        "ddb-throttle:UpdateItem",
        "ddb-throttle:GetItem",
    ):
        assert faults.counts[kind] > 0, f"no {kind} was injected: {faults.counts}"


def test_an_outcome_that_stays_unknown_is_reported_and_the_producer_resyncs(log: ObjectLog) -> None:
    log.create_topic("t")
    faults = FaultInjector()
    with log.producer() as producer:
        assert producer.send("t", b"first").result().offset == 0
        stop_losing = faults.lose_answer(log.metadata.client, "dynamodb", "UpdateItem", times=100)
        unknown = producer.send("t", b"maybe")
        error = unknown.exception(timeout=30)
        assert isinstance(error, ObjectLogError) and error.kind is ErrorKind.UNKNOWN_OUTCOME
        stop_losing()
    # the lost answers were applied once: the record is there, exactly once
    assert read_values(log, "t") == [b"first", b"maybe"]
    with log.producer() as fresh:
        assert fresh.send("t", b"next").result().offset == 2


def test_unknown_outcome_resync_continues_the_same_producer(log: ObjectLog) -> None:
    log.create_topic("t")
    faults = FaultInjector()
    state = {"lose": 0}

    def lose(**_: object) -> None:
        if state["lose"] > 0:
            state["lose"] -= 1
            raise __import__("botocore").exceptions.ReadTimeoutError(endpoint_url="http://fault")

    log.metadata.client.meta.events.register("after-call.dynamodb.UpdateItem", lose)
    with log.producer() as producer:
        assert producer.send("t", b"a").result().offset == 0
        state["lose"] = 100
        assert producer.send("t", b"b").exception(timeout=30) is not None
        state["lose"] = 0
        assert producer.send("t", b"c").result().offset == 2
    assert read_values(log, "t") == [b"a", b"b", b"c"]
    del faults


def test_spills_move_refs_into_manifests_and_everything_still_reads_in_order(
    log: ObjectLog,
) -> None:
    log.create_topic("t")
    producers = [log.producer(linger_ms=0) for _ in range(3)]
    errors: list[BaseException] = []

    def produce(index: int) -> None:
        try:
            for i in range(25):
                producers[index].send("t", b"%d-%02d" % (index, i)).result()
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=produce, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for producer in producers:
        producer.close()
    assert not errors
    head = log.metadata.get_head("t", 0)
    assert head is not None and head.manifest_list is not None
    assert len(head.tail) <= TAIL_MAX + 3
    values = read_values(log, "t")
    assert sorted(values) == sorted(b"%d-%02d" % (p, i) for p in range(3) for i in range(25))
    for p in range(3):  # each producer's records stay in its send order
        mine = [v for v in values if v.startswith(b"%d-" % p)]
        assert mine == sorted(mine)
    middle = log.fetch("t", 0, 30, max_records=5)
    assert [r.offset for r in middle.records] == [30, 31, 32, 33, 34]
    assert [r.value for r in middle.records] == values[30:35]


@pytest.mark.parametrize("idempotent", [True, False])
def test_sixteen_producers_on_one_partition_lose_and_duplicate_nothing(
    log: ObjectLog, idempotent: bool
) -> None:
    log.create_topic("t")
    per_thread = 40
    results: dict[int, list] = {}

    def produce(index: int) -> None:
        with log.producer(linger_ms=1, enable_idempotence=idempotent) as producer:
            futures = [producer.send("t", b"%02d-%03d" % (index, i)) for i in range(per_thread)]
            results[index] = [
                (f.result().offset, b"%02d-%03d" % (index, i)) for i, f in enumerate(futures)
            ]

    threads = [threading.Thread(target=produce, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    acked = sorted(pair for pairs in results.values() for pair in pairs)
    assert [offset for offset, _ in acked] == list(range(16 * per_thread))
    stored = read_values(log, "t")
    assert stored == [value for _, value in acked]


def test_a_flush_touching_many_topics_and_partitions_is_one_put(log: ObjectLog) -> None:
    for name in ("a", "b"):
        log.create_topic(name, partitions=4)
    puts = []
    log.store.client.meta.events.register("before-call.s3.PutObject", lambda **kw: puts.append(1))
    with log.producer(linger_ms=1000, batch_bytes=1 << 30) as producer:
        futures = [
            producer.send(t, pa.scalar(i).as_py().to_bytes(2, "big"), partition=i % 4)
            for t in "ab"
            for i in range(40)
        ]
        producer.flush()
        [f.result() for f in futures]
    assert len(puts) == 1
    for name in "ab":
        for partition in range(4):
            assert log.offsets(name, partition).latest == 10
