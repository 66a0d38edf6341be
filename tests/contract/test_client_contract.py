"""The client contract (objectlog.clients.contract.LogClient), checked on every transport.

Each test runs once per entry of TRANSPORTS: the direct client (S3 and DynamoDB, here the
embedded moto server) and the HTTP client (the same deployment through the local API
Gateway). A user who switches transports must see the same records, offsets and errors, so
every test states one expectation and every transport must meet it. A new transport (the
Kafka agent, REST Proxy) joins with one entry in TRANSPORTS. What no client can do (move the
log start by compaction) is done on the deployment behind the clients, the ``log`` fixture.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest

from objectlog import ObjectLog, Offsets
from objectlog.clients.contract import LogClient
from objectlog.compaction.maintenance import compactor_for
from objectlog.config import Config
from objectlog.errors import (
    GroupNotFound,
    InvalidConfig,
    InvalidRequest,
    InvalidTopicName,
    ObjectLogError,
    OffsetOutOfRange,
    PolicyViolation,
    RecordTooLarge,
    TopicExists,
    TopicNotFound,
    UnknownMemberId,
    UnknownPartition,
)
from objectlog.format.partitioner import partition_for_key
from objectlog.format.topics import CREATE_TIME, TIMESTAMP_TYPES
from objectlog.groups import TopicPartition
from objectlog.services.fetch import FetchRequest
from objectlog.tools.gateway import local_api
from tests.faults import FaultInjector, commits
from tests.functional import test_read_committed as rc

T0 = 1_700_000_000_000  # a fixed CreateTime for records whose timestamps the test compares


@dataclass
class Transport:
    """A client of one deployment, and how to lose one produce answer on the way to it."""

    client: LogClient
    # Let the next produce land but lose its answer; returns a count of answers lost so far.
    lose_one_produce_answer: Callable[[], Callable[[], int]]


@contextmanager
def direct(log: ObjectLog) -> Iterator[Transport]:
    """ObjectLog itself, on S3 and DynamoDB; a lost answer is a head commit's UpdateItem."""
    faults = FaultInjector()

    def lose_one() -> Callable[[], int]:
        fault = faults.lose_answer(log.metadata.client, "UpdateItem", times=1, when=commits)
        return lambda: fault.injected

    try:
        yield Transport(log, lose_one)
    finally:
        faults.remove()


@contextmanager
def http(log: ObjectLog) -> Iterator[Transport]:
    """HttpObjectLog through a local API Gateway serving the deployment; a lost answer is a
    502 after the produce function ran."""
    gateway = local_api(lambda: log)
    produce = gateway.targets["produce"]
    lost = {"armed": 0, "count": 0}

    def answer(event: dict[str, Any], context: Any) -> Any:
        result = produce(event, context)
        if lost["armed"] and event["rawPath"].endswith("/records"):
            lost["armed"] -= 1
            lost["count"] += 1
            return {"statusCode": 502, "body": json.dumps({"message": "Bad Gateway"})}
        return result

    def lose_one() -> Callable[[], int]:
        lost["armed"] += 1
        return lambda: lost["count"]

    gateway.targets["produce"] = answer
    url = gateway.start(port=0)
    try:
        with ObjectLog.connect(api_url=url) as client:
            yield Transport(client, lose_one)
    finally:
        gateway.stop()


# Every transport, by the id its tests run under: a function of the deployment (the direct
# ObjectLog on the embedded stack) to a context holding the transport's client of it.
TRANSPORTS: dict[str, Callable[[ObjectLog], AbstractContextManager[Transport]]] = {
    "direct": direct,
    "http": http,
}


@pytest.fixture(params=list(TRANSPORTS))
def transport(request: pytest.FixtureRequest, log: ObjectLog) -> Iterator[Transport]:
    """A fresh deployment (``log``), reached through each transport in turn."""
    with TRANSPORTS[request.param](log) as opened:
        yield opened


@pytest.fixture
def client(transport: Transport) -> LogClient:
    return transport.client


