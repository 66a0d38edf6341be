"""Concurrent ranged GETs through aioboto3, on an event loop of its own.

The fetch path asks for many slices at once (several partitions, several segments); this
reader issues them concurrently over one aiohttp connection pool and hands back bytes, so
callers stay synchronous. A caller's ``then`` (the fetch path's Parquet decode) runs as each
range arrives, on a small pool of threads beside the reader's loop: decoding releases the GIL,
so slices decode in parallel while the loop keeps receiving the other GETs.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import aioboto3
import botocore.exceptions
from aiobotocore.config import AioConfig

from objectlog.adapters.aws import botocore_config, session_kwargs, translate
from objectlog.config import Config
from objectlog.errors import ObjectLogError

Range = tuple[str, int, int]  # key, start, length
Then = Callable[[int, bytes], Any]  # (the range's index, its bytes) -> what read_many returns


class AsyncRangeReader:
    def __init__(self, config: Config, *, concurrency: int = 32) -> None:
        self.config = config
        self.concurrency = concurrency
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="objectlog-s3-reads", daemon=True
        )
        self._thread.start()
        self._client: Any = None
        self._client_cm: Any = None
        self._semaphore: asyncio.Semaphore | None = None
        self._then_pool = ThreadPoolExecutor(
            max_workers=min(4, os.cpu_count() or 1), thread_name_prefix="objectlog-decode"
        )

    async def _open(self) -> Any:
        if self._client is None:
            session = aioboto3.Session(**session_kwargs(self.config))
            self._client_cm = session.client(
                "s3",
                endpoint_url=self.config.s3_endpoint,
                config=botocore_config(self.config, pool=self.concurrency, config_class=AioConfig),
            )
            self._client = await self._client_cm.__aenter__()
            self._semaphore = asyncio.Semaphore(self.concurrency)
        return self._client

    async def _get(self, key: str, start: int, length: int) -> bytes:
        client = await self._open()
        assert self._semaphore is not None
        async with self._semaphore:
            try:
                response = await client.get_object(
                    Bucket=self.config.bucket, Key=key, Range=f"bytes={start}-{start + length - 1}"
                )
                async with response["Body"] as body:
                    return bytes(await body.read())
            except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
                raise translate(e, what=f"GetObject {key}", idempotent=True) from e

    async def _get_then(self, index: int, r: Range, then: Then | None) -> Any:
        data = await self._get(*r)
        if then is None:
            return data
        return await self._loop.run_in_executor(self._then_pool, then, index, data)

    async def _get_all(self, ranges: Sequence[Range], then: Then | None) -> list[Any]:
        results = await asyncio.gather(
            *(self._get_then(i, r, then) for i, r in enumerate(ranges)), return_exceptions=True
        )
        out: list[Any] = []
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, ObjectLogError):
                result = translate(
                    result if isinstance(result, Exception) else Exception(result),
                    what="GetObject",
                    idempotent=True,
                )
            out.append(result)
        return out

    def read_many(self, ranges: Sequence[Range], then: Then | None = None) -> list[Any]:
        """Each range's bytes, or then(index, bytes) if given, or the objectlog error reading
        it raised, in order. then runs on the reader's decode threads as each range arrives;
        it should not raise (the fetch path's decode returns its errors)."""
        if not ranges:
            return []
        future: Future[list[Any]] = asyncio.run_coroutine_threadsafe(
            self._get_all(ranges, then), self._loop
        )
        return future.result()

    def close(self) -> None:
        async def shutdown() -> None:
            if self._client_cm is not None:
                await self._client_cm.__aexit__(None, None, None)
                self._client = self._client_cm = None

        if self._loop.is_running():
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
        self._loop.close()
        self._then_pool.shutdown(wait=False)
