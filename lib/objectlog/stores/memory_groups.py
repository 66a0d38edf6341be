"""The in-memory group store for unit tests (stores.groups.GroupStore): the same conditional
writes as stores.dynamo_groups, one lock making every method atomic as one DynamoDB single-item
call is (tests/contract runs one suite on both)."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from objectlog.stores.groups import GroupState, OffsetItem, TopicPartition, commit_holds


class MemoryGroupStore:
    """Group, member and offset items in dicts (stores.groups.GroupStore)."""

    def __init__(self) -> None:
        self._groups: dict[str, GroupState] = {}
        self._members: dict[tuple[str, str], tuple[int, int]] = {}  # expiry, session timeout
        self._offsets: dict[tuple[str, TopicPartition], OffsetItem] = {}
        self._registry: set[str] = set()
        self._lock = threading.Lock()

    def get_group(self, group: str) -> GroupState:
        with self._lock:
            return self._groups.get(group) or GroupState(group)

    def replace_group(self, new: GroupState, *, previous: GroupState) -> bool:
        with self._lock:
            current = self._groups.get(new.name)
            if previous.exists:
                if current is None or current.generation != previous.generation:
                    return False
            elif current is not None:
                return False
            self._groups[new.name] = replace(copy.deepcopy(new), exists=True)
            return True

    def track_topics(self, group: str, topics: Iterable[str]) -> None:
        names = set(topics)
        if not names:
            return
        with self._lock:
            current = self._groups.get(group) or GroupState(group, exists=True)
            self._groups[group] = replace(current, topics=current.topics | names, exists=True)

    def delete_group_item(self, group: str, generation: int) -> bool:
        with self._lock:
            current = self._groups.get(group)
            if current is None or current.generation != generation:
                return False
            del self._groups[group]
            return True

    def put_member(self, group: str, member_id: str, now_ms: int, session_timeout_ms: int) -> None:
        with self._lock:
            self._members[(group, member_id)] = (now_ms + session_timeout_ms, session_timeout_ms)

    def renew_member(self, group: str, member_id: str, now_ms: int) -> bool:
        with self._lock:
            found = self._members.get((group, member_id))
            if found is None:
                return False
            self._members[(group, member_id)] = (now_ms + found[1], found[1])
            return True

    def delete_members(self, group: str, member_ids: Iterable[str]) -> None:
        with self._lock:
            for member_id in member_ids:
                self._members.pop((group, member_id), None)

    def read(
        self, group: str, member_ids: Iterable[str], partitions: Iterable[TopicPartition]
    ) -> tuple[dict[str, int], dict[TopicPartition, OffsetItem]]:
        with self._lock:
            expiries = {
                m: self._members[(group, m)][0]
                for m in set(member_ids)
                if (group, m) in self._members
            }
            offsets = {tp: self._offsets.get((group, tp), OffsetItem()) for tp in set(partitions)}
        return expiries, offsets

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
        fenced = member_id is None and generation >= 0  # a classic Kafka group's commit

        def holds(item: OffsetItem) -> bool:
            return commit_holds(item, member_id, generation)

        def committed(item: OffsetItem) -> OffsetItem:
            item = replace(
                item,
                offset=offset,
                metadata=metadata,
                leader_epoch=leader_epoch,
                commit_ms=now_ms,
                pending=None,
            )
            return replace(item, owner_generation=generation) if fenced else item

        return self._update_offset(group, tp, holds, committed)

    def hold_pending(
        self,
        group: str,
        tp: TopicPartition,
        mark: str,
        *,
        member_id: str | None,
        generation: int,
    ) -> OffsetItem | None:
        return self._update_offset(
            group,
            tp,
            lambda i: commit_holds(i, member_id, generation),
            lambda i: replace(i, pending=mark),
        )

    def settle_pending(
        self,
        group: str,
        tp: TopicPartition,
        mark: str,
        committed: tuple[int, str, int, int] | None,
    ) -> bool:
        def settled(item: OffsetItem) -> OffsetItem:
            if committed is not None:
                offset, metadata, leader_epoch, now_ms = committed
                item = replace(
                    item,
                    offset=offset,
                    metadata=metadata,
                    leader_epoch=leader_epoch,
                    commit_ms=now_ms,
                )
            return replace(item, pending=None)

        failed = self._update_offset(group, tp, lambda i: i.pending == mark, settled)
        return failed is None

    def fence(self, group: str, tp: TopicPartition, generation: int) -> OffsetItem:
        failed = self._update_offset(
            group,
            tp,
            lambda i: i.owner is None and i.owner_generation < generation,
            lambda i: replace(i, owner_generation=generation),
        )
        if failed is not None:
            return failed
        return self.read(group, [], [tp])[1][TopicPartition(*tp)]

    def claim(
        self,
        group: str,
        tp: TopicPartition,
        member_id: str,
        generation: int,
        seen_owner: str | None,
    ) -> bool:
        failed = self._update_offset(
            group,
            tp,
            lambda i: i.owner == seen_owner,
            lambda i: replace(i, owner=member_id, owner_generation=generation),
        )
        return failed is None

    def release(
        self, group: str, tp: TopicPartition, member_id: str, final: tuple[int, str, int] | None
    ) -> bool:
        def change(item: OffsetItem) -> OffsetItem:
            if final is not None:
                item = replace(
                    item,
                    offset=final[0],
                    metadata=final[1],
                    leader_epoch=-1,
                    commit_ms=final[2],
                    pending=None,
                )
            return replace(item, owner=None)

        return self._update_offset(group, tp, lambda i: i.owner == member_id, change) is None

    def reset(
        self, group: str, tp: TopicPartition, offset: int, now_ms: int, generation: int
    ) -> bool:
        failed = self._update_offset(
            group,
            tp,
            lambda i: i.owner is None or i.owner_generation <= generation,
            lambda i: replace(
                i, offset=offset, leader_epoch=-1, commit_ms=now_ms, owner=None, pending=None
            ),
        )
        return failed is None

    def delete_offsets(self, group: str, partitions: Sequence[TopicPartition]) -> None:
        with self._lock:
            for tp in partitions:
                self._offsets.pop((group, tp), None)

    def register(self, group: str) -> None:
        with self._lock:
            self._registry.add(group)

    def unregister(self, group: str) -> None:
        with self._lock:
            self._registry.discard(group)

    def group_names(self) -> list[str]:
        with self._lock:
            return sorted(self._registry)

    def _update_offset(
        self,
        group: str,
        tp: TopicPartition,
        holds: Callable[[OffsetItem], bool],
        change: Callable[[OffsetItem], OffsetItem],
    ) -> OffsetItem | None:
        """None if applied, else the item as it was (OffsetItem() when there was none)."""
        with self._lock:
            key = (group, TopicPartition(*tp))
            current = self._offsets.get(key)
            seen = current or OffsetItem()
            if not holds(seen):
                return seen
            self._offsets[key] = change(seen)
            return None
