"""Every Kafka API the agent offers, authorized as Kafka's broker authorizes it (issue 37,
docs/security.md): one guard per API key runs before the handler and checks what
kafka.acl_operations.REQUIRED lists for the API, in Kafka's order (KafkaApis, Kafka 3.9/4.0):

- a refusal of the whole request answers the API's ``*_AUTHORIZATION_FAILED`` without calling
  the handler (its resources mirrored from the request, each with the error, where the answer
  is per resource);
- a refusal of some resources hands the handler the request without them and adds their
  answers (TOPIC_AUTHORIZATION_FAILED whether or not the topic exists, so a refusal reveals
  nothing);
- lists (Metadata of every topic, ListGroups, ListTransactions, OffsetFetch of every
  partition) leave out what the principal may not describe, silently.

With authorization off the handlers are not wrapped at all (kafka.handlers). Metadata's
auto-creation and the authorized-operations bits are asked inside the handlers (Gate).
tests/unit/test_kafka_guards.py checks every API in kafka.handlers.SUPPORTED has a guard.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from objectlog.format.acls import CLUSTER_NAME, ResourceType
from objectlog.format.acls import Operation as O
from objectlog.kafka import configs as config_types
from objectlog.kafka.authorizer import (
    CLUSTER_FAILED,
    FAILED_FOR,
    TOPIC_FAILED,
    TXN_FAILED,
    Gate,
    Guard,
    Guarded,
    Handler,
    TopicShape,
    each,
    narrowed,
    per_topic,
    refused,
    split,
    topic_allows,
    with_body,
)
from objectlog.kafka.context import ApiContext
from objectlog.kafka.group_guards import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    consumer_group_heartbeat,
    describe_transactions,
    end_txn,
    find_coordinator,
    group_guard,
    groups_each,
    init_producer_id,
    list_groups,
    list_transactions,
    offset_commit,
    offset_delete,
    offset_fetch,
    txn_offset_commit,
)
from objectlog.kafka.wire import Request

log = logging.getLogger(__name__)

T, G, X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID


def guard_routes(ctx: ApiContext, routes: dict[int, Handler]) -> dict[int, Handler]:
    """The routes with every handler behind its API's guard."""
    return {key: _guarded(ctx, GUARDS[key], handler) for key, handler in routes.items()}


def _guarded(ctx: ApiContext, guard: Guard, handler: Handler) -> Handler:
    access = ctx.access

    async def run(request: Request) -> Any:
        if access.due():  # the store is read on a worker thread, never on the event loop
            await asyncio.to_thread(access.refresh)
        return await guard(Guarded(ctx, Gate.current(access)), request, handler)

    return run


async def unguarded(g: Guarded, request: Request, handler: Handler) -> Any:
    """ApiVersions and the SASL steps: nothing to authorize."""
    return await handler(request)


# ---- the shapes of the per-topic APIs ----------------------------------------------------------

PRODUCE = TopicShape(
    "topic_data",
    "partition_data",
    "responses",
    "partition_responses",
    index="index",
    answer_index="index",
    extra=(("base_offset", -1), ("log_append_time", -1), ("log_start_offset", -1)),
)
FETCH_BY_NAME = TopicShape(
    "topics",
    "partitions",
    "responses",
    "partitions",
    name="topic",
    index="partition",
    answer_name="topic",
    extra=(
        ("high_watermark", -1),
        ("last_stable_offset", -1),
        ("log_start_offset", -1),
        ("preferred_read_replica", -1),
        ("records", b""),
    ),
)
FETCH_BY_ID = dataclasses.replace(FETCH_BY_NAME, name="topic_id", answer_name="topic_id")
LIST_OFFSETS = TopicShape(
    "topics",
    "partitions",
    "topics",
    "partitions",
    extra=(("timestamp", -1), ("offset", -1), ("leader_epoch", -1)),
)
DELETE_RECORDS = TopicShape(
    "topics", "partitions", "topics", "partitions", extra=(("low_watermark", -1),)
)
PRODUCERS = TopicShape("topics", "partition_indexes", "topics", "partitions", index=None)
ELECT = TopicShape(
    "topic_partitions",
    "partitions",
    "replica_election_results",
    "partition_result",
    name="topic",
    index=None,
    answer_name="topic",
    answer_index="partition_id",
)


# ---- data: Produce, Fetch, ListOffsets, DeleteRecords ------------------------------------------


async def produce(g: Guarded, request: Request, handler: Handler) -> Any:
    body = request.body
    txn = body.transactional_id
    if txn is not None and not g.gate.allows(O.WRITE, X, txn):
        return None if body.acks == 0 else PRODUCE.refused_all(body, TXN_FAILED)
    return await per_topic(request, handler, PRODUCE, topic_allows(g, O.WRITE))


