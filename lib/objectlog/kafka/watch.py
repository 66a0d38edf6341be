"""One watcher of partition heads per agent, shared by every waiting fetch (Kafka's long poll).

A fetch that found nothing new registers the partitions it waits on, each with the offset it
waits beyond; one task reads the heads of every watched partition together (one BatchGetItem
per topic) every interval and wakes the fetches whose partition moved past their offset. So
a hundred consumers tailing a partition cost one head read per interval, not a hundred.

Heads that stay still for a while stop being read: the log's activity (services.activity)
says which partitions are due, and an idle topic costs one read of its activity item every
half second until a writer touches it (or a fallback read every 60 s). Its reads, and the
fetches' own, are the activity's view of the heads, from which a fetch at the tail of still
partitions is answered (kafka.fetch).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import Mapping

from objectlog.errors import ObjectLogError
from objectlog.kafka.context import ApiContext

logger = logging.getLogger(__name__)
WATCH_INTERVAL_S = 0.05

Key = tuple[str, int]  # (topic, partition)


class HeadWatcher:
    def __init__(self, ctx: ApiContext, interval_s: float = WATCH_INTERVAL_S) -> None:
        self.ctx = ctx
        self.interval_s = interval_s
        # per partition: (the offset waited beyond, whether read_committed, the waiter's event)
        self._waiters: dict[Key, list[tuple[int, bool, asyncio.Event]]] = defaultdict(list)
        self._task: asyncio.Task[None] | None = None
        self.reads = 0  # head reads (BatchGetItem calls) made, for tests and metrics

    async def wait_beyond(
        self, positions: Mapping[Key, int], timeout_s: float, *, committed: bool = False
    ) -> bool:
        """Until any of these partitions' high watermark (last stable offset, committed)
        passes its offset (True), or the timeout (False)."""
        if timeout_s <= 0 or not positions:
            return False
        moved = asyncio.Event()
        for key, offset in positions.items():
            self._waiters[key].append((offset, committed, moved))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._watch())
        try:
            async with asyncio.timeout(timeout_s):
                await moved.wait()
            return True
        except TimeoutError:
            return False
        finally:
            for key in positions:
                waiting = [w for w in self._waiters.get(key, []) if w[2] is not moved]
                if waiting:
                    self._waiters[key] = waiting
                else:
                    self._waiters.pop(key, None)

    async def stop(self) -> None:
        """End the watch (the agent is stopping; its waiting fetches were cancelled)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _watch(self) -> None:
        while self._waiters:
            by_topic: dict[str, list[int]] = defaultdict(list)
            for topic, partition in list(self._waiters):
                by_topic[topic].append(partition)
            with contextlib.suppress(ObjectLogError):  # the next round reads again
                due = await self.ctx.call(self._due, by_topic)
                await asyncio.gather(*(self._look(t, sorted(ps)) for t, ps in due.items() if ps))
            await asyncio.sleep(self.interval_s)

    def _due(self, by_topic: dict[str, list[int]]) -> dict[str, set[int]]:
        activity = self.ctx.log.activity
        activity.refresh(list(by_topic))  # the topics' counters due a read: one request
        return {topic: activity.due(topic, partitions) for topic, partitions in by_topic.items()}

    async def _look(self, topic: str, partitions: list[int]) -> None:
        """Read these heads of the topic and wake the fetches they moved for."""
        activity = self.ctx.log.activity
        with contextlib.suppress(ObjectLogError):  # the next round reads again
            started = activity.now()
            heads = await self.ctx.call(self.ctx.log.metadata.get_heads, topic, partitions)
            activity.saw_heads(topic, heads.values(), started)
            self.reads += 1
            for partition, head in heads.items():
                for offset, committed, event in self._waiters.get((topic, partition), []):
                    end = head.last_stable_offset if committed else head.next_offset
                    if end > offset:
                        event.set()
