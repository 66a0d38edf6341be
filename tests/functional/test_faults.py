"""The write/read path's invariants (DESIGN.md section 9) under injected faults.

Every test runs against the moto server over real HTTP with faults registered as botocore
event hooks on the log's own clients (tests/faults.py), and reads everything back from
offset 0 to compare with what was acknowledged.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from botocore.exceptions import ReadTimeoutError

from objectlog import ObjectLog
from objectlog.clients.producer import Producer
from objectlog.clock import ManualClock, ulid_time_ms
from objectlog.config import Config
from objectlog.errors import ErrorKind, ObjectLogError, OutOfOrderSequence, TopicExists
from objectlog.format.layout import L0_DIR, l0_key
from objectlog.format.segment import slice_table
from objectlog.services.append import COMMIT_ATTEMPTS, PartitionBatch
from objectlog.stores.metadata import Commit
from tests.faults import (
    FaultInjector,
    both,
    commits,
    fast_retries,
    from_producer,
    l0_objects,
    on_partition,
    read_partition,
)

NOT_ACKNOWLEDGED = (ErrorKind.RETRIABLE, ErrorKind.UNKNOWN_OUTCOME)


def l0_ids(log: ObjectLog) -> set[str]:
    """The ULIDs of every L0 object in the bucket."""
    return {
        info.key.rsplit("/", 1)[1].removesuffix(".l0")
        for info in log.store.list(log.config.prefix + L0_DIR)
    }


def referenced_ids(log: ObjectLog, topic: str, partitions: int = 1) -> set[str]:
    """The objects the index refers to (tail and manifests), over the topic's partitions."""
    ids = set()
    for partition in range(partitions):
        head = log.metadata.get_head(topic, partition)
        assert head is not None
        ids |= {placed.ref.object_id for placed in log.index.all_placed_refs(head)}
    return ids


def batch(log: ObjectLog, topic: str, values: list[bytes], sequence: int) -> PartitionBatch:
    table = slice_table(topic, 0, [None] * len(values), values, [1000] * len(values), 0)
    return PartitionBatch(log.topic(topic), 0, table, sequence)


def without_backoff(producer: Producer) -> Producer:
    """Skip the appender's sleeps between commit attempts (tests that exhaust them)."""
    producer.appender.sleep = lambda seconds: None
    return producer


def sent(producer: Producer, topic: str, value: bytes, partition: int = 0) -> int:
    """Send one record, flush, and return its acknowledged offset."""
    future = producer.send(topic, value, partition=partition)
    producer.flush()
    return future.result(timeout=30).offset


# ---- invariants 1-3 without faults -------------------------------------------------------


def test_a_flush_across_topics_and_partitions_is_one_put_and_one_commit_per_partition(
    log: ObjectLog,
) -> None:
    topics = {"alpha": 5, "beta": 3, "gamma": 1}
    for name, partitions in topics.items():
        log.create_topic(name, partitions=partitions)
    faults = FaultInjector()
    puts = faults.watch(log.store.client, "PutObject")
    updates = faults.watch(log.metadata.client, "UpdateItem")
    expected: dict[tuple[str, int], list[bytes]] = {}
    with log.producer(linger_ms=10_000) as producer:
        futures = []
        for i in range(3):
            for name, partitions in topics.items():
                for partition in range(partitions):
                    value = b"%s/%d/%d" % (name.encode(), partition, i)
                    expected.setdefault((name, partition), []).append(value)
                    futures.append(
                        (name, partition, value, producer.send(name, value, partition=partition))
                    )
        producer.flush()
        acked = [(n, p, v, f.result(timeout=30)) for n, p, v, f in futures]
    assert puts.injected == 1, "the flush must be one PutObject"
    # one commit per touched partition, and each topic's activity item touched once
    # (services.activity: this process's first commit to the topic)
    assert log.activity.touches == len(topics)
    commits = updates.injected - log.activity.touches
    assert commits == sum(topics.values()), "one commit per touched partition"
    assert len(l0_ids(log)) == 1
    for name, partition, value, metadata in acked:
        assert (metadata.topic, metadata.partition) == (name, partition)
        assert expected[(name, partition)][metadata.offset] == value
    for (name, partition), values in expected.items():
        assert read_partition(log, name, partition) == values
        assert log.offsets(name, partition).latest == 3


