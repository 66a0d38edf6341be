import time
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pytest

from objectlog import FetchRequest, ObjectLog
from objectlog.adapters.aws import USER_AGENT
from objectlog.errors import (
    InvalidRequest,
    InvalidTopicName,
    OffsetOutOfRange,
    RecordTooLarge,
    TopicNotFound,
    UnknownPartition,
)
from objectlog.format.partitioner import partition_for_key


def read_all(log: ObjectLog, topic: str, partition: int) -> list:
    records, offset = [], log.offsets(topic, partition).earliest
    while True:
        result = log.fetch(topic, partition, offset)
        if not len(result):
            return records
        records.extend(result.records)
        offset = result.next_offset


FIELDS = [
    pytest.param(dict(key=b"k", value=b"v", headers=[("h", b"x")]), id="plain"),
    pytest.param(dict(key=None, value=b"v"), id="null-key"),
    pytest.param(dict(key=b"k", value=None), id="null-value-tombstone"),
    pytest.param(dict(key=None, value=None), id="both-null"),
    pytest.param(dict(key=bytes(range(256)), value=b"\x00" * 1000), id="binary"),
    pytest.param(dict(key="ключ", value="значение ✓ 🚀"), id="unicode-str"),
    pytest.param(dict(key=b"k", value=b"v", headers=[]), id="empty-headers"),
    pytest.param(
        dict(key=b"k", value=b"", headers=[("a", b"1"), ("a", b"2"), ("b", None)]), id="dup-headers"
    ),
    pytest.param(dict(key=b"k", value=b"v", headers={"x": b"1", "y": "two"}), id="dict-headers"),
]


@pytest.mark.parametrize("fields", FIELDS)
def test_every_field_round_trips(log: ObjectLog, fields: dict) -> None:
    log.create_topic("t", partitions=1)
    with log.producer() as producer:
        md = producer.send("t", timestamp_ms=1_700_000_000_123, **fields).result()
    assert (md.topic, md.partition, md.offset, md.timestamp) == ("t", 0, 0, 1_700_000_000_123)
    [record] = log.fetch("t", 0, 0).records
    encode = lambda v: v.encode() if isinstance(v, str) else v  # noqa: E731
    assert record.key == encode(fields.get("key"))
    assert record.value == encode(fields.get("value"))
    headers = fields.get("headers") or []
    headers = list(headers.items()) if isinstance(headers, dict) else headers
    assert record.headers == [(k, encode(v)) for k, v in headers]
    assert (record.offset, record.timestamp, record.timestamp_type) == (0, 1_700_000_000_123, 0)


@pytest.mark.emulators
def test_offsets_are_contiguous_from_zero_and_keys_follow_kafkas_partitioner(
    log: ObjectLog,
) -> None:
    log.create_topic("t", partitions=4)
    with log.producer(linger_ms=20) as producer:
        futures = [producer.send("t", b"v%d" % i, key=b"user-%d" % (i % 13)) for i in range(500)]
        metadata = [f.result() for f in futures]
    for i, md in enumerate(metadata):
        assert md.partition == partition_for_key(b"user-%d" % (i % 13), 4)
    for partition in range(4):
        mine = [md.offset for md in metadata if md.partition == partition]
        assert mine == list(range(len(mine)))
        records = read_all(log, "t", partition)
        assert [r.offset for r in records] == mine
    by_offset = {(md.partition, md.offset): i for i, md in enumerate(metadata)}
    for partition in range(4):
        for record in read_all(log, "t", partition):
            assert record.value == b"v%d" % by_offset[(partition, record.offset)]


def test_explicit_partition_wins_and_null_keys_stick_per_flush(log: ObjectLog) -> None:
    log.create_topic("t", partitions=8)
    with log.producer(linger_ms=1000, batch_bytes=1 << 30) as producer:
        explicit = producer.send("t", b"x", key=b"foobar", partition=5)
        nulls = [producer.send("t", b"n%d" % i) for i in range(50)]
        producer.flush()
    assert explicit.result().partition == 5
    assert len({f.result().partition for f in nulls}) == 1


@pytest.mark.emulators
def test_many_topics_and_partitions_in_one_flush(log: ObjectLog) -> None:
    for name in ("a", "b", "c"):
        log.create_topic(name, partitions=3)
    with log.producer(linger_ms=1000, batch_bytes=1 << 30) as producer:
        futures = [
            producer.send(t, b"%s-%d" % (t.encode(), i), partition=i % 3)
            for t in "abc"
            for i in range(30)
        ]
        producer.flush()
        [f.result() for f in futures]
        assert producer.stats.objects_put == 1
    for name in "abc":
        for partition in range(3):
            assert [r.offset for r in read_all(log, name, partition)] == list(range(10))


