"""The reliability workload's asyncio members (objectlog.aio), on one event loop of their own.

- idempotent AIOProducers, each on an AIOObjectLog of its own with the producers' faults,
  sending keyed records of unique values (no partition named: the key picks it, and the
  history names the partition Kafka's partitioner gives the key, so the checker's "wrong
  partition" applies), awaiting each batch's flush and recording what each record's future
  said, as the threaded producers do (Produce.told);
- AIOConsumer members of the workload's own group (beside the threaded Consumer members, so
  partitions move between the two kinds), recording each getmany and committing after it; a
  member crashes (its task cancelled wherever it waits, without stop(): its session lapses)
  or leaves (``await consumer.stop()``), and a new one joins, until the group has drained.

The faults are the threaded members' (the workload's ``inject``) on the aiobotocore
clients under each AIOObjectLog; tools.verify.faults makes the ones that wait coroutines, so a
held call holds its own task only, never the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from objectlog.aio import AIOConsumer, AIOObjectLog, ConsumerRebalanceListener
from objectlog.clients.direct import ObjectLog
from objectlog.config import Config
from objectlog.errors import CommitFailed, ObjectLogError
from objectlog.format.partitioner import partition_for_key
from objectlog.format.records import RecordMetadata
from objectlog.stores.groups import TopicPartition
from objectlog.tools.verify.history import History, Poll, Produce
from objectlog.tools.verify.kafka_trail import MEMBER_LOG

AIO_PRODUCER = "aio-idempotent"  # the client name of the first asyncio producer's records
AIO_MEMBER = "aio"  # the asyncio members' Poll.member: "aio:<member id>"
KEYS = 32  # distinct keys per producer
LIFE_S = (3.0, 15.0)  # a member's life, in seconds at most


class Host(Protocol):
    """What the asyncio members need of the workload (tools.verify.workload.Workload)."""

    history: History
    log_config: Config
    stop_producing: threading.Event
    stop_consuming: threading.Event

    def inject(self, log: ObjectLog, role: str) -> None: ...

    def add_sent(self, n: int) -> None: ...


@dataclass(frozen=True)
class Plan:
    topic: str
    group: str
    partitions: int
    producers: int
    members: int
    seed: int
    session_timeout_ms: int
    drain_read_scale: int  # how many times more a member reads per poll while the group drains


class AIOMembers:
    """Run the plan's asyncio producers and members in one thread's event loop; the thread
    ends once the workload stops consuming. ``produced`` is set when the producers stopped."""

    def __init__(self, host: Host, plan: Plan) -> None:
        self.host = host
        self.plan = plan
        self.produced = threading.Event()

    def run(self) -> None:
        try:
            asyncio.run(self._main())
        finally:
            self.produced.set()

    async def _main(self) -> None:
        producers = [self._produce(i) for i in range(self.plan.producers)]
        members = [self._consume(i) for i in range(self.plan.members)]
        await asyncio.gather(self._producing(producers), *members)

    async def _producing(self, producers: list[Any]) -> None:
        try:
            await asyncio.gather(*producers)
        finally:
            self.produced.set()

    async def _open(self, role: str) -> AIOObjectLog:
        aio = await AIOObjectLog.from_config(self.host.log_config)
        self.host.inject(aio.direct(), role)  # on its aiobotocore clients
        return aio

    # ---- the producer ------------------------------------------------------------------

    async def _produce(self, index: int) -> None:
        client = AIO_PRODUCER if index == 0 else f"{AIO_PRODUCER}-{index + 1}"
        rng = random.Random(f"{self.plan.seed}-{client}")
        n = 0
        async with await self._open("producer") as aio:
            producer = aio.producer(linger_ms=0, enable_idempotence=True)
            await producer.start()
            try:
                while not self.host.stop_producing.is_set():
                    batch = []
                    for _ in range(rng.randint(4, 24)):
                        value = f"{client}-{n}".encode()
                        key = f"{client}-key-{rng.randrange(KEYS)}".encode()
                        future = await producer.send(self.plan.topic, value, key=key)
                        batch.append((partition_for_key(key, self.plan.partitions), value, future))
                        n += 1
                    await producer.flush()
                    told = await asyncio.gather(*(f for _, _, f in batch), return_exceptions=True)
                    for (partition, value, _), answer in zip(batch, told, strict=True):
                        self.host.history.add_produce(_told(client, partition, value, answer))
                    self.host.add_sent(len(batch))
            finally:
                await producer.stop()

    # ---- the group members -------------------------------------------------------------

    async def _consume(self, index: int) -> None:
        rng = random.Random(f"{self.plan.seed}-aio-member-{index}")
        abandoned: list[AIOConsumer] = []
        async with await self._open("member") as aio:
            while not self.host.stop_consuming.is_set():
                left = await self._member_life(aio, rng, abandoned)
                self.host.history.count("aio member left" if left else "aio member crashed")
            for consumer in abandoned:  # long gone from the group: release its resources
                with contextlib.suppress(ObjectLogError):
                    await consumer.stop(timeout=5)

    async def _member_life(
        self, aio: AIOObjectLog, rng: random.Random, abandoned: list[AIOConsumer]
    ) -> bool:
        """One member's life: read, process, commit in a task; after some polls or seconds the
        task is cancelled wherever it waits (a crash: False) or ends and the member stops
        (True).
        While the group drains it lives on, as the threaded members do."""
        ownership = [0]
        max_records = rng.randint(5, 200)
        consumer = aio.consumer(
            self.plan.topic,
            group_id=self.plan.group,
            listener=_Moved(ownership, lambda: consumer.member_id),
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=self.plan.session_timeout_ms,
            heartbeat_interval_ms=300,
            max_poll_records=max_records,
        )
        await consumer.start()
        crash = rng.random() < 0.5 and not self.host.stop_producing.is_set()
        life = rng.randint(5, 40)  # polls before it crashes or leaves
        # or seconds: under the faults a getmany that joins or rebalances takes seconds, and a
        # member must come and go several times in a run
        ends = asyncio.get_running_loop().time() + rng.uniform(*LIFE_S)
        polls = [0]
        finish = asyncio.Event()
        reader = asyncio.create_task(self._read(consumer, max_records, ownership, polls, finish))
        stopping = self.host.stop_consuming
        while not stopping.is_set() and not reader.done():
            over = polls[0] >= life or asyncio.get_running_loop().time() > ends
            if over and not self.host.stop_producing.is_set():
                break
            await asyncio.sleep(0.05)
        if crash and not stopping.is_set() and not reader.done():
            await asyncio.sleep(rng.uniform(0, 0.2))  # anywhere in a getmany or a commit
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            abandoned.append(consumer)
            return False
        finish.set()
        await reader  # a non-retriable error ends the run, as in the threaded members
        with contextlib.suppress(ObjectLogError):
            await consumer.stop()
        return True

    async def _read(
        self,
        consumer: AIOConsumer,
        max_records: int,
        ownership: list[int],
        polls: list[int],
        finish: asyncio.Event,
    ) -> None:
        while not finish.is_set():
            scale = self.plan.drain_read_scale if self.host.stop_producing.is_set() else 1
            try:
                batches = await consumer.getmany(timeout_ms=200, max_records=max_records * scale)
            except ObjectLogError as e:
                if not e.kind.retriable:
                    raise
                continue
            polls[0] += 1
            records = [r for _, got in sorted(batches.items()) for r in got]
            if records:
                self.host.history.add_poll(
                    Poll(
                        f"{AIO_MEMBER}:{consumer.member_id or '?'}",
                        ownership[0],
                        tuple((r.partition, r.offset, r.value) for r in records),
                    )
                )
                with contextlib.suppress(CommitFailed, ObjectLogError):
                    await consumer.commit()


class _Moved(ConsumerRebalanceListener):
    """Bumps the member's ownership at each change of its assignment, and logs it to the
    members' trail."""

    def __init__(self, ownership: list[int], member: Callable[[], str | None]) -> None:
        self.ownership = ownership
        self.member = member

    def _note(self, how: str, partitions: set[TopicPartition]) -> None:
        self.ownership[0] += 1
        numbers = sorted(tp.partition for tp in partitions)
        MEMBER_LOG.debug("objectlog member %s:%s %s %s", AIO_MEMBER, self.member(), how, numbers)

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self._note("revoked", revoked)

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self._note("assigned", assigned)

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self._note("lost", lost)


def _told(client: str, partition: int, value: bytes, answer: Any) -> Produce:
    if isinstance(answer, BaseException):
        return Produce.told(client, partition, value, None, answer)
    metadata: RecordMetadata = answer
    return Produce.told(client, partition, value, metadata, None)
