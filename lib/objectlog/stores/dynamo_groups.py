"""Consumer-group state in DynamoDB (stores.groups.GroupStore): single-item calls only.

Items (the objectlog table, string keys ``pk``/``sk``):

    group#<g> / meta              gen, members {<id>: {client, topics [..], to, strat [..]}},
                                  asg {<id>: ["<topic>:<partition>", ...]}, strategy,
                                  topics (string set: every topic the group subscribed to or
                                  committed, so describe and delete know which items exist),
                                  changed (ms of the last membership change)
    group#<g> / member#<id>       exp (lease expiry, ms), to (session timeout, ms)
    group#<g> / offset#<t>#<p>    off, meta, ct (commit time, ms),
                                  owner, og (the member that owns the partition and the
                                  generation at which it claimed it; with no owner, a
                                  classic Kafka group's: the newest generation that
                                  committed or read the offset, whose elders it fences),
                                  ptx (the transactional id whose offset for the
                                  partition is pending: KIP-447, docs/transactions.md)
    groups / index                names (string set): the group registry

Heartbeats write the member item, never the group item, so a busy group's item is written
only when its membership changes. A commit is one conditional UpdateItem on the offset item:
its owner must be the committing member, at a generation no newer than the member's. Every
call here is repeatable, so the adapter retries lost answers too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from objectlog.adapters.dynamodb import DynamoTable, Item
from objectlog.stores.groups import GroupState, MemberInfo, OffsetItem, TopicPartition
from objectlog.stores.name_sets import DynamoNameSet

GROUP_REGISTRY_KEY = {"pk": "groups", "sk": "index"}


def group_key(group: str) -> dict[str, str]:
    return {"pk": f"group#{group}", "sk": "meta"}


def member_key(group: str, member_id: str) -> dict[str, str]:
    return {"pk": f"group#{group}", "sk": f"member#{member_id}"}


def offset_key(group: str, tp: TopicPartition) -> dict[str, str]:
    return {"pk": f"group#{group}", "sk": f"offset#{tp.topic}#{tp.partition}"}


def parse_group(name: str, item: Mapping[str, Any] | None) -> GroupState:
    if item is None:
        return GroupState(name)
    members = {
        member_id: MemberInfo(
            client_id=value["client"],
            topics=tuple(value.get("topics", ())),
            session_timeout_ms=value.get("to", 0),
            strategies=tuple(value.get("strat", ())),
        )
        for member_id, value in item.get("members", {}).items()
    }
    assignment = {
        member_id: tuple(TopicPartition.decode(s) for s in value)
        for member_id, value in item.get("asg", {}).items()
    }
    return GroupState(
        name=name,
        generation=item.get("gen", 0),
        members=members,
        assignment=assignment,
        strategy=item.get("strategy"),
        topics=frozenset(item.get("topics", ())),
        changed_ms=item.get("changed", 0),
        exists=True,
    )


def parse_offset(item: Mapping[str, Any] | None) -> OffsetItem:
    if item is None:
        return OffsetItem()
    return OffsetItem(
        offset=item.get("off"),
        metadata=item.get("meta", ""),
        leader_epoch=item.get("le", -1),
        commit_ms=item.get("ct", 0),
        owner=item.get("owner"),
        owner_generation=item.get("og", 0),
        pending=item.get("ptx"),
    )


def _commit_condition(member_id: str | None, generation: int, values: dict[str, Any]) -> str:
    """stores.groups.commit_holds as a condition expression (its values added to values)."""
    if member_id is None and generation < 0:
        return "attribute_not_exists(#owner)"
    values[":gen"] = generation
    if member_id is None:  # a classic Kafka group's: no owners, generations fence
        return "attribute_not_exists(#owner) AND (attribute_not_exists(og) OR og <= :gen)"
    values[":member"] = member_id
    return "#owner = :member AND og <= :gen"


def group_item(state: GroupState) -> Item:
    item: Item = {
        **group_key(state.name),
        "gen": state.generation,
        "members": {
            member_id: {
                "client": info.client_id,
                "topics": list(info.topics),
                "to": info.session_timeout_ms,
                "strat": list(info.strategies),
            }
            for member_id, info in state.members.items()
        },
        "asg": {
            member_id: [tp.encode() for tp in tps] for member_id, tps in state.assignment.items()
        },
        "changed": state.changed_ms,
    }
    if state.strategy is not None:
        item["strategy"] = state.strategy
    if state.topics:
        item["topics"] = set(state.topics)
    return item


class DynamoGroupStore:
    """Reads and conditional writes of the group, member and offset items."""

    def __init__(self, table: DynamoTable) -> None:
        self.table = table
        self.registry = DynamoNameSet(table, GROUP_REGISTRY_KEY, "group registry")

    # ---- group item --------------------------------------------------------------------

    def get_group(self, group: str) -> GroupState:
        return parse_group(group, self.table.get(group_key(group)))

    def replace_group(self, new: GroupState, *, previous: GroupState) -> bool:
        if previous.exists:
            return self.table.put(
                group_item(new),
                condition="gen = :gen",
                values={":gen": previous.generation},
                what="PutItem group",
            ).applied
        return self.table.put(
            group_item(new), condition="attribute_not_exists(pk)", what="PutItem group"
        ).applied

    def track_topics(self, group: str, topics: Iterable[str]) -> None:
        names = set(topics)
        if not names:
            return
        self.table.update(
            group_key(group),
            "ADD topics :t SET gen = if_not_exists(gen, :zero)",
            values={":t": names, ":zero": 0},
            repeatable=True,
            what="UpdateItem group topics",
        )

    def delete_group_item(self, group: str, generation: int) -> bool:
        return self.table.delete(
            group_key(group),
            condition="gen = :gen",
            values={":gen": generation},
            what="DeleteItem group",
        ).applied

    # ---- member items ------------------------------------------------------------------

    def put_member(self, group: str, member_id: str, now_ms: int, session_timeout_ms: int) -> None:
        self.table.put(
            {
                **member_key(group, member_id),
                "exp": now_ms + session_timeout_ms,
                "to": session_timeout_ms,
            },
            what="PutItem member",
        )

    def renew_member(self, group: str, member_id: str, now_ms: int) -> bool:
        return self.table.update(
            member_key(group, member_id),
            "SET #exp = :now + #to",
            condition="attribute_exists(pk)",
            names={"#exp": "exp", "#to": "to"},
            values={":now": now_ms},
            repeatable=True,
            what="UpdateItem member (heartbeat)",
        ).applied

    def delete_members(self, group: str, member_ids: Iterable[str]) -> None:
        self.table.batch_write(deletes=[member_key(group, m) for m in sorted(set(member_ids))])

    # ---- reads of many items -----------------------------------------------------------

    def read(
        self, group: str, member_ids: Iterable[str], partitions: Iterable[TopicPartition]
    ) -> tuple[dict[str, int], dict[TopicPartition, OffsetItem]]:
        members = sorted(set(member_ids))
        tps = sorted(set(partitions))
        keys = [member_key(group, m) for m in members] + [offset_key(group, tp) for tp in tps]
        by_sort_key = {item["sk"]: item for item in self.table.batch_get(keys)}
        expiries = {
            m: by_sort_key[f"member#{m}"].get("exp", 0)
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
        leader_epoch: int = -1,
    ) -> OffsetItem | None:
        values: dict[str, Any] = {":off": offset, ":meta": metadata, ":ct": now_ms}
        sets = ["off = :off", "#meta = :meta", "ct = :ct"]
        condition = _commit_condition(member_id, generation, values)
        if member_id is None and generation >= 0:  # a classic Kafka group's: fences elders
            sets.append("og = :gen")
        if leader_epoch >= 0:  # a Kafka client's commit that names one
            sets.append("le = :le")
            values[":le"] = leader_epoch
        removes = "ptx" if leader_epoch >= 0 else "ptx, le"  # a plain commit ends a pending one
        return self._offset_update(
            "UpdateItem offset (commit)",
            offset_key(group, tp),
            update="SET " + ", ".join(sets) + " REMOVE " + removes,
            condition=condition,
            names={"#owner": "owner", "#meta": "meta"},
            values=values,
        )

    def hold_pending(
        self,
        group: str,
        tp: TopicPartition,
        mark: str,
        *,
        member_id: str | None,
        generation: int,
    ) -> OffsetItem | None:
        values: dict[str, Any] = {":ptx": mark}
        return self._offset_update(
            "UpdateItem offset (hold pending)",
            offset_key(group, tp),
            update="SET ptx = :ptx",
            condition=_commit_condition(member_id, generation, values),
            names={"#owner": "owner"},
            values=values,
        )

    def settle_pending(
        self,
        group: str,
        tp: TopicPartition,
        mark: str,
        committed: tuple[int, str, int, int] | None,
    ) -> bool:
        values: dict[str, Any] = {":ptx": mark}
        names: dict[str, str] = {}
        update = "REMOVE ptx"
        if committed is not None:
            offset, metadata, leader_epoch, now_ms = committed
            values.update({":off": offset, ":meta": metadata, ":ct": now_ms})
            names["#meta"] = "meta"
            update = "SET off = :off, #meta = :meta, ct = :ct"
            if leader_epoch >= 0:
                values[":le"] = leader_epoch
                update += ", le = :le REMOVE ptx"
            else:
                update += " REMOVE ptx, le"
        failed = self._offset_update(
            "UpdateItem offset (settle pending)",
            offset_key(group, tp),
            update=update,
            condition="ptx = :ptx",
            names=names,
            values=values,
        )
        return failed is None

    def fence(self, group: str, tp: TopicPartition, generation: int) -> OffsetItem:
        written = self.table.update(
            offset_key(group, tp),
            "SET og = :gen",
            condition="attribute_not_exists(#owner) AND (attribute_not_exists(og) OR og < :gen)",
            names={"#owner": "owner"},
            values={":gen": generation},
            returns="ALL_NEW",
            repeatable=True,
            what="UpdateItem offset (fence)",
        )
        return parse_offset(written.item)

    def claim(
        self,
        group: str,
        tp: TopicPartition,
        member_id: str,
        generation: int,
        seen_owner: str | None,
    ) -> bool:
        values: dict[str, Any] = {":member": member_id, ":gen": generation}
        if seen_owner is None:
            condition = "attribute_not_exists(#owner)"
        else:
            condition = "#owner = :seen"
            values[":seen"] = seen_owner
        failed = self._offset_update(
            "UpdateItem offset (claim)",
            offset_key(group, tp),
            update="SET #owner = :member, og = :gen",
            condition=condition,
            names={"#owner": "owner"},
            values=values,
        )
        return failed is None

    def release(
        self, group: str, tp: TopicPartition, member_id: str, final: tuple[int, str, int] | None
    ) -> bool:
        update = "REMOVE #owner"
        values: dict[str, Any] = {":member": member_id}
        names = {"#owner": "owner"}
        if final is not None:
            update = "SET off = :off, #meta = :meta, ct = :ct " + update + ", le, ptx"
            names["#meta"] = "meta"
            values.update({":off": final[0], ":meta": final[1], ":ct": final[2]})
        failed = self._offset_update(
            "UpdateItem offset (release)",
            offset_key(group, tp),
            update=update,
            condition="#owner = :member",
            names=names,
            values=values,
        )
        return failed is None

    def reset(
        self, group: str, tp: TopicPartition, offset: int, now_ms: int, generation: int
    ) -> bool:
        failed = self._offset_update(
            "UpdateItem offset (reset)",
            offset_key(group, tp),
            update="SET off = :off, ct = :ct REMOVE #owner, le, ptx",
            condition="attribute_not_exists(#owner) OR og <= :gen",
            names={"#owner": "owner"},
            values={":off": offset, ":ct": now_ms, ":gen": generation},
        )
        return failed is None

    def delete_offsets(self, group: str, partitions: Sequence[TopicPartition]) -> None:
        self.table.batch_write(deletes=[offset_key(group, tp) for tp in partitions])

    # ---- registry ----------------------------------------------------------------------

    def register(self, group: str) -> None:
        self.registry.add(group)

    def unregister(self, group: str) -> None:
        self.registry.remove(group)

    def group_names(self) -> list[str]:
        return self.registry.names()

    def _offset_update(
        self,
        what: str,
        key: Mapping[str, str],
        *,
        update: str,
        condition: str,
        names: Mapping[str, str],
        values: Mapping[str, Any],
    ) -> OffsetItem | None:
        """None if the update applied, else the offset item as it was."""
        written = self.table.update(
            key,
            update,
            condition=condition,
            names=names,
            values=values,
            repeatable=True,
            what=what,
        )
        return None if written.applied else parse_offset(written.item)
