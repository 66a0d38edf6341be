"""The asyncio client's producer and consumer with faults injected on its aiobotocore clients
(tools.verify.faults, as tests/functional/test_faults.py injects them on the threaded
client's): throttling, 5xx, answers lost after the call applied and inside the SDK's retry
loop. The verify checker judges what the producers were told against what the log holds, and
the group reads every record, skipping none, through its members' hand-overs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.aio import AIOObjectLog
from objectlog.tools.verify.faults import commits
from objectlog.tools.verify.history import Produce
from tests.aio_run import run
from tests.faults import FaultInjector, check_produces, fast_retries


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    fast_retries(monkeypatch)
    yield


def faulty(aio: AIOObjectLog, seed: int) -> FaultInjector:
    """Throttling and 5xx on a fifth of the calls, and lost answers on commits and PUTs."""
    log: Any = aio.sync_log
    s3, dynamodb = log.store.client, log.metadata.table.client
    faults = FaultInjector(seed=seed)
    for operation in ("PutObject", "GetObject"):
        faults.throttle(s3, operation, share=0.2)
    for operation in ("UpdateItem", "GetItem", "BatchGetItem"):
        faults.throttle(dynamodb, operation, share=0.2)
    faults.server_error(dynamodb, "UpdateItem", share=0.1)
    faults.lose_answer(dynamodb, "UpdateItem", share=0.1, when=commits)
    faults.lose_answer_in_sdk(s3, "PutObject", share=0.1)
    return faults


@pytest.mark.usefixtures("quick_retries")
@pytest.mark.aio_full
def test_two_producers_under_faults_are_told_the_truth_and_write_each_record_once(
    log: ObjectLog,
) -> None:
    partitions = 3
    log.create_topic("t", partitions=partitions)

    async def produce(aio: AIOObjectLog) -> tuple[list[Produce], dict[str, int]]:
        faults = faulty(aio, seed=40)
        told: list[Produce] = []

        async def writer(name: str) -> None:
            async with aio.producer(linger_ms=2, batch_bytes=40 * 70) as producer:
                sent = []
                for i in range(300):
                    value = f"{name}-{i:04d}".encode()
                    sent.append(
                        (
                            i % partitions,
                            value,
                            await producer.send("t", value, partition=i % partitions),
                        )
                    )
                for partition, value, future in sent:
                    try:
                        told.append(Produce.told(name, partition, value, await future, None))
                    except Exception as e:  # refused, or unknown: the checker weighs each
                        told.append(Produce.told(name, partition, value, None, e))

        await asyncio.gather(writer("a"), writer("b"))
        return told, dict(faults.counts)

    told, counts = run(log, produce)
    check_produces(log, "t", partitions, told)
    assert sum(p.outcome == "ok" for p in told) >= 500
    for kind in ("throttle:PutObject", "throttle:UpdateItem", "lost-answer:UpdateItem"):
        assert counts.get(kind, 0) > 0, f"no {kind} was injected: {counts}"


@pytest.mark.usefixtures("quick_retries")
@pytest.mark.aio_full
def test_a_group_under_faults_reads_every_record_through_a_hand_over(log: ObjectLog) -> None:
    log.create_topic("t", partitions=4)
    values = {f"v{i:04d}".encode() for i in range(400)}
    with log.producer() as producer:
        for value in sorted(values):
            producer.send("t", value, key=value)

    async def consume(aio: AIOObjectLog) -> tuple[list[bytes], dict[str, int]]:
        faults = faulty(aio, seed=41)
        options: dict[str, Any] = {
            "group_id": "g",
            "auto_offset_reset": "earliest",
            "heartbeat_interval_ms": 200,
        }
        seen: list[bytes] = []
        first = aio.consumer("t", **options)
        await first.start()
        while len(seen) < 150:
            for records in (await first.getmany(timeout_ms=200, max_records=50)).values():
                seen.extend(r.value for r in records)
        second = aio.consumer("t", **options)
        await second.start()

        async def member(consumer: Any) -> None:
            while len(set(seen)) < len(values) or not (first.assignment() and second.assignment()):
                for records in (await consumer.getmany(timeout_ms=100, max_records=50)).values():
                    seen.extend(r.value for r in records)

        await asyncio.wait_for(asyncio.gather(member(first), member(second)), 90)
        await first.stop()
        await second.stop()
        return seen, dict(faults.counts)

    seen, counts = run(log, consume)
    assert set(seen) == values  # none skipped (duplicates are at-least-once's)
    assert counts.get("throttle:BatchGetItem", 0) > 0 and counts.get("throttle:GetItem", 0) > 0
    committed = log.groups.committed("g", [("t", p) for p in range(4)])  # type: ignore[misc]
    assert sum(c.offset for c in committed.values() if c) == len(values)
