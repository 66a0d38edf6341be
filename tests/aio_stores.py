"""The asyncio client's stores, for the store contract suites: the same store classes as the
threaded client's, over aiobotocore clients, every call run bridged on an event loop
(objectlog.concurrency), so a synchronous test drives them as the asyncio client does."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
import types
import uuid
from collections.abc import Callable, Iterator
from dataclasses import fields
from typing import Any

import pytest

from objectlog.adapters import aws
from objectlog.adapters.aio_clients import BridgedClient, open_clients
from objectlog.concurrency import bridge
from objectlog.config import Config
from objectlog.stores.items import ItemStores


class OnLoop:
    """A store whose every method call runs bridged on the loop (an iterator it returns is
    read there too: a generator's calls are network calls). Calls from several test threads
    at once run as concurrent greenlets on the one loop, as an asyncio program's tasks do."""

    def __init__(self, target: Any, loop: asyncio.AbstractEventLoop) -> None:
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "_loop", loop)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.target, name, value)  # a test's setting of the store (a bound made small)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.target, name)
        if type(attribute).__module__.startswith(("objectlog.adapters", "objectlog.stores")):
            return OnLoop(attribute, self._loop)  # a store's table: its calls too
        if not callable(attribute) or inspect.isclass(attribute):
            return attribute
        return on_loop(self._loop, attribute)

    def bridged(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """fn (a test's own call on the store's table) run on this store's loop."""
        return on_loop(self._loop, fn)


def on_loop(loop: asyncio.AbstractEventLoop, fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        def run() -> Any:
            result = fn(*args, **kwargs)
            return list(result) if isinstance(result, types.GeneratorType) else result

        return asyncio.run_coroutine_threadsafe(bridge(run), loop).result(timeout=120)

    return call


@contextlib.contextmanager
def aio_clients(config: Config) -> Iterator[tuple[asyncio.AbstractEventLoop, Any, Any]]:
    """An event loop running on its own thread with aiobotocore S3 and DynamoDB clients on
    it: (loop, s3, dynamodb)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="test-event-loop", daemon=True)
    thread.start()
    stack = contextlib.AsyncExitStack()

    def on_the_loop(coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(timeout=60)

    s3, dynamodb = on_the_loop(open_clients(config, stack))
    try:
        yield loop, s3, dynamodb
    finally:
        on_the_loop(stack.aclose())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


_SHARED: dict[str, tuple[asyncio.AbstractEventLoop, Any, Any]] = {}


def shared_aio_clients(
    request: pytest.FixtureRequest,
) -> tuple[asyncio.AbstractEventLoop, Any, Any]:
    """One loop thread with its clients for the whole session's contract tests (each test's
    own costs about 0.1 s): (loop, s3, dynamodb), closed when the session ends."""
    endpoint = request.getfixturevalue("aws_endpoint")
    if endpoint not in _SHARED:
        clients = aio_clients(Config.from_env())
        _SHARED[endpoint] = clients.__enter__()
        request.session.config.add_cleanup(lambda: clients.__exit__(None, None, None))
    return _SHARED[endpoint]


def dynamodb_items(request: pytest.FixtureRequest, prefix: str) -> tuple[ItemStores, ItemStores]:
    """(the stores as a test calls them, the stores themselves) on a new table named
    "<prefix>-<random>", for a contract suite's "dynamodb" param (the threaded client's
    botocore client) or its "dynamodb-aio" one (the asyncio client's, called on its loop)."""
    table = f"{prefix}-{uuid.uuid4().hex[:12]}"
    if request.param == "dynamodb-aio":
        return aio_items(request, table)
    request.getfixturevalue("aws_endpoint")
    items = ItemStores.dynamodb(aws.dynamodb_client(Config.from_env()), table)
    items.metadata.ensure_table()
    return items, items


def aio_items(request: pytest.FixtureRequest, table: str) -> tuple[ItemStores, ItemStores]:
    """(the stores as a test calls them, the stores themselves) on a new table, over the
    asyncio client's DynamoDB client."""
    loop, _, dynamodb = shared_aio_clients(request)
    assert isinstance(dynamodb, BridgedClient)
    items = ItemStores.dynamodb(dynamodb, table)
    bridged = ItemStores(*(OnLoop(getattr(items, f.name), loop) for f in fields(items)))
    bridged.metadata.ensure_table()
    return bridged, items
