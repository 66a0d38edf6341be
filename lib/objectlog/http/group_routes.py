"""Consumer-group routes of the HTTP API: the fetch function serves them (its role reads and
writes group items). Handlers only translate between HTTP and the library, after the ACL checks
of http.guards (its table says which operation each route needs)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from objectlog.errors import InvalidRequest
from objectlog.format.acls import CLUSTER_NAME
from objectlog.format.acls import Operation as O
from objectlog.format.topics import validate_topic_name
from objectlog.groups import Membership, OffsetAndMetadata, TopicPartition
from objectlog.http.guards import CLUSTER, GROUP, TOPIC, RouteGuard
from objectlog.http.models import (
    CommitRequest,
    CommittedOut,
    CommittedResponse,
    GroupList,
    GroupOut,
    HeartbeatRequest,
    JoinRequest,
    LeaveRequest,
    MembershipOut,
    ReleaseIn,
    ResetOffsetsRequest,
    ResetOffsetsResponse,
)
from objectlog.http.routes import GroupName, MemberId, Services, route_guard


def visible_groups(guard: RouteGuard, groups: list[str]) -> list[str]:
    """The groups a caller may list, as Kafka's ListGroups: all with DESCRIBE on the cluster,
    else those it may DESCRIBE (GET /groups, and the overview's count)."""
    if guard.may(O.DESCRIBE, CLUSTER, CLUSTER_NAME):
        return groups
    return guard.visible(O.DESCRIBE, GROUP, groups)


def groups_router(services: Services) -> Router:
    """Consumer groups: the fetch function serves them (its role reads and writes group items)."""
    router = Router()
    guard = route_guard(services, router)

    @router.get("/groups", summary="List consumer groups (those the caller may DESCRIBE)")
    def list_groups() -> GroupList:
        return GroupList(groups=visible_groups(guard, services.log.groups.list_groups()))

    @router.get("/groups/<group>", summary="Describe a group: members, offsets and lag")
    def describe_group(group: GroupName) -> GroupOut:
        guard.group(O.DESCRIBE, group)
        described = services.log.groups.describe(group)
        topics = {p.topic for p in described.offsets}
        seen = set(guard.visible(O.DESCRIBE, TOPIC, topics))
        if seen != topics:  # left out, as Kafka's OffsetFetch of every partition does
            kept = tuple(p for p in described.offsets if p.topic in seen)
            described = dataclasses.replace(described, offsets=kept)
        return GroupOut.model_validate(
            {
                "group": described.group,
                "state": described.state,
                "generation": described.generation,
                "strategy": described.strategy,
                "members": [
                    {**vars(m), "topics": list(m.topics), "assigned": _refs(m.assigned)}
                    for m in described.members
                ],
                "offsets": [{**vars(p), "lag": p.lag} for p in described.offsets],
                "total_lag": described.total_lag,
            }
        )

    @router.delete("/groups/<group>", summary="Delete an empty group and its offsets")
    def delete_group(group: GroupName) -> Response[None]:
        guard.group(O.DELETE, group)
        services.log.groups.delete_group(group)
        return Response(204, "application/json", None)

    @router.post(
        "/groups/<group>/members",
        summary="Join a group (the group rebalances)",
        responses={201: {"description": "joined"}},
    )
    def join(group: GroupName, request: Annotated[JoinRequest, Body()]) -> Response[MembershipOut]:
        guard.group(O.READ, group)
        guard.topics(O.DESCRIBE, request.topics)  # as KIP-848's ConsumerGroupHeartbeat
        membership = services.log.groups.join(
            group,
            request.topics,
            client_id=request.client_id,
            session_timeout_ms=request.session_timeout_ms,
            strategies=request.strategies,
        )
        return Response(201, "application/json", _membership_out(membership))

    @router.post(
        "/groups/<group>/members/<member>/heartbeat",
        summary="Renew the member's session; release and claim partitions",
    )
    def heartbeat(
        group: GroupName, member: MemberId, request: Annotated[HeartbeatRequest, Body()]
    ) -> MembershipOut:
        guard.group(O.READ, group)
        guard.topics(O.READ, (r.topic for r in request.release if r.offset is not None))
        membership = services.log.groups.heartbeat(
            group,
            member,
            owned=[TopicPartition(r.topic, r.partition) for r in request.owned],
            release=_releases(request.release),
        )
        return _membership_out(membership)

    @router.post("/groups/<group>/members/<member>/leave", summary="Leave the group")
    def leave(
        group: GroupName, member: MemberId, request: Annotated[LeaveRequest, Body()]
    ) -> Response[None]:
        guard.group(O.READ, group)
        guard.topics(O.READ, (r.topic for r in request.release if r.offset is not None))
        services.log.groups.leave(group, member, release=_releases(request.release))
        return Response(204, "application/json", None)

    @router.get("/groups/<group>/offsets", summary="Committed offsets")
    def committed(
        group: GroupName,
        partitions: Annotated[
            str,
            Query(
                description="comma-separated topic:partition pairs, e.g. orders:0,orders:1",
                min_length=1,
                max_length=100_000,
            ),
        ],
        require_stable: Annotated[
            bool,
            Query(
                description="leave out offsets a transaction holds pending and list them as "
                "unstable (Kafka's require_stable, docs/transactions.md)"
            ),
        ] = False,
    ) -> CommittedResponse:
        wanted = _partition_list(partitions)
        guard.group(O.DESCRIBE, group)
        guard.topics(O.DESCRIBE, (tp.topic for tp in wanted))
        if not require_stable:
            found = services.log.groups.committed(group, wanted)
            return CommittedResponse(offsets=[_committed_out(tp, found.get(tp)) for tp in wanted])
        found, unstable = services.log.groups.stable_committed(group, wanted)
        return CommittedResponse(
            offsets=[_committed_out(tp, found.get(tp)) for tp in wanted if tp not in unstable],
            unstable=[tp.encode() for tp in sorted(unstable)],
        )

    @router.post(
        "/groups/<group>/offsets",
        summary="Commit offsets (fenced by the member and generation that own each partition)",
    )
    def commit(group: GroupName, request: Annotated[CommitRequest, Body()]) -> CommittedResponse:
        guard.group(O.READ, group)
        guard.topics(O.READ, (o.topic for o in request.offsets))
        offsets = {
            TopicPartition(o.topic, o.partition): OffsetAndMetadata(o.offset, o.metadata)
            for o in request.offsets
        }
        services.log.groups.commit(
            group, offsets, member_id=request.member_id, generation=request.generation
        )
        return CommittedResponse(offsets=[_committed_out(tp, v) for tp, v in offsets.items()])

    @router.post(
        "/groups/<group>/offsets/reset",
        summary="Reset an empty group's offsets (kafka-consumer-groups.sh --reset-offsets)",
    )
    def reset_offsets(
        group: GroupName, request: Annotated[ResetOffsetsRequest, Body()]
    ) -> ResetOffsetsResponse:
        guard.group(O.READ, group)  # OffsetCommit's, as AdminClient.alterConsumerGroupOffsets
        guard.topics(O.READ, [*request.topics, *(o.topic for o in request.offsets)])
        targets = services.log.groups.reset_offsets(
            group,
            request.topics,
            to=request.to,
            timestamp_ms=request.timestamp,
            offsets={TopicPartition(o.topic, o.partition): o.offset for o in request.offsets},
            shift_by=request.shift_by,
            dry_run=request.dry_run,
        )
        return ResetOffsetsResponse(
            offsets=[
                _committed_out(tp, OffsetAndMetadata(offset))
                for tp, offset in sorted(targets.items())
            ],
            dry_run=request.dry_run,
        )

    return router


def _refs(partitions: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    return [{"topic": tp.topic, "partition": tp.partition} for tp in partitions]


def _membership_out(membership: Membership) -> MembershipOut:
    return MembershipOut.model_validate(
        {
            **vars(membership),
            "members": list(membership.members),
            "assigned": _refs(membership.assigned),
            "owned": _refs(membership.owned),
            "claimed": _refs(membership.claimed),
        }
    )


def _releases(
    release: list[ReleaseIn],
) -> dict[TopicPartition, OffsetAndMetadata | None]:
    return {
        TopicPartition(r.topic, r.partition): (
            None if r.offset is None else OffsetAndMetadata(r.offset, r.metadata)
        )
        for r in release
    }


def _committed_out(tp: TopicPartition, value: OffsetAndMetadata | None) -> CommittedOut:
    return CommittedOut(
        topic=tp.topic,
        partition=tp.partition,
        offset=None if value is None else value.offset,
        metadata=None if value is None else value.metadata,
    )


def _partition_list(text: str) -> list[TopicPartition]:
    partitions = []
    for part in text.split(","):
        topic, sep, number = part.strip().rpartition(":")
        if not sep or not topic or not number.isdigit() or int(number) > 2**31 - 1:
            raise InvalidRequest(
                f"partitions: {part!r} is not topic:partition (e.g. orders:0)", field="partitions"
            )
        partitions.append(TopicPartition(validate_topic_name(topic), int(number)))
    return partitions