@pytest.fixture(scope="module", params=list(TRANSPORTS))
def shared_client(request: pytest.FixtureRequest, aws_endpoint: str) -> Iterator[LogClient]:
    """One deployment per transport for the checks that change nothing: topic t of two
    partitions, one record in partition 0."""
    suffix = uuid.uuid4().hex[:12]
    config = Config.from_env(bucket=f"objectlog-test-{suffix}", table=f"objectlog-test-{suffix}")
    with ObjectLog(config) as log:
        log.ensure_resources()
        log.create_topic("t", partitions=2)
        with log.producer() as producer:
            producer.send("t", b"one", partition=0)
        with TRANSPORTS[request.param](log) as opened:
            yield opened.client


def raised(call: Callable[[], object]) -> ObjectLogError:
    """The objectlog error the call raised (failing the test if it raised none)."""
    with pytest.raises(ObjectLogError) as caught:
        call()
    return caught.value


def values(client: LogClient, topic: str, partition: int = 0, offset: int = 0) -> list[Any]:
    return [r.value for r in client.fetch(topic, partition, offset, max_records=10_000).records]


# ---- topics ------------------------------------------------------------------------------


def test_topic_lifecycle(client: LogClient) -> None:
    created = client.create_topic("orders", partitions=2, config={"retention.ms": 60_000})
    assert (created.name, created.partitions) == ("orders", 2)
    assert created.config.get("retention.ms") == "60000"
    assert type(raised(lambda: client.create_topic("orders"))) is TopicExists
    client.create_topic("payments")
    assert client.list_topics() == ["orders", "payments"]

    described = client.describe_topic("orders")
    assert described.topic.topic_id == created.topic_id == client.topic("orders").topic_id
    assert [(p.partition, p.log_start_offset, p.high_watermark) for p in described.partitions] == [
        (0, 0, 0),
        (1, 0, 0),
    ]

    altered = client.alter_topic_config(
        "orders", set={"cleanup.policy": "compact"}, delete=["retention.ms"]
    )
    assert altered.config.overrides == {"cleanup.policy": "compact"}
    assert altered.config.get("retention.ms") == "604800000"  # back to the default
    assert client.topic("orders").config.compacted  # the cached topic was refreshed

    grown = client.add_partitions("orders", 3)
    assert grown.partitions == 3 == client.topic("orders").partitions
    assert [p.partition for p in client.describe_topic("orders").partitions] == [0, 1, 2]

    client.delete_topic("orders")
    assert client.list_topics() == ["payments"]
    for call in (
        lambda: client.describe_topic("orders"),
        lambda: client.topic("orders"),
        lambda: client.delete_topic("orders"),
    ):
        assert type(raised(call)) is TopicNotFound

    recreated = client.create_topic("orders")
    assert recreated.topic_id != created.topic_id and recreated.partitions == 1
    assert client.offsets("orders", 0) == Offsets(earliest=0, latest=0, last_stable=0)


def test_a_topic_deleted_elsewhere_is_not_served_from_the_cache(
    client: LogClient, log: ObjectLog
) -> None:
    client.create_topic("t")
    assert client.topic("t").partitions == 1  # now cached
    log.delete_topic("t")
    assert type(raised(lambda: client.topic("t", fresh=True))) is TopicNotFound
    assert type(raised(lambda: client.topic("t"))) is TopicNotFound  # forgotten, not stale
    log.create_topic("t", partitions=2)
    assert client.topic("t").partitions == 2


# ---- produce and fetch -------------------------------------------------------------------


