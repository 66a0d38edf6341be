"""HeadStore.commit(allow_sequence_gaps=True): the Spark sink's sequences are batch ids."""

from __future__ import annotations

import pytest

from objectlog import ObjectLog
from objectlog.clock import ulid_time_ms
from objectlog.errors import OutOfOrderSequence
from objectlog.format.index import SegmentRef
from objectlog.format.segment import slice_table
from objectlog.format.topics import Topic
from objectlog.services.append import PartitionBatch
from objectlog.stores.metadata import Commit, CommitResult


def upload(log: ObjectLog, topic: Topic, records: int) -> tuple[str, SegmentRef]:
    table = slice_table(topic.name, 0, [None] * records, [b"v"] * records, [1] * records, 0)
    appender = log.new_appender()
    try:
        object_id, refs = appender.upload([PartitionBatch(topic, 0, table)])
    finally:
        appender.close()
    return object_id, refs[0]


def commit(
    log: ObjectLog, topic: Topic, sequence: int, *, gaps: bool = True, records: int = 2
) -> CommitResult:
    object_id, ref = upload(log, topic, records)
    return log.metadata.commit(
        Commit(
            topic_id=topic.topic_id,
            topic=topic.name,
            partition=0,
            ref=ref,
            object_time_ms=ulid_time_ms(object_id),
            producer_id="sink1",
            sequence=sequence,
            now_s=1,
            allow_sequence_gaps=gaps,
        )
    )


def test_gaps_land_and_older_sequences_are_duplicates(log: ObjectLog) -> None:
    topic = log.create_topic("gaps")
    assert commit(log, topic, 5).base_offset == 0  # a first sequence may be anything
    assert commit(log, topic, 9).base_offset == 2  # a gap: the batch left this partition out
    again = commit(log, topic, 9)  # the same batch replayed
    assert again.duplicate and again.base_offset == 2
    older = commit(log, topic, 7)  # an older batch replayed
    assert older.duplicate and older.base_offset == -1
    assert commit(log, topic, 10).base_offset == 4
    assert log.offsets("gaps", 0).latest == 6
    assert [r.offset for r in log.fetch("gaps", 0, 0, max_bytes=1 << 20)] == list(range(6))


def test_without_the_option_a_gap_is_out_of_order(log: ObjectLog) -> None:
    topic = log.create_topic("nogaps")
    commit(log, topic, 0, gaps=False)
    with pytest.raises(OutOfOrderSequence):
        commit(log, topic, 2, gaps=False)
    assert commit(log, topic, 1, gaps=False).base_offset == 2
