"""AIOConsumer: the consumer for asyncio programs, in aiokafka's shape.

    consumer = log.consumer("events", group_id="billing", auto_offset_reset="earliest")
    await consumer.start()
    async for record in consumer:
        ...
    batches = await consumer.getmany(timeout_ms=500, max_records=100)   # {tp: [Record]}
    await consumer.commit()
    await consumer.stop()

It is the threaded Consumer (clients/consumer.py: group membership, cooperative hand-over,
positions, commits fenced by generation, auto-commit, read_committed) run on the event loop
(objectlog/concurrency.py): its fetch-ahead is a task of the loop, its waits are awaited, and
every DynamoDB and S3 call is awaited on the loop. A commit from another task while a
getmany() waits goes ahead; stop() waits for a commit in flight, up to its timeout.

As in the threaded consumer (and Kafka's max.poll.interval.ms), membership is kept by the
calls to getmany()/getone(): call one at least every ``session_timeout_ms``. Rebalance
listeners are called inside them, as Kafka's Java client calls its listener inside poll(); a
listener's methods may be coroutines, and may commit.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol, Self

from objectlog.clients.consumer import Consumer
from objectlog.clients.contract import LogClient
from objectlog.clients.values import ConsumerGroupMetadata
from objectlog.concurrency import bridge, lent, wait_for
from objectlog.errors import InvalidRequest
from objectlog.format.records import Record
from objectlog.groups.values import OffsetAndMetadata
from objectlog.stores.groups import TopicPartition

Partition = TopicPartition | tuple[str, int]
logger = logging.getLogger(__name__)


class ConsumerRebalanceListener:
    """aiokafka's listener: subclass it and override what you need (coroutines or plain
    methods). on_partitions_lost defaults to on_partitions_revoked, as in Kafka."""

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Awaitable[None] | None:
        return None

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Awaitable[None] | None:
        return None

    def on_partitions_lost(self, lost: set[TopicPartition]) -> Awaitable[None] | None:
        return self.on_partitions_revoked(lost)


class AIOConsumerHost(Protocol):
    @property
    def sync_log(self) -> LogClient: ...


class AIOConsumer:
    def __init__(
        self,
        log: AIOConsumerHost,
        *topics: str,
        group_id: str | None = None,
        listener: ConsumerRebalanceListener | None = None,
        **options: Any,
    ) -> None:
        """aiokafka's arguments where they exist (group_id, auto_offset_reset,
        enable_auto_commit, auto_commit_interval_ms, session_timeout_ms,
        heartbeat_interval_ms, max_poll_records, max_partition_fetch_bytes, fetch_max_wait_ms,
        isolation_level, client_id), and the threaded Consumer's others."""
        self._consumer = Consumer(log.sync_log, group=group_id, **options)
        self._topics = topics
        self._listener = listener
        self._started = False
        self._stopped = False

    # ---- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Subscribe to the topics given (joining the group at the first getmany)."""
        if self._started:
            return
        self._started = True
        if self._topics:
            self.subscribe(self._topics, listener=self._listener)

    async def stop(self, timeout: float | None = None) -> None:
        """Leave the group (committing the positions with auto-commit), after a commit in
        flight; gives up after ``timeout`` seconds (the group then sees the member's session
        lapse)."""
        if self._stopped:
            return
        self._stopped = True
        try:
            await asyncio.wait_for(bridge(self._consumer.close), timeout)
        except TimeoutError:
            logger.warning("consumer stop gave up after %s s (its session will lapse)", timeout)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ---- subscription and assignment --------------------------------------------------

    def subscribe(
        self, topics: Iterable[str], listener: ConsumerRebalanceListener | None = None
    ) -> None:
        self._set_listener(listener)
        self._consumer.subscribe(topics)

    async def unsubscribe(self) -> None:
        """Leave the group (committing first with auto-commit) or drop a manual assignment."""
        await bridge(self._consumer.unsubscribe)

    async def assign(self, partitions: Iterable[Partition]) -> None:
        """Read exactly these partitions, outside any group (their topics are read)."""
        await bridge(self._consumer.assign, list(partitions))

    def assignment(self) -> set[TopicPartition]:
        return self._consumer.assignment()

    def subscription(self) -> tuple[str, ...]:
        return self._consumer.subscription()

    @property
    def member_id(self) -> str | None:
        return self._consumer.member_id

    def group_metadata(self) -> ConsumerGroupMetadata:
        return self._consumer.group_metadata()

    # ---- records -----------------------------------------------------------------------

    async def getmany(
        self, *partitions: Partition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[Record]]:
        """The records fetched, by partition, waiting up to timeout_ms for some; from the
        partitions given only, if any (the others keep their place)."""
        self._check_running()
        wanted = {TopicPartition(*tp) for tp in partitions}
        paused = self._pause_all_but(wanted) if wanted else set()
        try:
            results = await bridge(self._consumer._poll, timeout_ms / 1000, max_records, None)
        finally:
            if paused:
                self._consumer.resume(paused)
        batches: dict[TopicPartition, list[Record]] = {}
        for result in results:
            tp = TopicPartition(result.topic, result.partition)
            batches.setdefault(tp, []).extend(result.records)
        return batches

    async def getone(self, *partitions: Partition) -> Record:
        """The next record (waiting as long as it takes)."""
        while True:
            batches = await self.getmany(*partitions, timeout_ms=1000, max_records=1)
            for records in batches.values():
                return records[0]

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Record:
        if self._stopped:
            raise StopAsyncIteration
        return await self.getone()

    # ---- offsets -----------------------------------------------------------------------

    async def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> None:
        """Commit offsets (by default every assigned partition's position)."""
        await bridge(self._consumer.commit, offsets)

    async def committed(self, partition: Partition) -> int | None:
        """The group's committed offset of the partition (None if none)."""
        tp = TopicPartition(*partition)
        value = (await bridge(self._consumer.committed, [tp])).get(tp)
        return None if value is None else value.offset

    async def position(self, partition: Partition) -> int:
        return await bridge(self._consumer.position, partition)

    def seek(self, partition: Partition, offset: int) -> None:
        self._consumer.seek(partition, offset)

    async def seek_to_beginning(self, *partitions: Partition) -> None:
        await bridge(self._consumer.seek_to_beginning, _targets(partitions))

    async def seek_to_end(self, *partitions: Partition) -> None:
        await bridge(self._consumer.seek_to_end, _targets(partitions))

    async def seek_to_committed(self, *partitions: Partition) -> None:
        """Move each partition (all assigned by default) to its committed offset."""
        for tp in _targets(partitions) or sorted(self.assignment()):
            offset = await self.committed(tp)
            if offset is not None:
                self.seek(tp, offset)

    def pause(self, *partitions: Partition) -> None:
        self._consumer.pause(partitions)

    def resume(self, *partitions: Partition) -> None:
        self._consumer.resume(partitions)

    def paused(self) -> set[TopicPartition]:
        return self._consumer.paused()

    # ---- helpers -----------------------------------------------------------------------

    def _check_running(self) -> None:
        if not self._started or self._stopped:
            raise InvalidRequest("the consumer is not running: start() it (and not stop())")

    def _pause_all_but(self, wanted: set[TopicPartition]) -> set[TopicPartition]:
        others = self._consumer.assignment() - wanted - self._consumer.paused()
        self._consumer.pause(others)
        return others

    def _set_listener(self, listener: ConsumerRebalanceListener | None) -> None:
        if listener is None:
            return
        consumer = self._consumer
        consumer.on_revoke = self._calling(listener.on_partitions_revoked)
        consumer.on_assign = self._calling(listener.on_partitions_assigned)
        consumer.on_lost = self._calling(listener.on_partitions_lost)

    def _calling(
        self, method: Callable[[set[TopicPartition]], Awaitable[None] | None]
    ) -> Callable[[set[TopicPartition]], None]:
        """A listener method as the consumer calls it (inside getmany, bridged): a coroutine
        is awaited on the loop, with the consumer's lock lent to it so it may commit."""
        lock = self._consumer._state_lock

        def call(partitions: set[TopicPartition]) -> None:
            result = method(partitions)
            if inspect.isawaitable(result):
                wait_for(lent(lock, result))

        return call


def _targets(partitions: tuple[Partition, ...]) -> list[TopicPartition] | None:
    return [TopicPartition(*tp) for tp in partitions] or None
