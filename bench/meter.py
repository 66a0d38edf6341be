"""Counting AWS requests (botocore event hooks) and timing library stages."""

from __future__ import annotations

import contextlib
import functools
import threading
import time
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from objectlog.adapters.aws import dynamodb_client
from objectlog.adapters.dynamodb import item_from_dynamo
from objectlog.adapters.dynamodb import item_size as dynamo_item_size
from objectlog.clients.direct import ObjectLog


@dataclass
class Tally:
    """Requests by kind, and the sizes of the DynamoDB items they wrote and read."""

    counts: Counter[str] = field(default_factory=Counter)
    written: list[int] = field(default_factory=list)  # billed sizes of the head items written
    read: list[int] = field(default_factory=list)  # items returned by GetItem/BatchGetItem
    read_heads: list[int] = field(default_factory=list)  # of which partition heads

    def __iadd__(self, other: Tally) -> Tally:
        self.counts.update(other.counts)
        self.written += other.written
        self.read += other.read
        self.read_heads += other.read_heads
        return self


class WrittenSizes:
    """The size each item's last write left. DynamoDB bills a write for the larger of the item
    before and after it: a spill shrinks a head, and is billed for the head it shrank."""

    def __init__(self) -> None:
        self._last: dict[str, int] = {}

    def billed(self, item: str, size: int) -> int:
        """The size a write that leaves item at size is billed for."""
        before, self._last[item] = self._last.get(item, 0), size
        return max(before, size)


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
        self._config = log.config
        self._reader: Any = None  # a DynamoDB client of its own while sizing heads
        self._one_in = 1
        self._sizes = WrittenSizes()
        for client in (log.store.client, log.metadata.client):
            self._register(client)

    @contextlib.contextmanager
    def sizing_heads(self, one_in: int = 1) -> Iterator[None]:
        """Size the head items commits write, reading back those a commit did not return (a
        solo writer's pinned commits answer nothing) with a client of its own, not counted.
        It adds a GetItem to each such commit: for untimed runs, or a sample of the heads
        (one_in: every write to one head in that many, chosen by its key)."""
        self._reader, self._one_in = dynamodb_client(self._config), one_in
        try:
            yield
        finally:
            self._reader = None

    def _register(self, client: Any) -> None:
        events = client.meta.events
        events.register("before-send", self._count)
        events.register("before-parameter-build.dynamodb.UpdateItem", self._remember_key)
        events.register("after-call.dynamodb.UpdateItem", self._written)
        events.register("after-call.dynamodb.GetItem", self._read)
        events.register("after-call.dynamodb.BatchGetItem", self._read)

    def _count(self, request: Any, event_name: str, **_: Any) -> None:
        operation = event_name.rsplit(".", 1)[-1]
        if operation in ("PutObject", "GetObject"):
            operation += ":l0" if "/l0/" in request.url else ":index"
        with self._lock:
            self.tally.counts[operation] += 1

    @staticmethod
    def _remember_key(params: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["objectlog-key"] = (params["TableName"], params["Key"])

    def _written(self, parsed: Mapping[str, Any], context: Mapping[str, Any], **_: Any) -> None:
        """The billed size of a head write (WrittenSizes), while sizing_heads."""
        table, key = context["objectlog-key"]
        if self._reader is None or "Error" in parsed or not is_head(key):
            return
        item = repr(sorted(key.items()))
        if zlib.crc32(item.encode()) % self._one_in:
            return
        attributes = parsed.get("Attributes")
        if not (attributes and "tail" in attributes):
            attributes = self._reader.get_item(TableName=table, Key=key, ConsistentRead=True)[
                "Item"
            ]
        with self._lock:
            self.tally.written.append(self._sizes.billed(item, item_size(attributes)))

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
