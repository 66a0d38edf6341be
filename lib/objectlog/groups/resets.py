"""Where a reset moves a group's offset, as ``kafka-consumer-groups.sh --reset-offsets`` does:
earliest, latest, timestamp, an explicit offset, or the committed offset shifted."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from objectlog.errors import InvalidRequest
from objectlog.groups.values import OffsetAndMetadata
from objectlog.stores.groups import TopicPartition
from objectlog.stores.metadata import PartitionHead

TARGETS = ("earliest", "latest", "timestamp", "offset", "current")

# (topic, partition, timestamp_ms) -> the first offset at or after it, or None
OffsetForTime = Callable[[str, int, int], int | None]


@dataclass(frozen=True)
class ResetTo:
    """A reset's target: ``to`` is one of TARGETS; timestamp needs timestamp_ms, offset needs
    offsets, current needs shift_by."""

    to: str = "earliest"
    timestamp_ms: int | None = None
    offsets: Mapping[TopicPartition, int] | None = None
    shift_by: int | None = None


def reset_target(
    tp: TopicPartition,
    head: PartitionHead,
    reset: ResetTo,
    current: Mapping[TopicPartition, OffsetAndMetadata | None],
    offset_for_time: OffsetForTime,
) -> int:
    """The offset the partition resets to, before clamping to its log's range."""
    if reset.to == "earliest":
        return head.log_start_offset
    if reset.to == "latest":
        return head.next_offset
    if reset.to == "timestamp":
        if type(reset.timestamp_ms) is not int:
            raise InvalidRequest("to=timestamp needs timestamp_ms", field="timestamp_ms")
        found = offset_for_time(head.topic, head.partition, reset.timestamp_ms)
        return head.next_offset if found is None else found  # Kafka resets to the end
    if reset.to == "offset":
        assert reset.offsets is not None
        value = {TopicPartition(*k): v for k, v in reset.offsets.items()}[tp]
        if type(value) is not int:
            raise InvalidRequest(f"offset for {tp} must be an integer", field="offsets")
        return value
    if reset.to == "current":
        if type(reset.shift_by) is not int:
            raise InvalidRequest("to=current needs shift_by", field="shift_by")
        committed = current.get(tp)
        return (committed.offset if committed else head.log_start_offset) + reset.shift_by
    raise InvalidRequest(
        f"to must be earliest, latest, timestamp, offset or current, got {reset.to!r}",
        field="to",
    )
