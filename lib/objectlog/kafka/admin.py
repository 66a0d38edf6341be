"""Topic administration over Kafka: CreateTopics and DeleteTopics (objectlog's topic configs
already carry Kafka's names)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode
from ulid import ULID

from objectlog.errors import InvalidRequest, ObjectLogError, TopicExists, TopicNotFound
from objectlog.format.topics import (
    DEFAULTS,
    Topic,
    TopicConfig,
    validate_config,
    validate_partition_count,
    validate_topic_name,
)
from objectlog.kafka import operations
from objectlog.kafka.context import ApiContext, topic_uuid
from objectlog.kafka.errors import error_code
from objectlog.kafka.wire import Request

TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5  # Kafka's config sources
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # IncrementalAlterConfigs operations


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
            _config_entry(topic, key, value)
            for key, value in sorted(topic.config.effective().items())
        ],
    }


def _topic_error(name: str, code: ErrorCode, message: str) -> dict[str, Any]:
    return {"name": name, "error_code": code, "error_message": message, "num_partitions": -1}


class ConfigsApi:
    """DescribeConfigs, IncrementalAlterConfigs, CreatePartitions, DescribeCluster."""

    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx

    async def describe_configs(self, request: Request) -> dict[str, Any]:
        results = [await self.ctx.call(self._described, r) for r in request.body.resources]
        return {"throttle_time": 0, "results": results}

    def _described(self, resource: Any) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "error_code": ErrorCode.none,
            "error_message": None,
            "resource_type": resource.resource_type,
            "resource_name": resource.resource_name,
            "configs": [],
        }
        if resource.resource_type == BROKER_RESOURCE:
            return answer  # the one logical broker has no configs of its own to show
        if resource.resource_type != TOPIC_RESOURCE:
            return {
                **answer,
                "error_code": ErrorCode.invalid_request,
                "error_message": "only topic and broker resources are offered",
            }
        try:
            topic = self.ctx.log.topic(resource.resource_name, fresh=True)
        except ObjectLogError as e:
            return {**answer, "error_code": error_code(e), "error_message": str(e)}
        keys = resource.configuration_keys
        answer["configs"] = [
            _config_entry(topic, key, value)
            for key, value in sorted(topic.config.effective().items())
            if keys is None or key in keys
        ]
        return answer

    async def incremental_alter_configs(self, request: Request) -> dict[str, Any]:
        body = request.body
        responses = []
        for resource in body.resources:
            code, message = ErrorCode.none, None
            try:
                if resource.resource_type != TOPIC_RESOURCE:
                    raise InvalidRequest("only topic configs can be altered", field="resource")
                await self.ctx.call(self._alter, resource, body.validate_only)
            except ObjectLogError as e:
                code, message = error_code(e), str(e)
            responses.append(
                {
                    "error_code": code,
                    "error_message": message,
                    "resource_type": resource.resource_type,
                    "resource_name": resource.resource_name,
                }
            )
        return {"throttle_time": 0, "responses": responses}

    def _alter(self, resource: Any, validate_only: bool) -> None:
        topic = self.ctx.log.topic(resource.resource_name, fresh=True)
        to_set: dict[str, str] = {}
        to_delete: list[str] = []
        for config in resource.configs:
            operation = config.config_operation
            if operation == SET:
                to_set[config.name] = config.value or ""
            elif operation == DELETE:
                to_delete.append(config.name)
            elif operation in (APPEND, SUBTRACT):
                to_set[config.name] = _list_changed(
                    topic.config.get(config.name), config.value or "", operation == APPEND
                )
            else:
                raise InvalidRequest(f"unknown config operation {operation}", field="configs")
        validate_config(to_set)
        validate_config({key: DEFAULTS.get(key, "") for key in to_delete})
        if not validate_only:
            self.ctx.log.alter_topic_config(topic.name, set=to_set, delete=to_delete)

    async def create_partitions(self, request: Request) -> dict[str, Any]:
        body = request.body
        results = []
        for topic in body.topics:
            code, message = ErrorCode.none, None
            try:
                if topic.assignments:
                    raise InvalidRequest("objectlog places partitions itself", field="assignments")
                await self.ctx.call(self._grow, topic.name, topic.count, body.validate_only)
            except InvalidRequest as e:
                code, message = ErrorCode.invalid_partitions, str(e)
            except ObjectLogError as e:
                code, message = error_code(e), str(e)
            results.append({"name": topic.name, "error_code": code, "error_message": message})
        return {"throttle_time": 0, "results": results}

    def _grow(self, name: str, count: int, validate_only: bool) -> None:
        topic = self.ctx.log.topic(name, fresh=True)
        if validate_only:
            validate_partition_count(count)
            if count <= topic.partitions:
                raise InvalidRequest(
                    f"topic {name!r} has {topic.partitions} partitions; the new count must be "
                    "larger",
                    field="count",
                )
            return
        self.ctx.log.add_partitions(name, count)

    async def describe_cluster(self, request: Request) -> dict[str, Any]:
        broker = self.ctx.broker
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "error_message": None,
            "endpoint_type": 1,
            "cluster_id": broker.cluster_id,
            "controller_id": broker.node_id,
            "brokers": [
                {
                    "broker_id": broker.node_id,
                    "host": broker.host,
                    "port": broker.port,
                    "rack": None,
                }
            ],
            "cluster_authorized_operations": operations.authorized(
                operations.CLUSTER, request.body.include_cluster_authorized_operations
            ),
        }


def _config_entry(topic: Topic, key: str, value: str) -> dict[str, Any]:
    return {
        "name": key,
        "value": value,
        "read_only": False,
        "config_source": TOPIC_CONFIG if key in topic.config.overrides else DEFAULT_CONFIG,
        "is_sensitive": False,
        "synonyms": [],
        "config_type": 0,
        "documentation": None,
    }


def _list_changed(current: str, change: str, append: bool) -> str:
    """A list config (cleanup.policy) with values appended or subtracted, as Kafka does."""
    items = [v for v in current.split(",") if v]
    changes = [v for v in change.split(",") if v]
    if append:
        return ",".join(items + [v for v in changes if v not in items])
    return ",".join(v for v in items if v not in changes)