def test_produced_records_are_fetched_as_sent_at_consecutive_offsets(client: LogClient) -> None:
    client.create_topic("t", partitions=3)
    sent = [
        (b"k%d" % (i % 7), b"v%d" % i, [("i", b"%d" % i), ("dup", None)], T0 + i) for i in range(30)
    ]
    with client.producer() as producer:
        futures = [
            producer.send("t", value, key=key, headers=headers, timestamp_ms=ts)
            for key, value, headers, ts in sent
        ]
        null = producer.send("t", None, key=None, partition=1, timestamp_ms=T0)
        metadata = [f.result(timeout=30) for f in futures]
        null_at = null.result(timeout=30)

    # Keys pick partitions by Kafka's murmur2, the same on every transport.
    assert [md.partition for md in metadata] == [partition_for_key(k, 3) for k, *_ in sent]
    landed = {(md.partition, md.offset): sent[i] for i, md in enumerate(metadata)}
    for partition in range(3):
        result = client.fetch("t", partition, 0)
        records = result.records
        assert [r.offset for r in records] == list(range(len(records)))
        assert result.next_offset == result.high_watermark == len(records)
        assert result.log_start_offset == 0
        for record in records:
            if (partition, record.offset) == (null_at.partition, null_at.offset):
                assert (record.key, record.value, record.headers) == (None, None, [])
                continue
            key, value, headers, ts = landed[(partition, record.offset)]
            assert (record.topic, record.key, record.value) == ("t", key, value)
            assert (record.headers, record.timestamp) == (headers, ts)
            assert record.timestamp_type == TIMESTAMP_TYPES[CREATE_TIME]
    assert sum(client.offsets("t", p).latest for p in range(3)) == 31


def test_send_table_produces_a_column_batch(client: LogClient) -> None:
    client.create_topic("t", partitions=2)
    table = pa.table({"key": [b"a", b"b", b"a"], "value": [b"1", b"2", b"3"]})
    with client.producer() as producer:
        result = producer.send_table("t", table)
    assert list(result.partitions) == [partition_for_key(k, 2) for k in (b"a", b"b", b"a")]
    for i, (partition, offset) in enumerate(zip(result.partitions, result.offsets, strict=True)):
        record = client.fetch("t", int(partition), int(offset)).records[0]
        assert record.value == table["value"][i].as_py()


def test_fetch_limits_and_the_high_watermark(client: LogClient) -> None:
    client.create_topic("t")
    with client.producer() as producer:
        for i in range(10):
            producer.send("t", b"v%d" % i)
    assert values(client, "t") == [b"v%d" % i for i in range(10)]

    some = client.fetch("t", 0, 2, max_records=3)
    assert [r.offset for r in some.records] == [2, 3, 4]
    assert (some.next_offset, some.high_watermark, some.log_start_offset) == (5, 10, 0)
    assert len(client.fetch("t", 0, 0, max_bytes=1).records) == 1  # at least one record

    started = time.monotonic()
    at_end = client.fetch("t", 0, 10, max_wait_ms=100)
    assert at_end.records == [] and (at_end.next_offset, at_end.high_watermark) == (10, 10)
    assert time.monotonic() - started >= 0.09  # it waited for data that did not come


def test_fetch_many_answers_each_request_in_order(client: LogClient) -> None:
    client.create_topic("a", partitions=2)
    client.create_topic("b")
    with client.producer() as producer:
        for topic, partition, count in (("a", 0, 3), ("a", 1, 2), ("b", 0, 1)):
            for i in range(count):
                value = b"%s%d-%d" % (topic.encode(), partition, i)
                producer.send(topic, value, partition=partition)
    results = client.fetch_many(
        [
            FetchRequest("b", 0, 0),
            FetchRequest("a", 1, 1),
            FetchRequest("a", 0, 0, max_records=2),
        ]
    )
    assert [
        (r.topic, r.partition, [x.value for x in r.records], r.next_offset, r.high_watermark)
        for r in results
    ] == [
        ("b", 0, [b"b0-0"], 1, 1),
        ("a", 1, [b"a1-1"], 2, 2),
        ("a", 0, [b"a0-0", b"a0-1"], 2, 3),
    ]


def test_offsets_and_offset_for_time(client: LogClient) -> None:
    client.create_topic("t")
    assert client.offsets("t", 0) == Offsets(earliest=0, latest=0, last_stable=0)
    assert client.offset_for_time("t", 0, 0) is None
    with client.producer() as producer:
        for ts in (T0, T0 + 1000, T0 + 2000):
            producer.send("t", b"at %d" % ts, timestamp_ms=ts)
            producer.flush()
    assert client.offsets("t", 0) == Offsets(earliest=0, latest=3, last_stable=3)
    found = {ts: client.offset_for_time("t", 0, ts) for ts in (0, T0, T0 + 1, T0 + 2000)}
    assert found == {0: 0, T0: 0, T0 + 1: 1, T0 + 2000: 2}
    assert client.offset_for_time("t", 0, T0 + 2001) is None


