"""Carried spills (issue 18): a writer that knows a head is close to spilling puts the new
manifest list at the end of its next flush's L0 object and moves the refs in that flush's
commit, so spills cost no request of their own and a head stays under one write unit."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.clock import ManualClock
from objectlog.compaction.compactor import CompactionSettings
from objectlog.compaction.maintenance import collector_for, run_maintenance
from objectlog.config import Config
from objectlog.format.layout import INDEX_DIR, L0_DIR, location_key, parse_location
from objectlog.format.segment import slice_table
from objectlog.services.append import PartitionBatch
from objectlog.services.index import CARRY_AT_BYTES
from objectlog.stores.metadata import KafkaSequence

PARTITIONS = 4
FLUSHES = 60
RECORDS = 8  # per partition per flush


def count_puts(log: ObjectLog) -> Counter[str]:
    """PutObject calls on the log's S3 client, by directory below the prefix."""
    puts: Counter[str] = Counter()

    def counted(params: dict[str, Any], **_: Any) -> None:
        puts[params["Key"][len(log.config.prefix) :].split("/", 1)[0]] += 1

    log.store.client.meta.events.register("before-parameter-build.s3.PutObject", counted)  # type: ignore[attr-defined]
    return puts


def count_commit_answers(log: ObjectLog) -> list[str]:
    """What each commit UpdateItem asked back (ReturnValues), in order."""
    answers: list[str] = []

    def counted(params: dict[str, Any], **_: Any) -> None:
        if params["Key"]["sk"] == {"S": "head"} and "#next + :span" in params["UpdateExpression"]:
            answers.append(params.get("ReturnValues", "NONE"))

    log.metadata.client.meta.events.register("before-parameter-build.dynamodb.UpdateItem", counted)
    return answers


def read_all(log: ObjectLog, topic: str, partition: int) -> list[tuple[int, bytes | None]]:
    rows, offset = [], 0
    while True:
        result = log.fetch(topic, partition, offset, max_bytes=2 << 10)
        rows += [(r.offset, r.value) for r in result.records]
        if result.next_offset >= result.high_watermark:
            return rows
        offset = result.next_offset


