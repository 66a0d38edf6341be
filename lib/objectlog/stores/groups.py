"""Consumer-group state in DynamoDB: single-item calls only (no Query, no transactions).

Items (the objectlog table, string keys ``pk``/``sk``):

    group#<g> / meta              gen, members {<id>: {client, topics [..], to, strat [..]}},
                                  asg {<id>: ["<topic>:<partition>", ...]}, strategy,
                                  topics (string set: every topic the group subscribed to or
                                  committed, so describe and delete know which items exist),
                                  changed (ms of the last membership change)
    group#<g> / member#<id>       exp (lease expiry, ms), to (session timeout, ms)
    group#<g> / offset#<t>#<p>    off, meta, ct (commit time, ms),
                                  owner, og (the member that owns the partition and the
                                  generation at which it claimed it)
    groups / index                names (string set): the group registry

Heartbeats write the member item, never the group item, so a busy group's item is written
only when its membership changes. A commit is one conditional UpdateItem on the offset item:
its owner must be the committing member, at a generation no newer than the member's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import botocore.exceptions

from objectlog.adapters.aws import THROTTLING_CODES, error_code, translate
from objectlog.errors import StorageUnavailable
from objectlog.stores.metadata import DynamoMetadata

GROUP_REGISTRY_KEY = {"pk": {"S": "groups"}, "sk": {"S": "index"}}
STORE_ATTEMPTS = 5  # botocore retries throttling and 5xx itself; these are for lost answers
RETRY_BACKOFF_S = 0.01
T = TypeVar("T")


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def encode(self) -> str:
        return f"{self.topic}:{self.partition}"

    @classmethod
    def decode(cls, text: str) -> TopicPartition:
        topic, _, partition = text.rpartition(":")
        return cls(topic, int(partition))


@dataclass(frozen=True)
class MemberInfo:
    """What a member told the group when it joined."""

    client_id: str
    topics: tuple[str, ...]
    session_timeout_ms: int
    strategies: tuple[str, ...]


@dataclass(frozen=True)
class GroupState:
    """The group item. ``exists`` is False for a group never written."""

    name: str
    generation: int = 0
    members: Mapping[str, MemberInfo] = field(default_factory=dict)
    assignment: Mapping[str, tuple[TopicPartition, ...]] = field(default_factory=dict)
    strategy: str | None = None
    topics: frozenset[str] = frozenset()
    changed_ms: int = 0
    exists: bool = False


@dataclass(frozen=True)
class OffsetItem:
    """A committed-offset item: the offset (None if never committed) and its owner."""

    offset: int | None = None
    metadata: str = ""
    commit_ms: int = 0
    owner: str | None = None
    owner_generation: int = 0


def group_key(group: str) -> dict[str, Any]:
    return {"pk": {"S": f"group#{group}"}, "sk": {"S": "meta"}}


def member_key(group: str, member_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"group#{group}"}, "sk": {"S": f"member#{member_id}"}}


def offset_key(group: str, tp: TopicPartition) -> dict[str, Any]:
    return {"pk": {"S": f"group#{group}"}, "sk": {"S": f"offset#{tp.topic}#{tp.partition}"}}


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _int(item: Mapping[str, Any], name: str, default: int = 0) -> int:
    value = item.get(name)
    return int(value["N"]) if value else default


def _strings(value: Mapping[str, Any] | None) -> tuple[str, ...]:
    return tuple(v["S"] for v in (value or {}).get("L", []))


def _string_list(values: Iterable[str]) -> dict[str, Any]:
    return {"L": [{"S": v} for v in values]}


def parse_group(name: str, item: Mapping[str, Any] | None) -> GroupState:
    if item is None:
        return GroupState(name)
    members = {
        member_id: MemberInfo(
            client_id=value["M"]["client"]["S"],
            topics=_strings(value["M"].get("topics")),
            session_timeout_ms=_int(value["M"], "to"),
            strategies=_strings(value["M"].get("strat")),
        )
        for member_id, value in item.get("members", {}).get("M", {}).items()
    }
    assignment = {
        member_id: tuple(TopicPartition.decode(s) for s in _strings(value))
        for member_id, value in item.get("asg", {}).get("M", {}).items()
    }
    return GroupState(
        name=name,
        generation=_int(item, "gen"),
        members=members,
        assignment=assignment,
        strategy=item["strategy"]["S"] if "strategy" in item else None,
        topics=frozenset(item.get("topics", {}).get("SS", [])),
        changed_ms=_int(item, "changed"),
        exists=True,
    )


def parse_offset(item: Mapping[str, Any] | None) -> OffsetItem:
    if item is None:
        return OffsetItem()
    return OffsetItem(
        offset=_int(item, "off") if "off" in item else None,
        metadata=item.get("meta", {}).get("S", ""),
        commit_ms=_int(item, "ct"),
        owner=item["owner"]["S"] if "owner" in item else None,
        owner_generation=_int(item, "og"),
    )


def _group_item(state: GroupState) -> dict[str, Any]:
    item: dict[str, Any] = {
        **group_key(state.name),
        "gen": _n(state.generation),
        "members": {
            "M": {
                member_id: {
                    "M": {
                        "client": {"S": info.client_id},
                        "topics": _string_list(info.topics),
                        "to": _n(info.session_timeout_ms),
                        "strat": _string_list(info.strategies),
                    }
                }
                for member_id, info in state.members.items()
            }
        },
        "asg": {
            "M": {
                member_id: _string_list(tp.encode() for tp in tps)
                for member_id, tps in state.assignment.items()
            }
        },
        "changed": _n(state.changed_ms),
    }
    if state.strategy is not None:
        item["strategy"] = {"S": state.strategy}
    if state.topics:
        item["topics"] = {"SS": sorted(state.topics)}
    return item


class GroupStore:
    """Reads and conditional writes of the group, member and offset items.

    Conditional writes answer True/False (or the item as it was); other failures are retried
    (STORE_ATTEMPTS) and then raise StorageUnavailable. Every write here may be repeated: a
    repeat whose first attempt landed either writes the same values again or fails its
    condition, and the callers read the item as it was to tell that case apart.
    """

    def __init__(self, metadata: DynamoMetadata) -> None:
        self.metadata = metadata
        self.client = metadata.client
        self.table = metadata.table

    # ---- group item --------------------------------------------------------------------

    def get_group(self, group: str) -> GroupState:
        item = self._retrying(
            "GetItem group",
            lambda: self.client.get_item(
                TableName=self.table, Key=group_key(group), ConsistentRead=True
            ).get("Item"),
        )
        return parse_group(group, item)

    def replace_group(self, new: GroupState, *, previous: GroupState) -> bool:
        """Write the group item if it is still at previous's generation (or still absent)."""
        if previous.exists:
            condition = "gen = :gen"
            values: dict[str, Any] | None = {":gen": _n(previous.generation)}
        else:
            condition, values = "attribute_not_exists(pk)", None
        kwargs: dict[str, Any] = {"ConditionExpression": condition}
        if values:
            kwargs["ExpressionAttributeValues"] = values
        return self._conditional(
            "PutItem group",
            lambda: self.client.put_item(TableName=self.table, Item=_group_item(new), **kwargs),
        )

    def track_topics(self, group: str, topics: Iterable[str]) -> None:
        """Record topics the group has offsets for (creates an empty group item if missing)."""
        names = sorted(set(topics))
        if not names:
            return
        self._retrying(
            "UpdateItem group topics",
            lambda: self.client.update_item(
                TableName=self.table,
                Key=group_key(group),
                UpdateExpression="ADD topics :t SET gen = if_not_exists(gen, :zero)",
                ExpressionAttributeValues={":t": {"SS": names}, ":zero": _n(0)},
            ),
        )

    def delete_group_item(self, group: str, generation: int) -> bool:
        return self._conditional(
            "DeleteItem group",
            lambda: self.client.delete_item(
                TableName=self.table,
                Key=group_key(group),
                ConditionExpression="gen = :gen",
                ExpressionAttributeValues={":gen": _n(generation)},
            ),
        )

    # ---- member items ------------------------------------------------------------------

    def put_member(self, group: str, member_id: str, now_ms: int, session_timeout_ms: int) -> None:
        self._retrying(
            "PutItem member",
            lambda: self.client.put_item(
                TableName=self.table,
                Item={
                    **member_key(group, member_id),
                    "exp": _n(now_ms + session_timeout_ms),
                    "to": _n(session_timeout_ms),
                },
            ),
        )

    def renew_member(self, group: str, member_id: str, now_ms: int) -> bool:
        """Push the member's lease out by its session timeout; False if the item is gone."""
        return self._conditional(
            "UpdateItem member (heartbeat)",
            lambda: self.client.update_item(
                TableName=self.table,
                Key=member_key(group, member_id),
                UpdateExpression="SET #exp = :now + #to",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeNames={"#exp": "exp", "#to": "to"},
                ExpressionAttributeValues={":now": _n(now_ms)},
            ),
        )

    def delete_members(self, group: str, member_ids: Iterable[str]) -> None:
        requests = [
            {"DeleteRequest": {"Key": member_key(group, m)}} for m in sorted(set(member_ids))
        ]
        self._retrying("BatchWriteItem members", lambda: self.metadata.batch_write_items(requests))

    # ---- reads of many items -----------------------------------------------------------

    def read(
        self, group: str, member_ids: Iterable[str], partitions: Iterable[TopicPartition]
    ) -> tuple[dict[str, int], dict[TopicPartition, OffsetItem]]:
        """Member lease expiries (absent: gone) and offset items, in one BatchGetItem."""
        members = sorted(set(member_ids))
        tps = sorted(set(partitions))
        keys = [member_key(group, m) for m in members] + [offset_key(group, tp) for tp in tps]
        items = self._retrying("BatchGetItem group", lambda: self.metadata.batch_get_items(keys))
        by_sort_key = {item["sk"]["S"]: item for item in items}
        expiries = {
            m: _int(by_sort_key[f"member#{m}"], "exp")
            for m in members
            if f"member#{m}" in by_sort_key
        }
        offsets = {
            tp: parse_offset(by_sort_key.get(f"offset#{tp.topic}#{tp.partition}")) for tp in tps
        }
        return expiries, offsets

    # ---- offset items ------------------------------------------------------------------

    def commit(
        self,
        group: str,
        tp: TopicPartition,
        offset: int,
        metadata: str,
        now_ms: int,
        *,
        member_id: str | None,
        generation: int,
    ) -> OffsetItem | None:
        """Store the offset if member_id owns the partition at a generation <= generation
        (member_id None: only if no member owns it). None on success, else the item as it was.
        """
        names = {"#owner": "owner", "#meta": "meta"}
        values: dict[str, Any] = {":off": _n(offset), ":meta": {"S": metadata}, ":ct": _n(now_ms)}
        if member_id is None:
            condition = "attribute_not_exists(#owner)"
        else:
            condition = "#owner = :member AND og <= :gen"
            values.update({":member": {"S": member_id}, ":gen": _n(generation)})
        return self._conditional_update(
            "UpdateItem offset (commit)",
            offset_key(group, tp),
            update="SET off = :off, #meta = :meta, ct = :ct",
            condition=condition,
            names=names,
            values=values,
        )

    def claim(
        self,
        group: str,
        tp: TopicPartition,
        member_id: str,
        generation: int,
        seen_owner: str | None,
    ) -> bool:
        """Make member_id the owner, if the owner is still the one the caller saw."""
        values: dict[str, Any] = {":member": {"S": member_id}, ":gen": _n(generation)}
        if seen_owner is None:
            condition = "attribute_not_exists(#owner)"
        else:
            condition = "#owner = :seen"
            values[":seen"] = {"S": seen_owner}
        return (
            self._conditional_update(
                "UpdateItem offset (claim)",
                offset_key(group, tp),
                update="SET #owner = :member, og = :gen",
                condition=condition,
                names={"#owner": "owner"},
                values=values,
            )
            is None
        )

    def release(
        self, group: str, tp: TopicPartition, member_id: str, final: tuple[int, str, int] | None
    ) -> bool:
        """Give up ownership (storing final = (offset, metadata, now_ms) first, if given)."""
        update = "REMOVE #owner"
        values: dict[str, Any] = {":member": {"S": member_id}}
        names = {"#owner": "owner"}
        if final is not None:
            update = "SET off = :off, #meta = :meta, ct = :ct " + update
            names["#meta"] = "meta"
            values.update({":off": _n(final[0]), ":meta": {"S": final[1]}, ":ct": _n(final[2])})
        return (
            self._conditional_update(
                "UpdateItem offset (release)",
                offset_key(group, tp),
                update=update,
                condition="#owner = :member",
                names=names,
                values=values,
            )
            is None
        )

    def reset(
        self, group: str, tp: TopicPartition, offset: int, now_ms: int, generation: int
    ) -> bool:
        """Set the offset unless a member claimed the partition after generation."""
        return (
            self._conditional_update(
                "UpdateItem offset (reset)",
                offset_key(group, tp),
                update="SET off = :off, ct = :ct REMOVE #owner",
                condition="attribute_not_exists(#owner) OR og <= :gen",
                names={"#owner": "owner"},
                values={":off": _n(offset), ":ct": _n(now_ms), ":gen": _n(generation)},
            )
            is None
        )

    def delete_offsets(self, group: str, partitions: Sequence[TopicPartition]) -> None:
        requests = [{"DeleteRequest": {"Key": offset_key(group, tp)}} for tp in partitions]
        self._retrying("BatchWriteItem offsets", lambda: self.metadata.batch_write_items(requests))

    # ---- registry ----------------------------------------------------------------------

    def register(self, group: str) -> None:
        self._registry("ADD", group)

    def unregister(self, group: str) -> None:
        self._registry("DELETE", group)

    def group_names(self) -> list[str]:
        item = self._retrying(
            "GetItem group registry",
            lambda: self.client.get_item(
                TableName=self.table, Key=GROUP_REGISTRY_KEY, ConsistentRead=True
            ).get("Item"),
        )
        return sorted(item["names"]["SS"]) if item and "names" in item else []

    def _registry(self, action: str, group: str) -> None:
        self._retrying(
            "UpdateItem group registry",
            lambda: self.client.update_item(
                TableName=self.table,
                Key=GROUP_REGISTRY_KEY,
                UpdateExpression=f"{action} #names :n",
                ExpressionAttributeNames={"#names": "names"},
                ExpressionAttributeValues={":n": {"SS": [group]}},
            ),
        )

    # ---- helpers -----------------------------------------------------------------------

    def _conditional_update(
        self,
        what: str,
        key: dict[str, Any],
        *,
        update: str,
        condition: str,
        names: dict[str, str],
        values: dict[str, Any],
    ) -> OffsetItem | None:
        """None if the update applied, else the item as it was when the condition failed."""
        try:
            self._retrying(
                what,
                lambda: self.client.update_item(
                    TableName=self.table,
                    Key=key,
                    UpdateExpression=update,
                    ConditionExpression=condition,
                    ExpressionAttributeNames=names,
                    ExpressionAttributeValues=values,
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                ),
            )
        except ConditionFailed as failed:
            old = failed.error.response.get("Item")
            return parse_offset(old if isinstance(old, Mapping) else None)
        return None

    def _conditional(self, what: str, call: Callable[[], Any]) -> bool:
        try:
            self._retrying(what, call)
        except ConditionFailed:
            return False
        return True

    def _retrying(self, what: str, call: Callable[[], T]) -> T:
        """Run one call, again on throttling, 5xx and lost answers (every call here may be
        repeated, see the class docstring); a failed condition raises ConditionFailed."""
        for attempt in range(1, STORE_ATTEMPTS + 1):
            try:
                return call()
            except botocore.exceptions.ClientError as e:
                if error_code(e) == "ConditionalCheckFailedException":
                    raise ConditionFailed(e) from e
                error = translate(e, what=what, idempotent=True)
                if not _transient(e) or attempt == STORE_ATTEMPTS:
                    raise error from e
            except botocore.exceptions.BotoCoreError as e:
                if attempt == STORE_ATTEMPTS:
                    raise translate(e, what=what, idempotent=True) from e
            except StorageUnavailable:  # from DynamoMetadata's batch calls
                if attempt == STORE_ATTEMPTS:
                    raise
            time.sleep(RETRY_BACKOFF_S * 2**attempt)
        raise AssertionError("unreachable")


class ConditionFailed(Exception):
    """A conditional write's condition did not hold (internal to GroupStore)."""

    def __init__(self, error: botocore.exceptions.ClientError) -> None:
        super().__init__(str(error))
        self.error = error


def _transient(error: botocore.exceptions.ClientError) -> bool:
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    return error_code(error) in THROTTLING_CODES or status >= 500
