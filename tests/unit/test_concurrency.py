"""objectlog.concurrency: blocking library code bridged onto an event loop, and the primitives
(Workers, sleep, offload, Lock) that take the loop's way there and the thread's way elsewhere."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time

import pytest

from objectlog import concurrency
from objectlog.concurrency import Lock, Workers, bridge, on_loop, wait_for


def test_bridged_code_awaits_on_the_loop_while_other_tasks_run() -> None:
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.005)

    def blocking_library_code() -> str:
        assert on_loop()
        concurrency.sleep(0.1)  # a retry's backoff: asyncio.sleep here
        return wait_for(asyncio.sleep(0, result="answered"))

    async def main() -> str:
        task = asyncio.create_task(ticker())
        answer = await bridge(blocking_library_code)
        task.cancel()
        return answer

    assert asyncio.run(main()) == "answered"
    assert len(ticks) >= 10  # the loop ran the ticker throughout the 100 ms backoff
    assert max(b - a for a, b in itertools.pairwise(ticks)) < 0.05


def test_an_error_inside_an_awaited_call_is_raised_in_the_library_code() -> None:
    async def fails() -> None:
        raise KeyError("from the loop")

    def library_code() -> str:
        try:
            wait_for(fails())
        except KeyError as e:
            return f"caught {e}"
        return "not raised"

    assert asyncio.run(bridge(library_code)) == "caught 'from the loop'"


def test_cancelling_the_awaiting_task_raises_cancelled_error_inside_the_library_code() -> None:
    seen: list[str] = []

    def library_code() -> None:
        try:
            wait_for(asyncio.sleep(10))
        except Exception:  # the library's handlers must not swallow a cancellation
            seen.append("caught as an Exception")
            raise
        except BaseException as e:
            seen.append(type(e).__name__)
            raise

    async def main() -> None:
        task = asyncio.create_task(bridge(library_code))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert seen == ["CancelledError"]


def test_waiting_outside_the_bridge_is_refused_loudly() -> None:
    coroutine = asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="outside its event loop"):
        wait_for(coroutine)
    assert coroutine.cr_frame is None  # closed: no "never awaited" warning

    async def from_a_thread() -> None:
        await asyncio.to_thread(wait_for, asyncio.sleep(0))

    with pytest.raises(RuntimeError, match="outside its event loop"):
        asyncio.run(bridge(lambda: wait_for(from_a_thread())))


def test_workers_run_bridged_calls_as_loop_tasks_at_most_max_workers_at_once() -> None:
    running, most = 0, 0

    def call(i: int) -> int:
        nonlocal running, most
        assert threading.current_thread() is threading.main_thread()  # no thread hop
        running += 1
        most = max(most, running)
        concurrency.sleep(0.01)
        running -= 1
        return i * i

    workers = Workers(3)

    def library_code() -> list[int]:
        return list(workers.map(call, range(10)))

    started = time.monotonic()
    assert asyncio.run(bridge(library_code)) == [i * i for i in range(10)]
    assert most == 3
    assert time.monotonic() - started < 0.1  # 4 rounds of 10 ms, not 10 one after another


def test_workers_use_threads_for_callers_on_threads() -> None:
    names = list(Workers(2, "objectlog-test").map(lambda _: threading.current_thread().name, [1]))
    assert names[0].startswith("objectlog-test")


def test_shutdown_waits_for_the_loop_tasks_it_started() -> None:
    done: list[int] = []

    def slow(i: int) -> None:
        concurrency.sleep(0.02)
        done.append(i)

    def library_code() -> None:
        with Workers(4) as workers:
            for i in range(4):
                workers.submit(slow, i)
        assert sorted(done) == [0, 1, 2, 3]

    asyncio.run(bridge(library_code))


def test_a_call_not_started_can_be_cancelled_and_a_running_one_cannot() -> None:
    def library_code() -> tuple[bool, bool, int]:
        workers = Workers(1)
        first = workers.submit(concurrency.sleep, 0.02)
        second = workers.submit(concurrency.sleep, 0.02)
        concurrency.sleep(0.005)  # the first has started; the second waits for its slot
        result = (first.cancel(), second.cancel(), 0)
        first.result()
        return result

    assert asyncio.run(bridge(library_code)) == (False, True, 0)


def test_offload_runs_cpu_work_on_another_thread_only_when_bridged() -> None:
    def where() -> str:
        return threading.current_thread().name

    main = threading.current_thread().name
    assert concurrency.offload(where) == main
    assert asyncio.run(bridge(concurrency.offload, where)) != main


def test_a_lock_held_across_an_awaited_call_makes_other_greenlets_wait_on_the_loop() -> None:
    lock = Lock()
    order: list[str] = []

    def holder(name: str) -> None:
        with lock:
            order.append(f"{name} in")
            concurrency.sleep(0.02)  # a network call while holding it
            order.append(f"{name} out")

    async def main() -> None:
        await asyncio.wait_for(asyncio.gather(bridge(holder, "a"), bridge(holder, "b")), 2)

    asyncio.run(main())
    assert order == ["a in", "a out", "b in", "b out"]