def test_a_producers_spills_ride_in_its_flushes_made_on_the_heads_it_knows(
    log: ObjectLog,
) -> None:
    """Spills ride in the flushes; and once the producer has committed twice in a row to a
    partition (no other writer between), it commits on the head its last commit answered,
    spills carried or not, so DynamoDB answers nothing: only those first two commits of each
    partition read the head back."""
    log.create_topic("carried", partitions=PARTITIONS)
    puts = count_puts(log)
    answers = count_commit_answers(log)
    with log.producer(linger_ms=1000, batch_bytes=1 << 30) as producer:
        for flush in range(FLUSHES):
            for partition in range(PARTITIONS):
                for n in range(RECORDS):
                    producer.send("carried", b"%d-%d" % (flush, n), partition=partition)
            producer.flush()
        stats = producer.stats
    assert stats.spills == stats.carried_spills >= PARTITIONS * (FLUSHES // 8)
    assert puts == {L0_DIR.rstrip("/"): FLUSHES}  # no index object of its own
    assert answers.count("ALL_NEW") == 2 * PARTITIONS
    assert answers.count("NONE") == FLUSHES * PARTITIONS - 2 * PARTITIONS
    for partition in range(PARTITIONS):
        head = log.metadata.get_head("carried", partition)
        assert head is not None and head.manifest_list
        key, start, _ = parse_location(head.manifest_list)
        assert start is not None and key.startswith(log.config.prefix + L0_DIR)
        assert 0 < head.item_bytes < CARRY_AT_BYTES + 256  # one write unit per commit
        expected = [
            (flush * RECORDS + n, b"%d-%d" % (flush, n))
            for flush in range(FLUSHES)
            for n in range(RECORDS)
        ]
        assert read_all(log, "carried", partition) == expected


def batch(log: ObjectLog, topic: str, values: list[bytes], sequence: int = 0) -> PartitionBatch:
    info = log.topic(topic)
    table = slice_table(topic, 0, [None] * len(values), values, [1] * len(values), 0)
    return PartitionBatch(info, 0, table, sequence)


def test_a_carried_spill_that_lost_its_head_is_committed_without_it(log: ObjectLog) -> None:
    """Another writer appends between the plan and the commit: the commit's condition fails
    on the tail's length, and the flush is committed again without the spill."""
    log.create_topic("raced", partitions=1)
    ours, theirs = log.new_appender(), log.new_appender()
    for n in range(8):  # ours learns a head close to spilling
        [done] = ours.append([batch(log, "raced", [b"a%d" % n], n)], "ours")
        assert done.error is None
    staged = ours.stage([batch(log, "raced", [b"a8"], 8)])
    assert staged.carried  # planned from the head ours knows
    [between] = theirs.append([batch(log, "raced", [b"b0"])], None)
    assert between.error is None and between.base_offset == 8
    [outcome] = ours.commit_staged(staged, "ours")
    assert outcome.error is None and outcome.base_offset == 9
    assert ours.stats.carried_spills == 0
    head = log.metadata.get_head("raced", 0)
    assert head is not None and head.manifest_list is None and len(head.tail) == 10
    assert [v for _, v in read_all(log, "raced", 0)] == [
        *(b"a%d" % n for n in range(8)),
        b"b0",
        b"a8",
    ]
    # Another writer committed between its last two: it carries nothing until it has
    # committed twice in a row again, then its spill lands.
    [after] = ours.append([batch(log, "raced", [b"a9"], 9)], "ours")
    assert after.error is None and ours.stats.carried_spills == 0
    [again] = ours.append([batch(log, "raced", [b"a10"], 10)], "ours")
    assert again.error is None and ours.stats.carried_spills == 1
    assert ours.stats.carried_spills_raced == 1
    head = log.metadata.get_head("raced", 0)
    assert head is not None and head.manifest_list is not None and len(head.tail) == 3
    assert [v for _, v in read_all(log, "raced", 0)][-3:] == [b"a8", b"a9", b"a10"]


def test_a_commit_on_a_head_another_writer_moved_is_made_again_reading_it_back(
    log: ObjectLog,
) -> None:
    log.create_topic("moved", partitions=1)
    ours, theirs = log.new_appender(), log.new_appender()
    answers = count_commit_answers(log)
    for n in range(3):  # ours writes alone: from its third commit on, on the head it knows
        [done] = ours.append([batch(log, "moved", [b"a%d" % n], n)], "ours")
        assert done.error is None and done.base_offset == n
    assert answers == ["ALL_NEW", "ALL_NEW", "NONE"]
    [between] = theirs.append([batch(log, "moved", [b"b0"])], None)
    assert between.error is None and between.base_offset == 3
    [outcome] = ours.append([batch(log, "moved", [b"a3"], 3)], "ours")
    assert outcome.error is None and outcome.base_offset == 4
    assert answers[3:] == ["ALL_NEW", "NONE", "ALL_NEW"]  # theirs; ours pinned, then read back
    assert outcome.head == log.metadata.get_head("moved", 0)
    assert [v for _, v in read_all(log, "moved", 0)] == [b"a0", b"a1", b"a2", b"b0", b"a3"]


def kafka_batch(log: ObjectLog, values: list[bytes], first: int) -> PartitionBatch:
    """A Kafka idempotent producer's batch (epoch 0), as the agent builds it."""
    info = log.topic("kafka")
    table = slice_table("kafka", 0, [None] * len(values), values, [1] * len(values), 0)
    return PartitionBatch(info, 0, table, kafka=KafkaSequence(0, first, first + len(values) - 1))


@pytest.mark.emulators
def test_a_kafka_producers_spills_ride_in_its_batches_and_its_window_holds(
    log: ObjectLog,
) -> None:
    """The Kafka agent's commits (an idempotent producer's window in the head) carry spills as
    the library's do: no index object of its own, a head under one write unit, every record
    in place, and a resent batch still answered from the producer's window."""
    log.create_topic("kafka", partitions=1)
    puts = count_puts(log)
    appender = log.new_appender()
    for n in range(FLUSHES):
        [done] = appender.append(
            [kafka_batch(log, [b"k%d-%d" % (n, i) for i in range(2)], 2 * n)], "k7"
        )
        assert done.error is None and done.base_offset == 2 * n
    assert appender.stats.spills == appender.stats.carried_spills >= FLUSHES // 8
    assert puts == {L0_DIR.rstrip("/"): FLUSHES}
    head = log.metadata.get_head("kafka", 0)
    assert head is not None and head.manifest_list is not None
    assert 0 < head.item_bytes < CARRY_AT_BYTES + 256
    assert head.producers["k7"].window is not None  # the producer's window survived the spills
    [again] = appender.append([kafka_batch(log, [b"k59-0", b"k59-1"], 2 * (FLUSHES - 1))], "k7")
    assert (again.duplicate, again.base_offset) == (True, 2 * (FLUSHES - 1))
    assert [v for _, v in read_all(log, "kafka", 0)] == [
        b"k%d-%d" % (n, i) for n in range(FLUSHES) for i in range(2)
    ]
    appender.close()


@pytest.mark.emulators
def test_a_kafka_commit_whose_spill_raced_is_committed_without_it(log: ObjectLog) -> None:
    log.create_topic("kafka", partitions=1)
    ours, theirs = log.new_appender(), log.new_appender()
    for n in range(8):  # ours learns a head close to spilling
        [done] = ours.append([kafka_batch(log, [b"a%d" % n], n)], "k7")
        assert done.error is None
    staged = ours.stage([kafka_batch(log, [b"a8"], 8)])
    assert staged.carried
    [between] = theirs.append([batch(log, "kafka", [b"b0"])], None)
    assert between.error is None and between.base_offset == 8
    [outcome] = ours.commit_staged(staged, "k7")
    assert (outcome.error, outcome.base_offset) == (None, 9)
    assert (ours.stats.carried_spills, ours.stats.carried_spills_raced) == (0, 1)
    head = log.metadata.get_head("kafka", 0)
    assert head is not None and head.manifest_list is None and len(head.tail) == 10
    window = head.producers["k7"].window
    assert window is not None and window.batches == 9
    assert [v for _, v in read_all(log, "kafka", 0)][-2:] == [b"b0", b"a8"]
    ours.close()
    theirs.close()


@pytest.fixture
def short_grace_log(log_config: Config, clock: ManualClock) -> Iterator[ObjectLog]:
    with ObjectLog(replace(log_config, delete_grace_ms=1_000), clock=clock) as objectlog:
        objectlog.ensure_resources()
        yield objectlog


def test_garbage_collection_keeps_the_l0_objects_carrying_the_index_until_replaced(
    short_grace_log: ObjectLog, clock: ManualClock
) -> None:
    log = short_grace_log
    log.create_topic("kept", partitions=1)
    with log.producer(linger_ms=0) as producer:
        for n in range(30):
            producer.send("kept", b"v%d" % n, partition=0, timestamp_ms=clock.now_ms())
            producer.flush()
    head = log.metadata.get_head("kept", 0)
    assert head is not None and head.manifest_list is not None
    carriers = {location_key(head.manifest_list)}
    carriers |= {
        location_key(entry.key)
        for entry in log.index.manifest_list(head.manifest_list).entries
        if entry.key
    }
    assert all(key.startswith(log.config.prefix + L0_DIR) for key in carriers)
    collector = collector_for(log, min_age_ms=0)
    clock.advance(5_000)  # every object is behind the horizon now
    assert collector.run().deleted == []  # each one holds data or the index
    assert [v for _, v in read_all(log, "kept", 0)] == [b"v%d" % n for n in range(30)]

    clock.advance(1_000)  # objects written from now on are newer than the GC horizon
    run_maintenance(log, ["kept"], settings=CompactionSettings(16 << 10, 2 << 10), collect=False)
    head = log.metadata.get_head("kept", 0)
    assert head is not None and head.manifest_list is not None
    assert location_key(head.manifest_list).startswith(log.config.prefix + INDEX_DIR)
    clock.advance(5_000)  # past the grace of what the swap replaced
    report = collector.run()
    assert carriers <= set(report.deleted)
    assert collector.stale_objects(report.horizon_ms) == []  # invariant 7
    assert [v for _, v in read_all(log, "kept", 0)] == [b"v%d" % n for n in range(30)]
