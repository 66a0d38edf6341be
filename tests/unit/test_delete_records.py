"""Deleting records (Kafka's DeleteRecords) on a log with no server: the library's rules
(services.delete_records), what the compactor does with the refs left below the log start,
and a compactor that planned before a DeleteRecords never moves the log start back."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from objectlog import InvalidRequest, ObjectLog, OffsetOutOfRange, TopicNotFound, UnknownPartition
from objectlog.clock import ManualClock
from objectlog.compaction.compactor import CompactionSettings, plan
from objectlog.compaction.maintenance import compactor_for
from objectlog.config import Config
from objectlog.errors import PolicyViolation
from objectlog.format import layout
from objectlog.format.index import LEVEL_L0, LEVEL_L1, PlacedRef, SegmentRef, place
from objectlog.format.topics import Topic, TopicConfig
from objectlog.services.delete_records import HIGH_WATERMARK
from objectlog.services.fetch import FetchRequest
from objectlog.stores.items import ItemStores
from objectlog.stores.metadata import PartitionHead
from objectlog.stores.objects import MemoryObjectStore

KEEP_ALL = {"retention.ms": "-1"}  # only a DeleteRecords removes anything here
# L1 files of a few row groups of a few records each: a log start between them leaves whole
# files below it, and refs on both sides of it.
SMALL = CompactionSettings(target_file_bytes=2 << 10, row_group_bytes=1 << 10)
VALUE_BYTES = 300


@pytest.fixture
def log() -> Iterator[ObjectLog]:
    clock = ManualClock()
    with ObjectLog(
        Config(), store=MemoryObjectStore(clock.now_ms), items=ItemStores.memory(), clock=clock
    ) as memory_log:
        memory_log.create_topic("t", partitions=2, config=KEEP_ALL)
        yield memory_log


def value(offset: int) -> bytes:
    return b"%d:" % offset + b"v" * VALUE_BYTES


def produce(log: ObjectLog, flushes: int, per_flush: int, partition: int = 0) -> None:
    """flushes L0 objects (one ref each) of per_flush records; record i's value is value(i)."""
    with log.producer(linger_ms=0) as producer:
        for flush in range(flushes):
            for i in range(per_flush):
                producer.send("t", value(flush * per_flush + i), partition=partition)
            producer.flush()


def read_from_log_start(log: ObjectLog, partition: int = 0) -> list[tuple[int, bytes | None]]:
    offsets = log.offsets("t", partition)
    rows: list[tuple[int, bytes | None]] = []
    offset = offsets.earliest
    while offset < offsets.latest:
        result = log.fetch("t", partition, offset)
        rows += [(r.offset, r.value) for r in result.records]
        offset = result.next_offset
    return rows


def indexed(log: ObjectLog, partition: int = 0) -> list[PlacedRef]:
    """Every ref the partition's index holds, from its first (also below the log start)."""
    head = log.metadata.get_head("t", partition)
    assert head is not None
    return list(log.index.placed_refs(head, 0))


def object_key(log: ObjectLog, placed: PlacedRef) -> str:
    return layout.object_key(log.config.prefix, placed.ref.level, placed.ref.object_id)


# ---- the library -------------------------------------------------------------------------


def test_the_log_start_moves_and_readers_start_there(log: ObjectLog) -> None:
    produce(log, flushes=2, per_flush=5)  # partition 0: offsets 0-9
    produce(log, flushes=1, per_flush=4, partition=1)
    assert log.delete_records("t", {0: 4, 1: HIGH_WATERMARK}) == {0: 4, 1: 4}
    assert (log.offsets("t", 0).earliest, log.offsets("t", 0).latest) == (4, 10)
    assert (log.offsets("t", 1).earliest, log.offsets("t", 1).latest) == (4, 4)
    with pytest.raises(OffsetOutOfRange) as below:
        log.fetch("t", 0, 3)
    assert below.value.log_start_offset == 4
    assert read_from_log_start(log) == [(i, value(i)) for i in range(4, 10)]
    assert log.delete_records("t", {0: 2}) == {0: 4}  # never back
    assert log.delete_records("t", {0: 10}) == {0: 10}  # up to the high watermark itself


def test_a_request_with_one_bad_partition_moves_no_log_start(log: ObjectLog) -> None:
    produce(log, flushes=1, per_flush=5)
    produce(log, flushes=1, per_flush=5, partition=1)
    refused: list[tuple[dict[int, int], type[Exception]]] = [
        ({0: 3, 1: 6}, OffsetOutOfRange),  # past partition 1's high watermark
        ({0: 3, 1: -2}, OffsetOutOfRange),  # below 0, and not -1
        ({0: 3, 2: 1}, UnknownPartition),
        ({0: 3, -1: 1}, InvalidRequest),
    ]
    for offsets, error in refused:
        with pytest.raises(error):
            log.delete_records("t", offsets)
    assert [log.offsets("t", p).earliest for p in range(2)] == [0, 0]
    with pytest.raises(TopicNotFound):
        log.delete_records("missing", {0: 1})


