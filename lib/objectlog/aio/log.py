"""AIOObjectLog: the asyncio client's connection to a deployment, and its admin calls.

    log = await AIOObjectLog.connect()          # AWS_ENDPOINT_URL, OBJECTLOG_BUCKET, ...
    await log.create_topic("events", partitions=8)
    async with log.producer(linger_ms=5) as producer:
        await producer.send_and_wait("events", b"hello")
    await log.close()

It runs the threaded client's own stores and services (clients/direct.py's ObjectLog) on the
event loop, over aiobotocore (objectlog/concurrency.py says how): every DynamoDB and S3 call is
awaited on the loop, errors are the same ObjectLogError kinds, the rules the same code.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterable, Mapping
from typing import Any, Self

from objectlog.adapters.aio_clients import open_clients
from objectlog.aio.producer import AIOProducer
from objectlog.clients.direct import ObjectLog
from objectlog.clients.values import Offsets
from objectlog.clock import Clock
from objectlog.concurrency import bridge
from objectlog.config import Config
from objectlog.format.topics import Topic, TopicDescription
from objectlog.services.fetch import DEFAULT_MAX_BYTES, FetchResult
from objectlog.services.isolation import READ_UNCOMMITTED


class AIOObjectLog:
    """A connection to one objectlog deployment for asyncio programs. Make it with connect()
    (or ``async with await AIOObjectLog.connect()``); close() releases its HTTP sessions."""

    def __init__(self, log: ObjectLog, stack: contextlib.AsyncExitStack) -> None:
        self._log = log
        self._stack = stack
        self._producers: weakref.WeakSet[AIOProducer] = weakref.WeakSet()
        self._closed = False

    @classmethod
    async def connect(cls, *, clock: Clock | None = None, **overrides: Any) -> AIOObjectLog:
        """Connect using the environment, as ObjectLog.connect() does (overrides: Config's
        fields, e.g. bucket=, table=, prefix=)."""
        return await cls.from_config(Config.from_env(**overrides), clock=clock)

    @classmethod
    async def from_config(cls, config: Config, *, clock: Clock | None = None) -> AIOObjectLog:
        stack = contextlib.AsyncExitStack()
        try:
            s3, dynamodb = await open_clients(config, stack)
            log = await bridge(
                ObjectLog, config, clock=clock, s3_client=s3, dynamodb_client=dynamodb
            )
        except BaseException:
            await stack.aclose()
            raise
        return cls(log, stack)

    @property
    def config(self) -> Config:
        return self._log.config

    @property
    def clock(self) -> Clock:
        return self._log.clock

    async def ensure_resources(self) -> None:
        """Create the bucket and table if missing (the embedded stack; Terraform on AWS)."""
        await bridge(self._log.ensure_resources)

    async def close(self) -> None:
        """Stop the producers still running, then release the connections."""
        if self._closed:
            return
        self._closed = True
        for producer in list(self._producers):
            await producer.stop()
        await bridge(self._log.close)
        await self._stack.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- topics (ObjectLog's, awaited) -------------------------------------------------

    async def create_topic(
        self, name: str, partitions: int = 1, config: Mapping[str, object] | None = None
    ) -> Topic:
        return await bridge(self._log.create_topic, name, partitions, config)

    async def list_topics(self) -> list[str]:
        return await bridge(self._log.list_topics)

    async def topic(self, name: str, *, fresh: bool = False) -> Topic:
        return await bridge(self._log.topic, name, fresh=fresh)

    async def describe_topic(self, name: str) -> TopicDescription:
        return await bridge(self._log.describe_topic, name)

    async def alter_topic_config(
        self, name: str, set: Mapping[str, object] | None = None, delete: Iterable[str] = ()
    ) -> Topic:
        return await bridge(self._log.alter_topic_config, name, set, delete)

    async def add_partitions(self, name: str, total: int) -> Topic:
        return await bridge(self._log.add_partitions, name, total)

    async def delete_topic(self, name: str) -> None:
        await bridge(self._log.delete_topic, name)

    # ---- offsets and records -----------------------------------------------------------

    async def offsets(self, topic: str, partition: int) -> Offsets:
        return await bridge(self._log.offsets, topic, partition)

    async def delete_records(self, topic: str, offsets: Mapping[int, int]) -> dict[int, int]:
        return await bridge(self._log.delete_records, topic, offsets)

    async def offset_for_time(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        return await bridge(self._log.offset_for_time, topic, partition, timestamp_ms)

    async def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_records: int | None = None,
        max_wait_ms: int = 0,
        isolation_level: str = READ_UNCOMMITTED,
    ) -> FetchResult:
        """ObjectLog.fetch: a wait at the tail (max_wait_ms) is awaited, not slept."""
        return await bridge(
            self._log.fetch,
            topic,
            partition,
            offset,
            max_bytes=max_bytes,
            max_records=max_records,
            max_wait_ms=max_wait_ms,
            isolation_level=isolation_level,
        )

    # ---- clients -----------------------------------------------------------------------

    def producer(self, **options: Any) -> AIOProducer:
        """An AIOProducer on this log (start it, or use it with ``async with``)."""
        producer = AIOProducer(self, **options)
        self._producers.add(producer)
        return producer

    @property
    def sync_log(self) -> ObjectLog:
        """The ObjectLog this client runs on the loop: its methods may only be called through
        objectlog.concurrency.bridge (anywhere else they raise RuntimeError)."""
        return self._log
