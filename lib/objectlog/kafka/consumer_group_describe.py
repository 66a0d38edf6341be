"""ConsumerGroupDescribe (API 69) of objectlog's own groups, as a Kafka broker describes a
KIP-848 consumer group (GroupMetadataManager.consumerGroupDescribe, Kafka 3.9 and 4.x).

objectlog's groups have KIP-848's shape, with one epoch for all: the generation is the group
epoch, the assignment epoch (every membership change recomputes the assignment at once, so a
group is never "Assigning") and every member's epoch (what a KIP-848 heartbeat answers). A
member's target assignment is what the group assigns it; its current assignment is what it may
consume now, the assigned partitions it holds (their offset items name it), as the heartbeat
answers. The group is "Reconciling" while an assigned partition is not yet held by its member.

objectlog does not keep a member's client host, rack or instance id (static membership is not
implemented) or a subscription by regular expression: they are reported empty.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from objectlog.groups import GroupDescription, MemberDescription, TopicPartition
from objectlog.kafka.consumer_protocol import ASSIGNORS

# objectlog's group states (GroupCoordinator.describe) by Kafka's consumer group names.
CONSUMER_STATES = {"Empty": "Empty", "Stable": "Stable", "Rebalancing": "Reconciling"}
# KIP-848's assignor names for objectlog's assignors; roundrobin, which only the library's
# Consumer offers, keeps its own name.
ASSIGNOR_NAMES = {ours: kip_848 for kip_848, ours in ASSIGNORS.items()}
DEFAULT_ASSIGNOR = "uniform"  # the first of Kafka's group.consumer.assignors
CONSUMER_MEMBER = 1  # KIP-1099's member type (v1): 1 uses the consumer protocol, 0 classic


def described_group(
    description: GroupDescription, topic_ids: Mapping[str, uuid.UUID]
) -> dict[str, Any]:
    """The group as ConsumerGroupDescribe answers it; topics absent from topic_ids (deleted)
    are left out of the assignments, as Kafka leaves out topics it no longer has."""
    epoch = description.generation
    held = _held_by_member(description)
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "group_id": description.group,
        "group_state": CONSUMER_STATES.get(description.state, description.state),
        "group_epoch": epoch,
        "assignment_epoch": epoch,
        "assignor_name": _assignor_name(description.strategy),
        "members": [
            _member(member, epoch, held.get(member.member_id, set()), topic_ids)
            for member in description.members
        ],
    }


def not_found(group_id: str, message: str) -> dict[str, Any]:
    """Kafka's answer for a group that is not a consumer group, or does not exist: the
    admin clients then describe it with DescribeGroups."""
    return {
        "error_code": ErrorCode.group_id_not_found,
        "error_message": message,
        "group_id": group_id,
    }


def topic_names(description: GroupDescription) -> set[str]:
    """Every topic a member subscribes to or is assigned."""
    return {
        name
        for member in description.members
        for name in (*member.topics, *(tp.topic for tp in member.assigned))
    }


def _assignor_name(strategy: str | None) -> str:
    if strategy is None:  # no member ever chose one: Kafka names its default assignor
        return DEFAULT_ASSIGNOR
    return ASSIGNOR_NAMES.get(strategy, strategy)


def _held_by_member(description: GroupDescription) -> dict[str, set[TopicPartition]]:
    held: dict[str, set[TopicPartition]] = {}
    for p in description.offsets:
        if p.owner is not None:
            held.setdefault(p.owner, set()).add(TopicPartition(p.topic, p.partition))
    return held


def _member(
    member: MemberDescription,
    epoch: int,
    held: set[TopicPartition],
    topic_ids: Mapping[str, uuid.UUID],
) -> dict[str, Any]:
    return {
        "member_id": member.member_id,
        "instance_id": None,
        "rack_id": None,
        "member_epoch": epoch,
        "client_id": member.client_id,
        "client_host": "",
        "subscribed_topic_names": list(member.topics),
        "subscribed_topic_regex": None,
        "assignment": _assignment(held & set(member.assigned), topic_ids),
        "target_assignment": _assignment(member.assigned, topic_ids),
        "member_type": CONSUMER_MEMBER,
    }


def _assignment(
    partitions: Iterable[TopicPartition], topic_ids: Mapping[str, uuid.UUID]
) -> dict[str, Any]:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return {
        "topic_partitions": [
            {"topic_id": topic_ids[name], "topic_name": name, "partitions": numbers}
            for name, numbers in by_topic.items()
            if name in topic_ids
        ]
    }