def test_a_retried_commit_with_the_same_producer_and_sequence_writes_nothing(
    log: ObjectLog,
) -> None:
    topic = log.create_topic("t")
    appender = log.new_appender()
    first = appender.append([batch(log, "t", [b"a", b"b"], sequence=0)], "p1")[0]
    again = appender.append([batch(log, "t", [b"a", b"b"], sequence=0)], "p1")[0]
    assert (first.base_offset, first.duplicate, first.error) == (0, False, None)
    assert (again.base_offset, again.duplicate, again.error) == (0, True, None)
    head = log.metadata.get_head("t", 0)
    assert head is not None
    assert (head.next_offset, len(head.tail)) == (2, 1)

    # The same on the metadata store itself: a second commit of sequence 0 by p1, even of
    # another ref, answers with the original base and leaves the high watermark alone.
    ref = head.tail[0]
    for _ in range(2):
        result = log.metadata.commit(
            Commit(topic.topic_id, "t", 0, ref, ulid_time_ms(ref.object_id), "p1", 0, now_s=0)
        )
        assert (result.base_offset, result.duplicate) == (0, True)
    head = log.metadata.get_head("t", 0)
    assert head is not None and (head.next_offset, len(head.tail)) == (2, 1)
    assert head.producers["p1"].sequence == 0 and head.producers["p1"].base_offset == 0

    # The next sequence appends; one that skips ahead is refused and stores nothing.
    nxt = appender.append([batch(log, "t", [b"c"], sequence=1)], "p1")[0]
    assert (nxt.base_offset, nxt.duplicate) == (2, False)
    skipped = appender.append([batch(log, "t", [b"d"], sequence=5)], "p1")[0]
    assert isinstance(skipped.error, OutOfOrderSequence)
    # Another producer's sequence 0 is its own.
    other = appender.append([batch(log, "t", [b"e"], sequence=0)], "p2")[0]
    assert (other.base_offset, other.duplicate) == (3, False)
    assert read_partition(log, "t") == [b"a", b"b", b"c", b"e"]
    appender.close()


# ---- lost answers, crashes, the GC horizon -----------------------------------------------


@pytest.mark.parametrize("in_sdk", [False, True], ids=["after-botocore", "inside-botocore"])
@pytest.mark.parametrize("operation", ["UpdateItem", "PutObject"])
def test_a_call_applied_but_whose_answer_was_lost_is_retried_to_the_original_offsets(
    log: ObjectLog, operation: str, in_sdk: bool
) -> None:
    """After botocore: its retries are spent. Inside botocore: its retry handler would send
    the call again, and a resent commit fails its condition against its own first attempt."""
    log.create_topic("t", partitions=2)
    faults = FaultInjector()
    lose = faults.lose_answer_in_sdk if in_sdk else faults.lose_answer
    with log.producer(linger_ms=10_000) as producer:
        assert sent(producer, "t", b"before") == 0
        if operation == "UpdateItem":
            lost = lose(log.metadata.client, operation, times=1, when=commits)
        else:
            lost = lose(log.store.client, operation, times=1, when=l0_objects)
        futures = [producer.send("t", b"v%d" % i, partition=i % 2) for i in range(6)]
        producer.flush()
        got = [(f.result(timeout=30).partition, f.result().offset) for f in futures]
    assert lost.injected == 1
    assert got == [(0, 1), (1, 0), (0, 2), (1, 1), (0, 3), (1, 2)]
    assert read_partition(log, "t", 0) == [b"before", b"v0", b"v2", b"v4"]
    assert read_partition(log, "t", 1) == [b"v1", b"v3", b"v5"]
    for partition, segments in ((0, 2), (1, 1)):  # each flush's ref landed once
        head = log.metadata.get_head("t", partition)
        assert head is not None and len(head.tail) == segments
    assert len(l0_ids(log)) == 2  # the retried PUT found its own object (If-None-Match)


def test_a_topic_whose_creation_answer_was_lost_is_created_once(log: ObjectLog) -> None:
    """The topic's PutItem lands, its answer is lost and the put is sent again: the repeat
    finds the first write, which carries this topic's id, so the topic is created (not
    "already exists"); another create of the name is still refused."""
    faults = FaultInjector()
    topic_items = lambda params: str(params["Item"]["pk"]["S"]).startswith("topic#")  # noqa: E731
    lost = faults.lose_answer(log.metadata.client, "PutItem", times=1, when=topic_items)
    log.create_topic("t", partitions=2)
    assert lost.injected == 1
    topic = log.metadata.get_topic("t")
    assert topic is not None and topic.partitions == 2
    with pytest.raises(TopicExists):
        log.create_topic("t")


