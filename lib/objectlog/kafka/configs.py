"""Configs over Kafka: DescribeConfigs, IncrementalAlterConfigs, the legacy AlterConfigs and
ListConfigResources, answered as a one-broker Kafka 3.9 (KRaft) answers them.

Each resource of a request is answered on its own: one that fails does not fail the others.
Topics have every config Kafka defines (format/topic_configs.py); the broker has the configs a
broker reports that mean something here (config_entries.py), all of them fixed by the
deployment, so altering one is refused as Kafka refuses a config it cannot change at run time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from objectlog.errors import InvalidConfig, InvalidRequest, ObjectLogError
from objectlog.format.topic_configs import BY_NAME, LIST
from objectlog.format.topics import (
    DEFAULTS,
    TopicConfig,
    validate_alteration,
    validate_topic_name,
)
from objectlog.kafka.config_entries import broker_entry, broker_settings, topic_entry
from objectlog.kafka.context import ApiContext
from objectlog.kafka.errors import error_code
from objectlog.kafka.wire import Request

# ConfigResource types.
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
# IncrementalAlterConfigs operations, by Kafka's names for them.
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OPERATION_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
# What ListConfigResources lists, by version (ListConfigResourcesRequest.supportedResourceTypes).
LISTABLE = {0: (CLIENT_METRICS,), 1: (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)}


class ConfigsApi:
    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx

    # ---- DescribeConfigs -------------------------------------------------------------------

    async def describe_configs(self, request: Request) -> dict[str, Any]:
        body = request.body
        synonyms = body.include_synonyms
        documentation = getattr(body, "include_documentation", False)
        results = [
            await self.ctx.call(self._described, resource, synonyms, documentation)
            for resource in body.resources
        ]
        return {"throttle_time": 0, "results": results}

    def _described(self, resource: Any, synonyms: bool, documentation: bool) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "error_code": ErrorCode.none,
            "error_message": None,
            "resource_type": resource.resource_type,
            "resource_name": resource.resource_name,
            "configs": [],
        }
        try:
            entries = self._entries(resource, synonyms, documentation)
        except ObjectLogError as e:
            return {**answer, "error_code": error_code(e), "error_message": str(e)}
        keys = resource.configuration_keys
        answer["configs"] = [e for e in entries if not keys or e["name"] in keys]  # none: all
        return answer

    def _entries(self, resource: Any, synonyms: bool, docs: bool) -> list[dict[str, Any]]:
        kind, name = resource.resource_type, resource.resource_name
        if kind == TOPIC:
            topic = self.ctx.log.topic(validate_topic_name(name), fresh=True)
            return [
                topic_entry(topic, key, value, synonyms=synonyms, documentation=docs)
                for key, value in sorted(topic.config.effective().items())
            ]
        if kind == BROKER:
            if name == "":  # the cluster-wide dynamic defaults: objectlog has none
                return []
            self._check_broker_id(name, "Broker id", f"{self.ctx.broker.node_id} or empty string")
            settings = broker_settings(self.ctx.broker, self.ctx.log.config)
            return [broker_entry(s, synonyms=synonyms, documentation=docs) for s in settings]
        if kind == BROKER_LOGGER:
            if name == "":
                raise InvalidRequest("Broker id must not be empty")
            self._check_broker_id(name, "Broker id", str(self.ctx.broker.node_id))
            return []  # the agent's loggers are not Kafka's log4j loggers: none to show
        if kind == CLIENT_METRICS:
            if name == "":
                raise InvalidRequest("Client metrics subscription name must not be empty")
            return []  # no client metrics subscriptions (KIP-714) exist here
        raise InvalidRequest(f"Unsupported resource type: {kind}")

    def _check_broker_id(self, name: str, what: str, expected: str) -> None:
        """Kafka's answer to a broker resource naming another broker, or not a number."""
        try:
            node_id = int(name)
        except ValueError:
            raise InvalidRequest(f"{what} must be an integer, but it is: {name}") from None
        if node_id != self.ctx.broker.node_id:
            raise InvalidRequest(f"Unexpected broker id, expected {expected}, but received {name}")

    # ---- IncrementalAlterConfigs and AlterConfigs -------------------------------------------

    async def incremental_alter_configs(self, request: Request) -> dict[str, Any]:
        body = request.body
        responses = await self._each_resource(
            body.resources, lambda resource: self._alter_incrementally(resource, body.validate_only)
        )
        return {"throttle_time": 0, "responses": responses}

    async def alter_configs(self, request: Request) -> dict[str, Any]:
        """The legacy AlterConfigs: a topic's overrides become exactly the configs named (the
        others go back to their defaults)."""
        body = request.body
        responses = await self._each_resource(
            body.resources, lambda resource: self._replace(resource, body.validate_only)
        )
        return {"throttle_time": 0, "responses": responses}

    async def _each_resource(
        self, resources: Sequence[Any], alter: Callable[[Any], None]
    ) -> list[dict[str, Any]]:
        repeated = Counter((r.resource_type, r.resource_name) for r in resources)
        responses = []
        for resource in resources:
            code, message = ErrorCode.none, None
            try:
                if repeated[(resource.resource_type, resource.resource_name)] > 1:
                    raise InvalidRequest("Each resource must appear at most once.")
                await self.ctx.call(alter, resource)
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
        return responses

    def _alter_incrementally(self, resource: Any, validate_only: bool) -> None:
        configs = resource.configs
        _check_unique(configs)
        _check_values(c for c in configs if c.config_operation != DELETE)
        kind, name = resource.resource_type, resource.resource_name
        if kind == TOPIC:
            self._alter_topic(name, configs, validate_only)
        elif kind == BROKER:
            self._refuse_broker_change(name, [c.name for c in configs])
        elif kind == BROKER_LOGGER:
            self._refuse_logger_change(name, configs)
        else:
            raise InvalidRequest(f"Unknown resource type {kind}")

    def _replace(self, resource: Any, validate_only: bool) -> None:
        configs = resource.configs
        _check_unique(configs)
        _check_values(configs)
        kind, name = resource.resource_type, resource.resource_name
        if kind == TOPIC:
            self._replace_topic(name, {c.name: c.value for c in configs}, validate_only)
        elif kind == BROKER:
            self._refuse_broker_change(name, [c.name for c in configs])
        else:  # AlterConfigs never took BROKER_LOGGER (KIP-412 came with the incremental API)
            raise InvalidRequest(f"Unknown resource type {kind}")

    def _alter_topic(self, name: str, configs: Sequence[Any], validate_only: bool) -> None:
        topic = self.ctx.log.topic(name, fresh=True)
        to_set: dict[str, str] = {}
        to_delete: list[str] = []
        for config in configs:
            operation = config.config_operation
            if operation == SET:
                to_set[config.name] = config.value
            elif operation == DELETE:
                to_delete.append(config.name)
            elif operation in (APPEND, SUBTRACT):
                current = topic.config.overrides.get(config.name, DEFAULTS.get(config.name, ""))
                to_set[config.name] = _list_changed(config.name, operation, current, config.value)
            else:
                raise InvalidRequest(f"Unknown operations type {operation}")
        self._apply(name, topic.config, to_set, to_delete, validate_only)

    def _replace_topic(self, name: str, configs: dict[str, str], validate_only: bool) -> None:
        topic = self.ctx.log.topic(name, fresh=True)
        dropped = [key for key in topic.config.overrides if key not in configs]
        self._apply(name, topic.config, configs, dropped, validate_only)

    def _apply(
        self,
        name: str,
        current: TopicConfig,
        to_set: dict[str, str],
        to_delete: list[str],
        validate_only: bool,
    ) -> None:
        validate_alteration(current, to_set, to_delete)  # what Kafka checks, stored or not
        if not validate_only:
            self.ctx.log.alter_topic_config(name, set=to_set, delete=to_delete)

    def _refuse_broker_change(self, name: str, keys: list[str]) -> None:
        """Every broker config here is the deployment's, read when the agent starts: Kafka's
        answer to a change of a config it cannot change dynamically."""
        if name:
            self._check_broker_id(name, "Node id", str(self.ctx.broker.node_id))
        if keys:
            raise InvalidRequest(
                f"Cannot update these configs dynamically: Set({', '.join(keys)}) (objectlog's "
                "broker configs are the deployment's settings, fixed when the agent starts)"
            )

    def _refuse_logger_change(self, name: str, configs: Sequence[Any]) -> None:
        """Kafka's answer for loggers that do not exist: the agent has none of Kafka's."""
        self._check_broker_id(name, "Node id", str(self.ctx.broker.node_id))
        for config in configs:
            operation = config.config_operation
            if operation in (SET, DELETE):
                raise InvalidConfig(f"Logger {config.name} does not exist!", field=config.name)
            if operation in (APPEND, SUBTRACT):
                what = f"{OPERATION_NAMES[operation]} operation"
            else:
                what = f"Unknown operation type {operation}"
            raise InvalidRequest(f"{what} is not allowed for the BROKER_LOGGER resource")

    # ---- ListConfigResources ---------------------------------------------------------------

    async def list_config_resources(self, request: Request) -> dict[str, Any]:
        """v0 (ListClientMetricsResources, KIP-714) lists client metrics subscriptions: none
        here. v1 (KIP-1142) lists the types asked for (none asked: every one it knows): the
        topics, the broker and its loggers; no client metrics subscriptions or group configs.
        A type it does not know fails the request, as Kafka fails it."""
        supported = LISTABLE[min(request.api_version, 1)]
        asked = tuple(getattr(request.body, "resource_types", ())) or supported
        answer: dict[str, Any] = {"throttle_time": 0, "error_code": ErrorCode.none}
        if any(kind not in supported for kind in asked):
            return {**answer, "error_code": ErrorCode.unsupported_version, "config_resources": []}
        names = await self.ctx.call(self.ctx.log.list_topics) if TOPIC in asked else []
        node = str(self.ctx.broker.node_id)
        listed = [(TOPIC, name) for name in sorted(names)]
        listed += [(kind, node) for kind in (BROKER_LOGGER, BROKER) if kind in asked]
        resources = [{"resource_name": name, "resource_type": kind} for kind, name in listed]
        return {**answer, "config_resources": resources}


def _check_unique(configs: Sequence[Any]) -> None:
    if len({c.name for c in configs}) < len(configs):
        raise InvalidRequest("Error due to duplicate config keys")


def _check_values(configs: Iterable[Any]) -> None:
    missing = [c.name for c in configs if c.value is None]
    if missing:
        raise InvalidRequest(f"Null value not supported for : {', '.join(missing)}")


def _list_changed(key: str, operation: int, current: str, change: str) -> str:
    """A LIST config with values appended or subtracted, as Kafka's controller does; any other
    config is refused (INVALID_CONFIG)."""
    spec = BY_NAME.get(key)
    if spec is None:
        raise InvalidConfig(f"Unknown topic config name: {key}", field=key)
    if spec.type != LIST:
        raise InvalidConfig(
            f"Can't {OPERATION_NAMES[operation]} to key {key} because its type is not LIST.",
            field=key,
        )
    items = [v for v in current.split(",") if v]
    changes = change.split(",")
    if operation == APPEND:
        return ",".join(items + [v for v in changes if v not in items])
    return ",".join(v for v in items if v not in changes)
