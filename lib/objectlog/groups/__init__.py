"""Consumer groups: membership leases, assignment, generation-fenced committed offsets."""

from objectlog.groups.coordinator import GroupCoordinator
from objectlog.groups.values import (
    GroupDescription,
    MemberDescription,
    Membership,
    OffsetAndMetadata,
    PartitionOffset,
)
from objectlog.stores.groups import TopicPartition

__all__ = [
    "GroupCoordinator",
    "GroupDescription",
    "MemberDescription",
    "Membership",
    "OffsetAndMetadata",
    "PartitionOffset",
    "TopicPartition",
]
