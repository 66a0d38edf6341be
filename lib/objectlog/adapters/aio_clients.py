"""aiobotocore's clients for the asyncio client, with botocore's blocking interface on top
(and aiohttp's session with requests' interface, for the HTTP transport).

The stores and adapters call botocore clients (``client.get_item(...)``, a GetObject body's
``read()``, paginators, waiters). ``BridgedClient`` gives them an aiobotocore client behind that
same interface: each call is awaited on the event loop through objectlog.concurrency.wait_for,
so the one set of stores runs on both clients (objectlog/concurrency.py says why and how).
aiobotocore raises botocore's exception classes, so adapters/aws.py translates its errors as
it does botocore's, and DynamoTable's retry policy holds unchanged.

Clients are made with the same settings as the threaded client's (adapters.aws.botocore_config:
timeouts, retries, addressing style, user agent) from the same Config.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import requests
from aiobotocore.config import AioConfig
from aiobotocore.session import AioSession, get_session
from requests.structures import CaseInsensitiveDict

from objectlog.adapters.aws import SessionKey, botocore_config, cached_session
from objectlog.concurrency import wait_for
from objectlog.config import Config


class BridgedClient:
    """An aiobotocore client answering as a botocore client does, for bridged code."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.meta = client.meta
        self.exceptions = client.exceptions

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            # aiobotocore's operations are plain methods returning coroutines
            result = attribute(*args, **kwargs)
            return _bridged_response(wait_for(result)) if inspect.isawaitable(result) else result

        return call

    def get_paginator(self, operation: str) -> _BridgedPaginator:
        return _BridgedPaginator(self._client.get_paginator(operation))

    def get_waiter(self, name: str) -> _BridgedWaiter:
        return _BridgedWaiter(self._client.get_waiter(name))


def _bridged_response(response: Any) -> Any:
    if isinstance(response, dict) and "Body" in response:
        response["Body"] = _BridgedBody(response["Body"])
    return response


class _BridgedBody:
    """A GetObject body: read() awaits the rest of the response on the loop."""

    def __init__(self, body: Any) -> None:
        self._body = body

    def read(self, amount: int | None = None) -> bytes:
        data: bytes = wait_for(self._body.read(amount) if amount else self._body.read())
        return data

    def close(self) -> None:
        self._body.close()


class _BridgedPaginator:
    def __init__(self, paginator: Any) -> None:
        self._paginator = paginator

    def paginate(self, **kwargs: Any) -> Iterator[dict[str, Any]]:
        pages: AsyncIterator[dict[str, Any]] = self._paginator.paginate(**kwargs).__aiter__()
        while True:
            try:
                yield wait_for(pages.__anext__())
            except StopAsyncIteration:
                return


class _BridgedWaiter:
    def __init__(self, waiter: Any) -> None:
        self._waiter = waiter

    def wait(self, **kwargs: Any) -> None:
        wait_for(self._waiter.wait(**kwargs))


_SESSIONS: dict[SessionKey, AioSession] = {}


def aio_session(config: Config) -> AioSession:
    """An aiobotocore session with the threaded client's credentials, one per set of settings
    (adapters.aws.cached_session: loading a client's service model takes about half a second
    the first time)."""

    def build(kwargs: dict[str, Any]) -> AioSession:
        session = get_session()
        if "aws_access_key_id" in kwargs:
            session.set_credentials(
                kwargs["aws_access_key_id"],
                kwargs["aws_secret_access_key"],
                kwargs.get("aws_session_token"),
            )
        session.set_config_variable("region", kwargs["region_name"])
        return session

    return cached_session(config, _SESSIONS, build)


async def open_clients(
    config: Config, stack: contextlib.AsyncExitStack
) -> tuple[BridgedClient, BridgedClient]:
    """S3 and DynamoDB clients for config, closed with stack: (s3, dynamodb)."""
    session = aio_session(config)
    aio_settings = botocore_config(config, kind=AioConfig)
    s3 = await stack.enter_async_context(
        session.create_client("s3", endpoint_url=config.s3_endpoint, config=aio_settings)
    )
    dynamodb = await stack.enter_async_context(
        session.create_client(
            "dynamodb", endpoint_url=config.dynamodb_endpoint, config=aio_settings
        )
    )
    return BridgedClient(s3), BridgedClient(dynamodb)


class BridgedHttp:
    """An aiohttp session answering as requests.Session.request does, for bridged code: the
    HTTP transport's ApiSession (retries, errors, signing) runs unchanged on the loop.
    requests prepares each request (its JSON body, query string, and the SigV4 signature or
    bearer token over them) and aiohttp sends it; aiohttp's connection failures come back as
    requests' exceptions (ConnectionError, Timeout), so the one retry policy reads them."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self._session = session

    def request(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        params: Any = None,
        headers: Any = None,
        timeout: float | None = None,
        auth: Any = None,
    ) -> requests.Response:
        prepared = requests.Request(
            method, url, json=json, params=params, headers=headers, auth=auth
        ).prepare()
        try:
            return wait_for(self._send(prepared, timeout))
        except aiohttp.ClientConnectionError as e:
            raise requests.ConnectionError(str(e)) from e
        except TimeoutError as e:
            raise requests.Timeout(f"no answer within {timeout} s") from e

    async def _send(
        self, prepared: requests.PreparedRequest, timeout: float | None
    ) -> requests.Response:
        assert prepared.method is not None and prepared.url is not None
        async with self._session.request(
            prepared.method,
            prepared.url,
            data=prepared.body,
            headers={
                k: v if isinstance(v, str) else v.decode() for k, v in prepared.headers.items()
            },
            timeout=aiohttp.ClientTimeout(total=timeout),
        ) as answer:
            body = await answer.read()
        response = requests.Response()
        response.status_code = answer.status
        response.reason = answer.reason or ""
        response.headers = CaseInsensitiveDict(answer.headers)
        response.url = str(answer.url)
        response._content = body
        response.encoding = answer.charset or "utf-8"
        return response

    def close(self) -> None:
        """Nothing: the session is closed with the client's exit stack."""


async def open_http(stack: contextlib.AsyncExitStack) -> BridgedHttp:
    """An aiohttp session for the HTTP transport, closed with stack."""
    session = await stack.enter_async_context(aiohttp.ClientSession())
    return BridgedHttp(session)
