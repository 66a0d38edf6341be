"""Topic administration over Kafka: CreateTopics and DeleteTopics (objectlog's topic configs
already carry Kafka's names)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode
from ulid import ULID

from objectlog.errors import ObjectLogError, TopicExists, TopicNotFound
from objectlog.format.topics import (
    Topic,
    TopicConfig,
    validate_config,
    validate_partition_count,
    validate_topic_name,
)
from objectlog.kafka.context import ApiContext, topic_uuid
from objectlog.kafka.errors import error_code
from objectlog.kafka.wire import Request

TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5  # Kafka's config sources


class AdminApi:
    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx

    async def create_topics(self, request: Request) -> dict[str, Any]:
        body = request.body
        results = []
        for topic in body.topics:
            config = {c.name: c.value for c in topic.configs}
            count = topic.num_partitions if topic.num_partitions > 0 else 1
            if topic.assignments:
                message = "objectlog places partitions itself: no replica assignment"
                results.append(
                    _topic_error(topic.name, ErrorCode.invalid_replica_assignment, message)
                )
                continue
            try:
                if body.validate_only:
                    created = await self.ctx.call(self._validate_topic, topic.name, count, config)
                else:
                    created = await self.ctx.call(
                        self.ctx.log.create_topic, topic.name, count, config
                    )
                results.append(_created(created))
            except ObjectLogError as e:
                results.append(_topic_error(topic.name, error_code(e), str(e)))
        return {"throttle_time": 0, "topics": results}

    def _validate_topic(self, name: str, partitions: int, config: Mapping[str, str]) -> Topic:
        """What create_topic would create (CreateTopics with validate_only), storing nothing."""
        if name in self.ctx.log.list_topics():
            raise TopicExists(f"topic {name!r} already exists", field="topic")
        return Topic(
            validate_topic_name(name),
            str(ULID()),
            validate_partition_count(partitions),
            TopicConfig(validate_config(config)),
            0,
        )

    async def delete_topics(self, request: Request) -> dict[str, Any]:
        body = request.body
        if request.api_version >= 6:
            names = await self.ctx.names_by_id()
            targets = [(t.name or names.get(t.topic_id), t.topic_id) for t in body.topics]
        else:
            targets = [(name, None) for name in body.topic_names]
        responses = []
        for name, topic_id in targets:
            code, message = ErrorCode.none, None
            try:
                if name is None:
                    raise TopicNotFound("no topic has that id", field="topic")
                await self.ctx.call(self.ctx.log.delete_topic, name)
            except ObjectLogError as e:
                code, message = error_code(e), str(e)
            responses.append(
                {"name": name, "topic_id": topic_id, "error_code": code, "error_message": message}
            )
        return {"throttle_time": 0, "responses": responses}


def _created(topic: Topic) -> dict[str, Any]:
    return {
        "name": topic.name,
        "topic_id": topic_uuid(topic.topic_id),
        "error_code": ErrorCode.none,
        "num_partitions": topic.partitions,
        "replication_factor": 1,
        "configs": [
            {
                "name": key,
                "value": value,
                "read_only": False,
                "config_source": TOPIC_CONFIG if key in topic.config.overrides else DEFAULT_CONFIG,
                "is_sensitive": False,
            }
            for key, value in sorted(topic.config.effective().items())
        ],
    }


def _topic_error(name: str, code: ErrorCode, message: str) -> dict[str, Any]:
    return {"name": name, "error_code": code, "error_message": message, "num_partitions": -1}
