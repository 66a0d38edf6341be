"""What the group protocol takes and answers: value types and the validation of its inputs."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from objectlog.errors import InvalidRequest
from objectlog.format.topics import validate_topic_name
from objectlog.groups.assignors import STRATEGIES
from objectlog.stores.groups import GroupState, MemberInfo, OffsetItem, TopicPartition
from objectlog.stores.metadata import MetadataStore, PartitionHead

# Kafka takes any non-empty group id and client id (librdkafka's suite names a group
# "roundrobin,range", Kafka Connect and Streams derive theirs from user names): 1-249
# characters, none of them a control character (they would garble logs and keys).
GROUP_NAME = re.compile(r"^[^\x00-\x1f\x7f]{1,249}$")
CLIENT_ID = GROUP_NAME
MIN_SESSION_TIMEOUT_MS = 100
MAX_SESSION_TIMEOUT_MS = 3_600_000
MAX_METADATA_CHARS = 4096


class OffsetAndMetadata(NamedTuple):
    offset: int
    metadata: str = ""


@dataclass(frozen=True)
class Membership:
    """A member's view after join or heartbeat.

    ``assigned`` is the member's target assignment in this generation; ``owned`` the
    partitions whose offset items it holds: the assigned ones it claimed (a partition still
    held by a live previous owner is assigned but not yet owned: consume only what is owned
    and assigned), plus any it holds but is no longer assigned, which it must release.
    ``claimed`` are the owned ones this call took from no owner or from a departed one: a
    member that held one of them before lost it meanwhile without noticing (a member with a
    stale view of the group claimed it, read on, committed and gave it back), so the position
    it kept is stale and it must read the committed offset again.
    """

    group: str
    member_id: str
    generation: int
    strategy: str
    members: tuple[str, ...]
    assigned: tuple[TopicPartition, ...]
    owned: tuple[TopicPartition, ...]
    claimed: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    client_id: str
    topics: tuple[str, ...]
    session_timeout_ms: int
    lease_expires_ms: int
    assigned: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class PartitionOffset:
    """A partition's committed offset beside its log: lag is None when nothing is committed."""

    topic: str
    partition: int
    committed: int | None
    metadata: str
    log_start_offset: int
    high_watermark: int
    owner: str | None
    pending_transaction: str | None = None  # whose offset for it is pending (transactions.md)

    @property
    def lag(self) -> int | None:
        if self.committed is None:
            return None
        return max(0, self.high_watermark - max(self.committed, self.log_start_offset))


@dataclass(frozen=True)
class GroupDescription:
    group: str
    state: str  # Empty, Stable or Rebalancing (a partition not yet claimed by its new member)
    generation: int
    strategy: str | None
    members: tuple[MemberDescription, ...]
    offsets: tuple[PartitionOffset, ...]

    @property
    def total_lag(self) -> int:
        return sum(p.lag or 0 for p in self.offsets)


def validate_group_name(group: object) -> str:
    if not isinstance(group, str) or not GROUP_NAME.match(group):
        raise InvalidRequest(
            f"invalid group id {group!r}: use 1-249 characters, no control characters",
            field="group",
        )
    return group


def member_info(
    topics: Collection[str], client_id: str, session_timeout_ms: int, strategies: Sequence[str]
) -> MemberInfo:
    if isinstance(topics, str) or not topics:
        raise InvalidRequest("topics must be a non-empty list of topic names", field="topics")
    for topic in topics:
        validate_topic_name(topic)
    if not isinstance(client_id, str) or not CLIENT_ID.match(client_id):
        raise InvalidRequest(
            f"invalid client id {client_id!r}: use 1-249 characters, no control characters",
            field="client_id",
        )
    if (
        type(session_timeout_ms) is not int
        or not MIN_SESSION_TIMEOUT_MS <= session_timeout_ms <= MAX_SESSION_TIMEOUT_MS
    ):
        raise InvalidRequest(
            f"session_timeout_ms must be an integer from {MIN_SESSION_TIMEOUT_MS} to "
            f"{MAX_SESSION_TIMEOUT_MS}, got {session_timeout_ms!r}",
            field="session_timeout_ms",
        )
    unknown = [s for s in strategies if s not in STRATEGIES]
    if isinstance(strategies, str) or not strategies or unknown:
        raise InvalidRequest(
            f"strategies must be a non-empty list from {list(STRATEGIES)}, got {strategies!r}",
            field="strategies",
        )
    return MemberInfo(client_id, tuple(sorted(set(topics))), session_timeout_ms, tuple(strategies))


