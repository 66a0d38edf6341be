"""The two-mode wait of services.activity on a fake clock: writers commit and touch, a waiter
reads heads only when the activity says so, and every commit on a partition it waits on is
seen within the idle poll's bound, never by the fallback (set out of reach here).

The simulation: heads are counters per partition; a commit takes effect at its time and its
writer's ``committed`` runs COMMIT_S later (when its answer arrives); the waiter calls ``due``
every STEP_S and reads (strongly consistently, taking no time) the partitions due, as the
consumers' fetch-ahead does at its longest wait.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from objectlog.errors import StorageUnavailable
from objectlog.services.activity import ActivitySettings, TopicActivity
from objectlog.stores.activity import MemoryActivityStore

TOPIC = "t"
STEP_S = 0.1  # the waiter's pace when active (fetch_max_wait_ms's default)
TICK_S = 0.01
COMMIT_S = 0.01  # a commit's answer arrives this long after it took effect
SETTINGS = ActivitySettings(fallback_s=1e9)  # the proof must hold without the fallback


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class LaggingStore(MemoryActivityStore):
    """Eventually consistent reads: each answers the counter as it was up to ``lag_s`` ago
    (chosen at random per read, so two reads may go back and forth)."""

    def __init__(self, clock: Clock, lag_s: float, rng: random.Random) -> None:
        super().__init__()
        self.clock, self.lag_s, self.rng = clock, lag_s, rng
        self.history: list[tuple[float, int]] = [(-1.0, 0)]

    def touch(self, topic: str) -> None:
        super().touch(topic)
        self.history.append((self.clock.t, self.history[-1][1] + 1))

    def read(self, topic: str, *, consistent: bool = False) -> int:
        super().read(topic, consistent=consistent)
        seen = self.clock.t - (0.0 if consistent else self.rng.uniform(0, self.lag_s))
        return max(value for at, value in self.history if at <= seen)


class LastCommitRule:
    """The rule the brief proposed, for the counterexample: touch when this writer's previous
    commit to the topic was more than G ago (a busy writer touches once)."""

    def __init__(self, store: MemoryActivityStore, clock: Clock, every_s: float = 1.0) -> None:
        self.store, self.clock, self.every_s = store, clock, every_s
        self.last: float | None = None

    def committed(self, topics: list[str]) -> None:
        if self.last is None or self.clock.t - self.last > self.every_s:
            self.store.touch(TOPIC)
        self.last = self.clock.t


@dataclass
class Run:
    heads: dict[int, int] = field(default_factory=dict)
    commits: list[tuple[float, int, int]] = field(default_factory=list)  # (time, partition, end)
    seen: dict[tuple[int, int], float] = field(default_factory=dict)  # (partition, end) -> when
    reads: list[tuple[float, int]] = field(default_factory=list)  # head reads (time, partition)

    def delays(self, partitions: set[int]) -> list[float]:
        """For each commit on the waited partitions: how long until a read saw it (or a later
        end), inf if never."""
        out = []
        for at, partition, end in self.commits:
            if partition not in partitions:
                continue
            later = [t for (p, e), t in self.seen.items() if p == partition and e >= end]
            out.append(min(later) - at if later else float("inf"))
        return out


Writer = Callable[[list[str]], None]


def simulate(
    schedule: list[tuple[float, int, int]],
    waited: set[int],
    until: float,
    *,
    lag_s: float = 0.0,
    rule: str = "last touch",
    seed: int = 0,
) -> tuple[Run, TopicActivity]:
    """schedule: (time, writer, partition) commits. Returns what the waiter saw."""
    clock, rng, run = Clock(), random.Random(seed), Run()
    store = LaggingStore(clock, lag_s, rng)
    waiter = TopicActivity(store, SETTINGS, monotonic=clock)
    writers: dict[int, Writer] = {}
    for _, writer, _ in schedule:
        if rule == "last touch":
            writers.setdefault(writer, TopicActivity(store, SETTINGS, monotonic=clock).committed)
        else:
            writers.setdefault(writer, LastCommitRule(store, clock).committed)
    pending = sorted(schedule)
    answers: list[tuple[float, int]] = []  # (when the writer learns, writer)
    next_wait = 0.0
    while clock.t <= until:
        while pending and pending[0][0] <= clock.t:
            _, writer, partition = pending.pop(0)
            run.heads[partition] = run.heads.get(partition, 0) + 1
            run.commits.append((clock.t, partition, run.heads[partition]))
            answers.append((clock.t + COMMIT_S, writer))
        for answer in [a for a in answers if a[0] <= clock.t]:
            answers.remove(answer)
            writers[answer[1]]([TOPIC])
        if clock.t >= next_wait:
            due = waiter.due(TOPIC, sorted(waited))
            ends = {p: run.heads.get(p, 0) for p in due}
            waiter.saw(TOPIC, {p: (end, end, 0) for p, end in ends.items()}, clock.t)
            for p, end in ends.items():
                run.seen.setdefault((p, end), clock.t)
                run.reads.append((clock.t, p))
            next_wait = clock.t + STEP_S
        clock.t = round(clock.t + TICK_S, 6)
    return run, waiter


IDLE_BOUND_S = 2 * SETTINGS.poll_s + STEP_S + 2 * TICK_S + COMMIT_S


def reads_between(run: Run, start: float, end: float) -> int:
    return sum(1 for t, _ in run.reads if start <= t < end)


def test_a_producer_every_0_9_s_after_the_waiter_went_idle_misses_nothing() -> None:
    """The brief's case: the waiter goes idle on a still topic, then a producer commits every
    0.9 s (touching at its first commit and then whenever its last touch is over 1 s old)."""
    schedule = [(20.0 + 0.9 * i, 1, 0) for i in range(12)]
    run, waiter = simulate(schedule, {0}, until=60.0)
    delays = run.delays({0})
    assert max(delays) <= IDLE_BOUND_S, delays
    assert delays[0] > STEP_S  # the first was found by the activity: the waiter was idle
    # idle before and after: a read per fallback at most (none here), woken reads only
    assert reads_between(run, 10.0, 20.0) == 0
    assert reads_between(run, 40.0, 60.0) == 0
    assert waiter.reads <= 2 * 60 / SETTINGS.poll_s  # one shared read per poll at most


def test_a_waiter_on_one_partition_sees_a_busy_writer_s_first_record_there() -> None:
    """The counterexample to touching only after a writer's quiet second: the writer keeps
    partition 0 busy (a commit every 0.9 s), the waiter waits on partition 1 alone and goes
    idle, then the writer's next record goes to partition 1."""
    schedule = [(0.9 * i, 1, 0) for i in range(40)] + [(30.05, 1, 1)]
    run, _ = simulate(schedule, {1}, until=45.0)
    assert run.delays({1}) and max(run.delays({1})) <= IDLE_BOUND_S