async def fetch(g: Guarded, request: Request, handler: Handler) -> Any:
    body = request.body
    if request.api_version < 13:
        shape, allowed = FETCH_BY_NAME, topic_allows(g, O.READ, "topic")
    else:
        names = await g.ctx.names_by_id(t.topic_id for t in body.topics)
        shape = FETCH_BY_ID

        def allowed(topic: Any) -> bool:
            name = names.get(topic.topic_id)  # an unknown id: the handler's UNKNOWN_TOPIC_ID
            return name is None or g.gate.allows(O.READ, T, name)

    return await per_topic(
        request,
        handler,
        shape,
        allowed,
        empty={"error_code": ErrorCode.none, "session_id": 0},
        when_refused={"max_wait": timedelta(0)},  # an error is answered at once, as Kafka
    )


async def list_offsets(g: Guarded, request: Request, handler: Handler) -> Any:
    return await per_topic(request, handler, LIST_OFFSETS, topic_allows(g, O.DESCRIBE))


async def delete_records(g: Guarded, request: Request, handler: Handler) -> Any:
    return await per_topic(request, handler, DELETE_RECORDS, topic_allows(g, O.DELETE))


async def describe_producers(g: Guarded, request: Request, handler: Handler) -> Any:
    return await per_topic(request, handler, PRODUCERS, topic_allows(g, O.READ))


# ---- Metadata and the topic lists -------------------------------------------------------------


async def metadata(g: Guarded, request: Request, handler: Handler) -> Any:
    """Every topic: those the principal may describe. Named topics: TOPIC_AUTHORIZATION_FAILED
    for those it may not (existing or not); auto-creation asks CREATE in the handler."""
    body = request.body
    if body.topics is None:
        answer = await handler(request)
        seen = g.gate.visible(O.DESCRIBE, T, (t["name"] for t in answer["topics"]))
        answer["topics"] = [t for t in answer["topics"] if t["name"] in seen]
        return answer
    by_id = await g.ctx.names_by_id(t.topic_id for t in body.topics if t.name is None)

    def allowed(topic: Any) -> bool:
        name = topic.name or by_id.get(topic.topic_id)
        return name is None or g.gate.allows(O.DESCRIBE, T, name)

    yes, no = split(body.topics, allowed)
    if not no:
        return await handler(request)
    answer = await handler(with_body(request, narrowed(body, topics=yes)))
    answer["topics"] = [
        *answer["topics"],
        *(
            {"error_code": TOPIC_FAILED, "name": t.name or by_id.get(t.topic_id), "partitions": []}
            for t in no
        ),
    ]
    return answer


async def describe_topic_partitions(g: Guarded, request: Request, handler: Handler) -> Any:
    return await each(
        request,
        handler,
        "topics",
        "topics",
        topic_allows(g, O.DESCRIBE),
        lambda t: {"error_code": TOPIC_FAILED, "name": t.name, "partitions": []},
        empty={"next_cursor": None},
    )


# ---- topic administration ---------------------------------------------------------------------


async def create_topics(g: Guarded, request: Request, handler: Handler) -> Any:
    answer = await each(
        request,
        handler,
        "topics",
        "topics",
        lambda topic: g.gate.may_create_topic(topic.name),
        lambda topic: {
            "name": topic.name,
            "error_code": TOPIC_FAILED,
            "error_message": f"Authorization failed: CREATE on topic {topic.name}",
            "num_partitions": -1,
            "replication_factor": -1,
        },
    )
    for topic in answer["topics"]:  # v5+: configs only to who may describe them
        if topic.get("configs") and not g.gate.allows(O.DESCRIBE_CONFIGS, T, topic["name"]):
            topic["configs"] = []
            topic["topic_config_error_code"] = TOPIC_FAILED
    return answer


async def delete_topics(g: Guarded, request: Request, handler: Handler) -> Any:
    body = request.body
    if request.api_version < 6:  # topic_names: plain names
        return await each(
            request,
            handler,
            "topic_names",
            "responses",
            lambda name: g.gate.allows(O.DELETE, T, name),
            lambda name: {"name": name, "error_code": TOPIC_FAILED},
        )
    by_id = await g.ctx.names_by_id(t.topic_id for t in body.topics if t.name is None)

    def name_of(topic: Any) -> str | None:
        return topic.name or by_id.get(topic.topic_id)  # None: UNKNOWN_TOPIC_ID, the handler's

    def allowed(topic: Any) -> bool:
        name = name_of(topic)
        return name is None or g.gate.allows(O.DELETE, T, name)

    return await each(
        request,
        handler,
        "topics",
        "responses",
        allowed,
        lambda topic: {"name": name_of(topic), "error_code": TOPIC_FAILED},
    )


async def create_partitions(g: Guarded, request: Request, handler: Handler) -> Any:
    return await each(
        request,
        handler,
        "topics",
        "results",
        topic_allows(g, O.ALTER),
        lambda t: {"name": t.name, "error_code": TOPIC_FAILED},
    )


# ---- configs ----------------------------------------------------------------------------------


