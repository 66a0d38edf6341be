"""One library, run on threads or on an asyncio event loop.

objectlog's stores and services are written once, as blocking code. The threaded clients call
them on their own threads. The asyncio client (objectlog.aio) calls them through ``bridge()``:
the code runs in a greenlet on the event loop's thread, and each network call the adapters make
is a coroutine (aiobotocore, aiohttp) that ``wait_for()`` hands to the loop, switching back to
the greenlet with its answer; meanwhile the loop runs everything else. This is how SQLAlchemy's
asyncio extension runs its one ORM over async drivers. So a rule (a retry policy, a conditional
write, a commit's recovery) lives in one place and is tested once for both clients, and no
network call of the asyncio client ever waits on a thread.

Three things in the library block besides network calls; each is written with this module's
primitive, which takes the loop's way when it is called from bridged code and the thread's way
otherwise:

- ``Workers``: a concurrent.futures Executor. On threads a pool of threads; bridged, each call
  becomes a task on the loop running in its own greenlet, at most ``max_workers`` at once.
- ``sleep()``: a retry's backoff (asyncio.sleep when bridged).
- ``Condition``, ``Background``: a consumer's fetch-ahead waits for fetches to land and fetches
  on a thread of its own, or, bridged, on a task of the loop.
- ``offload()``: CPU-bound work (Parquet encoding) that must not hold the loop: on a thread of
  asyncio's default executor when bridged, inline otherwise. Offloaded work must not do I/O:
  ``wait_for()`` outside bridged code raises RuntimeError, loudly.

A threading lock must never be held across a network call in bridged code (another greenlet
on the same thread would wait on it forever): the library's threading locks guard dictionaries
only, and the few held across a call (a topic's activity touch, a transaction's partitions, the
ACL cache's reload) are this module's ``Lock``.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import sys
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar

from greenlet import getcurrent, greenlet

T = TypeVar("T")


class _Bridged(greenlet):
    """A greenlet running library code for a coroutine awaiting bridge()."""

    def __init__(self, fn: Callable[..., Any], driver: greenlet) -> None:
        super().__init__(fn, driver)
        self.driver = driver


def on_loop() -> bool:
    """Whether this code runs bridged onto an event loop (inside bridge())."""
    return isinstance(getcurrent(), _Bridged)


def wait_for(awaitable: Awaitable[T]) -> T:
    """Await on the event loop from bridged code: the greenlet pauses until it is done."""
    current = getcurrent()
    if not isinstance(current, _Bridged):
        if asyncio.iscoroutine(awaitable):
            awaitable.close()  # never awaited: no "coroutine was never awaited" warning
        raise RuntimeError(
            "an asyncio client's call was made outside its event loop (a thread, or code "
            "not run through objectlog.concurrency.bridge)"
        )
    result: T = current.driver.switch(awaitable)
    return result


async def bridge(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run blocking library code on this event loop; what it waits for is awaited here.

    Cancelling the awaiting task raises CancelledError inside fn at the call it is waiting on
    (a BaseException: the library's ``except Exception`` handlers let it through)."""
    context = _Bridged(fn, getcurrent())
    context.gr_context = contextvars.copy_context()
    result = context.switch(*args, **kwargs)
    while not context.dead:
        try:
            value = await result
        except BaseException:
            result = context.throw(*sys.exc_info())
        else:
            result = context.switch(value)
    return result


def sleep(seconds: float) -> None:
    """Wait (a retry's backoff): asyncio.sleep on the loop when bridged, time.sleep otherwise."""
    if on_loop():
        wait_for(asyncio.sleep(seconds))
    else:
        time.sleep(seconds)


def offload(fn: Callable[..., T], *args: Any) -> T:
    """Run CPU-bound fn off the event loop when bridged (asyncio's default executor), inline
    otherwise. fn must do no I/O."""
    if on_loop():
        return wait_for(asyncio.to_thread(fn, *args))
    return fn(*args)


