"""DescribeTopicPartitions (KIP-966), which Kafka 3.8+ AdminClients use for describeTopics:
topics by name (or every topic), their partitions paged by a cursor, as Kafka 3.9's broker
pages them (DescribeTopicPartitionsRequestHandler, KRaftMetadataCache).

Topics come in name order, from the cursor's topic (and, in it, the cursor's partition) on; at
most ``response_partition_limit`` partitions (capped at Kafka's default
max.request.partition.size.limit, 2000) are answered, and the next cursor names where the next
page starts. Each partition has the one broker as leader, replica and in-sync replica; with no
replicas there are no eligible leader replicas (KIP-966) and none offline.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from objectlog.errors import InvalidRequest, InvalidTopicName, ObjectLogError
from objectlog.format.topics import Topic, validate_topic_name
from objectlog.kafka import operations
from objectlog.kafka.context import ApiContext, topic_uuid
from objectlog.kafka.wire import Request

PARTITION_LIMIT = 2000  # Kafka's max.request.partition.size.limit default
NO_TOPIC_ID = uuid.UUID(int=0)


@dataclass
class Page:
    """One answer's topics and where the next page starts."""

    topics: list[dict[str, Any]]
    next_cursor: dict[str, Any] | None = None


class TopicPartitionsApi:
    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx

    async def describe_topic_partitions(self, request: Request) -> dict[str, Any]:
        body = request.body
        try:
            page = await self.ctx.call(self._page, body)
        except InvalidRequest:  # Kafka answers every topic asked for with the error
            page = Page([_topic_error(t.name, ErrorCode.invalid_request) for t in body.topics])
        return {"throttle_time": 0, "topics": page.topics, "next_cursor": page.next_cursor}

    def _page(self, body: Any) -> Page:
        every_topic = not body.topics
        cursor = body.cursor
        first = cursor.topic_name if cursor is not None else ""
        asked = self.ctx.log.list_topics() if every_topic else [t.name for t in body.topics]
        names = sorted({name for name in asked if name >= first})
        if cursor is not None and not every_topic and cursor.topic_name not in names:
            raise InvalidRequest(
                "DescribeTopicPartitionsRequest topic list should contain the cursor topic: "
                f"{cursor.topic_name}"
            )
        if cursor is not None and cursor.partition_index < 0:
            raise InvalidRequest(
                "DescribeTopicPartitionsRequest cursor partition must be valid: "
                f"Cursor(topicName='{cursor.topic_name}', "
                f"partitionIndex={cursor.partition_index})"
            )
        limit = max(min(PARTITION_LIMIT, body.response_partition_limit), 1)
        return self._paged(
            names,
            lambda name: cursor.partition_index if cursor and name == first else 0,
            limit,
            every_topic,
        )

    def _paged(
        self, names: Iterable[str], start: Callable[[str], int], limit: int, every_topic: bool
    ) -> Page:
        """Kafka's loop: whole topics while the limit lasts; a topic cut short, or the first
        topic the limit leaves out, is where the next cursor points."""
        page = Page([])
        remaining = limit
        for name in names:
            if remaining == 0:
                page.next_cursor = {"topic_name": name, "partition_index": 0}
                break
            topic, code = self._topic(name)
            if topic is None:
                if not every_topic:  # a topic listing all skips one deleted meanwhile
                    page.topics.append(_topic_error(name, code))
                continue
            first = start(name)
            upper = min(topic.partitions, first + remaining)
            page.topics.append(self._described(topic, range(first, upper)))
            if upper < topic.partitions:
                page.next_cursor = {"topic_name": name, "partition_index": upper}
                break
            remaining -= max(upper - first, 0)
        return page

    def _topic(self, name: str) -> tuple[Topic | None, ErrorCode]:
        try:
            validate_topic_name(name)
            return self.ctx.log.topic(name), ErrorCode.none
        except InvalidTopicName:
            return None, ErrorCode.invalid_topic_exception
        except ObjectLogError:
            return None, ErrorCode.unknown_topic_or_partition

    def _described(self, topic: Topic, partitions: range) -> dict[str, Any]:
        return {
            "error_code": ErrorCode.none,
            "name": topic.name,
            "topic_id": topic_uuid(topic.topic_id),
            "is_internal": False,
            "partitions": [self.ctx.broker.leads(p) for p in partitions],
            # Kafka always reports them here (the request has no flag): no ACLs, so all
            "topic_authorized_operations": operations.authorized(operations.TOPIC, True),
        }


def _topic_error(name: str, code: ErrorCode) -> dict[str, Any]:
    return {
        "error_code": code,
        "name": name,
        "topic_id": NO_TOPIC_ID,
        "is_internal": False,
        "partitions": [],
    }
