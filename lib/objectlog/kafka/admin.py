"""Topic administration over Kafka: CreateTopics, DeleteTopics, CreatePartitions and
DescribeCluster, answered as a one-broker Kafka 3.9 (KRaft) answers them.

objectlog places partitions itself and has no replicas, so a replica assignment is accepted
when it names only the one broker, once per partition (what a one-broker Kafka accepts), and a
replication factor when it is 1 or -1 (the default); anything else gets Kafka's refusal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode
from ulid import ULID

from objectlog.errors import InvalidRequest, ObjectLogError, TopicExists, TopicNotFound
from objectlog.format.topics import (
    Topic,
    TopicConfig,
    validate_config,
    validate_partition_count,
    validate_topic_name,
)
from objectlog.kafka import operations
from objectlog.kafka.config_entries import topic_entry
from objectlog.kafka.context import ApiContext, topic_uuid
from objectlog.kafka.errors import error_code
from objectlog.kafka.wire import Request

DEFAULT = -1  # CreateTopics' "the broker's default" for partitions and replication factor


class Refused(Exception):
    """A request Kafka refuses with an error objectlog's own errors do not name."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class AdminApi:
    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx

    # ---- CreateTopics, DeleteTopics ------------------------------------------------------

    async def create_topics(self, request: Request) -> dict[str, Any]:
        body = request.body
        results = []
        for topic in body.topics:
            config = {c.name: c.value for c in topic.configs}
            try:
                count = self._partition_count(topic)
                if body.validate_only:
                    created = await self.ctx.call(self._validate_topic, topic.name, count, config)
                else:
                    created = await self.ctx.call(
                        self.ctx.log.create_topic, topic.name, count, config
                    )
                results.append(_created(created))
            except Refused as e:
                results.append(_topic_error(topic.name, e.code, str(e)))
            except ObjectLogError as e:
                results.append(_topic_error(topic.name, error_code(e), str(e)))
        return {"throttle_time": 0, "topics": results}

    def _partition_count(self, topic: Any) -> int:
        """The topic's partitions: as many as its assignments, else its count (-1: the
        deployment's num.partitions), checked in the order Kafka's controller checks them."""
        if topic.assignments:
            return self._assigned_partitions(topic)
        if topic.replication_factor < DEFAULT or topic.replication_factor == 0:
            raise Refused(
                ErrorCode.invalid_replication_factor,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if topic.num_partitions < DEFAULT or topic.num_partitions == 0:
            raise Refused(
                ErrorCode.invalid_partitions,
                "Number of partitions was set to an invalid non-positive value.",
            )
        if topic.replication_factor > 1:
            factor = topic.replication_factor
            raise Refused(
                ErrorCode.invalid_replication_factor,
                f"Unable to replicate the partition {factor} time(s): The target replication "
                f"factor of {factor} cannot be reached because only 1 broker(s) are registered.",
            )
        if topic.num_partitions == DEFAULT:
            return self.ctx.log.config.num_partitions
        return int(topic.num_partitions)

    def _assigned_partitions(self, topic: Any) -> int:
        fixed = {
            "replication factor": topic.replication_factor,
            "numPartitions": topic.num_partitions,
        }
        for field, value in fixed.items():
            if value != DEFAULT:
                raise Refused(
                    ErrorCode.invalid_request,
                    f"A manual partition assignment was specified, but {field} was not set to -1.",
                )
        partitions: set[int] = set()
        for assignment in topic.assignments:
            if assignment.partition_index in partitions:
                raise Refused(
                    ErrorCode.invalid_replica_assignment,
                    "Found multiple manual partition assignments for partition "
                    f"{assignment.partition_index}",
                )
            check_replicas(assignment.broker_ids, self.ctx.broker.node_id)
            partitions.add(assignment.partition_index)
        if partitions != set(range(len(partitions))):
            raise Refused(
                ErrorCode.invalid_replica_assignment,
                "partitions should be a consecutive 0-based integer sequence",
            )
        return len(partitions)

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
            names = await self.ctx.names_by_id(t.topic_id for t in body.topics if not t.name)
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

    # ---- CreatePartitions, DescribeCluster ------------------------------------------------

    async def create_partitions(self, request: Request) -> dict[str, Any]:
        body = request.body
        results = []
        for topic in body.topics:
            code, message = ErrorCode.none, None
            try:
                await self.ctx.call(
                    self._grow, topic.name, topic.count, topic.assignments, body.validate_only
                )
            except Refused as e:
                code, message = e.code, str(e)
            except InvalidRequest as e:
                code, message = ErrorCode.invalid_partitions, str(e)
            except ObjectLogError as e:
                code, message = error_code(e), str(e)
            results.append({"name": topic.name, "error_code": code, "error_message": message})
        return {"throttle_time": 0, "results": results}

    def _grow(
        self, name: str, count: int, assignments: Sequence[Any] | None, validate_only: bool
    ) -> None:
        topic = self.ctx.log.topic(name, fresh=True)
        validate_partition_count(count)
        if count <= topic.partitions:
            raise InvalidRequest(
                f"topic {name!r} has {topic.partitions} partitions; the new count must be larger",
                field="count",
            )
        if assignments is not None:
            added = count - topic.partitions
            if len(assignments) != added:
                raise Refused(
                    ErrorCode.invalid_replica_assignment,
                    f"Attempted to add {added} additional partition(s), but only "
                    f"{len(assignments)} assignment(s) were specified.",
                )
            for assignment in assignments:
                check_replicas(assignment.broker_ids, self.ctx.broker.node_id)
        if not validate_only:
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


def check_replicas(broker_ids: Sequence[int], node_id: int) -> None:
    """A partition's manual assignment, as Kafka's controller checks it
    (validateManualPartitionAssignment) in a cluster whose one broker is ``node_id``: the
    only list it accepts is [node_id]."""
    if not broker_ids:
        raise Refused(
            ErrorCode.invalid_replica_assignment,
            "The manual partition assignment includes an empty replica list.",
        )
    previous = None
    for broker_id in sorted(broker_ids):
        if broker_id != node_id:
            raise Refused(
                ErrorCode.invalid_replica_assignment,
                f"The manual partition assignment includes broker {broker_id}, but no such "
                "broker is registered.",
            )
        if broker_id == previous:
            raise Refused(
                ErrorCode.invalid_replica_assignment,
                f"The manual partition assignment includes the broker {broker_id} more than once.",
            )
        previous = broker_id


def _created(topic: Topic) -> dict[str, Any]:
    return {
        "name": topic.name,
        "topic_id": topic_uuid(topic.topic_id),
        "error_code": ErrorCode.none,
        "num_partitions": topic.partitions,
        "replication_factor": 1,
        "configs": [
            topic_entry(topic, key, value, synonyms=False, documentation=False)
            for key, value in sorted(topic.config.effective().items())
        ],
    }


def _topic_error(name: str, code: ErrorCode, message: str) -> dict[str, Any]:
    return {"name": name, "error_code": code, "error_message": message, "num_partitions": -1}
