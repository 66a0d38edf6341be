"""The asyncio client's transactions (objectlog.aio.AIOTransactionalProducer): the threaded
producer's session on the loop. A consume-transform-produce pipeline with AIOConsumer
(read_committed) whose output and offsets land together or not at all; fencing; the errors
of calls out of order."""

from __future__ import annotations

from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.aio import AIOObjectLog, AIOTransactionalProducer
from objectlog.errors import InvalidTxnState, TopicNotFound, TransactionalIdFenced
from objectlog.services.isolation import READ_COMMITTED, READ_UNCOMMITTED
from objectlog.stores.groups import TopicPartition
from tests.aio_run import run


def values(log: ObjectLog, topic: str, isolation: str) -> list[bytes]:
    result = log.fetch(topic, 0, 0, isolation_level=isolation)
    return [r.value for r in result.records if r.value is not None]


@pytest.mark.aio_full
def test_a_pipeline_commits_its_output_and_offsets_together_and_an_abort_leaves_nothing(
    log: ObjectLog,
) -> None:
    log.create_topic("in", 1)
    log.create_topic("out", 1)
    with log.producer() as producer:
        for i in range(6):
            producer.send("in", f"r{i}".encode())

    async def pipeline(aio: AIOObjectLog) -> None:
        consumer = aio.consumer(
            "in",
            group_id="enricher",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            isolation_level=READ_COMMITTED,
        )
        producer = aio.producer(transactional_id="enricher", linger_ms=0)
        assert isinstance(producer, AIOTransactionalProducer)
        await consumer.start()
        await producer.start()
        await producer.init_transactions()
        records: list[Any] = []
        while len(records) < 6:
            for batch in (await consumer.getmany(timeout_ms=200)).values():
                records.extend(batch)
        async with producer.transaction():  # the first three, committed
            for record in records[:3]:
                await producer.send("out", record.value.upper())
            await producer.send_offsets_to_transaction(
                {TopicPartition("in", 0): records[2].offset + 1}, consumer.group_metadata()
            )
        with pytest.raises(RuntimeError, match="transform failed"):
            async with producer.transaction():  # the rest, aborted by the exception
                for record in records[3:]:
                    await producer.send("out", record.value.upper())
                await producer.send_offsets_to_transaction(
                    {TopicPartition("in", 0): records[5].offset + 1}, consumer.group_metadata()
                )
                await producer.flush()
                raise RuntimeError("transform failed")
        assert await consumer.committed(("in", 0)) == 3
        await producer.stop()
        await consumer.stop()

    run(log, pipeline)
    assert values(log, "out", READ_COMMITTED) == [b"R0", b"R1", b"R2"]
    assert values(log, "out", READ_UNCOMMITTED) == [b"R0", b"R1", b"R2", b"R3", b"R4", b"R5"]


@pytest.mark.aio_full
def test_a_second_instance_fences_the_first_and_calls_out_of_order_are_refused(
    log: ObjectLog,
) -> None:
    log.create_topic("out", 1)

    async def fencing(aio: AIOObjectLog) -> None:
        first: Any = aio.producer(transactional_id="t", linger_ms=0)
        second: Any = aio.producer(transactional_id="t", linger_ms=0)
        await first.start()
        await second.start()
        with pytest.raises(InvalidTxnState, match="begin_transaction"):
            await first.begin_transaction()  # before init_transactions
        await first.init_transactions()
        with pytest.raises(InvalidTxnState, match="send"):
            await first.send("out", b"outside a transaction")
        await first.begin_transaction()
        await first.send_and_wait("out", b"zombie")
        await second.init_transactions()  # fences the first, aborts its transaction
        with pytest.raises(TransactionalIdFenced):
            await first.commit_transaction()
        with pytest.raises(InvalidTxnState, match="fenced"):
            await first.begin_transaction()
        async with second.transaction():
            await second.send_and_wait("out", b"successor")
            failed = await second.send("no-such-topic", b"x")
            with pytest.raises(TopicNotFound):
                await failed
            with pytest.raises(InvalidTxnState, match="failed"):
                await second.commit_transaction()
            await second.abort_transaction()
            await second.begin_transaction()
            await second.send_and_wait("out", b"kept")
        await first.stop()
        await second.stop()

    run(log, fencing)
    assert values(log, "out", READ_COMMITTED) == [b"kept"]
