"""Consumer groups: membership leases, assignment, generation-fenced committed offsets."""

from objectlog.groups.consumer import Consumer, NoOffsetForPartition
from objectlog.groups.coordinator import (
    GroupCoordinator,
    GroupDescription,
    MemberDescription,
    Membership,
    OffsetAndMetadata,
    PartitionOffset,
)
from objectlog.groups.store import TopicPartition

__all__ = [
    "Consumer",
    "GroupCoordinator",
    "GroupDescription",
    "MemberDescription",
    "Membership",
    "NoOffsetForPartition",
    "OffsetAndMetadata",
    "PartitionOffset",
    "TopicPartition",
]