def test_a_commit_whose_answer_botocore_lost_is_not_resent_without_a_producer_id(
    log: ObjectLog,
) -> None:
    """Without idempotence nothing tells a resent commit from a new one: botocore's retry
    handler would send it again and append the batch twice. The send fails with an unknown
    outcome instead (its batch is in the log once), as Kafka's producer reports a timeout."""
    log.create_topic("t")
    faults = FaultInjector()
    with log.producer(linger_ms=0, enable_idempotence=False) as producer:
        assert sent(producer, "t", b"before") == 0
        lost = faults.lose_answer_in_sdk(log.metadata.client, "UpdateItem", times=1, when=commits)
        future = producer.send("t", b"once")
        producer.flush()
        with pytest.raises(ObjectLogError) as failed:
            future.result(timeout=30)
        assert failed.value.kind == ErrorKind.UNKNOWN_OUTCOME
        assert sent(producer, "t", b"after") == 2
    assert lost.injected == 1
    assert read_partition(log, "t") == [b"before", b"once", b"after"]


def test_a_lost_answer_retried_after_other_commits_returns_its_own_offsets(
    log: ObjectLog,
) -> None:
    """The retry finds the head moved on by another producer; the base it reports is the one
    its first attempt got, recorded with its sequence, not the current high watermark."""
    log.create_topic("t")
    faults = FaultInjector()
    with log.producer() as first, log.producer() as second:
        mine = both(commits, from_producer(first.producer_id))
        held = faults.pause(log.metadata.client, "UpdateItem", after=True, when=mine)
        lost = faults.lose_answer(log.metadata.client, "UpdateItem", times=1, when=mine)
        try:
            futures = [first.send("t", b"a%d" % i) for i in range(3)]
            assert held.wait_reached(), "the first producer never committed"
            assert [sent(second, "t", b"b%d" % i) for i in range(2)] == [3, 4]
        finally:
            held.release()
        assert [f.result(timeout=30).offset for f in futures] == [0, 1, 2]
        assert lost.injected == 1
    assert read_partition(log, "t") == [b"a0", b"a1", b"a2", b"b0", b"b1"]


@pytest.mark.parametrize("unexpected", [False, True], ids=["connection-lost", "exception"])
def test_a_crash_after_the_put_and_before_the_commit_acknowledges_and_exposes_nothing(
    log: ObjectLog, unexpected: bool
) -> None:
    log.create_topic("t")
    faults = FaultInjector()
    with without_backoff(log.producer()) as producer:
        acked = [producer.send("t", b"ok%d" % i) for i in range(3)]
        producer.flush()
        assert [f.result(timeout=30).offset for f in acked] == [0, 1, 2]
        crash = faults.crash_before(
            log.metadata.client,
            "UpdateItem",
            when=commits,
            error=(lambda: RuntimeError("the process died")) if unexpected else None,
        )
        doomed = [producer.send("t", b"never%d" % i) for i in range(2)]
        producer.flush()
        for future in doomed:
            error = future.exception(timeout=30)
            assert isinstance(error, ObjectLogError) and error.kind in NOT_ACKNOWLEDGED
            with pytest.raises(ObjectLogError):
                future.result()
        # every attempt of the flush crashed (an unexpected error is not retried)
        assert crash.injected == (1 if unexpected else COMMIT_ATTEMPTS)
        crash.off()
        assert sent(producer, "t", b"after") == 3
    assert read_partition(log, "t") == [b"ok0", b"ok1", b"ok2", b"after"]
    head = log.metadata.get_head("t", 0)
    assert head is not None and (head.next_offset, len(head.tail)) == (4, 2)
    # The crashed flush's object is on S3, unreferenced and newer than the GC horizon
    # (invariant 7): the collector's to delete.
    [orphan] = l0_ids(log) - referenced_ids(log, "t")
    assert ulid_time_ms(orphan) > head.gc_horizon


