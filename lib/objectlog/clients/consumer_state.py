"""What a Consumer carries from one poll to the next, as a value that can leave the process.

REST Proxy's consumer instances (objectlog.clients.instances) keep it in DynamoDB between
requests, so any function instance can serve the next request of any consumer instance. Times
are wall-clock milliseconds here (the Consumer keeps monotonic ones).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from objectlog.groups.values import Membership
from objectlog.stores.groups import TopicPartition


@dataclass
class ConsumerState:
    subscription: tuple[str, ...] | None = None
    membership: Membership | None = None
    owned: frozenset[TopicPartition] = frozenset()
    positions: dict[TopicPartition, int] = field(default_factory=dict)
    paused: frozenset[TopicPartition] = frozenset()
    committed: dict[TopicPartition, int] = field(default_factory=dict)
    heartbeat_due_ms: int = 0
    auto_commit_due_ms: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "subscription": None if self.subscription is None else list(self.subscription),
            "membership": None if self.membership is None else _membership_json(self.membership),
            "owned": _partitions_json(self.owned),
            "positions": _offsets_json(self.positions),
            "paused": _partitions_json(self.paused),
            "committed": _offsets_json(self.committed),
            "heartbeat_due_ms": self.heartbeat_due_ms,
            "auto_commit_due_ms": self.auto_commit_due_ms,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ConsumerState:
        subscription = data["subscription"]
        membership = data["membership"]
        return cls(
            subscription=None if subscription is None else tuple(subscription),
            membership=None if membership is None else _membership_from(membership),
            owned=frozenset(_partitions_from(data["owned"])),
            positions=_offsets_from(data["positions"]),
            paused=frozenset(_partitions_from(data["paused"])),
            committed=_offsets_from(data["committed"]),
            heartbeat_due_ms=int(data["heartbeat_due_ms"]),
            auto_commit_due_ms=int(data["auto_commit_due_ms"]),
        )


def _partitions_json(partitions: frozenset[TopicPartition] | tuple[TopicPartition, ...]) -> list:
    return [[tp.topic, tp.partition] for tp in sorted(partitions)]


def _partitions_from(data: list) -> list[TopicPartition]:
    return [TopicPartition(topic, int(partition)) for topic, partition in data]


def _offsets_json(offsets: dict[TopicPartition, int]) -> list:
    return [[tp.topic, tp.partition, offset] for tp, offset in sorted(offsets.items())]


def _offsets_from(data: list) -> dict[TopicPartition, int]:
    return {TopicPartition(topic, int(partition)): int(offset) for topic, partition, offset in data}


def _membership_json(membership: Membership) -> dict[str, Any]:
    return {
        "group": membership.group,
        "member_id": membership.member_id,
        "generation": membership.generation,
        "strategy": membership.strategy,
        "members": list(membership.members),
        "assigned": _partitions_json(membership.assigned),
        "owned": _partitions_json(membership.owned),
        "claimed": _partitions_json(membership.claimed),
    }


def _membership_from(data: dict[str, Any]) -> Membership:
    return Membership(
        group=data["group"],
        member_id=data["member_id"],
        generation=int(data["generation"]),
        strategy=data["strategy"],
        members=tuple(data["members"]),
        assigned=tuple(_partitions_from(data["assigned"])),
        owned=tuple(_partitions_from(data["owned"])),
        claimed=tuple(_partitions_from(data.get("claimed", []))),  # kept before it existed
    )
