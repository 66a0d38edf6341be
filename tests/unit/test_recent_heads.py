"""services.recent_heads: when a fetch may plan from a head read a moment ago."""

from __future__ import annotations

from dataclasses import replace

from objectlog.services.fetch import FetchRequest
from objectlog.services.isolation import READ_COMMITTED
from objectlog.services.recent_heads import RecentHeads
from objectlog.stores.metadata import PartitionHead


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def head(log_start: int, high_watermark: int) -> PartitionHead:
    return PartitionHead(
        topic="t",
        partition=0,
        topic_id="id",
        next_offset=high_watermark,
        log_start_offset=log_start,
        tail_base=log_start,
        tail=(),
        manifest_list=None,
        index_epoch=0,
        gc_horizon=0,
    )


def test_a_head_is_reused_below_its_high_watermark_while_recent() -> None:
    clock = Clock()
    heads = RecentHeads(1.0, now=clock)
    seen = head(10, 50)
    heads.remember("t", 0, seen)
    assert heads.reusable(FetchRequest("t", 0, 10)) is seen
    assert heads.reusable(FetchRequest("t", 0, 49)) is seen
    assert heads.reusable(FetchRequest("t", 0, 50)) is None  # at the tail: read it afresh
    assert heads.reusable(FetchRequest("t", 0, 9)) is None  # below its log start
    assert heads.reusable(FetchRequest("t", 1, 20)) is None  # another partition
    clock.now += 1.01
    assert heads.reusable(FetchRequest("t", 0, 20)) is None  # too old


def test_no_reuse_when_disabled() -> None:
    heads = RecentHeads(0.0, now=Clock())
    heads.remember("t", 0, head(0, 50))
    assert heads.reusable(FetchRequest("t", 0, 1)) is None


def test_a_read_committed_fetch_reuses_a_head_only_below_its_last_stable_offset() -> None:
    heads = RecentHeads(1.0, now=Clock())
    seen = replace(head(0, 50), open_txns={"k7": (0, 30)})
    heads.remember("t", 0, seen)
    assert heads.reusable(FetchRequest("t", 0, 29, isolation=READ_COMMITTED)) is seen
    # at the LSO: read the head again to see it move (the records past it may be committed)
    assert heads.reusable(FetchRequest("t", 0, 30, isolation=READ_COMMITTED)) is None
    assert heads.reusable(FetchRequest("t", 0, 30)) is seen
