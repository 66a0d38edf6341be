"""The fault injector (tools.verify.faults) on the asyncio client's aiobotocore clients, as
objectlog verify's asyncio members get it: canned answers of aiobotocore's type, a lost answer
resent by the SDK's own retry, and a delay that holds its call while the event loop runs on,
matched on the call's parameters (kept per task, not per thread)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.aio import AIOObjectLog
from objectlog.tools.verify.faults import (
    FaultInjector,
    both,
    commits,
    l0_objects,
    on_partition,
)
from tests.aio_run import run


@pytest.mark.aio_full
def test_faults_on_the_asyncio_clients_hold_their_call_and_not_the_loop(log: ObjectLog) -> None:
    log.create_topic("t", partitions=2)
    faults = FaultInjector()

    async def produce(aio: AIOObjectLog) -> tuple[list[tuple[int, int]], float, list[int]]:
        direct = aio.direct()
        s3, dynamodb = direct.store.client, direct.metadata.client  # type: ignore[attr-defined]
        loop, lags = asyncio.get_running_loop(), [0.0]

        async def tick() -> None:  # how late the loop runs a 10 ms sleep's wake-up
            while True:
                start = loop.time()
                await asyncio.sleep(0.01)
                lags.append(loop.time() - start - 0.01)

        async with aio.producer(linger_ms=0) as producer:
            # warmed up first: a process's first send holds the loop (imports, connections)
            await producer.send_and_wait("t", b"v0", partition=0)
            injected = [
                faults.throttle(s3, "PutObject", times=1, when=l0_objects),
                faults.lose_answer_in_sdk(dynamodb, "UpdateItem", times=1, when=commits),
                faults.delay(
                    dynamodb, "UpdateItem", 0.6, times=1, when=both(commits, on_partition(1))
                ),
            ]
            ticker = asyncio.create_task(tick())
            try:
                sends: list[Any] = [
                    await producer.send_and_wait("t", b"v%d" % i, partition=i % 2)
                    for i in range(1, 5)
                ]
            finally:
                ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticker
                faults.remove()
        return [(m.partition, m.offset) for m in sends], max(lags), [f.injected for f in injected]

    got, lag, injected = run(log, produce)
    assert injected == [1, 1, 1]
    assert got == [(1, 0), (0, 1), (1, 1), (0, 2)]  # the resent commit found its own first
    assert lag < 0.4, lag  # the 0.6 s delay was awaited: the loop ran on meanwhile
    for partition, values in ((0, [b"v0", b"v2", b"v4"]), (1, [b"v1", b"v3"])):
        assert [r.value for r in log.fetch("t", partition, 0).records] == values
