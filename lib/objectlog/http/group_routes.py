"""Consumer-group routes of the HTTP API: the fetch function serves them (its role reads and
writes group items). Handlers only translate between HTTP and the library."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from objectlog.errors import InvalidRequest
from objectlog.format.topics import validate_topic_name
from objectlog.groups import Membership, OffsetAndMetadata, TopicPartition
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
from objectlog.http.routes import GroupName, MemberId, Services


def groups_router(services: Services) -> Router:
    """Consumer groups: the fetch function serves them (its role reads and writes group items)."""
    router = Router()

    @router.get("/groups", summary="List consumer groups")
    def list_groups() -> GroupList:
        return GroupList(groups=services.log.groups.list_groups())

    @router.get("/groups/<group>", summary="Describe a group: members, offsets and lag")
    def describe_group(group: GroupName) -> GroupOut:
        described = services.log.groups.describe(group)
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
        services.log.groups.delete_group(group)
        return Response(204, "application/json", None)

    @router.post(
        "/groups/<group>/members",
        summary="Join a group (the group rebalances)",
        responses={201: {"description": "joined"}},
    )
    def join(group: GroupName, request: Annotated[JoinRequest, Body()]) -> Response[MembershipOut]:
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
