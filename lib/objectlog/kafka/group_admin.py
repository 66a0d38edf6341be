"""Group administration over Kafka: ListGroups, DescribeGroups, DeleteGroups, OffsetDelete.

A group is a classic one (its document, kafka.classic) or one of objectlog's own (the library's
Consumer, the HTTP API, KIP-848 members of the agent); both are in objectlog's group registry
and both keep their offsets in objectlog's offset items.
"""

from __future__ import annotations

import base64
from typing import Any

from kio.schema.errors import ErrorCode

from objectlog.errors import GroupNotFound, ObjectLogError
from objectlog.groups import TopicPartition
from objectlog.kafka import classic, operations
from objectlog.kafka.classic import DOCUMENT_KIND, ClassicGroup
from objectlog.kafka.context import ApiContext
from objectlog.kafka.errors import error_code
from objectlog.kafka.wire import Request
from objectlog.stores.documents import ABSENT

PROTOCOL_TYPE = "consumer"
NATIVE_STATES = {"Empty": "Empty", "Stable": "Stable", "Rebalancing": "PreparingRebalance"}


class GroupAdminApi:
    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx
        self.documents = ctx.log.items.documents

    def _classic(self, group_id: str) -> tuple[ClassicGroup | None, int]:
        body, version = self.documents.read(DOCUMENT_KIND, group_id)
        if body is None:
            return None, ABSENT
        group = ClassicGroup.from_json(body)
        classic.expire(group, self.ctx.log.clock.now_ms())
        return group, version

    def _state(self, group_id: str) -> tuple[str, ClassicGroup | None]:
        """The group's state as Kafka names it; GroupNotFound when neither kind has it."""
        group, _ = self._classic(group_id)
        if group is not None:
            return group.phase, group
        native = self.ctx.log.groups.describe(group_id)
        return NATIVE_STATES.get(native.state, native.state), None

    async def list_groups(self, request: Request) -> dict[str, Any]:
        wanted = set(getattr(request.body, "states_filter", ()) or ())
        listed = []
        for name in await self.ctx.call(self.ctx.log.groups.list_groups):
            try:
                state, _ = await self.ctx.call(self._state, name)
            except GroupNotFound:
                continue
            if not wanted or state in wanted:
                listed.append(
                    {"group_id": name, "protocol_type": PROTOCOL_TYPE, "group_state": state}
                )
        return {"throttle_time": 0, "error_code": ErrorCode.none, "groups": listed}

    async def describe_groups(self, request: Request) -> dict[str, Any]:
        described = [await self.ctx.call(self._describe, name) for name in request.body.groups]
        asked = getattr(request.body, "include_authorized_operations", False)
        for group in described:
            group["authorized_operations"] = operations.authorized(operations.GROUP, asked)
        return {"throttle_time": 0, "groups": described}

    def _describe(self, name: str) -> dict[str, Any]:
        try:
            state, group = self._state(name)
        except GroupNotFound:
            return _described(name, ErrorCode.none, "Dead", "", [])
        except ObjectLogError as e:
            return _described(name, error_code(e), "", "", [])
        if group is None:
            native = self.ctx.log.groups.describe(name)
            members: list[dict[str, Any]] = [
                {
                    "member_id": m.member_id,
                    "client_id": m.client_id,
                    "client_host": "",
                    "member_metadata": b"",
                    "member_assignment": b"",
                }
                for m in native.members
            ]
            return _described(name, ErrorCode.none, state, native.strategy or "", members)
        protocol = group.protocol or ""
        members = [
            {
                "member_id": m.member_id,
                "group_instance_id": m.instance_id,
                "client_id": m.client_id,
                "client_host": "",
                "member_metadata": m.metadata(protocol),
                "member_assignment": base64.b64decode(m.assignment or ""),
            }
            for m in group.members.values()
        ]
        return _described(name, ErrorCode.none, state, protocol, members)

    async def delete_groups(self, request: Request) -> dict[str, Any]:
        results = []
        for name in request.body.groups_names:
            code = await self.ctx.call(self._delete, name)
            results.append({"group_id": name, "error_code": code})
        return {"throttle_time": 0, "results": results}

    def _delete(self, name: str) -> ErrorCode:
        group, version = self._classic(name)
        if group is not None and group.members:
            return ErrorCode.non_empty_group
        if group is not None and not self.documents.delete(DOCUMENT_KIND, name, seen=version):
            return ErrorCode.non_empty_group  # it changed meanwhile: someone joined
        try:
            self.ctx.log.groups.delete_group(name)
        except GroupNotFound:
            if group is None:
                return ErrorCode.group_id_not_found
            self.ctx.log.items.groups.unregister(name)
        except ObjectLogError as e:
            return error_code(e)
        return ErrorCode.none

    async def offset_delete(self, request: Request) -> dict[str, Any]:
        body = request.body
        partitions = [
            TopicPartition(topic.name, p.partition_index)
            for topic in body.topics
            for p in topic.partitions
        ]
        code = await self.ctx.call(self._delete_offsets, body.group_id, partitions)
        return {
            "error_code": code,
            "throttle_time": 0,
            "topics": [
                {
                    "name": topic.name,
                    "partitions": [
                        {"partition_index": p.partition_index, "error_code": ErrorCode.none}
                        for p in topic.partitions
                    ],
                }
                for topic in body.topics
            ],
        }

    def _delete_offsets(self, name: str, partitions: list[TopicPartition]) -> ErrorCode:
        """Only while the group has no members (Kafka also allows it for topics no member is
        subscribed to; the agent cannot read a classic member's subscription)."""
        try:
            state, _ = self._state(name)
        except GroupNotFound:
            return ErrorCode.group_id_not_found
        if state != "Empty":
            return ErrorCode.group_subscribed_to_topic
        self.ctx.log.items.groups.delete_offsets(name, partitions)
        return ErrorCode.none


def _described(
    name: str, code: ErrorCode, state: str, protocol: str, members: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "error_code": code,
        "group_id": name,
        "group_state": state,
        "protocol_type": PROTOCOL_TYPE if state not in ("", "Dead") else "",
        "protocol_data": protocol,
        "members": members,
    }
