"""Waiting that costs almost nothing: a reader at the tail stops reading partition heads once
they stay still, and polls its topic's activity item (stores.activity) instead.

Writers (``TopicActivity.committed``, called after commits succeeded, never before): a process
touches a topic's item (one UpdateItem) after a commit to it when **its previous touch of that
topic was sent more than G = ``touch_every_s`` (1 s) ago**. A producer committing all the time
touches about once a second per topic; an idle topic's first record touches at once.

Waiters (``due`` before reading heads, ``saw`` after), per partition, shared by every waiter
of the process (a library Consumer's fetch-ahead, a ``fetch(max_wait_ms=)`` long poll, the
Kafka agent's head watcher):
- **active**: the waiter reads the heads it waits on at its own pace, as before;
- after X = ``idle_after_s`` (5 s) of reads that saw no head move, **idle**: ``due`` answers
  False for the partition while the topic's counter (read at most every ``poll_s``, 0.5 s,
  eventually consistent, one read per topic per process) still equals the *baseline*: the
  newest counter value read at least ``guard_s`` (1.5 s) before the start of the partition's
  last head read. A different value makes the partition due (at most every ``poll_s``); a
  read that sees it move makes it active again. Every ``fallback_s`` (30 s) it is due anyway.

Why no record is missed (pinned by tests/unit/test_activity.py with a fake clock). Let h be
the start of the partition's last head read (strongly consistent), b the baseline, read by
time b.at <= h - guard. A commit C the read did not see took effect after h, so it ended (in
its writer's process) at e > h. Either C's writer touched after C, so after h > b.at; or it
did not because its last touch was sent at s >= e - G > h - G >= b.at (guard >= G; the margin
covers two clocks' rates). Either way a touch took effect after the baseline was read, so the
counter, which only grows, differs from b once a read reflects it (an eventually consistent
read may show it late, or show an older value: both only make a read of the heads due).

Why the rule is "since the writer's last touch", not "since its last commit" (which would let
a busy producer touch only once): a commit that does not touch must be announced by a touch
at most G before it. "Within G of the writer's previous commit" chains: a producer writing to
partition 0 every 0.9 s touches once; a waiter on partition 1 alone goes idle; the producer's
next record to partition 1 follows its last commit by 0.9 s, so it does not touch, and the
waiter, whose baseline is newer than the only touch, would wait for the fallback (the test
shows it). The price of the safe rule is one UpdateItem a second per busy writer process and
topic (about $1.6 a month at on-demand list prices), against the commits it rides with.

What the fallback bounds: a writer that died between its commit and its touch, a touch that
failed (its commits are not counted as touched, so the next commit touches again), a commit
whose answer was lost and that took effect later, writers that do not touch (older versions,
the transaction sweep's abort markers; the Spark sink touches after each batch's commits).
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from objectlog.errors import ObjectLogError
from objectlog.stores.activity import ActivityStore
from objectlog.stores.metadata import PartitionHead

logger = logging.getLogger(__name__)

End = tuple[int, int]  # a head's high watermark and last stable offset


@dataclass(frozen=True)
class ActivitySettings:
    touch_every_s: float = 1.0  # G: a writer touches if its last touch was longer ago
    guard_s: float = 1.5  # a baseline is read at least this long before the heads (>= G)
    idle_after_s: float = 5.0  # X: heads still for this long, the partition goes idle
    poll_s: float = 0.5  # an idle topic's counter is read at most this often
    fallback_s: float = 30.0  # an idle partition's head is read at least this often


def end_of(head: PartitionHead) -> End:
    return head.next_offset, head.last_stable_offset


@dataclass
class _Partition:
    cover: float  # when the newest head read of it started
    end: End  # what that read found
    moved: float  # when the read that found it moving (or its first read) started


@dataclass(frozen=True, order=True)
class _Sample:
    at: float  # when the read of the counter returned
    value: int


class TopicActivity:
    """One per log (process): the writers' touches and the waiters' shared view."""

    def __init__(
        self,
        store: ActivityStore,
        settings: ActivitySettings | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.settings = settings or ActivitySettings()
        self.now = monotonic
        self._lock = threading.Lock()
        self._touch_locks: dict[str, threading.Lock] = {}
        self._touched: dict[str, float] = {}  # topic -> when our last good touch was sent
        self._partitions: dict[tuple[str, int], _Partition] = {}
        self._samples: dict[str, list[_Sample]] = {}  # per topic, oldest first
        self.touches = 0  # touches sent, for tests and benchmarks
        self.reads = 0  # counter reads sent

    # ---- writers -----------------------------------------------------------------------

    def committed(self, topics: Iterable[str]) -> None:
        """After commits to these topics took effect (or may have: an unknown outcome):
        touch each whose last touch from this process was sent more than G ago. A failed
        touch is logged and not remembered, so the next commit touches again."""
        for topic in sorted(set(topics)):
            with self._lock:
                lock = self._touch_locks.setdefault(topic, threading.Lock())
            with lock:  # concurrent commits to a topic: one touches, the others see it
                sent = self.now()
                last = self._touched.get(topic)
                if last is not None and sent - last <= self.settings.touch_every_s:
                    continue
                try:
                    self.store.touch(topic)
                except ObjectLogError as e:
                    logger.warning("touching the activity of topic %s failed: %s", topic, e)
                    continue
                self.touches += 1
                self._touched[topic] = sent

    # ---- waiters -----------------------------------------------------------------------

    def due(self, topic: str, partitions: Collection[int]) -> set[int]:
        """Of the partitions a waiter waits on, those whose heads it should read now (it
        reads the active ones at its own pace). May read the topic's counter (blocking)."""
        settings, now = self.settings, self.now()
        due: set[int] = set()
        idle: list[tuple[int, float, _Sample]] = []
        sample = False
        with self._lock:
            samples = self._samples.get(topic, [])
            for partition in partitions:
                state = self._partitions.get((topic, partition))
                if state is None or now - state.cover >= settings.fallback_s:
                    due.add(partition)
                    continue
                quiet = now - state.moved
                fresh = bool(samples) and samples[-1].at >= state.moved
                baseline = _newest_until(samples, state.cover - settings.guard_s)
                if quiet < settings.idle_after_s or baseline is None:
                    due.add(partition)
                    # read the counter once the heads are still, so a baseline is ready by X
                    sample |= quiet >= settings.idle_after_s - settings.guard_s and not fresh
                    continue
                idle.append((partition, state.cover, baseline))
        if not (idle or sample):
            return due
        latest = self._sample(topic)
        for partition, cover, baseline in idle:
            if latest is None or (
                latest.value != baseline.value and now - cover >= settings.poll_s
            ):
                due.add(partition)
        return due

    def saw(self, topic: str, ends: Mapping[int, End], started: float) -> None:
        """A head read that started at ``started`` (``now()`` before it was sent) found these
        ends. Only fresh reads count: a head reused from earlier must not be reported."""
        with self._lock:
            for partition, end in ends.items():
                state = self._partitions.get((topic, partition))
                if state is None:
                    self._partitions[(topic, partition)] = _Partition(started, end, started)
                elif started >= state.cover:  # a slower read that started earlier says less
                    if end != state.end:
                        state.moved, state.end = started, end
                    state.cover = started

    def saw_heads(self, topic: str, heads: Iterable[PartitionHead], started: float) -> None:
        self.saw(topic, {head.partition: end_of(head) for head in heads}, started)

    def _sample(self, topic: str) -> _Sample | None:
        """The topic's newest counter value, read now if the last is poll_s old; None if the
        read failed (the caller reads heads instead)."""
        settings = self.settings
        with self._lock:
            samples = self._samples.get(topic)
            if samples and self.now() - samples[-1].at < settings.poll_s:
                return samples[-1]
        try:
            value = self.store.read(topic)
        except ObjectLogError as e:
            logger.warning("reading the activity of topic %s failed: %s", topic, e)
            return None
        read = _Sample(self.now(), value)
        with self._lock:
            self.reads += 1
            samples = self._samples.setdefault(topic, [])
            bisect.insort(samples, read)
            # older ones could only be the baseline of a head read past its fallback
            keep = read.at - settings.fallback_s - settings.guard_s - settings.poll_s
            while len(samples) > 1 and samples[0].at < keep:
                samples.pop(0)
            return samples[-1]


def _newest_until(samples: list[_Sample], at: float) -> _Sample | None:
    """The newest sample read by ``at``."""
    i = bisect.bisect_right(samples, _Sample(at, 1 << 62))
    return samples[i - 1] if i else None