def test_a_topic_compacted_only_refuses_and_one_also_deleting_allows(log: ObjectLog) -> None:
    log.create_topic("keys", config={"cleanup.policy": "compact"})
    with pytest.raises(PolicyViolation):
        log.delete_records("keys", {0: HIGH_WATERMARK})
    log.create_topic("both", config={"cleanup.policy": "compact,delete"})
    with log.producer() as producer:
        producer.send("both", b"v", key=b"k")
    assert log.delete_records("both", {0: HIGH_WATERMARK}) == {0: 1}


def test_a_fetch_reusing_a_recent_head_sees_this_clients_deletion(log: ObjectLog) -> None:
    produce(log, flushes=1, per_flush=5)
    assert log.fetch_many([FetchRequest("t", 0, 0)])[0].records  # the head is remembered
    log.delete_records("t", {0: 3})
    with pytest.raises(OffsetOutOfRange):
        log.fetch_many([FetchRequest("t", 0, 0)])


# ---- the compactor -------------------------------------------------------------------------


def l1_ref(span: int) -> SegmentRef:
    return SegmentRef(LEVEL_L1, f"topics/t/id/partition=0/{span}", 0, 100, span, span, 1, 2)


@pytest.mark.parametrize("policy", ["delete", "compact"])
def test_the_plan_drops_refs_below_the_log_start_and_keeps_the_one_straddling_it(
    policy: str,
) -> None:
    topic = Topic("t", "id", 1, TopicConfig({**KEEP_ALL, "cleanup.policy": policy}), 0)
    refs = list(place(0, [l1_ref(5), l1_ref(5), l1_ref(5), l1_ref(5)]))  # 0-5-10-15-20
    head = PartitionHead("t", 0, "id", 22, 12, 20, (), "ml", 3, 0)  # log start 12
    proposal = plan(topic, head, refs, now_ms=10, settings=SMALL)
    assert proposal.dropped == (refs[0], refs[1])  # end at 5 and 10: at or below 12
    assert proposal.log_start == 12 and proposal.rewrite == ()  # [10, 15) stays
    on_a_boundary = plan(topic, replace(head, log_start_offset=10), refs, 10, SMALL)
    assert on_a_boundary.dropped == (refs[0], refs[1]) and on_a_boundary.log_start == 10


def test_the_compactor_drops_the_refs_a_delete_left_below_the_log_start(log: ObjectLog) -> None:
    produce(log, flushes=6, per_flush=5)  # offsets 0-29, one L0 ref per flush
    compactor = compactor_for(log, SMALL)
    topic = log.topic("t")
    assert compactor.compact_partition(topic, 0).files_written  # all but the tail is L1 now
    assert compactor.compact_partition(topic, 0).skipped == "idle"
    below = [p for p in indexed(log) if p.end_offset <= 12]
    assert below  # what a delete to 12 leaves below the log start

    log.delete_records("t", {0: 12})
    report = compactor.compact_partition(topic, 0)

    assert report.skipped is None and report.refs_in == len(below)
    refs = indexed(log)
    assert all(p.end_offset > 12 for p in refs) and refs[0].base_offset <= 12
    # the files wholly below are retired: GC deletes them after the grace period
    assert report.retired and not set(report.retired) & {object_key(log, p) for p in refs}
    assert {p.ref.level for p in refs} == {LEVEL_L0, LEVEL_L1}  # the tail stayed as it was
    assert read_from_log_start(log) == [(i, value(i)) for i in range(12, 30)]
    assert compactor.compact_partition(topic, 0).skipped == "idle"


def test_a_swap_planned_before_a_delete_records_does_not_undo_it(
    log: ObjectLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    produce(log, flushes=6, per_flush=5)
    swap_index: Callable[..., bool] = log.metadata.swap_index
    deleted: list[dict[int, int]] = []

    def delete_records_first(*args: Any, **kwargs: Any) -> bool:
        if not deleted:  # a DeleteRecords lands between the compactor's read and its swap
            deleted.append(log.delete_records("t", {0: 7}))
        return swap_index(*args, **kwargs)

    monkeypatch.setattr(log.metadata, "swap_index", delete_records_first)
    report = compactor_for(log, SMALL).compact_partition(log.topic("t"), 0)

    assert deleted == [{0: 7}] and report.refused_swaps == 1  # planned again, then swapped
    assert report.skipped is None and report.log_start_after == 7
    assert log.offsets("t", 0).earliest == 7
    assert read_from_log_start(log) == [(i, value(i)) for i in range(7, 30)]
