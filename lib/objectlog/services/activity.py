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
  read that sees it move makes it active again. Every ``fallback_s`` (60 s) it is due anyway.

Why no record is missed (pinned by tests/unit/test_activity.py with a fake clock). Let h be
the start of the partition's last head read (strongly consistent), b the baseline, read by
time b.at <= h - guard. A commit C the read did not see took effect after h, so it ended (in
its writer's process) at e > h. Either C's writer touched after C, so after h > b.at; or it
did not because its last touch was sent at s >= e - G > h - G >= b.at (guard >= G; the margin
covers two clocks' rates). Either way a touch took effect after the baseline was read, so the
counter, which only grows, differs from b once a read reflects it (an eventually consistent
read may show it late, or show an older value: both only make a read of the heads due).

Read your writes (``still``: the Kafka agent answers a fetch of idle partitions from the
ends last read, without reading heads): an answer given for a request that arrived at t holds
every commit acknowledged before t, through this process or any other, when for each
partition (a) its head was read after t, or (b) a strongly consistent read of the counter
sent after t equals the partition's baseline and no commit of this process ended after the
head read began (``committed`` notes when this process's commits ended: such a partition is
due at once). For (b), take a commit C acknowledged before t that the head read at h did not
see. By the proof above a touch took effect after the baseline was read: C's own (sent after
C, in ``committed``, which returns before C is acknowledged) or the writer's previous touch,
which completed before ``committed`` looked at it (a touch is remembered only once it
succeeded). Either way it completed before t, so a strongly consistent read sent after t
shows a larger counter than the baseline, and the partition is due. While such answers are
given, every read of the counter is strongly consistent (1 read unit, against 0.5) and made
every ``proving_poll_s`` (0.4 s, under a Kafka fetch's usual 500 ms wait), so the reads the
waiters make anyway serve as the requests' proofs, and a request whose wait saw none reads
the counter once more before it is answered. What (b) does not cover is
what the fallback covers (below): a touch that failed, or a writer that does not touch.

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

from objectlog.concurrency import Lock
from objectlog.errors import ObjectLogError
from objectlog.stores.activity import ActivityStore
from objectlog.stores.metadata import PartitionHead

logger = logging.getLogger(__name__)

End = tuple[int, int, int]  # a head's high watermark, last stable offset and log start


@dataclass(frozen=True)
class ActivitySettings:
    touch_every_s: float = 1.0  # G: a writer touches if its last touch was longer ago
    guard_s: float = 1.5  # a baseline is read at least this long before the heads (>= G)
    idle_after_s: float = 5.0  # X: heads still for this long, the partition goes idle
    poll_s: float = 0.5  # an idle topic's counter is read at most this often
    # ... and this often while requests are answered from the view (``still``): under a Kafka
    # fetch's usual 500 ms wait, so the waiters' reads prove the fetches' answers
    proving_poll_s: float = 0.4
    fallback_s: float = 60.0  # an idle partition's head is read at least this often


def end_of(head: PartitionHead) -> End:
    return head.next_offset, head.last_stable_offset, head.log_start_offset


@dataclass
class _Partition:
    cover: float  # when the newest head read of it started
    end: End  # what that read found
    moved: float  # when the read that found it moving (or its first read) started


@dataclass(frozen=True, order=True)
class _Sample:
    at: float  # when the read of the counter returned
    value: int
    sent: float = 0.0  # when it was sent
    consistent: bool = False  # read strongly consistently


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
        self._touch_locks: dict[str, Lock] = {}
        self._touched: dict[str, float] = {}  # topic -> when our last good touch was sent
        self._partitions: dict[tuple[str, int], _Partition] = {}
        self._samples: dict[str, list[_Sample]] = {}  # per topic, oldest first
        self._local: dict[str, float] = {}  # topic -> when this process's last commits ended
        self._strict_until = float("-inf")  # read the counter strongly until then (``still``)
        self.touches = 0  # touches sent, for tests and benchmarks
        self.reads = 0  # counter reads sent

    # ---- writers -----------------------------------------------------------------------

    def committed(self, topics: Iterable[str]) -> None:
        """After commits to these topics took effect (or may have: an unknown outcome):
        touch each whose last touch from this process was sent more than G ago. A failed
        touch is logged and not remembered, so the next commit touches again."""
        ended, names = self.now(), sorted(set(topics))
        with self._lock:
            self._local.update(dict.fromkeys(names, ended))
        for topic in names:
            with self._lock:
                lock = self._touch_locks.setdefault(topic, Lock())
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

    def due(self, topic: str, partitions: Collection[int], since: float | None = None) -> set[int]:
        """Of the partitions a waiter waits on, those whose heads it should read now (it
        reads the active ones at its own pace). May read the topic's counter (blocking).
        With ``since`` (``now()`` when a request arrived), an idle partition is due unless
        its last head read started after since, or the counter, read strongly consistently
        after since, still equals its baseline (``still``)."""
        settings, now = self.settings, self.now()
        due: set[int] = set()
        idle: list[tuple[int, float, _Sample]] = []
        sample = False
        with self._lock:
            samples = self._samples.get(topic, [])
            local = self._local.get(topic, float("-inf"))
            for partition in partitions:
                state = self._partitions.get((topic, partition))
                if state is None or now - state.cover >= settings.fallback_s:
                    due.add(partition)
                    continue
                if local >= state.cover:  # a commit of ours may have ended after that read
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
        strict = since is not None and any(cover < since for _, cover, _ in idle)
        if strict:
            with self._lock:  # the waiters' polls serve the next requests' proofs too
                self._strict_until = now + settings.fallback_s
        latest = self._sample(topic, since if strict else None)
        for partition, cover, baseline in idle:
            if latest is None or (
                latest.value != baseline.value
                and (now - cover >= settings.poll_s or (since is not None and cover < since))
            ):
                due.add(partition)
        return due

    def still(
        self, topic: str, partitions: Collection[int], since: float | None
    ) -> dict[int, End] | None:
        """The partitions' ends as last read, when none of them is due (``due``): with
        since, an answer from them holds every commit acknowledged before since (read your
        writes, above); without, it is the newest sample's word, a hint. None when any is due
        (read the heads)."""
        if self.due(topic, partitions, since):
            return None
        with self._lock:
            states = [self._partitions.get((topic, p)) for p in partitions]
            if any(state is None for state in states):
                return None  # forgotten meanwhile
            return {p: state.end for p, state in zip(partitions, states, strict=True) if state}

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

    def refresh(self, topics: Collection[str], since: float | None = None) -> None:
        """Read, in one request, the counters of these topics that ``due`` (with since)
        would read one by one now, so a waiter on many topics sends one request a poll, not
        one a topic. A failed read is logged: ``due`` reads them one by one."""
        with self._lock:
            stale = [t for t in topics if self._fresh(t, since) is None]
            consistent = since is not None or self.now() < self._strict_until
        if len(stale) < 2:
            return  # due() reads one as cheaply
        sent = self.now()
        try:
            values = self.store.read_many(stale, consistent=consistent)
        except ObjectLogError as e:
            logger.warning("reading the activity of topics %s failed: %s", stale, e)
            return
        returned = self.now()
        for topic, value in values.items():
            self._add(topic, _Sample(returned, value, sent, consistent))

    def _fresh(self, topic: str, since: float | None) -> _Sample | None:
        """The topic's newest sample if no read is needed now (called holding the lock): one
        read less than poll_s ago (proving_poll_s while answers are proven), or, with since,
        one read strongly consistently after since."""
        samples = self._samples.get(topic)
        newest = samples[-1] if samples else None
        if newest is None:
            return None
        if since is not None:
            return newest if newest.consistent and newest.sent >= since else None
        proving = self.now() < self._strict_until
        every = self.settings.proving_poll_s if proving else self.settings.poll_s
        return newest if self.now() - newest.at < every else None

    def _sample(self, topic: str, since: float | None = None) -> _Sample | None:
        """The topic's newest counter value, read now unless ``_fresh``; None if the read
        failed (the caller reads heads instead)."""
        with self._lock:
            fresh = self._fresh(topic, since)
            if fresh is not None:
                return fresh
            consistent = since is not None or self.now() < self._strict_until
        sent = self.now()
        try:
            value = self.store.read(topic, consistent=consistent)
        except ObjectLogError as e:
            logger.warning("reading the activity of topic %s failed: %s", topic, e)
            return None
        return self._add(topic, _Sample(self.now(), value, sent, consistent))

    def _add(self, topic: str, read: _Sample) -> _Sample:
        """Keep a counter read; the topic's newest sample after it."""
        settings = self.settings
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
