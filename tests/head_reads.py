"""Tests of waiting that reads nothing: counting the partition heads an ObjectLog reads, and
logs whose activity settings make a partition go idle within a second."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from objectlog import ObjectLog
from objectlog.services.activity import ActivitySettings

FAST = ActivitySettings(touch_every_s=0.2, guard_s=0.3, idle_after_s=0.6, poll_s=0.1)


def fast_writer(log: ObjectLog, topic: str, partitions: int) -> ObjectLog:
    """log with FAST activity settings, and topic created on it."""
    log.activity.settings = FAST
    log.create_topic(topic, partitions=partitions)
    return log


@contextmanager
def fast_reader(writer: ObjectLog) -> Iterator[ObjectLog]:
    """Another ObjectLog on writer's bucket and table, with FAST activity settings."""
    with ObjectLog(writer.config) as log:
        log.activity.settings = FAST
        yield log


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
