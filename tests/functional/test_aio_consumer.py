"""The asyncio client's consumer (objectlog.aio) on the embedded AWS endpoint: aiokafka's
shapes over the threaded consumer's group protocol, coroutine rebalance listeners that may
commit, a commit beside a waiting getmany, stop() after a commit in flight."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from objectlog import ObjectLog, concurrency
from objectlog.aio import AIOObjectLog, ConsumerRebalanceListener
from objectlog.errors import InvalidRequest
from objectlog.stores.groups import TopicPartition
from tests.aio_run import ON_EACH_LOOP, run


def produced(log: ObjectLog, topic: str, partitions: int, count: int) -> set[bytes]:
    log.create_topic(topic, partitions=partitions)
    values = [f"r{i}".encode() for i in range(count)]
    with log.producer() as producer:
        for i, value in enumerate(values):
            producer.send(topic, value, key=f"k{i}")
    return set(values)


async def drain(consumer: Any, want: int, seen: list[bytes]) -> None:
    while len(seen) < want:
        batches = await consumer.getmany(timeout_ms=200, max_records=50)
        for tp, records in batches.items():
            assert all(r.partition == tp.partition and r.topic == tp.topic for r in records)
            seen.extend(r.value for r in records)


@pytest.mark.aio_full
@pytest.mark.parametrize("loop", ON_EACH_LOOP)
def test_two_members_in_one_loop_share_a_topic_and_resume_from_their_commits(
    log: ObjectLog, loop: str
) -> None:
    values = produced(log, "events", 4, 200)
    before = set(threading.enumerate())

    async def consume(aio: AIOObjectLog) -> tuple[list[bytes], list[bytes], set[str]]:
        options: dict[str, Any] = {
            "group_id": "g",
            "auto_offset_reset": "earliest",
            "heartbeat_interval_ms": 200,
        }
        first, second = aio.consumer("events", **options), aio.consumer("events", **options)
        await first.start()
        await second.start()
        seen: list[bytes] = []
        every_partition = {TopicPartition("events", p) for p in range(4)}

        def settled() -> bool:
            """Every record read, both members own partitions and between them all four (a
            partition moving between them is owned by neither for a moment)."""
            owned = first.assignment(), second.assignment()
            return len(seen) >= 200 and all(owned) and owned[0] | owned[1] == every_partition

        async def member(consumer: Any) -> None:
            while not settled():
                batches = await consumer.getmany(timeout_ms=100, max_records=50)
                seen.extend(r.value for records in batches.values() for r in records)

        await asyncio.wait_for(asyncio.gather(member(first), member(second)), 60)
        assert first.assignment() | second.assignment() == every_partition
        assert not first.assignment() & second.assignment()
        new = {t.name for t in set(threading.enumerate()) - before}
        await first.stop()
        await second.stop()
        again = aio.consumer("events", **options)
        await again.start()
        later = await again.getmany(timeout_ms=300)
        await again.stop()
        return seen, [r.value for rs in later.values() for r in rs], new

    seen, later, new_threads = run(log, consume, loop)
    assert sorted(seen) == sorted(values)  # every record once: the hand-over commits
    assert later == []  # stop() left the group with each partition's position committed
    assert not {name for name in new_threads if name.startswith("objectlog-")}


def test_a_coroutine_listener_sees_the_hand_over_and_may_commit_in_it(log: ObjectLog) -> None:
    produced(log, "events", 2, 40)
    calls: list[tuple[str, str, list[int]]] = []

    class Listener(ConsumerRebalanceListener):
        def __init__(self, name: str) -> None:
            self.name = name
            self.consumer: Any = None

        async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
            calls.append((self.name, "assigned", sorted(tp.partition for tp in assigned)))

        async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
            await asyncio.sleep(0)
            await self.consumer.commit()  # the commit Kafka users make before a hand-over
            calls.append((self.name, "revoked", sorted(tp.partition for tp in revoked)))

    async def consume(aio: AIOObjectLog) -> dict[TopicPartition, int | None]:
        options: dict[str, Any] = {"group_id": "g", "auto_offset_reset": "earliest"}
        one, two = Listener("one"), Listener("two")
        first = one.consumer = aio.consumer("events", listener=one, **options)
        await first.start()
        seen: list[bytes] = []
        await drain(first, 40, seen)
        second = two.consumer = aio.consumer("events", listener=two, **options)
        await second.start()
        for _ in range(40):  # both poll until the hand-over is done
            await first.getmany(timeout_ms=50)
            await second.getmany(timeout_ms=50)
            if second.assignment():
                break
        committed = {
            TopicPartition("events", p): await second.committed(("events", p)) for p in (0, 1)
        }
        await first.stop()
        await second.stop()
        return committed

    committed = asyncio.run(asyncio.wait_for(_with(log, consume), 60))
    assert ("one", "assigned", [0, 1]) in calls
    revoked = [c for c in calls if c[:2] == ("one", "revoked")]
    assert revoked and len(revoked[0][2]) == 1  # cooperative: one of the two moved
    moved = revoked[0][2][0]
    assert ("two", "assigned", [moved]) in calls
    assert committed[TopicPartition("events", moved)] is not None  # committed in the listener


async def _with(log: ObjectLog, test: Any) -> Any:
    async with await AIOObjectLog.from_config(log.config) as aio:
        return await test(aio)


@pytest.mark.aio_full
def test_a_commit_beside_a_waiting_getmany_goes_ahead_and_stop_waits_for_one_in_flight(
    log: ObjectLog,
) -> None:
    produced(log, "events", 1, 10)
    order: list[str] = []

    async def consume(aio: AIOObjectLog) -> None:
        consumer = aio.consumer("events", group_id="g", auto_offset_reset="earliest")
        await consumer.start()
        records: list[bytes] = []
        await drain(consumer, 10, records)

        async def wait_for_more() -> None:
            await consumer.getmany(timeout_ms=1500)
            order.append("getmany returned")

        async def commit() -> None:
            await consumer.commit()
            order.append("committed")

        await asyncio.gather(wait_for_more(), commit())
        groups: Any = aio.sync_log.groups
        real_commit = groups.commit

        def slow_commit(*args: Any, **kwargs: Any) -> Any:
            concurrency.sleep(0.3)
            order.append("slow commit landing")
            return real_commit(*args, **kwargs)

        groups.commit = slow_commit
        consumer.seek(("events", 0), 4)
        committing = asyncio.create_task(consumer.commit())
        await asyncio.sleep(0.05)
        await consumer.stop(timeout=5)
        order.append("stopped")
        await committing
        groups.commit = real_commit
        with pytest.raises(InvalidRequest, match="not running"):
            await consumer.getmany()

    run(log, consume)
    assert order[:2] == ["committed", "getmany returned"]
    assert order[2:] == ["slow commit landing", "stopped"]
    assert log.groups.committed("g", [TopicPartition("events", 0)])[
        TopicPartition("events", 0)
    ] == (4, "")


@pytest.mark.aio_full
def test_getone_async_for_seek_pause_and_positions(log: ObjectLog) -> None:
    produced(log, "events", 2, 20)

    async def consume(aio: AIOObjectLog) -> None:
        consumer = aio.consumer()
        await consumer.start()
        await consumer.assign([("events", 0), ("events", 1)])
        await consumer.seek_to_beginning()
        first = await consumer.getone(("events", 1))
        assert first.partition == 1 and first.offset == 0
        assert await consumer.position(("events", 1)) == 1
        consumer.pause(("events", 1))
        batches = await consumer.getmany(timeout_ms=500)
        assert set(batches) == {TopicPartition("events", 0)}
        consumer.resume(("events", 1))
        consumer.seek(("events", 0), 3)
        await consumer.seek_to_end(("events", 1))
        count = 0
        async for record in consumer:
            assert record.partition == 0 and record.offset == 3 + count
            count += 1
            if await consumer.position(("events", 0)) == (await aio.offsets("events", 0)).latest:
                break
        await consumer.stop()
        with pytest.raises(StopAsyncIteration):
            await consumer.__anext__()

    run(log, consume)
