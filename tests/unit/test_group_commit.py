"""The agent's group commit (services.group_commit, kafka.coalesce) on memory stores: requests
that arrive while a flush is under way share the next flush's object, producerless batches of a
partition share one commit, and no request's outcome depends on another's."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.errors import OutOfOrderSequence
from objectlog.format.segment import slice_table
from objectlog.kafka.coalesce import GroupCommit
from objectlog.services import index as index_module
from objectlog.services.append import PartitionBatch
from objectlog.services.flushes import AppendOutcome
from objectlog.services.group_commit import Entry, entry_outcomes, plan_flush
from objectlog.stores.items import ItemStores
from objectlog.stores.metadata import KafkaSequence, kafka_producer
from objectlog.stores.objects import MemoryObjectStore


@pytest.fixture
def log() -> ObjectLog:
    log = ObjectLog(Config(), store=MemoryObjectStore(), items=ItemStores.memory())
    log.create_topic("orders", partitions=2)
    return log


def batch(log: ObjectLog, partition: int, *values: bytes, **fields: Any) -> PartitionBatch:
    topic = log.topic("orders")
    table = slice_table(
        topic.name, partition, [None] * len(values), list(values), [1] * len(values), 0
    )
    return PartitionBatch(topic, partition, table, **fields)


def idempotent(log: ObjectLog, partition: int, producer: int, first: int, *values: bytes) -> Entry:
    sequence = KafkaSequence(0, first, first + len(values) - 1)
    return Entry(batch(log, partition, *values, kafka=sequence), kafka_producer(producer))


def values_of(log: ObjectLog, partition: int) -> list[bytes | None]:
    return [r.value for r in log.fetch("orders", partition, 0, max_records=1000).records]


def test_producerless_batches_of_a_partition_merge_and_the_rest_stay_alone(log: ObjectLog) -> None:
    entries = [
        Entry(batch(log, 0, b"a", b"b"), None),
        idempotent(log, 0, 7, 0, b"i"),
        Entry(batch(log, 1, b"x"), None),
        Entry(batch(log, 0, b"c"), None),
        Entry(batch(log, 0, b"t", transactional=True), kafka_producer(8)),
    ]
    plan = plan_flush(entries)
    assert [b.partition for b in plan.batches] == [0, 0, 1, 0]
    assert plan.producers == [None, "k7", None, "k8"]
    assert plan.batches[0].table.column("value").to_pylist() == [b"a", b"b", b"c"]
    assert plan.batches[0].table.column("offset").to_pylist() == [0, 1, 2]
    assert [(p.member, p.ahead) for p in plan.placements] == [
        (0, 0),
        (1, 0),
        (2, 0),
        (0, 2),
        (3, 0),
    ]
    outcomes = [AppendOutcome(b, base_offset=10 * i) for i, b in enumerate(plan.batches)]
    answers = entry_outcomes(plan, entries, outcomes)
    assert [a.base_offset for a in answers] == [0, 10, 20, 2, 30]
    assert [a.batch for a in answers] == [e.batch for e in entries]


def run(group: GroupCommit, *requests: list[Entry]) -> list[Any]:
    async def all_of() -> list[Any]:
        answers = await asyncio.gather(*(group.append(r) for r in requests), return_exceptions=True)
        await group.stop()
        return answers

    return asyncio.run(all_of())


def test_requests_arriving_during_a_flush_share_the_next_one(log: ObjectLog) -> None:
    appender = log.new_appender()
    group = GroupCommit(appender)

    async def scenario() -> list[list[AppendOutcome]]:
        first = asyncio.create_task(group.append([Entry(batch(log, 0, b"v0"), None)]))
        for _ in range(3):  # the first request's flush is under way
            await asyncio.sleep(0)
        rest = [group.append([Entry(batch(log, i % 2, b"v%d" % i), None)]) for i in range(1, 20)]
        answers = await asyncio.gather(first, *rest)
        await group.stop()
        return answers

    answers = asyncio.run(scenario())
    appender.close()
    # the first request flushes alone; the other 19 arrived while it was under way
    assert group.stats.flushes == 2 and appender.stats.objects_put == 2
    assert appender.stats.commits == 1 + 2  # one commit per partition per flush
    for i, [outcome] in enumerate(answers):
        assert outcome.error is None
        assert values_of(log, i % 2)[outcome.base_offset] == b"v%d" % i
    assert values_of(log, 0) == [b"v%d" % i for i in range(0, 20, 2)]  # in the order they came


def test_a_refused_idempotent_batch_fails_alone(log: ObjectLog) -> None:
    appender = log.new_appender()
    group = GroupCommit(appender)
    started = [idempotent(log, 0, 5, 0, b"p0")]
    run(group, started)
    gap = [idempotent(log, 0, 5, 3, b"gap")]  # sequence 3 after 0: out of order
    plain = [Entry(batch(log, 0, b"plain"), None)]
    next_ok = [idempotent(log, 0, 6, 0, b"q0")]
    answers = run(group, [Entry(batch(log, 1, b"first"), None)], gap, plain, next_ok)
    appender.close()
    [refused], [written], [other] = answers[1], answers[2], answers[3]
    assert isinstance(refused.error, OutOfOrderSequence)
    assert written.error is None and other.error is None
    assert values_of(log, 0) == [b"p0", b"plain", b"q0"]


def test_a_flush_that_cannot_be_encoded_together_is_written_request_by_request(
    log: ObjectLog,
) -> None:
    appender = log.new_appender()
    group = GroupCommit(appender)
    good = [Entry(batch(log, 0, b"good"), None)]
    odd = batch(log, 0, b"odd")
    odd = PartitionBatch(odd.topic, 0, odd.table.drop_columns(["headers"]))  # not a slice
    answers = run(group, [Entry(batch(log, 1, b"first"), None)], good, [Entry(odd, None)], good)
    appender.close()
    assert group.stats.split_flushes == 1  # its table does not concatenate with the others'
    assert all(answer[0].error is None for answer in answers)
    assert values_of(log, 0) == [b"good", b"odd", b"good"]


def test_a_request_whose_caller_went_away_before_its_flush_is_not_written(
    log: ObjectLog,
) -> None:
    appender = log.new_appender()
    group = GroupCommit(appender)

    async def scenario() -> None:
        first = asyncio.create_task(group.append([Entry(batch(log, 0, b"first"), None)]))
        await asyncio.sleep(0)  # the first flush begins
        gone = asyncio.create_task(group.append([Entry(batch(log, 0, b"gone"), None)]))
        kept = asyncio.create_task(group.append([Entry(batch(log, 0, b"kept"), None)]))
        await asyncio.sleep(0)
        gone.cancel()
        await first
        assert (await kept)[0].error is None
        await group.stop()

    asyncio.run(scenario())
    appender.close()
    assert values_of(log, 0) == [b"first", b"kept"]


def test_a_flush_takes_requests_up_to_its_byte_bound(log: ObjectLog) -> None:
    appender = log.new_appender()
    one = batch(log, 0, b"x" * 1000)
    group = GroupCommit(appender, max_bytes=3 * one.table.nbytes)
    answers = run(group, *([Entry(batch(log, 0, b"x" * 1000), None)] for _ in range(10)))
    appender.close()
    assert all(a[0].error is None for a in answers)
    assert group.stats.flushes == 1 + 3  # the first alone, then 3 + 3 + 3
    assert len(values_of(log, 0)) == 10


def test_a_flush_of_many_producers_spills_a_grown_partition_once(
    log: ObjectLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each of a flush's commits to a partition answers a head; only the newest is spilled
    from (a spill planned from an older one is refused after writing its index object)."""
    monkeypatch.setattr(index_module, "CARRY_AT_REFS", 10**6)  # spills of their own only
    monkeypatch.setattr(index_module, "CARRY_AT_BYTES", 10**6)
    appender = log.new_appender()
    group = GroupCommit(appender)
    for round_ in range(6):  # 6 flushes of 4 producers' batches: the tail passes 16 refs
        requests = [[idempotent(log, 0, p, round_, b"%d-%d" % (p, round_))] for p in range(4)]
        answers = run(group, *requests)
        assert all(answer[0].error is None for answer in answers)
    appender.close()
    index_objects = [o for o in log.store.list(log.config.prefix) if "/index/" in f"/{o.key}"]
    assert appender.stats.spills == 1 and len(index_objects) == 1, index_objects
    assert len(values_of(log, 0)) == 24