def test_fetch_limits_and_next_offset(log: ObjectLog) -> None:
    log.create_topic("t")
    with log.producer(linger_ms=0) as producer:
        for batch in range(5):
            futures = [producer.send("t", b"%04d" % (batch * 10 + i)) for i in range(10)]
            producer.flush()
            [f.result() for f in futures]
    limited = log.fetch("t", 0, 7, max_records=5)
    assert [r.offset for r in limited.records] == [7, 8, 9, 10, 11]
    assert limited.next_offset == 12 and limited.high_watermark == 50
    one = log.fetch("t", 0, 20, max_bytes=1)
    assert [r.offset for r in one.records] == [20]  # at least one record, as Kafka does
    assert [r.value for r in log.fetch("t", 0, 45).records] == [b"%04d" % i for i in range(45, 50)]
    at_end = log.fetch("t", 0, 50)
    assert len(at_end) == 0 and at_end.next_offset == 50


@pytest.mark.emulators
def test_out_of_range_names_the_earliest_offset(log: ObjectLog) -> None:
    log.create_topic("t")
    with log.producer() as producer:
        producer.send("t", b"v").result()
    with pytest.raises(OffsetOutOfRange) as error:
        log.fetch("t", 0, 2)
    assert error.value.log_start_offset == 0 and error.value.high_watermark == 1
    assert "earliest offset is 0" in str(error.value)


def test_long_poll_waits_for_data(log: ObjectLog) -> None:
    log.create_topic("t")
    started = time.monotonic()
    assert len(log.fetch("t", 0, 0, max_wait_ms=300)) == 0
    assert time.monotonic() - started >= 0.29

    import threading

    def produce_later() -> None:
        time.sleep(0.2)
        with log.producer() as producer:
            producer.send("t", b"late").result()

    thread = threading.Thread(target=produce_later)
    thread.start()
    started = time.monotonic()
    result = log.fetch("t", 0, 0, max_wait_ms=5000)
    waited = time.monotonic() - started
    thread.join()
    assert [r.value for r in result.records] == [b"late"]
    assert 0.15 < waited < 3


def test_offsets_and_offset_for_time(log: ObjectLog) -> None:
    log.create_topic("t")
    with log.producer(linger_ms=0) as producer:
        for i in range(6):
            producer.send("t", b"v%d" % i, timestamp_ms=1_000 * (i + 1)).result()
    assert log.offsets("t", 0).earliest == 0 and log.offsets("t", 0).latest == 6
    assert log.offset_for_time("t", 0, 0) == 0
    assert log.offset_for_time("t", 0, 3_000) == 2
    assert log.offset_for_time("t", 0, 3_001) == 3
    assert log.offset_for_time("t", 0, 99_000) is None


def test_log_append_time_topics_stamp_records(log: ObjectLog) -> None:
    log.create_topic("t", config={"message.timestamp.type": "LogAppendTime"})
    before = time.time_ns() // 1_000_000
    with log.producer() as producer:
        md = producer.send("t", b"v", timestamp_ms=5).result()
    [record] = log.fetch("t", 0, 0).records
    assert (
        record.timestamp_type == 1
        and record.timestamp >= before
        and md.timestamp == record.timestamp
    )


def test_bad_records_are_rejected_and_nothing_is_stored(log: ObjectLog) -> None:
    log.create_topic("t", partitions=2, config={"max.message.bytes": "100"})
    with log.producer() as producer:
        with pytest.raises(RecordTooLarge):
            producer.send("t", b"x" * 101).result()
        with pytest.raises(UnknownPartition):
            producer.send("t", b"x", partition=2).result()
        with pytest.raises(TopicNotFound):
            producer.send("missing", b"x").result()
        with pytest.raises(InvalidTopicName):
            producer.send("bad name", b"x")
        with pytest.raises(InvalidRequest):
            producer.send("t", 12345)  # type: ignore[arg-type]
        with pytest.raises(InvalidRequest):
            producer.send("t", b"x", partition=-1)
        ok = producer.send("t", b"x" * 100, partition=0).result()
    assert ok.offset == 0
    assert [p.high_watermark for p in log.describe_topic("t").partitions] == [1, 0]