def test_a_crash_on_one_partition_of_a_flush_does_not_duplicate_or_lose_the_others(
    log: ObjectLog,
) -> None:
    """Partition 0 commits and partition 1 crashes in the same flush; the producer cannot
    know which landed, so its next flush must not reuse partition 0's sequence (the head
    would call it a duplicate and acknowledge new records at old offsets)."""
    log.create_topic("t", partitions=2)
    faults = FaultInjector()
    with log.producer(linger_ms=10_000) as producer:
        crash = faults.crash_before(
            log.metadata.client,
            "UpdateItem",
            when=both(commits, on_partition(1)),
            error=lambda: RuntimeError("the process died"),
        )
        first = [producer.send("t", b"a%d" % p, partition=p) for p in (0, 1)]
        producer.flush()
        for future in first:
            error = future.exception(timeout=30)
            assert isinstance(error, ObjectLogError) and error.kind in NOT_ACKNOWLEDGED
        assert crash.injected == 1
        crash.off()
        second = [producer.send("t", b"b%d" % p, partition=p) for p in (0, 1)]
        producer.flush()
        offsets = [future.result(timeout=30).offset for future in second]
    # partition 0 kept a0 (its outcome was unknown to the client, and it landed)
    assert read_partition(log, "t", 0) == [b"a0", b"b0"]
    assert read_partition(log, "t", 1) == [b"b1"]
    assert offsets == [1, 0]


def test_a_producer_paused_past_the_gc_horizon_cannot_commit_a_deleted_object(
    log_config: Config,
) -> None:
    clock = ManualClock()
    with ObjectLog(log_config, clock=clock) as log:
        log.ensure_resources()
        log.create_topic("t")
        faults = FaultInjector()
        pause = faults.pause(log.metadata.client, "UpdateItem", when=commits)
        with log.producer() as producer:
            future = producer.send("t", b"paused")
            assert pause.wait_reached(), "the producer never got to its commit"
            [uploaded] = l0_ids(log)
            assert ulid_time_ms(uploaded) == clock.now_ms()
            # The collector, while the producer sleeps: raise the horizon past the object,
            # then delete it as unreferenced.
            clock.advance(60_000)
            horizon = ulid_time_ms(uploaded) + 30_000
            log.metadata.raise_gc_horizon("t", 0, horizon)
            log.store.delete_many([l0_key(log.config.prefix, uploaded)])
            assert l0_ids(log) == set()
            pause.release()
            assert future.result(timeout=30).offset == 0
            assert producer.stats.reuploads == 1
        head = log.metadata.get_head("t", 0)
        assert head is not None and head.gc_horizon == horizon
        assert head.next_offset == 1 and len(head.tail) == 1
        [ref] = head.tail
        assert ref.object_id != uploaded
        assert ulid_time_ms(ref.object_id) == clock.now_ms() > horizon
        assert l0_ids(log) == {ref.object_id} == referenced_ids(log, "t")
        assert read_partition(log, "t") == [b"paused"]


# ---- throttling --------------------------------------------------------------------------


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    fast_retries(monkeypatch)
    yield


