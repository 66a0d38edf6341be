"""Heads read by recent fetches, reused by a fetch that starts below the head's high watermark.

A consumer catching up reads a partition head (a DynamoDB read) before every fetch, though the
records it asks for are already listed by the head it read a moment ago: everything below a
head's high watermark is immutable, so a fetch that starts there can plan from that head. What
the reuse allows, for at most ``max_age_s``:
- a result's high watermark (and log start) as the reused head had them: lag looks larger by
  what was produced since;
- records that retention or compaction replaced since, still read from the objects the reused
  head lists, which stay readable for the delete grace (Config.delete_grace_ms; the age is
  capped at half of it). A reader that finds an object gone reads the head again.
A fetch at or past the reused head's high watermark (a consumer at the tail) always reads the
head afresh, so no new record waits on the reuse, and no record above the high watermark of
some head is ever returned.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from objectlog.services.fetch import FetchRequest
from objectlog.services.isolation import end_of
from objectlog.stores.metadata import PartitionHead


class RecentHeads:
    def __init__(self, max_age_s: float, now: Callable[[], float] = time.monotonic) -> None:
        self.max_age_s = max_age_s
        self._now = now
        self._heads: dict[tuple[str, int], tuple[PartitionHead, float]] = {}

    def reusable(self, request: FetchRequest) -> PartitionHead | None:
        """The recent head of the partition if the fetch may plan from it: its offset is
        below where the fetch's isolation level ends on it (a read_committed fetch at that
        head's last stable offset reads the head again, to see the offset move)."""
        seen = self._heads.get((request.topic, request.partition))
        if seen is None or self.max_age_s <= 0:
            return None
        head, read_at = seen
        if self._now() - read_at > self.max_age_s:
            return None
        end = end_of(request.isolation, head)
        return head if head.log_start_offset <= request.offset < end else None

    def remember(self, topic: str, partition: int, head: PartitionHead) -> None:
        self._heads[(topic, partition)] = (head, self._now())

    def forget(self, topic: str, partition: int) -> None:
        """Plan the partition's next fetch from a head read then: its log start moved."""
        self._heads.pop((topic, partition), None)