def test_the_rule_the_brief_proposed_leaves_that_record_to_the_fallback() -> None:
    schedule = [(0.9 * i, 1, 0) for i in range(40)] + [(30.05, 1, 1)]
    run, _ = simulate(schedule, {1}, until=45.0, rule="last commit")
    assert run.delays({1}) == [float("inf")]  # never seen: only the fallback would find it


@pytest.mark.parametrize("seed", range(6))
def test_random_writers_partitions_and_stale_reads_miss_nothing(seed: int) -> None:
    rng = random.Random(seed)
    schedule, t = [], 0.0
    for _ in range(200):
        t += rng.choice([rng.uniform(0.02, 1.5), rng.uniform(1.5, 4.0), rng.uniform(6.0, 12.0)])
        schedule.append((round(t, 2), rng.randrange(3), rng.randrange(4)))
    waited = set(rng.sample(range(4), rng.randint(1, 3)))
    lag = 0.3
    run, _ = simulate(schedule, waited, until=t + 5.0, lag_s=lag, seed=seed)
    delays = run.delays(waited)
    assert delays and max(delays) <= IDLE_BOUND_S + lag, sorted(delays)[-5:]


def test_a_still_topic_costs_a_counter_read_per_poll_and_no_head_read() -> None:
    run, waiter = simulate([(0.5, 1, 0)], {0, 1, 2, 3}, until=120.0)
    assert reads_between(run, 10.0, 120.0) == 0
    assert waiter.reads == pytest.approx((120.0 - 3.5) / SETTINGS.poll_s, rel=0.1)


