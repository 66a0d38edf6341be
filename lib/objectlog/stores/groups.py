"""Consumer-group state: the GroupStore Protocol and its value types.

Implementations: ``stores.dynamo_groups.DynamoGroupStore`` (single-item calls on the objectlog
table) and ``stores.memory_groups.MemoryGroupStore``; both pass the contract suite in
tests/contract.

Conditional writes answer True/False (or the offset item as it was); every write may be
repeated: a repeat whose first attempt landed either writes the same values again or fails its
condition, and callers read the item as it was to tell those cases apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol


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
    leader_epoch: int = -1  # the committer's leader epoch (Kafka's committed_leader_epoch)
    pending: str | None = None  # the mark of a transaction whose offset for it awaits its end


def commit_holds(item: OffsetItem, member_id: str | None, generation: int) -> bool:
    """A commit's condition (GroupStore.commit; DynamoGroupStore states it as its condition
    expression): by the partition's owner at or after the generation it claimed it in, or,
    with no member, while no member owns it (a classic Kafka group's commit, generation >= 0,
    also not older than the item's generation)."""
    if member_id is None:
        fenced = generation >= 0
        return item.owner is None and (not fenced or item.owner_generation <= generation)
    return item.owner == member_id and item.owner_generation <= generation


class GroupStore(Protocol):
    """The group, member and offset items and the group registry. Raises StorageUnavailable."""

    def get_group(self, group: str) -> GroupState: ...

    def replace_group(self, new: GroupState, *, previous: GroupState) -> bool:
        """Write the group item if it is still at previous's generation (or still absent)."""
        ...

    def track_topics(self, group: str, topics: Iterable[str]) -> None:
        """Record topics the group has offsets for (creates an empty group item if missing)."""
        ...

    def delete_group_item(self, group: str, generation: int) -> bool: ...

    def put_member(
        self, group: str, member_id: str, now_ms: int, session_timeout_ms: int
    ) -> None: ...

    def renew_member(self, group: str, member_id: str, now_ms: int) -> bool:
        """Push the member's lease out by its session timeout; False if the item is gone."""
        ...

    def delete_members(self, group: str, member_ids: Iterable[str]) -> None: ...

    def read(
        self, group: str, member_ids: Iterable[str], partitions: Iterable[TopicPartition]
    ) -> tuple[dict[str, int], dict[TopicPartition, OffsetItem]]:
        """Member lease expiries (absent: gone) and offset items, in one read."""
        ...

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
        """Store the offset, its metadata and leader epoch, if member_id owns the partition at
        a generation <= generation (member_id None: only if no member owns it, and with a
        generation >= 0, a classic Kafka group's, only if no commit of a later generation came
        first; it records its own). None on success, else the item as it was.
        """
        ...

    def hold_pending(
        self,
        group: str,
        tp: TopicPartition,
        mark: str,
        *,
        member_id: str | None,
        generation: int,
    ) -> OffsetItem | None:
        """Mark the partition's offset pending in a transaction (TxnOffsetCommit), under
        commit's condition (commit_holds): None if marked, else the item that refused it.
        A commit removes the mark (a later plain commit wins, as in Kafka)."""
        ...

    def settle_pending(
        self,
        group: str,
        tp: TopicPartition,
        mark: str,
        committed: tuple[int, str, int, int] | None,
    ) -> bool:
        """Remove the transaction's mark, storing committed (offset, metadata, leader epoch,
        commit ms) when it commits, whoever owns the partition now; False (nothing written)
        if the mark is not the transaction's (a plain commit came after it)."""
        ...

    def fence(self, group: str, tp: TopicPartition, generation: int) -> OffsetItem:
        """Refuse, from now on, a classic Kafka group's commits from generations before
        generation (unless a member owns the partition or a later fence came first); the
        offset item as it is afterwards."""
        ...

    def claim(
        self,
        group: str,
        tp: TopicPartition,
        member_id: str,
        generation: int,
        seen_owner: str | None,
    ) -> bool:
        """Make member_id the owner, if the owner is still the one the caller saw."""
        ...

    def release(
        self, group: str, tp: TopicPartition, member_id: str, final: tuple[int, str, int] | None
    ) -> bool:
        """Give up ownership (storing final = (offset, metadata, now_ms) first, if given)."""
        ...

    def reset(
        self, group: str, tp: TopicPartition, offset: int, now_ms: int, generation: int
    ) -> bool:
        """Set the offset unless a member claimed the partition after generation."""
        ...

    def delete_offsets(self, group: str, partitions: Sequence[TopicPartition]) -> None: ...

    def register(self, group: str) -> None: ...

    def unregister(self, group: str) -> None: ...

    def group_names(self) -> list[str]: ...
