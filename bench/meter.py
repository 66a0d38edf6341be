"""Counting AWS requests (botocore event hooks) and timing library stages."""

from __future__ import annotations

import functools
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from objectlog.adapters.dynamodb import item_from_dynamo
from objectlog.adapters.dynamodb import item_size as dynamo_item_size
from objectlog.clients.direct import ObjectLog


@dataclass
class Tally:
    """Requests by kind, and the sizes of the DynamoDB items they wrote and read."""

    counts: Counter[str] = field(default_factory=Counter)
    written: list[int] = field(default_factory=list)  # head items returned by commits
    read: list[int] = field(default_factory=list)  # items returned by GetItem/BatchGetItem
    read_heads: list[int] = field(default_factory=list)  # of which partition heads

    def __iadd__(self, other: Tally) -> Tally:
        self.counts.update(other.counts)
        self.written += other.written
        self.read += other.read
        self.read_heads += other.read_heads
        return self


class Requests:
    """Requests sent by one ObjectLog, by kind: both clients it uses (concurrent slice reads
    go through the S3 one too).

    Kinds are the operation, with S3 calls split by what they touch: ``PutObject:l0`` (data),
    ``PutObject:index`` (manifests), ``GetObject:l0``, ``GetObject:index``. Retries by
    botocore are separate HTTP requests and billed as such, so ``before-send`` is counted.
    """

    def __init__(self, log: ObjectLog) -> None:
        self.tally = Tally()
        self._lock = threading.Lock()
        for client in (log.store.client, log.metadata.client):
            self._register(client)

    def _register(self, client: Any) -> None:
        client.meta.events.register("before-send", self._count)
        client.meta.events.register("after-call.dynamodb.UpdateItem", self._written)
        client.meta.events.register("after-call.dynamodb.GetItem", self._read)
        client.meta.events.register("after-call.dynamodb.BatchGetItem", self._read)

    def _count(self, request: Any, event_name: str, **_: Any) -> None:
        operation = event_name.rsplit(".", 1)[-1]
        if operation in ("PutObject", "GetObject"):
            operation += ":l0" if "/l0/" in request.url else ":index"
        with self._lock:
            self.tally.counts[operation] += 1

    def _written(self, parsed: Mapping[str, Any], **_: Any) -> None:
        attributes = parsed.get("Attributes")
        if attributes and "tail" in attributes:
            with self._lock:
                self.tally.written.append(item_size(attributes))

    def _read(self, parsed: Mapping[str, Any], **_: Any) -> None:
        items = [parsed["Item"]] if "Item" in parsed else []
        for table_items in parsed.get("Responses", {}).values():
            items += table_items
        sizes = [item_size(item) for item in items]
        heads = [size for item, size in zip(items, sizes, strict=True) if is_head(item)]
        with self._lock:
            self.tally.read += sizes
            self.tally.read_heads += heads

    def take(self) -> Tally:
        """What was sent since the last take, and start again."""
        with self._lock:
            tally, self.tally = self.tally, Tally()
        return tally


def is_head(item: Mapping[str, Any]) -> bool:
    """A partition head, as the wire carries it (stores.dynamo_metadata.head_key): what a
    fetch reads, apart from topic metadata and group items."""
    return item.get("sk") == {"S": "head"}


def item_size(item: Mapping[str, Any]) -> int:
    """A DynamoDB item's billed size, from the item as the wire carries it."""
    return dynamo_item_size(item_from_dynamo(item))


class Stopwatch:
    """Seconds spent in wrapped callables, by name (thread-safe, nested calls both count)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - started
                with self._lock:
                    self.seconds[name] += elapsed
                    self.calls[name] += 1

        return timed

    def take(self) -> tuple[dict[str, float], Counter[str]]:
        """Seconds and calls by name since the last take."""
        with self._lock:
            seconds, self.seconds = self.seconds, defaultdict(float)
            calls, self.calls = self.calls, Counter()
        return seconds, calls