def test_an_offset_below_the_log_start_is_out_of_range_naming_it(
    client: LogClient, log: ObjectLog
) -> None:
    client.create_topic("t", config={"retention.ms": 60_000})
    old = int(time.time() * 1000) - 3_600_000
    with client.producer(linger_ms=0) as producer:
        for value, ts in ((b"old0", old), (b"old1", old), (b"new0", None), (b"new1", None)):
            producer.send("t", value, timestamp_ms=ts)
            producer.flush()
    # Retention on the deployment: the compactor drops the old flushes and moves the log start.
    compactor_for(log).compact_partition(log.topic("t", fresh=True), 0)

    assert client.offsets("t", 0) == Offsets(earliest=2, latest=4, last_stable=4)
    assert client.describe_topic("t").partitions[0].log_start_offset == 2
    assert values(client, "t", offset=2) == [b"new0", b"new1"]
    error = raised(lambda: client.fetch("t", 0, 1))
    assert isinstance(error, OffsetOutOfRange)
    assert (error.log_start_offset, error.high_watermark) == (2, 4)
    assert "earliest offset is 2" in error.message
    assert client.offset_for_time("t", 0, 0) == 2


def test_deleted_records_are_gone_for_readers_and_the_log_start_only_moves_forward(
    client: LogClient,
) -> None:
    client.create_topic("t", partitions=2)
    with client.producer(linger_ms=0) as producer:
        for i in range(5):
            producer.send("t", b"v%d" % i, partition=0)
    assert client.delete_records("t", {0: 3, 1: -1}) == {0: 3, 1: 0}
    assert client.offsets("t", 0) == Offsets(earliest=3, latest=5, last_stable=5)
    assert values(client, "t", offset=3) == [b"v3", b"v4"]
    error = raised(lambda: client.fetch("t", 0, 2))
    assert isinstance(error, OffsetOutOfRange)
    assert (error.log_start_offset, error.high_watermark) == (3, 5)
    assert client.delete_records("t", {0: 1}) == {0: 3}  # never back
    assert client.delete_records("t", {0: -1}) == {0: 5}  # to the high watermark
    client.create_topic("keys", config={"cleanup.policy": "compact"})
    refused = raised(lambda: client.delete_records("keys", {0: -1}))
    assert type(refused) is PolicyViolation and refused.kind is PolicyViolation.kind


# ---- errors ------------------------------------------------------------------------------

