"""Topic activity items: one small counter per topic that writers add to and idle readers poll
(the rules of when to touch and when to look are services.activity's).

    activity#<topic> / activity    v (a number: every touch adds one)

Its own item, not the topic's metadata item, so a touch never rewrites (and is never billed
for) the topic's config, and polling it reads about 60 bytes. The counter only grows; a reader
compares it for change, so a stale (older) value read eventually consistently costs at most a
needless look at the heads, never a missed record. A deleted topic leaves its item (a
recreated one goes on counting from it).

Request costs: a touch is one UpdateItem (``ADD``, 1 write unit); a read one GetItem,
eventually consistent (0.5 read unit on DynamoDB on-demand) or, when a reader must prove that
nothing acknowledged before its request is missing (services.activity.still), strongly
consistent (1 read unit).
"""

from __future__ import annotations

import functools
import threading
from collections import Counter
from collections.abc import Collection
from typing import Any, Protocol

from objectlog.adapters.dynamodb import (
    BATCH_GET_LIMIT,
    DynamoTable,
    item_from_dynamo,
    item_to_dynamo,
)


class ActivityStore(Protocol):
    def touch(self, topic: str) -> None:
        """Add one to the topic's counter (creating the item at 1). Raises ObjectLogError
        when the write failed or its outcome is unknown."""
        ...

    def read(self, topic: str, *, consistent: bool = False) -> int:
        """The topic's counter (0 if never touched). Eventually consistent unless asked: it
        may lag the newest touches, and two reads may even go back and forth while it
        settles; a strongly consistent read reflects every touch that completed before it
        was sent."""
        ...

    def read_many(self, topics: Collection[str], *, consistent: bool = False) -> dict[str, int]:
        """read() of several topics in one request (BatchGetItem, billed per item)."""
        ...


def activity_key(topic: str) -> dict[str, str]:
    return {"pk": f"activity#{topic}", "sk": "activity"}


class DynamoActivityStore:
    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def touch(self, topic: str) -> None:
        self.table.update(
            activity_key(topic),
            "ADD v :one",
            values={":one": 1},
            repeatable=True,  # a repeat counts twice: any change is a change
            what="UpdateItem topic activity",
        )

    def read(self, topic: str, *, consistent: bool = False) -> int:
        # DynamoTable.get reads strongly consistently (1 read unit); an eventually consistent
        # read may lag, and costs half. TODO(lead): a `consistent=` on DynamoTable.get would
        # keep even the client's method name in the adapter; until then, the adapter's retry
        # policy and error translation are used through its `call`.
        response = self.table.call(
            "GetItem topic activity",
            lambda: self.table.client.get_item(
                TableName=self.table.name,
                Key=item_to_dynamo(activity_key(topic)),
                ConsistentRead=consistent,
            ),
        )
        item = response.get("Item")
        return int(item_from_dynamo(item)["v"]) if item else 0

    def read_many(self, topics: Collection[str], *, consistent: bool = False) -> dict[str, int]:
        values = dict.fromkeys(topics, 0)
        names = sorted(values)
        for i in range(0, len(names), BATCH_GET_LIMIT):
            keys = [item_to_dynamo(activity_key(t)) for t in names[i : i + BATCH_GET_LIMIT]]
            pending: dict[str, Any] = {
                self.table.name: {"Keys": keys, "ConsistentRead": consistent}
            }
            while pending:
                response = self.table.call(
                    "BatchGetItem topic activity",
                    functools.partial(self.table.client.batch_get_item, RequestItems=pending),
                )
                for raw in response.get("Responses", {}).get(self.table.name, []):
                    item = item_from_dynamo(raw)
                    values[str(item["pk"]).removeprefix("activity#")] = int(item["v"])
                pending = response.get("UnprocessedKeys") or {}
        return values


class MemoryActivityStore:
    """In memory, for unit tests (its reads are never stale).
    ``requests`` counts the DynamoDB requests the DynamoDB store would send."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: Counter[str] = Counter()
        self.requests: Counter[str] = Counter()

    def touch(self, topic: str) -> None:
        with self._lock:
            self.requests["UpdateItem"] += 1
            self._counters[topic] += 1

    def read(self, topic: str, *, consistent: bool = False) -> int:
        with self._lock:
            self.requests["GetItem consistent" if consistent else "GetItem"] += 1
            return self._counters[topic]

    def read_many(self, topics: Collection[str], *, consistent: bool = False) -> dict[str, int]:
        with self._lock:
            self.requests["BatchGetItem consistent" if consistent else "BatchGetItem"] += 1
        return {topic: self._counters[topic] for topic in topics}
