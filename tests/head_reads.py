"""Counting the partition heads an ObjectLog reads (tests of waiting that reads nothing)."""

from __future__ import annotations

from typing import Any

from objectlog import ObjectLog


class HeadReads:
    """Partition heads the log reads (its DynamoDB client's GetItem and BatchGetItem keys)."""

    def __init__(self, log: ObjectLog) -> None:
        self.count = 0
        events = log.metadata.client.meta.events
        events.register("provide-client-params.dynamodb.GetItem", self._one)
        events.register("provide-client-params.dynamodb.BatchGetItem", self._batch)

    def _one(self, params: dict[str, Any], **_: Any) -> None:
        self.count += _is_head(params["Key"])

    def _batch(self, params: dict[str, Any], **_: Any) -> None:
        self.count += sum(_is_head(k) for t in params["RequestItems"].values() for k in t["Keys"])


def _is_head(key: dict[str, Any]) -> bool:
    return str(key["pk"].get("S", "")).startswith("part#")