Call = Callable[[LogClient], object]
BAD_INPUT: list[Any] = [
    pytest.param(lambda c: c.topic("missing"), TopicNotFound, id="topic-unknown"),
    pytest.param(lambda c: c.describe_topic("missing"), TopicNotFound, id="describe-unknown"),
    pytest.param(lambda c: c.delete_topic("missing"), TopicNotFound, id="delete-unknown"),
    pytest.param(
        lambda c: c.alter_topic_config("missing", set={"retention.ms": 1}),
        TopicNotFound,
        id="alter-unknown",
    ),
    pytest.param(lambda c: c.add_partitions("missing", 3), TopicNotFound, id="grow-unknown"),
    pytest.param(lambda c: c.fetch("missing", 0, 0), TopicNotFound, id="fetch-unknown"),
    pytest.param(lambda c: c.offsets("missing", 0), TopicNotFound, id="offsets-unknown"),
    pytest.param(
        lambda c: c.offset_for_time("missing", 0, 0), TopicNotFound, id="offset-for-time-unknown"
    ),
    pytest.param(lambda c: c.fetch("bad/name", 0, 0), InvalidTopicName, id="fetch-bad-name"),
    pytest.param(lambda c: c.describe_topic("bad/name"), InvalidTopicName, id="describe-bad-name"),
    pytest.param(lambda c: c.fetch("t", 2, 0), UnknownPartition, id="fetch-partition-2-of-2"),
    pytest.param(lambda c: c.offsets("t", 2), UnknownPartition, id="offsets-partition-2-of-2"),
    pytest.param(
        lambda c: c.offset_for_time("t", 2, 0), UnknownPartition, id="time-partition-2-of-2"
    ),
    pytest.param(
        lambda c: c.fetch_many([FetchRequest("t", 0, 0), FetchRequest("missing", 0, 0)]),
        TopicNotFound,
        id="fetch-many-unknown",
    ),
    pytest.param(
        lambda c: c.fetch_many([FetchRequest("t", 2, 0)]),
        UnknownPartition,
        id="fetch-many-partition-2-of-2",
    ),
    pytest.param(lambda c: c.fetch("t", -1, 0), InvalidRequest, id="fetch-negative-partition"),
    pytest.param(lambda c: c.offsets("t", -1), InvalidRequest, id="offsets-negative-partition"),
    pytest.param(
        lambda c: c.offset_for_time("t", -1, 0), InvalidRequest, id="time-negative-partition"
    ),
    pytest.param(lambda c: c.fetch("t", 0, -1), InvalidRequest, id="fetch-negative-offset"),
    pytest.param(lambda c: c.fetch("t", 0, 0, max_bytes=0), InvalidRequest, id="max-bytes-0"),
    pytest.param(lambda c: c.fetch("t", 0, 0, max_records=0), InvalidRequest, id="max-records-0"),
    pytest.param(lambda c: c.fetch("t", 0, 0, max_wait_ms=-1), InvalidRequest, id="max-wait-neg"),
    pytest.param(
        lambda c: c.fetch_many([FetchRequest("t", 0, -1)]), InvalidRequest, id="fetch-many-neg"
    ),
    pytest.param(lambda c: c.fetch("t", 0, 2), OffsetOutOfRange, id="offset-past-hw"),
    pytest.param(
        lambda c: c.fetch("t", 0, 0, isolation_level="serializable"),
        InvalidRequest,
        id="fetch-isolation-level",
    ),
    pytest.param(
        lambda c: c.fetch_many([FetchRequest("t", 0, 0, isolation="READ_COMMITTED")]),
        InvalidRequest,
        id="fetch-many-isolation-level",
    ),
    pytest.param(
        lambda c: c.consumer(isolation_level="snapshot"), InvalidRequest, id="consumer-isolation"
    ),
    pytest.param(lambda c: c.create_topic("t"), TopicExists, id="create-existing"),
    pytest.param(lambda c: c.create_topic("bad name"), InvalidTopicName, id="bad-topic-name"),
    pytest.param(lambda c: c.create_topic("u", partitions=0), InvalidRequest, id="0-partitions"),
    pytest.param(
        lambda c: c.create_topic("u", config={"retention.ms": "soon"}),
        InvalidConfig,
        id="create-bad-config-value",
    ),
    pytest.param(
        lambda c: c.create_topic("u", config={"no.such.key": "1"}),
        InvalidConfig,
        id="create-unknown-config-key",
    ),
    pytest.param(
        lambda c: c.alter_topic_config("t", set={"retention.ms": "soon"}),
        InvalidConfig,
        id="alter-bad-config-value",
    ),
    pytest.param(
        lambda c: c.alter_topic_config("t", delete=["no.such.key"]),
        InvalidConfig,
        id="reset-unknown-config-key",
    ),
    pytest.param(lambda c: c.add_partitions("t", 2), InvalidRequest, id="grow-to-same-count"),
    pytest.param(lambda c: c.producer(compression="nope"), InvalidRequest, id="compression"),
    pytest.param(lambda c: c.consumer(auto_offset_reset="x"), InvalidRequest, id="offset-reset"),
    pytest.param(lambda c: c.groups.describe("missing"), GroupNotFound, id="describe-no-group"),
    pytest.param(lambda c: c.groups.delete_group("missing"), GroupNotFound, id="delete-no-group"),
    pytest.param(lambda c: c.groups.join("bad\tgroup", ["t"]), InvalidRequest, id="bad-group-id"),
    pytest.param(lambda c: c.groups.join("g", ["missing"]), TopicNotFound, id="join-no-topic"),
    pytest.param(lambda c: c.groups.heartbeat("g", "nobody"), UnknownMemberId, id="no-member"),
    pytest.param(
        lambda c: c.groups.commit("g", {TopicPartition("t", 2): 0}),
        UnknownPartition,
        id="commit-partition-2-of-2",
    ),
    pytest.param(
        lambda c: c.delete_records("missing", {0: 0}), TopicNotFound, id="delete-records-unknown"
    ),
    pytest.param(
        lambda c: c.delete_records("t", {2: 0}), UnknownPartition, id="delete-records-2-of-2"
    ),
    pytest.param(
        lambda c: c.delete_records("t", {-1: 0}), InvalidRequest, id="delete-records-neg-partition"
    ),
    pytest.param(
        lambda c: c.delete_records("t", {0: 1, 1: 1}),  # partition 1 is empty
        OffsetOutOfRange,
        id="delete-records-past-hw",
    ),
    pytest.param(
        lambda c: c.delete_records("t", {0: 1, 1: -2}),
        OffsetOutOfRange,
        id="delete-records-below-minus-1",
    ),
]