def _config_resource(resource_type: int, name: str) -> tuple[ResourceType, str]:
    """The ACL resource a config resource is authorized on: its topic or group, else the
    cluster (brokers, broker loggers, client metrics)."""
    if resource_type == config_types.TOPIC:
        return T, name
    if resource_type == config_types.GROUP:
        return G, name
    return ResourceType.CLUSTER, CLUSTER_NAME


def configs_guard(operation: O, answers: str) -> Guard:
    async def guard(g: Guarded, request: Request, handler: Handler) -> Any:
        def allowed(resource: Any) -> bool:
            kind, name = _config_resource(resource.resource_type, resource.resource_name)
            return g.gate.allows(operation, kind, name)

        def refused_resource(resource: Any) -> dict[str, Any]:
            kind, name = _config_resource(resource.resource_type, resource.resource_name)
            return {
                "error_code": FAILED_FOR[kind],
                "error_message": f"Authorization failed: {operation.name} on {kind.name} {name}",
                "resource_type": resource.resource_type,
                "resource_name": resource.resource_name,
                "configs": [],
            }

        return await each(request, handler, "resources", answers, allowed, refused_resource)

    return guard


# ---- the cluster ------------------------------------------------------------------------------


def cluster_guard(operation: O, refusal: Callable[[Request], dict[str, Any]]) -> Guard:
    """An API on the cluster, refused as a whole by ``refusal``."""

    async def guard(g: Guarded, request: Request, handler: Handler) -> Any:
        if not g.gate.allows_cluster(operation):
            return refusal(request)
        return await handler(request)

    return guard


def _top(**fields: Any) -> Callable[[Request], dict[str, Any]]:
    return lambda request: refused(CLUSTER_FAILED, **fields)


def _each_acl_answer(items: str, answers: str, **fields: Any) -> Callable[[Request], Any]:
    message = "Authorization failed: ALTER on the cluster"
    return lambda request: {
        "throttle_time": 0,
        answers: [
            {"error_code": CLUSTER_FAILED, "error_message": message, **fields}
            for _ in getattr(request.body, items)
        ],
    }


def _log_dirs_refused(request: Request) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "results": [
            {
                "topic_name": topic.name,
                "partitions": [
                    {"partition_index": p, "error_code": CLUSTER_FAILED} for p in topic.partitions
                ],
            }
            for log_dir in request.body.dirs
            for topic in log_dir.topics
        ],
    }


def _elect_refused(request: Request) -> dict[str, Any]:
    return ELECT.refused_all(request.body, CLUSTER_FAILED, error_code=CLUSTER_FAILED)


GUARDS: dict[int, Guard] = {
    0: produce,
    1: fetch,
    2: list_offsets,
    3: metadata,
    8: offset_commit,
    9: offset_fetch,
    10: find_coordinator,
    11: group_guard(O.READ, generation_id=-1, member_id=""),  # JoinGroup
    12: group_guard(O.READ),  # Heartbeat
    13: group_guard(O.READ, members=[]),  # LeaveGroup
    14: group_guard(O.READ),  # SyncGroup
    15: groups_each("groups", O.DESCRIBE, "groups", "group_id"),  # DescribeGroups
    16: list_groups,
    17: unguarded,  # SaslHandshake
    18: unguarded,  # ApiVersions
    19: create_topics,
    20: delete_topics,
    21: delete_records,
    22: init_producer_id,
    24: add_partitions_to_txn,
    25: add_offsets_to_txn,
    26: end_txn,
    28: txn_offset_commit,
    29: cluster_guard(
        O.DESCRIBE, _top(error_message="Authorization failed: DESCRIBE on the cluster")
    ),
    30: cluster_guard(O.ALTER, _each_acl_answer("creations", "results")),
    31: cluster_guard(O.ALTER, _each_acl_answer("filters", "filter_results", matching_acls=[])),
    32: configs_guard(O.DESCRIBE_CONFIGS, "results"),
    33: configs_guard(O.ALTER_CONFIGS, "responses"),
    34: cluster_guard(O.ALTER, _log_dirs_refused),
    35: cluster_guard(O.DESCRIBE, _top(results=[])),
    36: unguarded,  # SaslAuthenticate
    37: create_partitions,
    42: groups_each("groups_names", O.DELETE, "results", "group_id"),  # DeleteGroups
    43: cluster_guard(O.ALTER, _elect_refused),
    44: configs_guard(O.ALTER_CONFIGS, "responses"),
    45: cluster_guard(O.ALTER, _top(responses=[])),
    46: cluster_guard(O.DESCRIBE, _top(topics=[])),
    47: offset_delete,
    60: cluster_guard(O.DESCRIBE, _top(brokers=[], cluster_authorized_operations=0)),
    61: describe_producers,
    65: describe_transactions,
    66: list_transactions,
    68: consumer_group_heartbeat,
    69: groups_each("group_ids", O.DESCRIBE, "groups", "group_id"),  # ConsumerGroupDescribe
    74: cluster_guard(O.DESCRIBE_CONFIGS, _top(config_resources=[])),
    75: describe_topic_partitions,
}
