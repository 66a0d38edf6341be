"""A partition head's log start moved forward (HeadStore.raise_log_start, for Kafka's
DeleteRecords: services/delete_records.py): the rule both head stores apply, and
DynamoMetadata's conditional UpdateItem for it.

The log start only moves forward and never past the high watermark. The compactor's swap,
which also sets it, is conditional on not moving it back (stores.metadata.HeadStore.swap_index).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from objectlog.errors import OffsetOutOfRange, TopicNotFound
from objectlog.stores.head_commit import HeadWrites
from objectlog.stores.metadata import PartitionHead

TO_HIGH_WATERMARK = -1  # raise_log_start's offset meaning "the high watermark", as Kafka's -1


def log_start_target(head: PartitionHead, offset: int) -> int:
    """The log start raise_log_start(offset) asks for on this head."""
    return head.next_offset if offset == TO_HIGH_WATERMARK else offset


def log_start_rises(head: PartitionHead | None, topic_id: str, offset: int) -> bool:
    """raise_log_start's condition, as LogStartWrites' ConditionExpression states it: the log
    start moves forward, never back, and never past the high watermark."""
    if head is None or head.topic_id != topic_id:
        return False
    return head.log_start_offset < log_start_target(head, offset) <= head.next_offset


def explain_refused_log_start(
    head: PartitionHead | None, topic: str, partition: int, topic_id: str, offset: int
) -> int:
    """Why raise_log_start's condition failed, given the head as it was: the log start it
    keeps (at or past offset already), or the error to raise."""
    if head is None or head.topic_id != topic_id:
        raise TopicNotFound(f"topic {topic!r} partition {partition} no longer exists")
    if log_start_target(head, offset) > head.next_offset:
        raise OffsetOutOfRange(
            f"cannot delete the records of {topic}/{partition} before offset {offset}: the "
            f"high watermark is {head.next_offset}",
            log_start_offset=head.log_start_offset,
            high_watermark=head.next_offset,
        )
    return head.log_start_offset


def raised_log_start(
    head: PartitionHead | None, topic: str, partition: int, topic_id: str, offset: int
) -> tuple[int, PartitionHead | None]:
    """raise_log_start on a head held in memory: the log start after it, and the new head
    (None when nothing changed)."""
    if head is None or not log_start_rises(head, topic_id, offset):
        return explain_refused_log_start(head, topic, partition, topic_id, offset), None
    raised = replace(head, log_start_offset=log_start_target(head, offset))
    return raised.log_start_offset, raised


class LogStartWrites(HeadWrites):
    """DynamoMetadata's raise_log_start: one conditional UpdateItem on the head."""

    def raise_log_start(self, topic: str, partition: int, *, topic_id: str, offset: int) -> int:
        """To the high watermark, lso takes next's value in the write itself: the high
        watermark when it lands, with no read before it for a produce to race."""
        to_high_watermark = offset == TO_HIGH_WATERMARK
        values: dict[str, Any] = {":tid": topic_id}
        if to_high_watermark:
            update, condition = "SET lso = #next", "tid = :tid AND lso < #next"
        else:
            update, condition = "SET lso = :o", "tid = :tid AND lso < :o AND #next >= :o"
            values[":o"] = offset
        written = self.table.update(
            self._head_at(topic, partition),
            update,
            condition=condition,
            names={"#next": "next"},
            values=values,
            returns="UPDATED_NEW",
            # a repeat of a raise to a given offset finds it done and answers it; a repeat
            # of one to the high watermark would delete what was produced in between
            repeatable=not to_high_watermark,
            what="UpdateItem head (log start)",
        )
        if written.applied:
            assert written.item is not None
            return int(written.item["lso"])
        head = (
            self._parse_head(topic, partition, written.item)
            if written.item is not None
            else self.get_head(topic, partition)
        )
        return explain_refused_log_start(head, topic, partition, topic_id, offset)