def test_in_one_flush_a_record_that_cannot_be_written_fails_alone(log: ObjectLog) -> None:
    """One delivery across two topics, one missing: a record over max.message.bytes, one for a
    partition the topic lacks and those for the missing topic fail; every other lands in
    order, headers and all, with the partition its key, its argument or stickiness gave it."""
    log.create_topic("a", partitions=2, config={"max.message.bytes": "100"})
    log.create_topic("b", partitions=3)
    with log.producer(linger_ms=60_000) as producer:
        sent = [
            producer.send("a", b"a0", partition=1, headers=[("h", b"1")]),
            producer.send("b", b"b0", key=b"k"),
            producer.send("a", b"x" * 101, partition=0),  # too large
            producer.send("missing", b"m0"),
            producer.send("a", b"a1", partition=2),  # no partition 2
            producer.send("b", b"b1"),  # sticky
            producer.send("a", b"a2", partition=1),
            producer.send("b", b"b2", key=b"k", headers={"x": "y"}),
        ]
        producer.flush()
    failed = {i: future.exception() for i, future in enumerate(sent) if future.exception()}
    assert {i: type(e) for i, e in failed.items()} == {
        2: RecordTooLarge,
        3: TopicNotFound,
        4: UnknownPartition,
    }
    assert "no partition 2" in str(failed[4]) and "max.message.bytes (100)" in str(failed[2])
    landed = {i: future.result() for i, future in enumerate(sent) if i not in failed}
    assert [(landed[i].partition, landed[i].offset) for i in (0, 6)] == [(1, 0), (1, 1)]
    keyed = partition_for_key(b"k", 3)
    assert (landed[1].partition, landed[7].partition) == (keyed, keyed)
    # b1 has no key: the sticky partition, which may be the keyed one (then it sits between)
    between = [b"b1"] if landed[5].partition == keyed else []
    assert [r.value for r in log.fetch("b", keyed, 0).records] == [b"b0", *between, b"b2"]
    assert landed[7].offset == landed[1].offset + 1 + len(between)
    assert [(r.value, r.headers) for r in log.fetch("a", 1, 0).records] == [
        (b"a0", [("h", b"1")]),
        (b"a2", []),
    ]
    assert log.fetch("a", 0, 0).records == []
    stored_b = [r.value for p in range(3) for r in log.fetch("b", p, 0).records]
    assert sorted(stored_b) == [b"b0", b"b1", b"b2"]
    [b2] = [r for r in log.fetch("b", keyed, 0).records if r.value == b"b2"]
    assert b2.headers == [("x", b"y")]


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(offset=-1),
        dict(partition=-1),
        dict(max_bytes=0),
        dict(max_records=0),
        dict(max_wait_ms=-5),
    ],
)
def test_bad_fetch_arguments(log: ObjectLog, kwargs: dict) -> None:
    log.create_topic("t")
    args = dict(partition=0, offset=0) | kwargs
    with pytest.raises(InvalidRequest):
        log.fetch("t", **args)


def test_fetch_unknown_topic_and_partition(log: ObjectLog) -> None:
    log.create_topic("t")
    with pytest.raises(TopicNotFound):
        log.fetch("missing", 0, 0)
    with pytest.raises(UnknownPartition):
        log.fetch("t", 1, 0)


def test_columnar_batch_path(log: ObjectLog) -> None:
    log.create_topic("t", partitions=3)
    count = 3000
    table = pa.table(
        {
            "key": pa.array([b"k%d" % (i % 100) for i in range(count)], pa.binary()),
            "value": pa.array([b"v%d" % i for i in range(count)], pa.binary()),
            "timestamp": pa.array(range(count), pa.int64()),
        }
    )
    with log.producer() as producer:
        result = producer.send_table("t", table)
    assert result.partitions.tolist() == [
        partition_for_key(b"k%d" % (i % 100), 3) for i in range(count)
    ]
    for partition in range(3):
        records = read_all(log, "t", partition)
        rows = [i for i in range(count) if result.partitions[i] == partition]
        assert [r.value for r in records] == [b"v%d" % i for i in rows]
        assert [r.offset for r in records] == sorted(result.offsets[rows].tolist())
        assert [r.timestamp for r in records] == rows


