"""Waiters woken when this agent changes what they wait on (a classic group's document).

A JoinGroup or SyncGroup waits by reading the group again; members on other agents are only
seen that way. Members on this agent need not wait for the next read: the write that completes
a join (or a leader's sync) wakes every waiter of that group here at once, so the members of a
generation get their answers together, as from a Kafka broker. Without it a member answered a
read later than the leader could find the leader's next rejoin (a cooperative rebalance's
second round) already under way, get REBALANCE_IN_PROGRESS for its SyncGroup and rejoin, a
rebalance more each round (librdkafka's test 0113).
"""

from __future__ import annotations

import asyncio


class Wakeups:
    """One event per key with waiters, set (and dropped) by wake(). Used on one event loop:
    watch() there, wake() there too (call_soon_threadsafe from worker threads)."""

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}

    def watch(self, key: str) -> asyncio.Event:
        """The event the next wake(key) sets; take it before reading what is waited on, so a
        change made meanwhile is not missed."""
        return self._events.setdefault(key, asyncio.Event())

    def wake(self, key: str) -> None:
        event = self._events.pop(key, None)
        if event is not None:
            event.set()

    async def until_woken(self, event: asyncio.Event, timeout_s: float) -> bool:
        """True if woken within timeout_s."""
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except TimeoutError:
            return False
        return True