@pytest.mark.parametrize(("call", "expected"), BAD_INPUT)
def test_bad_input_raises_the_same_error_on_every_transport(
    shared_client: LogClient, call: Call, expected: type[ObjectLogError]
) -> None:
    error = raised(lambda: call(shared_client))
    assert type(error) is expected, error
    assert error.kind is expected.kind
    assert error.message


def test_bad_input_changed_nothing(shared_client: LogClient) -> None:
    assert shared_client.list_topics() == ["t"]
    partitions = shared_client.describe_topic("t").partitions
    assert [(p.partition, p.log_start_offset, p.high_watermark) for p in partitions] == [
        (0, 0, 1),
        (1, 0, 0),
    ]
    assert shared_client.groups.list_groups() == []


def test_the_producer_fails_only_the_records_it_cannot_deliver(client: LogClient) -> None:
    client.create_topic("t", config={"max.message.bytes": 1000})
    with client.producer() as producer:
        too_large = producer.send("t", b"x" * 1001)
        headers_too_large = producer.send("t", b"x" * 900, headers=[("h", b"y" * 200)])
        unknown_topic = producer.send("missing", b"v")
        unknown_partition = producer.send("t", b"v", partition=1)
        fine = producer.send("t", b"fine")
        producer.flush()
    for future, expected in (
        (too_large, RecordTooLarge),
        (headers_too_large, RecordTooLarge),
        (unknown_topic, TopicNotFound),
        (unknown_partition, UnknownPartition),
    ):
        error = future.exception(timeout=30)
        assert type(error) is expected and error is not None and error.kind is expected.kind
    assert fine.result(timeout=30).offset == 0
    assert values(client, "t") == [b"fine"]


# ---- consumer groups ---------------------------------------------------------------------


def poll_until(consumer: Any, count: int, timeout_s: float = 20.0) -> list[Any]:
    records: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(records) < count and time.monotonic() < deadline:
        records += consumer.poll(timeout=0.5)
    return records


def test_a_group_member_polls_commits_and_a_successor_resumes(client: LogClient) -> None:
    client.create_topic("t", partitions=2)
    with client.producer() as producer:
        for i in range(10):
            producer.send("t", b"v%d" % i, key=b"k%d" % i)
    partitions = [TopicPartition("t", 0), TopicPartition("t", 1)]
    ends = {tp: client.offsets(*tp).latest for tp in partitions}
    options: dict[str, Any] = {
        "group": "g",
        "topics": ["t"],
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
    }
    with client.consumer(**options) as consumer:
        records = poll_until(consumer, 10)
        assert sorted(r.value for r in records) == sorted(b"v%d" % i for i in range(10))
        assert consumer.assignment() == set(partitions)
        consumer.commit()
        assert consumer.committed(partitions) == {tp: (ends[tp], "") for tp in partitions}
        assert client.groups.committed("g", partitions) == {tp: (ends[tp], "") for tp in partitions}
        described = client.groups.describe("g")
        assert (described.state, len(described.members), described.total_lag) == ("Stable", 1, 0)
    assert client.groups.list_groups() == ["g"]

    with client.producer() as producer:
        producer.send("t", b"after", key=b"k0")
    with client.consumer(**options) as successor:
        assert [r.value for r in poll_until(successor, 1)] == [b"after"]


