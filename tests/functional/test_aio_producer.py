"""The asyncio client's producer (objectlog.aio) on the embedded AWS endpoint: aiokafka's
shapes, the threaded producer's rules and errors, every network call awaited on the loop,
cancellation and teardown as asyncio users expect, on asyncio's loop and on uvloop's."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pyarrow as pa
import pytest

from objectlog import ObjectLog, concurrency
from objectlog.aio import AIOObjectLog, AIOProducer
from objectlog.errors import (
    InvalidRequest,
    ProducerClosed,
    RecordTooLarge,
    StorageUnavailable,
    TopicNotFound,
    UnknownOutcome,
)
from objectlog.format.records import RecordMetadata
from tests.aio_run import ON_EACH_LOOP, run
from tests.faults import read_partition


@pytest.mark.parametrize("loop", ON_EACH_LOOP)
def test_sends_are_committed_in_order_per_partition_and_their_futures_say_where(
    log: ObjectLog, loop: str
) -> None:
    log.create_topic("events", partitions=4)

    async def produce(aio: AIOObjectLog) -> list[RecordMetadata]:
        async with aio.producer(linger_ms=5) as producer:
            futures = [
                await producer.send("events", f"v{i}".encode(), key=f"k{i % 8}") for i in range(400)
            ]
            first = await producer.send_and_wait("events", b"last", partition=2)
            return [*await asyncio.gather(*futures), first]

    landed = run(log, produce, loop)
    assert landed[-1].partition == 2
    by_partition: dict[int, list[tuple[int, bytes]]] = {}
    for i, metadata in enumerate(landed[:-1]):
        by_partition.setdefault(metadata.partition, []).append((metadata.offset, f"v{i}".encode()))
    for partition, sent in by_partition.items():
        values = read_partition(log, "events", partition)
        assert [values[offset] for offset, _ in sent] == [value for _, value in sent]
        assert [offset for offset, _ in sent] == sorted(offset for offset, _ in sent)
    same_key = [m.partition for i, m in enumerate(landed[:-1]) if i % 8 == 3]
    assert len(set(same_key)) == 1  # a key's records go to one partition (murmur2)


def test_no_network_call_leaves_the_event_loop_thread(log: ObjectLog) -> None:
    log.create_topic("events", partitions=8)
    threads: dict[str, set[str]] = {}
    before = set(threading.enumerate())

    async def produce(aio: AIOObjectLog) -> None:
        calls: set[str] = set()
        for client in (aio.sync_log.store.client, aio.sync_log.metadata.table.client):  # type: ignore[attr-defined]

            def seen(model: Any, **_: Any) -> None:
                calls.add(threading.current_thread().name)

            client.meta.events.register("before-call", seen)
        async with aio.producer() as producer:
            await asyncio.gather(
                *[await producer.send("events", b"x" * 1024, key=str(i)) for i in range(2000)]
            )
            await producer.send_table("events", pa.table({"value": [b"a", b"b"]}))
        threads["calls"] = calls
        threads["new"] = {t.name for t in set(threading.enumerate()) - before}

    run(log, produce)
    assert threads["calls"] == {threading.current_thread().name}
    assert not {name for name in threads["new"] if name.startswith("objectlog-")}


@pytest.mark.aio_full
def test_errors_are_the_threaded_clients(log: ObjectLog) -> None:
    log.create_topic("small", partitions=1, config={"max.message.bytes": 1000})

    async def produce(aio: AIOObjectLog) -> None:
        async with aio.producer() as producer:
            with pytest.raises(InvalidRequest):
                await producer.send("small", b"v", partition=-1)
            missing = await producer.send("no-such-topic", b"v")
            large = await producer.send("small", b"x" * 5000)
            fine = await producer.send("small", b"fine")
            with pytest.raises(TopicNotFound):
                await missing
            with pytest.raises(RecordTooLarge):
                await large
            assert (await fine).offset == 0
            with pytest.raises(TopicNotFound):
                await producer.send_table("no-such-topic", pa.table({"value": [b"a"]}))
        with pytest.raises(ProducerClosed):
            await producer.send("small", b"after stop")

    run(log, produce)


def test_cancelling_one_awaiter_cancels_neither_the_flush_nor_the_other_records(
    log: ObjectLog,
) -> None:
    log.create_topic("events", partitions=1)

    async def produce(aio: AIOObjectLog) -> list[RecordMetadata]:
        async with aio.producer(linger_ms=50) as producer:
            waiting = asyncio.create_task(producer.send_and_wait("events", b"cancelled awaiter"))
            await asyncio.sleep(0)  # its record is queued first
            others = [await producer.send("events", f"o{i}".encode()) for i in range(5)]
            flushing = asyncio.create_task(producer.flush())
            await asyncio.sleep(0.01)
            waiting.cancel()
            flushing.cancel()
            await producer.flush()  # another flush awaiter: still waits for the same flush
            assert waiting.cancelled() and flushing.cancelled()
            return await asyncio.gather(*others)

    landed = run(log, produce)
    assert [m.offset for m in landed] == [1, 2, 3, 4, 5]
    assert read_partition(log, "events") == [
        b"cancelled awaiter",
        *(f"o{i}".encode() for i in range(5)),
    ]


def test_stop_with_a_commit_in_flight_reports_an_unknown_outcome_never_a_silent_loss(
    log: ObjectLog,
) -> None:
    log.create_topic("events", partitions=1)

    async def produce(aio: AIOObjectLog) -> tuple[BaseException | None, BaseException | None]:
        producer = aio.producer(linger_ms=0)
        await producer.start()
        appender: Any = producer._appender
        commit = appender.commit_staged

        def answer_lost(staged: Any, producer_id: str | None) -> Any:
            outcomes = commit(staged, producer_id)  # it lands ...
            concurrency.sleep(30)  # ... and its answer never comes back
            return outcomes

        appender.commit_staged = answer_lost
        in_flight = await producer.send("events", b"landed, answer lost")
        await asyncio.sleep(0.3)
        queued = await producer.send("events", b"never committed")
        await producer.stop(timeout=0.5)
        return in_flight.exception(), queued.exception()

    in_flight, queued = run(log, produce)
    assert isinstance(in_flight, UnknownOutcome)
    assert isinstance(queued, ProducerClosed | UnknownOutcome)
    assert read_partition(log, "events")[0] == b"landed, answer lost"


@pytest.mark.aio_full
def test_a_full_buffer_makes_send_wait_then_fail_after_max_block_ms(log: ObjectLog) -> None:
    log.create_topic("events", partitions=1)

    async def produce(aio: AIOObjectLog) -> None:
        async with aio.producer(
            batch_bytes=2000, buffer_memory=2000, max_block_ms=300, linger_ms=0
        ) as producer:
            appender: Any = producer._appender
            commit = appender.commit_staged
            release = asyncio.Event()

            def held(staged: Any, producer_id: str | None) -> Any:
                concurrency.wait_for(release.wait())
                return commit(staged, producer_id)

            appender.commit_staged = held
            futures = []
            with pytest.raises(StorageUnavailable, match="buffer_memory"):
                for _ in range(20):
                    futures.append(await producer.send("events", b"x" * 900))
            assert len(futures) >= 2
            release.set()
            await asyncio.gather(*futures)

    run(log, produce)


@pytest.mark.aio_full
def test_send_table_and_flush_and_a_record_sent_without_start(log: ObjectLog) -> None:
    log.create_topic("events", partitions=2)

    async def produce(aio: AIOObjectLog) -> None:
        producer = AIOProducer(aio)
        with pytest.raises(ProducerClosed, match="start"):
            await producer.send("events", b"v")
        await producer.start()
        result = await producer.send_table(
            "events", pa.table({"value": [b"a", b"b", b"c"], "partition": [1, 1, 1]})
        )
        assert result.offsets.tolist() == [0, 1, 2]
        future = await producer.send("events", b"d", partition=1)
        await producer.flush()
        assert future.done() and future.result().offset == 3
        await producer.stop()

    run(log, produce)
    assert read_partition(log, "events", 1) == [b"a", b"b", b"c", b"d"]