def test_the_fallback_reads_an_idle_partition_anyway() -> None:
    clock, store = Clock(), MemoryActivityStore()
    waiter = TopicActivity(store, ActivitySettings(fallback_s=30.0), monotonic=clock)
    reads = []
    while clock.t < 100.0:
        if waiter.due(TOPIC, [0]):
            waiter.saw(TOPIC, {0: (5, 5, 0)}, clock.t)
            reads.append(clock.t)
        clock.t = round(clock.t + STEP_S, 6)
    idle = [t for t in reads if t > 10.0]
    assert 2 <= len(idle) <= 3 and all(b - a >= 30.0 for a, b in itertools.pairwise(idle))


def test_a_failed_touch_is_not_remembered() -> None:
    class Failing(MemoryActivityStore):
        fail = True

        def touch(self, topic: str) -> None:
            if self.fail:
                raise StorageUnavailable("throttled")
            super().touch(topic)

    clock, store = Clock(), Failing()
    writer = TopicActivity(store, monotonic=clock)
    writer.committed([TOPIC])
    store.fail = False
    clock.t = 0.2
    writer.committed([TOPIC])  # within G of the failed one: touches all the same
    clock.t = 0.4
    writer.committed([TOPIC])  # within G of a good one: no touch
    assert store.read(TOPIC) == 1 and writer.touches == 1


# ---- read your writes (TopicActivity.still, the Kafka agent's answers from its view) ----------


def test_an_answer_from_the_view_holds_every_commit_acknowledged_before_the_request() -> None:
    """Random writers commit (each acknowledged COMMIT_S after it took effect) while requests
    arrive at random times; each request's proof (``still``, since its arrival) answers from
    the waiter's view only if the view holds every commit acknowledged before the request,
    though the waiters' own polls are eventually consistent and lag."""
    for seed in range(4):
        rng, clock = random.Random(seed), Clock()
        store = LaggingStore(clock, 0.8, rng)
        waiter = TopicActivity(store, SETTINGS, monotonic=clock)
        writers = [TopicActivity(store, SETTINGS, monotonic=clock) for _ in range(3)]
        heads: dict[int, int] = {}
        acked: list[tuple[float, int, int]] = []  # (acknowledged at, partition, end)
        pending: list[tuple[float, int, int, int]] = []  # (answer due, writer, partition, end)
        answered_from_view = 0
        commits_at, t = [], 0.0
        while t < 200.0:  # bursts and quiet spells
            t += rng.choice([rng.uniform(0.02, 1.5), rng.uniform(6.0, 15.0)])
            commits_at.append(t)
        while clock.t <= 210.0:
            while commits_at and commits_at[0] <= clock.t:
                commits_at.pop(0)
                partition = rng.randrange(4)
                heads[partition] = heads.get(partition, 0) + 1
                pending.append((clock.t + COMMIT_S, rng.randrange(3), partition, heads[partition]))
            for item in [p for p in pending if p[0] <= clock.t]:
                pending.remove(item)
                writers[item[1]].committed([TOPIC])  # before the acknowledgement
                acked.append((clock.t, item[2], item[3]))
            due = waiter.due(TOPIC, range(4))  # the watcher, at its pace
            waiter.saw(TOPIC, {p: (heads.get(p, 0), 0, 0) for p in due}, clock.t)
            if rng.random() < 0.3:  # a request arrives now and is answered a moment later
                since = clock.t
                clock.t = round(clock.t + rng.choice([0.0, 0.2, 0.5]), 6)
                view = waiter.still(TOPIC, range(4), since)
                if view is not None:
                    answered_from_view += 1
                    for at, partition, end in acked:
                        if at <= since:
                            assert view[partition][0] >= end, (seed, since, partition)
            clock.t = round(clock.t + STEP_S, 6)
        assert answered_from_view > 50, answered_from_view  # the quiet spells' requests