@pytest.mark.usefixtures("quick_retries")
def test_slowdowns_and_throttling_on_a_third_of_calls_are_retried_to_exactly_once(
    log: ObjectLog,
) -> None:
    partitions, count = 4, 2000
    log.create_topic("t", partitions=partitions)
    faults = FaultInjector(seed=20240611)
    for operation in ("PutObject", "GetObject"):
        faults.throttle(log.store.client, operation, share=0.3)
    for operation in ("UpdateItem", "GetItem"):
        faults.throttle(log.metadata.client, operation, share=0.3)
    # and some commits land with their answer lost, which the retries must not duplicate
    faults.lose_answer(log.metadata.client, "UpdateItem", share=0.1, when=commits)

    with log.producer(linger_ms=2, batch_bytes=50 * 70) as producer:
        futures = [producer.send("t", b"%06d" % i, partition=i % partitions) for i in range(count)]
        acked = [future.result(timeout=60) for future in futures]
    for partition in range(partitions):
        offsets = [md.offset for md in acked if md.partition == partition]
        assert offsets == list(range(count // partitions))
        values = read_partition(log, "t", partition, max_records=64)
        assert values == [b"%06d" % i for i in range(partition, count, partitions)]
    for kind in (
        "throttle:PutObject",
        "throttle:GetObject",
        "throttle:UpdateItem",
        "throttle:GetItem",
        "lost-answer:UpdateItem",
    ):
        assert faults.counts[kind] > 0, f"no {kind} was injected: {faults.counts}"


# ---- unknown outcomes --------------------------------------------------------------------


@pytest.mark.parametrize("landed", [True, False], ids=["landed", "never-arrived"])
def test_a_commit_whose_outcome_stays_unknown_is_reported_and_the_producer_resyncs(
    log: ObjectLog, landed: bool
) -> None:
    log.create_topic("t")
    faults = FaultInjector()
    with without_backoff(log.producer()) as producer:
        assert sent(producer, "t", b"first") == 0
        if landed:  # every attempt is applied (the first appends, the rest are duplicates)
            lost = faults.lose_answer(log.metadata.client, "UpdateItem", when=commits)
        else:  # every attempt times out before the service sees it
            lost = faults.crash_before(
                log.metadata.client,
                "UpdateItem",
                when=commits,
                error=lambda: ReadTimeoutError(endpoint_url="http://injected.fault"),
            )
        future = producer.send("t", b"maybe")
        error = future.exception(timeout=30)
        assert isinstance(error, ObjectLogError) and error.kind is ErrorKind.UNKNOWN_OUTCOME
        assert lost.injected == COMMIT_ATTEMPTS
        lost.off()
        # the producer asks the head where its sequence stands and goes on from there
        assert sent(producer, "t", b"next") == (2 if landed else 1)
    expected = [b"first", b"maybe", b"next"] if landed else [b"first", b"next"]
    assert read_partition(log, "t") == expected


@pytest.mark.usefixtures("quick_retries")
def test_an_unknown_outcome_followed_by_throttling_is_still_reported_unknown(
    log: ObjectLog,
) -> None:
    """The first attempt lands but its answer is lost; every retry is then throttled until
    the retries run out. The outcome is unknown, not "unavailable": reporting it as nothing
    happened would let the producer reuse the sequence and have its next record acknowledged
    at the offsets of this one."""
    log.create_topic("t")
    faults = FaultInjector()
    with without_backoff(log.producer()) as producer:
        assert sent(producer, "t", b"first") == 0
        lost = faults.lose_answer(log.metadata.client, "UpdateItem", times=1, when=commits)
        throttled = faults.throttle(
            log.metadata.client,
            "UpdateItem",
            when=lambda params: lost.injected > 0 and commits(params),
        )
        future = producer.send("t", b"maybe")
        error = future.exception(timeout=30)
        assert isinstance(error, ObjectLogError) and error.kind is ErrorKind.UNKNOWN_OUTCOME
        assert lost.injected == 1 and throttled.injected >= COMMIT_ATTEMPTS - 1
        throttled.off()
        assert sent(producer, "t", b"next") == 2
    assert read_partition(log, "t") == [b"first", b"maybe", b"next"]


def test_without_idempotence_a_lost_commit_answer_is_reported_not_retried_into_a_duplicate(
    log: ObjectLog,
) -> None:
    log.create_topic("t")
    faults = FaultInjector()
    with log.producer(enable_idempotence=False) as producer:
        assert sent(producer, "t", b"first") == 0
        lost = faults.lose_answer(log.metadata.client, "UpdateItem", times=1, when=commits)
        future = producer.send("t", b"maybe")
        error = future.exception(timeout=30)
        assert isinstance(error, ObjectLogError) and error.kind is ErrorKind.UNKNOWN_OUTCOME
        assert lost.injected == 1
        assert sent(producer, "t", b"next") == 2
    assert read_partition(log, "t") == [b"first", b"maybe", b"next"]


@pytest.mark.parametrize("carried", [True, False], ids=["carried", "on-its-own"])
def test_a_spill_whose_answer_was_lost_does_not_fail_the_acknowledged_records(
    log: ObjectLog, carried: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by objectlog verify: the spill after a commit let a raw ReadTimeoutError escape,
    which failed the futures of records that were committed. A carried spill's lost answer
    is a commit's: the retry finds its sequence landed."""
    from objectlog.services import index as index_module
    from tests.faults import carried_spills, spills

    if not carried:  # the producer never carries: its spills are the ones made on their own
        monkeypatch.setattr(index_module, "CARRY_AT_REFS", 10**6)
        monkeypatch.setattr(index_module, "CARRY_AT_BYTES", 10**6)
    log.create_topic("t")
    faults = FaultInjector()
    if carried:  # twice: the commit and its first retry (each retry carries the spill too)
        faults.lose_answer(log.metadata.client, "UpdateItem", times=2, when=carried_spills)
    else:
        faults.lose_answer(log.metadata.client, "UpdateItem", when=spills)
    with log.producer(linger_ms=0) as producer:
        futures = []
        for i in range(40):
            futures.append(producer.send("t", b"%d" % i, partition=0))
            producer.flush()
    assert faults.injected("lost-answer") > 0
    assert [f.result().offset for f in futures] == list(range(40))
    assert read_partition(log, "t") == [b"%d" % i for i in range(40)]
    faults.remove()
