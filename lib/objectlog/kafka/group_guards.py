"""The guards of the group and transaction APIs (kafka.guards has the table and the rest):
JoinGroup, SyncGroup, Heartbeat and LeaveGroup need READ on the group; OffsetCommit READ on the
group and each topic; OffsetFetch DESCRIBE on each group and each topic named; DescribeGroups,
ConsumerGroupDescribe and DeleteGroups DESCRIBE or DELETE per group; ListGroups lists what the
principal may describe (every group with DESCRIBE on the cluster); KIP-848's heartbeat READ on
the group and DESCRIBE on every topic subscribed to; the transaction APIs WRITE on the
transactional id first (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then the group or topics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from objectlog.format.acls import Operation as O
from objectlog.format.acls import ResourceType
from objectlog.kafka.authorizer import (
    CLUSTER_FAILED,
    GROUP_FAILED,
    TOPIC_FAILED,
    TXN_FAILED,
    Gate,
    Guard,
    Guarded,
    Handler,
    TopicShape,
    each,
    per_topic,
    refused,
    split,
    topic_allows,
)
from objectlog.kafka.transactions_admin import not_described
from objectlog.kafka.wire import Request

T, G, X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID

OFFSETS = TopicShape("topics", "partitions", "topics", "partitions")
FETCHED_OFFSETS = TopicShape(  # OffsetFetch v1-v7: no offset to show, as Kafka answers it
    "topics",
    "partition_indexes",
    "topics",
    "partitions",
    index=None,
    extra=(("committed_offset", -1), ("committed_leader_epoch", -1), ("metadata", "")),
)
ADD_PARTITIONS = TopicShape(
    "v3_and_below_topics",
    "partitions",
    "results_by_topic_v3_and_below",
    "results_by_partition",
    index=None,
    error="partition_error_code",
)

# ---- groups -----------------------------------------------------------------------------------


def group_guard(operation: O, **fields: Any) -> Guard:
    """An API on one group refused as a whole (JoinGroup, Heartbeat, SyncGroup, LeaveGroup)."""

    async def guard(g: Guarded, request: Request, handler: Handler) -> Any:
        if not g.gate.allows(operation, G, request.body.group_id):
            return refused(GROUP_FAILED, **fields)
        return await handler(request)

    return guard


async def offset_commit(g: Guarded, request: Request, handler: Handler) -> Any:
    body = request.body
    if not g.gate.allows(O.READ, G, body.group_id):
        return OFFSETS.refused_all(body, GROUP_FAILED)
    return await per_topic(request, handler, OFFSETS, topic_allows(g, O.READ))


async def offset_fetch(g: Guarded, request: Request, handler: Handler) -> Any:
    """Per group DESCRIBE (GROUP_AUTHORIZATION_FAILED); the partitions of topics it may not
    describe: named ones TOPIC_AUTHORIZATION_FAILED, in a fetch of every partition left out."""
    body = request.body
    if not hasattr(body, "groups"):  # v1-v7: one group
        if not g.gate.allows(O.DESCRIBE, G, body.group_id):
            return FETCHED_OFFSETS.refused_all(body, GROUP_FAILED, error_code=GROUP_FAILED)
        answer = await handler(request)
        _hide_topics(g.gate, answer, every=body.topics is None)
        return answer
    answer = await each(
        request,
        handler,
        "groups",
        "groups",
        lambda group: g.gate.allows(O.DESCRIBE, G, group.group_id),
        lambda group: {"group_id": group.group_id, "error_code": GROUP_FAILED, "topics": []},
    )
    every = {group.group_id: group.topics is None for group in body.groups}
    for group in answer["groups"]:
        _hide_topics(g.gate, group, every=every.get(group["group_id"], False))
    return answer


def _hide_topics(gate: Gate, answer: dict[str, Any], *, every: bool) -> None:
    topics = answer.get("topics") or []
    seen = gate.visible(O.DESCRIBE, T, (t["name"] for t in topics))
    kept = []
    for topic in topics:
        if topic["name"] in seen:
            kept.append(topic)
        elif not every:
            for p in topic["partitions"]:
                p.update(committed_offset=-1, committed_leader_epoch=-1, metadata="")
                p["error_code"] = TOPIC_FAILED
            kept.append(topic)
    answer["topics"] = kept


async def offset_delete(g: Guarded, request: Request, handler: Handler) -> Any:
    body = request.body
    if not g.gate.allows(O.DELETE, G, body.group_id):
        return refused(GROUP_FAILED, topics=[])
    return await per_topic(
        request, handler, OFFSETS, topic_allows(g, O.READ), empty={"error_code": 0}
    )


async def find_coordinator(g: Guarded, request: Request, handler: Handler) -> Any:
    body = request.body
    kind, code = (X, TXN_FAILED) if getattr(body, "key_type", 0) == 1 else (G, GROUP_FAILED)
    if request.api_version < 4:
        if not g.gate.allows(O.DESCRIBE, kind, body.key):
            return refused(code, node_id=-1, host="", port=-1)
        return await handler(request)
    return await each(
        request,
        handler,
        "coordinator_keys",
        "coordinators",
        lambda key: g.gate.allows(O.DESCRIBE, kind, key),
        lambda key: {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": code},
    )


def groups_each(field: str, operation: O, answers: str, key: str) -> Guard:
    """DescribeGroups, ConsumerGroupDescribe, DeleteGroups: each group refused on its own."""

    async def guard(g: Guarded, request: Request, handler: Handler) -> Any:
        return await each(
            request,
            handler,
            field,
            answers,
            lambda name: g.gate.allows(operation, G, name),
            lambda name: {key: name, "error_code": GROUP_FAILED, "authorized_operations": 0},
        )

    return guard


async def list_groups(g: Guarded, request: Request, handler: Handler) -> Any:
    """DESCRIBE on the cluster lists every group; otherwise those it may describe."""
    answer = await handler(request)
    if not g.gate.allows_cluster(O.DESCRIBE, quiet=True):
        seen = g.gate.visible(O.DESCRIBE, G, (group["group_id"] for group in answer["groups"]))
        answer["groups"] = [group for group in answer["groups"] if group["group_id"] in seen]
    return answer


async def consumer_group_heartbeat(g: Guarded, request: Request, handler: Handler) -> Any:
    body = request.body
    if not g.gate.allows(O.READ, G, body.group_id):
        return refused(GROUP_FAILED, member_epoch=-1)
    topics: Sequence[str] = body.subscribed_topic_names or ()
    # each refusal logged, as Kafka refuses the heartbeat naming them
    hidden = sorted(name for name in set(topics) if not g.gate.allows(O.DESCRIBE, T, name))
    if hidden:
        message = f"The following topics are unauthorized for DESCRIBE: {', '.join(hidden)}"
        return refused(TOPIC_FAILED, error_message=message, member_epoch=-1)
    return await handler(request)


# ---- transactions -----------------------------------------------------------------------------


async def init_producer_id(g: Guarded, request: Request, handler: Handler) -> Any:
    txn = request.body.transactional_id
    if txn is not None:
        if not g.gate.allows(O.WRITE, X, txn):
            return refused(TXN_FAILED, producer_id=-1, producer_epoch=-1)
    elif not g.gate.allows_cluster(O.IDEMPOTENT_WRITE):  # WRITE on a topic implies it
        return refused(CLUSTER_FAILED, producer_id=-1, producer_epoch=-1)
    return await handler(request)


async def add_partitions_to_txn(g: Guarded, request: Request, handler: Handler) -> Any:
    """The transactional id, then every topic: if any is refused nothing is added, the others
    answered OPERATION_NOT_ATTEMPTED (as Kafka)."""
    body = request.body
    if not g.gate.allows(O.WRITE, X, body.v3_and_below_transactional_id):
        return ADD_PARTITIONS.refused_all(body, TXN_FAILED)
    topics = body.v3_and_below_topics
    yes, no = split(topics, topic_allows(g, O.WRITE))
    if not no:
        return await handler(request)
    return {
        "throttle_time": 0,
        ADD_PARTITIONS.answers: [
            *(ADD_PARTITIONS.refused_topic(t, ErrorCode.operation_not_attempted) for t in yes),
            *(ADD_PARTITIONS.refused_topic(t, TOPIC_FAILED) for t in no),
        ],
    }


async def add_offsets_to_txn(g: Guarded, request: Request, handler: Handler) -> Any:
    body = request.body
    if not g.gate.allows(O.WRITE, X, body.transactional_id):
        return refused(TXN_FAILED)
    if not g.gate.allows(O.READ, G, body.group_id):
        return refused(GROUP_FAILED)
    return await handler(request)


async def end_txn(g: Guarded, request: Request, handler: Handler) -> Any:
    if not g.gate.allows(O.WRITE, X, request.body.transactional_id):
        return refused(TXN_FAILED)
    return await handler(request)


async def txn_offset_commit(g: Guarded, request: Request, handler: Handler) -> Any:
    body = request.body
    if not g.gate.allows(O.WRITE, X, body.transactional_id):
        return OFFSETS.refused_all(body, TXN_FAILED)
    if not g.gate.allows(O.READ, G, body.group_id):
        return OFFSETS.refused_all(body, GROUP_FAILED)
    return await per_topic(request, handler, OFFSETS, topic_allows(g, O.READ))


async def describe_transactions(g: Guarded, request: Request, handler: Handler) -> Any:
    return await each(
        request,
        handler,
        "transactional_ids",
        "transaction_states",
        lambda txn: g.gate.allows(O.DESCRIBE, X, txn),
        lambda txn: not_described(txn, TXN_FAILED),
    )


async def list_transactions(g: Guarded, request: Request, handler: Handler) -> Any:
    answer = await handler(request)
    states = answer["transaction_states"]
    seen = g.gate.visible(O.DESCRIBE, X, (s["transactional_id"] for s in states))
    answer["transaction_states"] = [s for s in states if s["transactional_id"] in seen]
    return answer