class Lock:
    """A lock that may be held across a network call. On threads a threading.Lock; a bridged
    caller that finds it taken waits on the loop (polling, 0.5 to 10 ms apart: these locks are
    rarely contended) instead of blocking the loop's thread, where the holder, another
    greenlet, could never run to release it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def acquire(self, blocking: bool = True) -> bool:
        if self._lock.acquire(blocking=False):
            return True
        if not blocking:
            return False
        if not on_loop():
            return self._lock.acquire()
        delay = 0.0005
        while not self._lock.acquire(blocking=False):
            wait_for(asyncio.sleep(delay))
            delay = min(delay * 2, 0.01)
        return True

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> Lock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


# The RLocks whose holder lent them to the coroutine being awaited (lent()): bridged code that
# coroutine runs takes them as the holder would.
_lent: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "objectlog_lent_locks", default=frozenset()
)


class RLock(Lock):
    """A reentrant Lock: its holder is the greenlet (bridged) or thread that took it, which
    may take it again (a rebalance callback committing inside the poll that called it), and
    so may a coroutine the holder awaits with the lock lent to it (lent())."""

    def __init__(self) -> None:
        super().__init__()
        self._owner: greenlet | None = None
        self._depth = 0

    def acquire(self, blocking: bool = True) -> bool:
        me = getcurrent()
        if self._owner is me or (self._owner is not None and id(self) in _lent.get()):
            self._depth += 1
            return True
        if not super().acquire(blocking):
            return False
        self._owner, self._depth = me, 1
        return True

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._owner = None
            super().release()


async def lent(lock: RLock, awaitable: Awaitable[T]) -> T:
    """Await a coroutine (an asyncio callback the lock's holder waits for) that may take the
    lock itself, through a bridge of its own, as its holder."""
    token = _lent.set(_lent.get() | {id(lock)})
    try:
        return await awaitable
    finally:
        _lent.reset(token)


class Condition:
    """threading.Condition, whose wait() a bridged caller awaits on the loop (the lock is
    released meanwhile, as threading's is); notify_all() wakes waiters of both kinds."""

    def __init__(self) -> None:
        self._condition = threading.Condition(threading.Lock())
        self._loop_waiters: list[asyncio.Future[None]] = []

    def __enter__(self) -> Condition:
        self._condition.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._condition.release()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait (holding the lock) until notified or timeout; whether it was notified."""
        if not on_loop():
            return self._condition.wait(timeout)
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._loop_waiters.append(waiter)
        self._condition.release()
        try:
            wait_for(asyncio.wait({waiter}, timeout=timeout))
        finally:
            self._condition.acquire()
            if waiter in self._loop_waiters:
                self._loop_waiters.remove(waiter)
        return waiter.done()

    def notify_all(self) -> None:
        """Wake every waiter (call holding the lock)."""
        self._condition.notify_all()
        waiters, self._loop_waiters = self._loop_waiters, []
        for waiter in waiters:
            waiter.get_loop().call_soon_threadsafe(_wake, waiter)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Background:
    """A long-running call (a fetch-ahead loop): a daemon thread, or for bridged callers a
    task on the loop running it bridged."""

    def __init__(self, fn: Callable[[], None], name: str) -> None:
        self._thread: threading.Thread | None = None
        self._task: asyncio.Task[None] | None = None
        if on_loop():
            self._task = asyncio.get_running_loop().create_task(bridge(fn), name=name)
        else:
            self._thread = threading.Thread(target=fn, name=name, daemon=True)
            self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the call to return (it must have been told to), up to timeout."""
        if self._thread is not None:
            if self._thread is not threading.current_thread():
                self._thread.join(timeout)
        elif self._task is not None and on_loop():
            wait_for(asyncio.wait({self._task}, timeout=timeout))
            if not self._task.done():
                self._task.cancel()


class _TaskFuture(Future[Any]):
    """A Future settled by a loop task; waiting on it from bridged code awaits the task."""

    def __init__(self, task: asyncio.Task[Any]) -> None:
        super().__init__()
        self._task = task
        self.started = False  # set when the call begins: as a thread pool's, no cancel then
        task.add_done_callback(self._settle)

    def _settle(self, task: asyncio.Task[Any]) -> None:
        if self.done():
            return
        if task.cancelled():
            super().cancel()
            self.set_running_or_notify_cancel()
        elif (error := task.exception()) is not None:
            self.set_exception(error)
        else:
            self.set_result(task.result())

    def _wait(self, timeout: float | None) -> None:
        if not self._task.done() and on_loop():
            wait_for(asyncio.wait({self._task}, timeout=timeout))
        if self._task.done():
            self._settle(self._task)

    def result(self, timeout: float | None = None) -> Any:
        self._wait(timeout)
        return super().result(0 if on_loop() else timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._wait(timeout)
        return super().exception(0 if on_loop() else timeout)

    def cancel(self) -> bool:
        if self.started:
            return False
        self._task.cancel()
        return super().cancel()


class Workers(Executor):
    """Run calls concurrently: on a thread pool, or, for bridged callers, as loop tasks.

    ``max_workers`` bounds both: threads, or tasks running at once (per event loop)."""

    def __init__(self, max_workers: int, thread_name_prefix: str = "objectlog") -> None:
        self.max_workers = max_workers
        self.thread_name_prefix = thread_name_prefix
        self._threads: ThreadPoolExecutor | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        if on_loop():
            future: _TaskFuture | None = None

            def begin() -> None:
                assert future is not None
                future.started = True

            call = functools.partial(fn, *args, **kwargs)
            task = asyncio.get_running_loop().create_task(self._bounded(begin, call))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            future = _TaskFuture(task)
            return future
        if self._threads is None:
            self._threads = ThreadPoolExecutor(self.max_workers, self.thread_name_prefix)
        return self._threads.submit(fn, *args, **kwargs)

    async def _bounded(self, begin: Callable[[], None], call: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        slots = self._slots.get(loop)
        if slots is None:
            slots = self._slots[loop] = asyncio.Semaphore(self.max_workers)
        async with slots:
            begin()
            return await bridge(call)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """As ThreadPoolExecutor's; bridged, waiting means awaiting this loop's tasks."""
        if cancel_futures:
            for task in list(self._tasks):
                task.cancel()
        if wait and on_loop() and (mine := _this_loops(self._tasks)):
            wait_for(asyncio.wait(mine))
        if self._threads is not None:
            self._threads.shutdown(wait, cancel_futures=cancel_futures)


def _this_loops(tasks: set[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
    loop = asyncio.get_running_loop()
    return {task for task in tasks if task.get_loop() is loop}
