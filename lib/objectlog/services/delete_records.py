"""Deleting records: a partition's log start moved forward, as Kafka's DeleteRecords moves it
(kafka-delete-records.sh, AdminClient.deleteRecords, Kafka Streams purging its repartition
topics).

Every record below the new log start is gone at once for readers: a fetch there is
OffsetOutOfRange, and the earliest offset is the new start. The objects stay until the
compactor's next run drops the refs that end at or below the start (compaction.compactor
``plan``); a ref straddling the start stays, its records below it never served. The log start
only moves forward: the head's write is conditional on that, and so is the compactor's swap.
"""

from __future__ import annotations

from collections.abc import Mapping

from objectlog.errors import OffsetOutOfRange, PolicyViolation, TopicNotFound
from objectlog.format.topics import CLEANUP_POLICY, Topic, check_partition
from objectlog.stores.log_start import TO_HIGH_WATERMARK
from objectlog.stores.metadata import MetadataStore, PartitionHead

HIGH_WATERMARK = TO_HIGH_WATERMARK  # delete every record the partition holds, as Kafka's -1


def delete_records(
    metadata: MetadataStore, topic: Topic, offsets: Mapping[int, int]
) -> dict[int, int]:
    """Delete the records before each partition's offset (HIGH_WATERMARK: every record):
    each partition's log start after it. The whole request is checked before anything is
    written: PolicyViolation on a topic that is compacted only (as Kafka refuses it: deleting
    would lose keys' latest values), UnknownPartition, OffsetOutOfRange for an offset past
    the high watermark or below 0 (other than HIGH_WATERMARK). A high watermark only grows,
    so one checked here still holds when the write lands. TopicNotFound if the topic is
    deleted meanwhile."""
    check_delete_policy(topic)
    for partition in offsets:
        check_partition(topic, partition)
    heads = metadata.get_heads(topic.name, offsets)
    for partition, offset in offsets.items():
        check_offset(topic, partition, heads.get(partition), offset)
    return {
        partition: metadata.raise_log_start(
            topic.name, partition, topic_id=topic.topic_id, offset=offset
        )
        for partition, offset in offsets.items()
    }


def check_delete_policy(topic: Topic) -> None:
    if "delete" not in topic.config.get(CLEANUP_POLICY).split(","):
        raise PolicyViolation(
            f"the records of topic {topic.name!r} cannot be deleted: its {CLEANUP_POLICY} is "
            f"{topic.config.get(CLEANUP_POLICY)!r}, without delete",
            field=CLEANUP_POLICY,
        )


def check_offset(topic: Topic, partition: int, head: PartitionHead | None, offset: int) -> None:
    if head is None or head.topic_id != topic.topic_id:
        raise TopicNotFound(f"topic {topic.name!r} partition {partition} no longer exists")
    if offset == HIGH_WATERMARK or 0 <= offset <= head.next_offset:
        return
    raise OffsetOutOfRange(
        f"cannot delete the records of {topic.name}/{partition} before offset {offset}: the "
        f"high watermark is {head.next_offset} (the offset must be from 0 to it, or -1 for it)",
        log_start_offset=head.log_start_offset,
        high_watermark=head.next_offset,
    )
