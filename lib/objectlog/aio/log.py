"""AIOObjectLog: the asyncio client's connection to a deployment, and its admin calls.

    log = await AIOObjectLog.connect()          # AWS_ENDPOINT_URL, OBJECTLOG_BUCKET, ...
    await log.create_topic("events", partitions=8)
    async with log.producer(linger_ms=5) as producer:
        await producer.send_and_wait("events", b"hello")
    await log.close()

It runs the threaded client's own stores and services (clients/direct.py's ObjectLog) on the
event loop, over aiobotocore (objectlog/concurrency.py says how): every DynamoDB and S3 call is
awaited on the loop, errors are the same ObjectLogError kinds, the rules the same code. With
``api_url=`` it runs the HTTP transport (clients/http.py's HttpObjectLog) over aiohttp,
SigV4-signed or with a bearer token.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Self

from objectlog.adapters.aio_clients import open_clients, open_http
from objectlog.aio.admin import AIOAdminClient
from objectlog.aio.consumer import AIOConsumer, ConsumerRebalanceListener
from objectlog.aio.producer import AIOProducer
from objectlog.aio.transactional import AIOTransactionalProducer
from objectlog.clients.contract import LogClient
from objectlog.clients.direct import ObjectLog
from objectlog.clients.http import HttpObjectLog
from objectlog.clients.values import Offsets
from objectlog.clock import Clock, SystemClock
from objectlog.concurrency import bridge
from objectlog.config import DEFAULT_REGION, Config
from objectlog.errors import InvalidRequest
from objectlog.format.topics import Topic, TopicDescription
from objectlog.services.fetch import DEFAULT_MAX_BYTES, FetchResult
from objectlog.services.isolation import READ_UNCOMMITTED


class AIOObjectLog:
    """A connection to one objectlog deployment for asyncio programs. Make it with connect()
    (or ``async with await AIOObjectLog.connect()``); close() releases its HTTP sessions."""

    def __init__(self, log: LogClient, stack: contextlib.AsyncExitStack) -> None:
        self._log = log
        self._stack = stack
        self._producers: weakref.WeakSet[AIOProducer] = weakref.WeakSet()
        self._consumers: weakref.WeakSet[AIOConsumer] = weakref.WeakSet()
        self._closed = False

    @classmethod
    async def connect(
        cls,
        api_url: str | None = None,
        *,
        clock: Clock | None = None,
        sign: bool | None = None,
        token: str | Callable[[], str] | None = None,
        region: str = DEFAULT_REGION,
        **overrides: Any,
    ) -> AIOObjectLog:
        """Connect using the environment, as ObjectLog.connect() does (overrides: Config's
        fields, e.g. bucket=, table=, prefix=), or to the HTTP API at api_url: SigV4-signed
        unless it is on loopback (sign= decides), or with ``token`` (a JWT, or a function
        returning the current one) for the API's JWT authorizer."""
        if api_url is None:
            return await cls.from_config(Config.from_env(**overrides), clock=clock)

        async def over_http(stack: contextlib.AsyncExitStack) -> LogClient:
            http = await open_http(stack)
            return HttpObjectLog(api_url, sign=sign, region=region, token=token, http=http)

        return await cls._opened(over_http)

    @classmethod
    async def from_config(cls, config: Config, *, clock: Clock | None = None) -> AIOObjectLog:
        async def direct(stack: contextlib.AsyncExitStack) -> LogClient:
            s3, dynamodb = await open_clients(config, stack)
            return await bridge(
                ObjectLog, config, clock=clock, s3_client=s3, dynamodb_client=dynamodb
            )

        return await cls._opened(direct)

    @classmethod
    async def _opened(
        cls, open_log: Callable[[contextlib.AsyncExitStack], Awaitable[LogClient]]
    ) -> AIOObjectLog:
        """The client over the log open_log opens on a new exit stack (closed at close(), or
        at once if opening fails)."""
        stack = contextlib.AsyncExitStack()
        try:
            log = await open_log(stack)
        except BaseException:
            await stack.aclose()
            raise
        return cls(log, stack)

    @property
    def clock(self) -> Clock:
        clock: Clock | None = getattr(self._log, "clock", None)
        return clock or SystemClock()

    async def ensure_resources(self) -> None:
        """Create the bucket and table if missing (the embedded stack; Terraform on AWS)."""
        await bridge(self.direct().ensure_resources)

    def direct(self) -> ObjectLog:
        """The S3 and DynamoDB client under this one; InvalidRequest over the HTTP API."""
        if not isinstance(self._log, ObjectLog):
            raise InvalidRequest(
                "this call works on the bucket and table directly, not over the HTTP API: "
                "connect without api_url"
            )
        return self._log

    async def close(self) -> None:
        """Stop the producers and consumers still running, then release the connections."""
        if self._closed:
            return
        self._closed = True
        for producer in list(self._producers):
            await producer.stop()
        for consumer in list(self._consumers):
            await consumer.stop()
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
        """An AIOProducer on this log (start it, or use it with ``async with``); with
        transactional_id=, an AIOTransactionalProducer."""
        producer = (
            AIOTransactionalProducer(self, **options)
            if "transactional_id" in options
            else AIOProducer(self, **options)
        )
        self._producers.add(producer)
        return producer

    def consumer(
        self,
        *topics: str,
        group_id: str | None = None,
        listener: ConsumerRebalanceListener | None = None,
        **options: Any,
    ) -> AIOConsumer:
        """An AIOConsumer on this log (start it, or use it with ``async with``)."""
        consumer = AIOConsumer(self, *topics, group_id=group_id, listener=listener, **options)
        self._consumers.add(consumer)
        return consumer

    def admin(self) -> AIOAdminClient:
        """Consumer groups and ACLs (topics, configs and offsets are this object's calls)."""
        return AIOAdminClient(self)

    @property
    def sync_log(self) -> LogClient:
        """The ObjectLog this client runs on the loop: its methods may only be called through
        objectlog.concurrency.bridge (anywhere else they raise RuntimeError)."""
        return self._log