@pytest.mark.emulators
def test_fetch_many_reads_partitions_together(log: ObjectLog) -> None:
    log.create_topic("t", partitions=4)
    with log.producer() as producer:
        for p in range(4):
            for i in range(p + 1):
                producer.send("t", b"%d-%d" % (p, i), partition=p)
        producer.flush()
    results = log.fetch_many([FetchRequest("t", p, 0) for p in range(4)])
    assert [len(r) for r in results] == [1, 2, 3, 4]
    assert [r.records[-1].value for r in results] == [b"0-0", b"1-1", b"2-2", b"3-3"]


def test_without_idempotence_still_round_trips(log: ObjectLog) -> None:
    log.create_topic("t")
    with log.producer(enable_idempotence=False) as producer:
        offsets = [producer.send("t", b"%d" % i).result().offset for i in range(3)]
    assert offsets == [0, 1, 2]
    assert log.metadata.get_head("t", 0).producers == {}


def test_produce_with_on_delivery_callbacks(log: ObjectLog) -> None:
    log.create_topic("t", config={"max.message.bytes": "10"})
    outcomes: list = []
    with log.producer() as producer:
        producer.produce("t", b"ok", on_delivery=lambda err, md: outcomes.append((err, md)))
        producer.produce("t", b"x" * 11, on_delivery=lambda err, md: outcomes.append((err, md)))
        producer.produce("t", b"plain")
        producer.flush()
    ok = next(md for err, md in outcomes if err is None)
    failed = next(err for err, md in outcomes if err is not None)
    assert ok.offset == 0 and isinstance(failed, RecordTooLarge)
    assert [r.value for r in log.fetch("t", 0, 0).records] == [b"ok", b"plain"]


