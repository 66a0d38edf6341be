"""Group administration over Kafka: ListGroups, DescribeGroups, ConsumerGroupDescribe,
DeleteGroups, OffsetDelete.

A group is a classic one (its document, kafka.classic) or one of objectlog's own (the library's
Consumer, the HTTP API, KIP-848 members of the agent); both are in objectlog's group registry
and both keep their offsets in objectlog's offset items. Kafka's coordinator (Kafka 3.9 and
4.x, GroupMetadataManager) types them: a classic group is "classic"; objectlog's own groups are
KIP-848's "consumer" groups, described by ConsumerGroupDescribe and, like Kafka's consumer
groups, not by DescribeGroups (Dead, or GROUP_ID_NOT_FOUND from v6); one that only ever had
offsets committed from outside a group (assign() and commit, no member) is what Kafka keeps as
a "simple" classic group, with no protocol type.

Reads per group described or listed: its classic document (GetItem), then, for one of
objectlog's, GroupCoordinator.describe (the group item, its members' leases and offset items,
its topics, their heads); ListGroups reads the registry, then every group in it so.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from objectlog.errors import GroupNotFound, ObjectLogError, TopicNotFound
from objectlog.groups import GroupDescription, TopicPartition
from objectlog.groups.values import GROUP_NAME
from objectlog.kafka import classic, operations
from objectlog.kafka.classic import DOCUMENT_KIND, ClassicGroup
from objectlog.kafka.consumer_group_describe import (
    CONSUMER_STATES,
    described_group,
    not_found,
    topic_names,
)
from objectlog.kafka.context import ApiContext, topic_uuid
from objectlog.kafka.errors import error_code
from objectlog.kafka.wire import Request
from objectlog.stores.documents import ABSENT

PROTOCOL_TYPE = "consumer"  # Kafka's ConsumerProtocol.PROTOCOL_TYPE
CLASSIC, CONSUMER = "classic", "consumer"  # Kafka's group types (ListGroups v5)
DEAD = "Dead"
DESCRIBE_GROUPS_WITH_ERRORS = 6  # from v6 a group DescribeGroups cannot describe is an error


@dataclass(frozen=True)
class FoundGroup:
    """A group as Kafka's coordinator would hold it: its type, its state and protocol type
    (Kafka's names), and what was read of it (a classic document, or objectlog's group)."""

    group_type: str
    state: str
    protocol_type: str
    classic: ClassicGroup | None = None
    native: GroupDescription | None = None

    def listed(self, group_id: str) -> dict[str, Any]:
        return {
            "group_id": group_id,
            "protocol_type": self.protocol_type,
            "group_state": self.state,
            "group_type": self.group_type,
        }


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

    def _found(self, group_id: str) -> FoundGroup:
        """The group, whichever kind; GroupNotFound when neither has it, or when objectlog's
        rules refuse the name (Kafka's are wider), which no group can have then."""
        if not GROUP_NAME.match(group_id):
            raise GroupNotFound(f"group {group_id!r} does not exist")
        group, _ = self._classic(group_id)
        if group is not None:
            return FoundGroup(CLASSIC, group.phase, group.protocol_type or "", classic=group)
        native = self.ctx.log.groups.describe(group_id)
        if native.generation == 0:  # no member ever: offsets committed from outside a group
            return FoundGroup(CLASSIC, classic.EMPTY, "")
        state = CONSUMER_STATES.get(native.state, native.state)
        return FoundGroup(CONSUMER, state, PROTOCOL_TYPE, native=native)

    async def list_groups(self, request: Request) -> dict[str, Any]:
        """Every group, or those in the states and of the types asked for (v4, v5), compared
        as Kafka compares them: case-insensitively (states also trimmed); a filter naming
        nothing Kafka knows lists nothing."""
        body = request.body
        states = {s.strip().lower() for s in getattr(body, "states_filter", ()) or ()}
        types = {t.lower() for t in getattr(body, "types_filter", ()) or ()}
        listed = []
        for name in await self.ctx.call(self.ctx.log.groups.list_groups):
            try:
                found = await self.ctx.call(self._found, name)
            except GroupNotFound:
                continue
            if (not states or found.state.lower() in states) and (
                not types or found.group_type in types
            ):
                listed.append(found.listed(name))
        return {"throttle_time": 0, "error_code": ErrorCode.none, "groups": listed}

    async def describe_groups(self, request: Request) -> dict[str, Any]:
        with_errors = request.api_version >= DESCRIBE_GROUPS_WITH_ERRORS
        described = [
            await self.ctx.call(self._describe, name, with_errors) for name in request.body.groups
        ]
        asked = getattr(request.body, "include_authorized_operations", False)
        for group in described:
            if group["error_code"] == ErrorCode.none:  # as Kafka: not for a group in error
                group["authorized_operations"] = operations.authorized(operations.GROUP, asked)
        return {"throttle_time": 0, "groups": described}

    def _describe(self, name: str, with_errors: bool) -> dict[str, Any]:
        try:
            found = self._found(name)
        except GroupNotFound:
            return _dead(name, f"Group {name} not found.", with_errors)
        except ObjectLogError as e:
            return {
                **_described(name, "", "", "", []),
                "error_code": error_code(e),
                "error_message": str(e),
            }
        if found.group_type == CONSUMER:  # Kafka's DescribeGroups describes classic groups only
            return _dead(name, f"Group {name} is not a classic group.", with_errors)
        if found.classic is None:
            return _described(name, found.state, "", "", [])
        group, protocol = found.classic, found.classic.protocol or ""
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
        return _described(name, found.state, found.protocol_type, protocol, members)

    async def consumer_group_describe(self, request: Request) -> dict[str, Any]:
        """KIP-848's describe: objectlog's own groups; any other group is answered as Kafka
        answers one that is not a consumer group (the admin clients then ask DescribeGroups)."""
        body = request.body
        described = [await self.ctx.call(self._consumer_group, name) for name in body.group_ids]
        for group in described:
            if group["error_code"] == ErrorCode.none:
                group["authorized_operations"] = operations.authorized(
                    operations.GROUP, body.include_authorized_operations
                )
        return {"throttle_time": 0, "groups": described}

    def _consumer_group(self, name: str) -> dict[str, Any]:
        try:
            found = self._found(name)
        except GroupNotFound:
            return not_found(name, f"Group {name} not found.")
        except ObjectLogError as e:
            return {"error_code": error_code(e), "error_message": str(e), "group_id": name}
        if found.group_type != CONSUMER or found.native is None:
            return not_found(name, f"Group {name} is not a consumer group.")
        return described_group(found.native, self._topic_ids(topic_names(found.native)))

    def _topic_ids(self, names: set[str]) -> dict[str, uuid.UUID]:
        """Kafka's topic ids of the topics that still exist (cached topic reads)."""
        ids = {}
        for name in sorted(names):
            try:
                ids[name] = topic_uuid(self.ctx.log.topic(name).topic_id)
            except TopicNotFound:
                continue
        return ids

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
        code, subscribed = await self.ctx.call(self._delete_offsets, body.group_id, partitions)
        return {
            "error_code": code,
            "throttle_time": 0,
            "topics": [
                {
                    "name": topic.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "error_code": ErrorCode.group_subscribed_to_topic
                            if topic.name in subscribed
                            else ErrorCode.none,
                        }
                        for p in topic.partitions
                    ],
                }
                for topic in body.topics
            ],
        }

    def _delete_offsets(
        self, name: str, partitions: list[TopicPartition]
    ) -> tuple[ErrorCode, frozenset[str]]:
        """Kafka's rule (GroupCoordinator.handleDeleteOffsets): the offsets of topics no member
        subscribes to are deleted, the others refused one by one (GROUP_SUBSCRIBED_TO_TOPIC);
        a group whose members' subscriptions cannot be read (a classic group of another
        protocol type) must be empty (NON_EMPTY_GROUP)."""
        try:
            found = self._found(name)
        except GroupNotFound:
            return ErrorCode.group_id_not_found, frozenset()
        subscribed = _subscribed_topics(found)
        if subscribed is None:
            return ErrorCode.non_empty_group, frozenset()
        kept = [p for p in partitions if p.topic not in subscribed]
        if kept:
            self.ctx.log.items.groups.delete_offsets(name, kept)
        return ErrorCode.none, subscribed


def _subscribed_topics(found: FoundGroup) -> frozenset[str] | None:
    """The topics the group's members subscribe to; None when they cannot be known (members
    of a classic group that is not a consumer group)."""
    if found.native is not None:
        return frozenset(t for m in found.native.members for t in m.topics)
    if found.classic is None or not found.classic.members:
        return frozenset()
    if found.protocol_type != PROTOCOL_TYPE:
        return None
    return classic.subscribed_topics(found.classic)


def _described(
    name: str, state: str, protocol_type: str, protocol: str, members: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "group_id": name,
        "group_state": state,
        "protocol_type": protocol_type,
        "protocol_data": protocol,
        "members": members,
    }


def _dead(name: str, message: str, with_errors: bool) -> dict[str, Any]:
    """A group DescribeGroups cannot describe (absent, or not classic): Dead, and from v6
    GROUP_ID_NOT_FOUND with Kafka's message."""
    dead = _described(name, DEAD, "", "", [])
    if with_errors:
        dead.update(error_code=ErrorCode.group_id_not_found, error_message=message)
    return dead