# ---- isolation levels --------------------------------------------------------------------


def transactions_on(log: ObjectLog) -> dict[str, int]:
    """Topic rc.TOPIC (one partition) written on the deployment with the library's head store
    (no client has a transactional producer): a plain record, an aborted transaction, a
    committed one and an open one; its offsets by name."""
    log.create_topic(rc.TOPIC, 1)
    at = {"plain": rc.write(log, [b"plain"])}
    for producer, commit in (("aborted", False), ("committed", True)):
        rc.begin(log, producer)
        at[producer] = rc.write(log, [producer.encode()], producer)
        rc.end(log, producer, commit=commit)
    at["lso"] = rc.begin(log, "open")
    at["open"] = rc.write(log, [b"open"], "open")
    return at


def test_read_committed_stops_at_the_lso_and_never_returns_an_aborted_record(
    client: LogClient, log: ObjectLog
) -> None:
    at = transactions_on(log)
    hw = at["open"] + 1
    committed = client.fetch(rc.TOPIC, 0, 0, isolation_level="read_committed")
    assert [(r.offset, r.value) for r in committed.records] == [
        (at["plain"], b"plain"),
        (at["committed"], b"committed"),
    ]
    assert (committed.last_stable_offset, committed.high_watermark) == (at["lso"], hw)
    assert committed.next_offset <= at["lso"]  # a marker at the tail is skipped by the next
    uncommitted = client.fetch(rc.TOPIC, 0, 0)  # read_uncommitted, as Kafka's default
    assert [r.value for r in uncommitted.records] == [b"plain", b"aborted", b"committed", b"open"]
    assert (uncommitted.next_offset, uncommitted.last_stable_offset) == (hw, at["lso"])

    started = time.monotonic()
    gap = client.fetch(rc.TOPIC, 0, committed.next_offset, isolation_level="read_committed")
    assert gap.records == [] and gap.next_offset == at["lso"]
    at_lso = client.fetch(rc.TOPIC, 0, at["lso"], isolation_level="read_committed", max_wait_ms=100)
    assert at_lso.records == [] and at_lso.next_offset == at["lso"]
    assert time.monotonic() - started >= 0.09  # below the high watermark, it waited for the LSO
    [many] = client.fetch_many([FetchRequest(rc.TOPIC, 0, 0, isolation="read_committed")])
    assert [r.value for r in many.records] == [b"plain", b"committed"]

    options: dict[str, Any] = {"group": "rc", "topics": [rc.TOPIC], "auto_offset_reset": "earliest"}
    with client.consumer(**options, isolation_level="read_committed") as consumer:
        assert [r.value for r in poll_until(consumer, 2)] == [b"plain", b"committed"]
        assert consumer.poll(timeout=0.3) == []  # the open transaction holds the rest
        rc.end(log, "open", commit=True)
        assert [r.value for r in poll_until(consumer, 1)] == [b"open"]


# ---- idempotent produce ------------------------------------------------------------------


def test_a_produce_whose_answer_was_lost_is_retried_without_duplicates(
    transport: Transport,
) -> None:
    client = transport.client
    client.create_topic("t")
    with client.producer() as producer:
        assert producer.send("t", b"before").result(timeout=30).offset == 0
        lost = transport.lose_one_produce_answer()
        futures = [producer.send("t", b"v%d" % i) for i in range(3)]
        producer.flush()
        assert [f.result(timeout=30).offset for f in futures] == [1, 2, 3]
    assert lost() == 1
    assert values(client, "t") == [b"before", b"v0", b"v1", b"v2"]