def test_a_request_s_proof_reads_the_counter_once_strongly_after_it_arrived() -> None:
    clock, store = Clock(), LaggingStore(Clock(), 0.0, random.Random(0))
    store.clock = clock
    waiter = TopicActivity(store, SETTINGS, monotonic=clock)
    while clock.t < 10.0:  # still: idle, with eventually consistent polls
        waiter.saw(TOPIC, {p: (3, 3, 0) for p in waiter.due(TOPIC, [0, 1])}, clock.t)
        clock.t = round(clock.t + STEP_S, 6)
    assert store.requests["GetItem consistent"] == 0
    since = clock.t
    assert waiter.still(TOPIC, [0, 1], since) == {0: (3, 3, 0), 1: (3, 3, 0)}
    assert store.requests["GetItem consistent"] == 1  # the poll before it was sent earlier
    assert waiter.still(TOPIC, [0, 1], since) is not None
    assert store.requests["GetItem consistent"] == 1  # one read serves every later proof
    clock.t += 0.3  # the waiters' polls are strong now, and serve the next request
    waiter.due(TOPIC, [0, 1])
    clock.t += 0.3
    waiter.due(TOPIC, [0, 1])
    assert waiter.still(TOPIC, [0, 1], clock.t - 0.5) is not None
    assert store.requests["GetItem consistent"] == 2


def test_a_commit_of_this_process_makes_its_topic_s_still_partitions_due_at_once() -> None:
    """Its touch may be skipped (its last one was under G ago): the waiters of the same
    process read the heads all the same, so a request after its acknowledgement sees it."""
    clock, store = Clock(), MemoryActivityStore()
    log = TopicActivity(store, SETTINGS, monotonic=clock)
    log.committed([TOPIC])  # touches
    while clock.t < 10.0:
        log.saw(TOPIC, {p: (1, 1, 0) for p in log.due(TOPIC, [0, 1])}, clock.t)
        clock.t = round(clock.t + STEP_S, 6)
    assert log.still(TOPIC, [0, 1], clock.t) is not None
    log.committed([TOPIC])  # ten seconds on: touches again
    clock.t += 0.3
    log.saw(TOPIC, {p: (2, 2, 0) for p in log.due(TOPIC, [0, 1])}, clock.t)
    touches = store.requests["UpdateItem"]
    log.committed([TOPIC])  # within G of the last touch: no touch
    assert store.requests["UpdateItem"] == touches
    assert log.due(TOPIC, [0, 1]) == {0, 1}
    assert log.still(TOPIC, [0, 1], clock.t) is None


def test_a_waiter_on_many_topics_reads_their_counters_in_one_request_a_poll() -> None:
    clock, store = Clock(), MemoryActivityStore()
    waiter = TopicActivity(store, SETTINGS, monotonic=clock)
    topics = ["a", "b", "c"]
    while clock.t < 20.0:
        waiter.refresh(topics)
        for topic in topics:
            waiter.saw(topic, {p: (1, 1, 0) for p in waiter.due(topic, [0, 1])}, clock.t)
        clock.t = round(clock.t + STEP_S, 6)
    requests = store.requests["BatchGetItem"] + store.requests["GetItem"]
    assert requests <= 20.0 / SETTINGS.poll_s + 1  # one a poll, not one a topic (3 a poll)
    assert waiter.reads >= 3 * (20.0 - 3.5) / SETTINGS.poll_s  # every topic's counter