def test_one_producer_shared_by_threads_with_a_tiny_buffer(log: ObjectLog) -> None:
    """Threads that wait for buffer room must not queue the same batch twice."""
    import threading

    log.create_topic("t")
    producer = log.producer(linger_ms=1, batch_bytes=700, buffer_memory=1)
    futures = {}

    def run(thread: int) -> None:
        for i in range(30):
            futures[(thread, i)] = producer.send("t", b"%02d-%03d" % (thread, i))

    threads = [threading.Thread(target=run, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    producer.close()
    acked = sorted((f.result(timeout=30).offset, b"%02d-%03d" % k) for k, f in futures.items())
    values = [r.value for r in read_all(log, "t", 0)]
    assert len(values) == len(set(values)) == 240
    assert acked == list(enumerate(values))


def test_fetch_many_reads_slices_side_by_side_in_one_object_with_one_get(log: ObjectLog) -> None:
    """A flush writes each partition's slice next to the others: a fetch of all of them is
    one ranged GET per object (GETs are billed per request)."""
    log.create_topic("t", partitions=4)
    with log.producer() as producer:
        for flush in range(3):
            for p in range(4):
                producer.send("t", b"%d-%d" % (p, flush), partition=p)
            producer.flush()
    ranges: list[list[tuple[str, int, int]]] = []
    read_many = log.reader.read_many

    def counting(wanted, then=None):  # type: ignore[no-untyped-def]
        ranges.append(list(wanted))
        return read_many(wanted, then)

    log.reader.read_many = counting  # type: ignore[method-assign]
    results = log.fetch_many([FetchRequest("t", p, 0) for p in range(4)])
    assert [[r.value for r in result.records] for result in results] == [
        [b"%d-%d" % (p, flush) for flush in range(3)] for p in range(4)
    ]
    assert len(ranges) == 1 and len(ranges[0]) == 3  # three objects, one GET each
    assert len({key for key, _, _ in ranges[0]}) == 3


def test_the_next_flush_uploads_while_the_previous_one_commits_and_order_holds(
    log: ObjectLog,
) -> None:
    log.create_topic("t", partitions=2)
    events: list[tuple[str, float]] = []
    producer = log.producer(linger_ms=0, batch_bytes=2_000)
    stage, commit = producer.appender.stage, producer.appender.commit_staged

    def slow_commit(staged, producer_id):  # type: ignore[no-untyped-def]
        events.append(("commit start", time.monotonic()))
        time.sleep(0.05)
        outcomes = commit(staged, producer_id)
        events.append(("commit end", time.monotonic()))
        return outcomes

    def timed_stage(batches):  # type: ignore[no-untyped-def]
        events.append(("stage start", time.monotonic()))
        return stage(batches)

    producer.appender.commit_staged = slow_commit  # type: ignore[method-assign]
    producer.appender.stage = timed_stage  # type: ignore[method-assign]
    futures = [producer.send("t", b"%04d" % i, partition=i % 2) for i in range(200)]
    producer.close()
    offsets = [(f.result().partition, f.result().offset) for f in futures]
    for p in range(2):
        assert [o for q, o in offsets if q == p] == list(range(100))
        assert [r.value for r in read_all(log, "t", p)] == [b"%04d" % i for i in range(p, 200, 2)]
    # Some flush was staged while the one before it was still committing.
    committing, overlapped = False, False
    for name, _ in sorted(events, key=lambda event: event[1]):
        committing = {"commit start": True, "commit end": False}.get(name, committing)
        overlapped |= name == "stage start" and committing
    assert overlapped


# 20 s, not the default 1 s: a catch-up on a loaded box can outlast one second
@pytest.mark.parametrize("reuse_ms, head_reads", [(20_000, 2), (0, 6)])
def test_a_catch_up_through_fetch_many_reads_the_head_once_below_the_high_watermark(
    log: ObjectLog, monkeypatch: pytest.MonkeyPatch, reuse_ms: int, head_reads: int
) -> None:
    log.create_topic("heads", partitions=1)
    with log.producer() as producer:
        for flush in range(5):
            producer.send("heads", b"v%d" % flush, partition=0)
            producer.flush()
    reader = ObjectLog(replace(log.config, head_reuse_ms=reuse_ms))
    reads: list[list[int]] = []
    get_heads = reader.metadata.get_heads

    def counted(topic: str, partitions: list[int]) -> dict:
        reads.append(list(partitions))
        return get_heads(topic, partitions)

    monkeypatch.setattr(reader.metadata, "get_heads", counted)
    offset, values = 0, []
    while True:  # one slice per fetch, then one fetch at the tail
        result = reader.fetch_many([FetchRequest("heads", 0, offset, max_bytes=1)])[0]
        values += [r.value for r in result.records]
        if not result.records:
            break
        offset = result.next_offset
    reader.close()
    assert values == [b"v%d" % i for i in range(5)]
    assert len(reads) == head_reads  # reused: the first fetch's head, then the tail's


def test_a_fetch_from_the_earliest_offset_plans_from_the_head_its_lookup_just_read(
    log: ObjectLog,
) -> None:
    """A consumer resetting to the earliest offset looks it up, then fetches: one head read.
    At the high watermark the fetch reads the head again (nothing new waits on a reuse)."""
    log.create_topic("reset", partitions=1)
    with log.producer() as producer:
        producer.send("reset", b"old", partition=0)
    reads: list[str] = []
    log.metadata.client.meta.events.register(
        "before-send.dynamodb", lambda event_name, **_: reads.append(event_name)
    )
    offsets = log.offsets("reset", 0)
    [result] = log.fetch_many([FetchRequest("reset", 0, offsets.earliest)])
    assert [r.value for r in result.records] == [b"old"] and len(reads) == 1
    with log.producer() as producer:
        producer.send("reset", b"new", partition=0)
    reads.clear()
    [tail] = log.fetch_many([FetchRequest("reset", 0, result.next_offset)])
    assert [r.value for r in tail.records] == [b"new"] and len(reads) == 1


def test_every_aws_request_carries_objectlogs_fixed_user_agent(log: ObjectLog) -> None:
    """botocore rebuilds its standard User-Agent twice a request unless the config gives one;
    every client objectlog builds (S3, DynamoDB) gives one."""
    sent: dict[str, set[str]] = {}

    def record(request: Any, event_name: str, **_: Any) -> None:
        agent = request.headers["User-Agent"]
        agent = agent.decode() if isinstance(agent, bytes) else agent
        sent.setdefault(event_name.rsplit(".", 1)[-1], set()).add(agent)

    for client in (log.store.client, log.metadata.client):
        client.meta.events.register("before-send", record)
    log.create_topic("agents", partitions=2)
    with log.producer() as producer:
        for i in range(20):
            producer.send("agents", b"v%d" % i, partition=0)
            if i == 9:
                producer.flush()  # two objects: the fetch reads them concurrently
    assert len(log.fetch("agents", 0, 0)) == 20
    assert {"PutObject", "UpdateItem", "GetObject"} <= set(sent)  # each client was used
    agents = {agent for agents in sent.values() for agent in agents}
    assert agents and all(agent.startswith(f"{USER_AGENT} ") for agent in agents), agents
    assert USER_AGENT.startswith("objectlog/")