def offset_value(value: OffsetAndMetadata | int | object) -> OffsetAndMetadata:
    if type(value) is int:
        value = OffsetAndMetadata(value)
    if not isinstance(value, tuple) or len(value) != 2:
        raise InvalidRequest(f"an offset must be an integer, got {value!r}", field="offsets")
    offset, metadata = value
    if type(offset) is not int or offset < 0:
        raise InvalidRequest(
            f"an offset must be a non-negative integer, got {offset!r}", field="offsets"
        )
    if not isinstance(metadata, str) or len(metadata) > MAX_METADATA_CHARS:
        raise InvalidRequest(
            f"offset metadata must be a string of at most {MAX_METADATA_CHARS} characters",
            field="metadata",
        )
    return OffsetAndMetadata(offset, metadata)


def committed_offsets(
    items: Mapping[TopicPartition, OffsetItem], leaving_out: Collection[TopicPartition]
) -> dict[TopicPartition, OffsetAndMetadata | None]:
    """The offset items' committed offsets (None: never committed), less leaving_out."""
    return {
        tp: None if i.offset is None else OffsetAndMetadata(i.offset, i.metadata)
        for tp, i in items.items()
        if tp not in leaving_out
    }


def covers(state: GroupState, counts: Mapping[str, int]) -> bool:
    """The assignment covers exactly the subscribed topics' current partitions."""
    assigned = {tp for tps in state.assignment.values() for tp in tps}
    return assigned == {TopicPartition(t, p) for t in counts for p in range(counts[t])}


def group_phase(state: GroupState, items: Mapping[TopicPartition, OffsetItem]) -> str:
    """Empty, Rebalancing (a partition not yet held by its assigned member) or Stable."""
    if not state.members:
        return "Empty"
    for member_id, tps in state.assignment.items():
        if any(tp in items and items[tp].owner != member_id for tp in tps):
            return "Rebalancing"
    return "Stable"


def fenced_message(
    group: str, tp: TopicPartition, old: OffsetItem, member_id: str | None, generation: int
) -> str:
    where = f"{tp.topic}/{tp.partition} in group {group!r}"
    if member_id is None:
        return (
            f"cannot commit {where} from outside the group: member {old.owner} owns it "
            f"(generation {old.owner_generation})"
        )
    if old.owner == member_id:
        return (
            f"cannot commit {where}: this member claimed it at generation "
            f"{old.owner_generation}, after generation {generation} it commits for; rejoin"
        )
    owner = f"member {old.owner} (generation {old.owner_generation})" if old.owner else "no member"
    return (
        f"cannot commit {where}: it is now owned by {owner}, not by {member_id} "
        f"(generation {generation}); the group rebalanced, rejoin"
    )


def subscribed_topics(members: Mapping[str, MemberInfo]) -> frozenset[str]:
    return frozenset(t for info in members.values() for t in info.topics)


def all_partitions(counts: Mapping[str, int]) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t in sorted(counts) for p in range(counts[t])]


def partition_heads(
    metadata: MetadataStore, partitions: Sequence[TopicPartition]
) -> dict[TopicPartition, PartitionHead]:
    """The partitions' heads (those that exist), one read per topic."""
    heads: dict[TopicPartition, PartitionHead] = {}
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    for topic, numbers in sorted(by_topic.items()):
        for number, head in metadata.get_heads(topic, numbers).items():
            heads[TopicPartition(topic, number)] = head
    return heads
