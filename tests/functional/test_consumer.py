"""The Kafka-shaped consumer against moto server: groups, rebalances, crashes, positions."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.clients.consumer import Consumer, NoOffsetForPartition
from objectlog.clock import ManualClock
from objectlog.errors import InvalidRequest, UnknownOutcome
from objectlog.format.records import Record
from objectlog.groups import Membership, TopicPartition

TOPIC = "events"
SESSION_MS = 10_000


@pytest.fixture(autouse=True)
def topic(clocked_log: ObjectLog) -> None:
    clocked_log.create_topic(TOPIC, partitions=6)


def produce(log: ObjectLog, per_partition: int, start: int = 0, partitions: int = 6) -> None:
    with log.producer() as producer:
        for p in range(partitions):
            for i in range(start, start + per_partition):
                producer.send(TOPIC, value=f"{p}:{i}".encode(), partition=p)


def drain(consumer: Consumer, expected: int, timeout_s: float = 20.0) -> list[Record]:
    records: list[Record] = []
    deadline = time.monotonic() + timeout_s
    while len(records) < expected and time.monotonic() < deadline:
        records.extend(consumer.poll(timeout=0.2))
    return records


def keys(records: list[Record]) -> list[tuple[int, int]]:
    return sorted((r.partition, r.offset) for r in records)


@pytest.mark.emulators
def test_a_group_consumer_reads_everything_once_and_resumes_from_commits(
    clocked_log: ObjectLog,
) -> None:
    produce(clocked_log, per_partition=10)
    with clocked_log.consumer(
        group="billing", topics=[TOPIC], auto_offset_reset="earliest", enable_auto_commit=False
    ) as consumer:
        records = drain(consumer, 60)
        assert keys(records) == [(p, o) for p in range(6) for o in range(10)]
        assert all(r.value == f"{r.partition}:{r.offset}".encode() for r in records)
        consumer.commit()
        assert consumer.position(TopicPartition(TOPIC, 0)) == 10
        committed = consumer.committed([TopicPartition(TOPIC, 3)])
        assert committed[TopicPartition(TOPIC, 3)] == (10, "")
    produce(clocked_log, per_partition=2, start=10)
    with clocked_log.consumer(group="billing", topics=[TOPIC]) as again:
        assert keys(drain(again, 12)) == [(p, o) for p in range(6) for o in (10, 11)]


def test_poll_waits_for_data_instead_of_returning_at_once(clocked_log: ObjectLog) -> None:
    with clocked_log.consumer(group="g", topics=[TOPIC], auto_offset_reset="earliest") as c:
        started = time.monotonic()
        assert c.poll(timeout=0.5) == []
        assert time.monotonic() - started >= 0.45

        timer = threading.Timer(0.3, produce, args=(clocked_log, 1), kwargs={"partitions": 1})
        timer.start()
        started = time.monotonic()
        records = c.poll(timeout=10)
        waited = time.monotonic() - started
        timer.join()
        assert [r.value for r in records] == [b"0:0"]
        assert 0.25 <= waited < 5


def test_revoked_partitions_are_committed_before_they_move(clocked_log: ObjectLog) -> None:
    produce(clocked_log, per_partition=10)
    options = {"group": "g", "topics": [TOPIC], "auto_offset_reset": "earliest"}
    options["heartbeat_interval_ms"] = 100
    first = clocked_log.consumer(strategies=["sticky"], **options)
    first_records = drain(first, 60)
    assert len(first_records) == 60
    revoked: list[set[TopicPartition]] = []
    second = clocked_log.consumer(strategies=["sticky"], on_assign=revoked.append, **options)
    second.poll(timeout=0)  # joins; its partitions are still held by the first
    assert second.assignment() == set()
    time.sleep(0.1)
    first.poll(timeout=0)  # heartbeat: learns of the move, commits and releases three
    assert len(first.assignment()) == 3
    assert second.poll(timeout=0.5) == []  # claims them, at the first's final commit
    assert len(second.assignment()) == 3 and revoked == [second.assignment()]

    produce(clocked_log, per_partition=5, start=10)
    late = drain(first, 15, timeout_s=5) + drain(second, 15, timeout_s=5)
    assert keys(late) == [(p, o) for p in range(6) for o in range(10, 15)]  # once, none lost
    first.close()
    second.close()


def test_members_share_partitions_and_take_over_after_close(clocked_log: ObjectLog) -> None:
    produce(clocked_log, per_partition=5)
    options = {"group": "g", "topics": [TOPIC], "auto_offset_reset": "earliest"}
    consumers = [clocked_log.consumer(heartbeat_interval_ms=50, **options) for _ in range(3)]
    read: list[Record] = []
    for _ in range(40):
        for c in consumers:
            read.extend(c.poll(timeout=0.02))
        if all(len(c.assignment()) == 2 for c in consumers):
            break
    assert sorted(len(c.assignment()) for c in consumers) == [2, 2, 2]
    consumers[2].close()
    for _ in range(40):
        for c in consumers[:2]:
            read.extend(c.poll(timeout=0.02))
        if len(read) == 30 and sorted(len(c.assignment()) for c in consumers[:2]) == [3, 3]:
            break
    assert sorted(len(c.assignment()) for c in consumers[:2]) == [3, 3]
    assert keys(read) == [(p, o) for p in range(6) for o in range(5)]  # auto-committed on moves
    for c in consumers[:2]:
        c.close()
    description = clocked_log.groups.describe("g")
    assert description.state == "Empty" and description.total_lag == 0


def test_assign_seek_pause_and_resume(clocked_log: ObjectLog) -> None:
    produce(clocked_log, per_partition=5, partitions=2)
    zero, one = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
    with clocked_log.consumer(auto_offset_reset="earliest") as consumer:
        consumer.assign([zero, one])
        consumer.seek(zero, 3)
        consumer.pause([one])
        assert consumer.paused() == {one}
        assert keys(drain(consumer, 2)) == [(0, 3), (0, 4)]
        consumer.resume([one])
        consumer.seek_to_end([zero])
        assert keys(drain(consumer, 5)) == [(1, o) for o in range(5)]
        assert consumer.position(zero) == 5
        consumer.seek_to_beginning()
        assert consumer.position(one) == 0
        with pytest.raises(InvalidRequest, match="not assigned"):
            consumer.seek(TopicPartition(TOPIC, 2), 0)
        with pytest.raises(InvalidRequest, match="commit needs a group"):
            consumer.commit()


def test_manual_assignment_commits_while_no_member_owns_the_partitions(
    clocked_log: ObjectLog,
) -> None:
    produce(clocked_log, per_partition=3, partitions=1)
    zero = TopicPartition(TOPIC, 0)
    with clocked_log.consumer(group="manual", enable_auto_commit=False) as consumer:
        consumer.assign([zero])
        consumer.seek(zero, 0)
        assert len(drain(consumer, 3)) == 3
        consumer.commit()
    assert clocked_log.groups.committed("manual", [zero])[zero] == (3, "")
    assert clocked_log.groups.list_groups() == ["manual"]


def test_no_offset_reset_raises(clocked_log: ObjectLog) -> None:
    consumer = clocked_log.consumer(group="g", topics=[TOPIC], auto_offset_reset="none")
    with consumer, pytest.raises(NoOffsetForPartition, match="no committed offset"):
        consumer.poll(timeout=0)


def test_a_consumer_killed_at_random_points_never_skips_a_record(
    clocked_log: ObjectLog, clock: ManualClock
) -> None:
    """Process, then commit; crash anywhere; the next incarnation must see every record."""
    produce(clocked_log, per_partition=40)
    processed: set[tuple[int, int]] = set()
    committed_seen: dict[int, int] = {}
    rng = random.Random(7)
    kills = 0
    done = {p: 40 for p in range(6)}
    while (len(processed) < 240 or committed_seen != done) and kills < 300:
        consumer = clocked_log.consumer(
            group="crashy",
            topics=[TOPIC],
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=SESSION_MS,
            max_poll_records=rng.randint(1, 30),
        )
        crash_at = rng.choice(["after_poll", "mid_processing", "before_commit", "after_commit"])
        for record in consumer.poll(timeout=0.2):
            if crash_at == "mid_processing" and rng.random() < 0.3:
                break
            processed.add((record.partition, record.offset))
        else:
            if crash_at != "before_commit":
                consumer.commit()
                for tp, value in clocked_log.groups.committed(
                    "crashy", consumer.assignment()
                ).items():
                    assert value is not None
                    assert value.offset >= committed_seen.get(tp.partition, 0)  # never backwards
                    committed_seen[tp.partition] = value.offset
        kills += 1  # abandoned without close(): its lease lapses, the next join expires it
        clock.advance(SESSION_MS + 1)
    assert sorted(processed) == [(p, o) for p in range(6) for o in range(40)]
    skipped = 240 - len(processed)
    assert skipped == 0
    assert committed_seen == done


def test_a_member_removed_while_giving_up_partitions_rejoins_instead_of_failing(
    clocked_log: ObjectLog, clock: ManualClock
) -> None:
    """Found by objectlog verify: the heartbeat that releases revoked partitions raised
    UnknownMemberId out of poll() when the member had been removed meanwhile."""
    produce(clocked_log, per_partition=3)
    options = {"group": "g", "topics": [TOPIC], "auto_offset_reset": "earliest"}
    first = clocked_log.consumer(heartbeat_interval_ms=50, session_timeout_ms=SESSION_MS, **options)
    first.poll(timeout=0)
    assert len(first.assignment()) == 6
    second = clocked_log.consumer(
        heartbeat_interval_ms=50, session_timeout_ms=SESSION_MS, **options
    )
    second.poll(timeout=0)  # the group rebalances: three partitions move from first
    coordinator = clocked_log.groups
    real_heartbeat = coordinator.heartbeat

    def removed_meanwhile(group: str, member_id: str, **kwargs):  # type: ignore[no-untyped-def]
        if kwargs.get("release") and member_id == first.member_id:
            clock.advance(SESSION_MS + 1)  # the first's session lapses before the release,
            real_heartbeat(group, second.member_id)  # and the second's heartbeat removes it
        return real_heartbeat(group, member_id, **kwargs)

    coordinator.heartbeat = removed_meanwhile  # type: ignore[method-assign]
    time.sleep(0.06)
    first.poll(timeout=0)  # must not raise: it drops its partitions and rejoins
    coordinator.heartbeat = real_heartbeat  # type: ignore[method-assign]
    for _ in range(60):  # the first rejoins, the group settles
        first.poll(timeout=0.02)
        second.poll(timeout=0.02)
        if len(first.assignment()) + len(second.assignment()) == 6:
            break
    assert len(first.assignment()) + len(second.assignment()) == 6
    produce(clocked_log, per_partition=2, start=3)
    late = drain(first, 12, timeout_s=3) + drain(second, 12, timeout_s=3)
    assert {(r.partition, r.offset) for r in late} >= {(p, o) for p in range(6) for o in (3, 4)}
    first.close()
    second.close()


def test_a_release_whose_answer_was_lost_does_not_keep_a_stale_position(
    clocked_log: ObjectLog,
) -> None:
    """Found by objectlog verify in CI: a member whose release of revoked partitions applied but
    whose answer was lost kept them with their positions; when they came back to it later, it
    resumed (and committed) from that old position, below what the next owner had committed."""
    produce(clocked_log, per_partition=4)
    options: dict[str, Any] = {"group": "g", "topics": [TOPIC], "auto_offset_reset": "earliest"}
    options.update(heartbeat_interval_ms=50, session_timeout_ms=SESSION_MS, max_poll_records=100)
    first = clocked_log.consumer(enable_auto_commit=False, **options)
    assert len(drain(first, 24)) == 24
    first.commit()
    coordinator = clocked_log.groups
    real_heartbeat = coordinator.heartbeat

    def answer_lost(group: str, member_id: str, **kwargs: Any) -> Membership:
        view = real_heartbeat(group, member_id, **kwargs)
        if kwargs.get("release"):
            raise UnknownOutcome("UpdateItem offset (release): sent, but the answer was lost")
        return view

    second = clocked_log.consumer(enable_auto_commit=False, **options)
    second.poll(timeout=0)  # joins: the group rebalances, three partitions move from first
    coordinator.heartbeat = answer_lost  # type: ignore[method-assign]
    time.sleep(0.06)
    with pytest.raises(UnknownOutcome):
        first.poll(timeout=0)  # releases them, then the answer is lost
    coordinator.heartbeat = real_heartbeat  # type: ignore[method-assign]
    produce(clocked_log, per_partition=3, start=4)
    moved = drain(second, 9)
    assert len(second.assignment()) == 3
    second.commit()
    ahead = {tp: second.position(tp) for tp in second.assignment()}
    assert all(offset == 7 for offset in ahead.values())
    second.close()  # its partitions go back to the first
    again: list[Record] = []
    for _ in range(60):
        again.extend(first.poll(timeout=0.02))
        if len(first.assignment()) == 6:
            break
    assert len(first.assignment()) == 6
    again.extend(first.poll(timeout=0.1))
    reread = [(r.partition, r.offset) for r in again if TopicPartition(TOPIC, r.partition) in ahead]
    assert reread == []  # it resumes from the second's commits, not from its old positions
    assert {tp: first.position(tp) for tp in ahead} == ahead
    assert {(r.partition, r.offset) for r in moved} == {
        (tp.partition, o) for tp in ahead for o in range(4, 7)
    }
    first.close()


def test_a_member_paused_after_reading_the_group_does_not_resume_from_its_old_positions(
    clocked_log: ObjectLog, clock: ManualClock
) -> None:
    """Found by objectlog verify (committed backwards, 54 after 159): a member paused in its
    heartbeat, after reading the group and before claiming. Its session lapsed meanwhile and
    a newcomer took its partitions over, read on and committed. Resumed, its stale view
    (itself a member, the newcomer not) let it claim them back, and it kept its old positions:
    its next commit moved the group's offsets back. Now the heartbeat finds it was removed,
    and the member rejoins from the committed offsets."""
    produce(clocked_log, per_partition=4)
    options: dict[str, Any] = {"group": "g", "topics": [TOPIC], "auto_offset_reset": "earliest"}
    options.update(heartbeat_interval_ms=50, session_timeout_ms=SESSION_MS, max_poll_records=100)
    first = clocked_log.consumer(enable_auto_commit=False, **{**options, "max_poll_records": 1})
    assert len(drain(first, 24)) == 24
    first.commit()
    store = clocked_log.groups.store
    real_read = store.read
    newcomer: list[Consumer] = []

    def paused_before_claiming(group: str, members: Any, partitions: Any) -> Any:
        partitions = list(partitions)
        if partitions and not newcomer and threading.current_thread() is main:
            clock.advance(SESSION_MS + 1)  # the first's session lapses while it is paused
            second = clocked_log.consumer(enable_auto_commit=False, **options)
            newcomer.append(second)
            produce(clocked_log, per_partition=3, start=4)
            assert len(drain(second, 18)) == 18  # it takes every partition over, reads on
            second.commit()
        return real_read(group, members, partitions)

    main = threading.current_thread()
    store.read = paused_before_claiming  # type: ignore[method-assign]
    time.sleep(0.06)
    try:  # it heartbeats: reads the group, pauses, claims, finds itself removed, rejoins
        reread = first.poll(timeout=0)
    finally:
        store.read = real_read  # type: ignore[method-assign]
    assert reread == []  # not from 4 again
    first.commit()
    partitions = [TopicPartition(TOPIC, p) for p in range(6)]
    assert {v.offset for v in clocked_log.groups.committed("g", partitions).values() if v} == {7}
    newcomer[0].close()  # the rejoined first takes everything over, from the commits
    for _ in range(60):
        assert first.poll(timeout=0.02) == []
        if len(first.assignment()) == 6:
            break
    assert {first.position(tp) for tp in first.assignment()} == {7}
    first.close()


def test_a_partition_taken_and_given_back_meanwhile_is_read_from_its_commits_again(
    clocked_log: ObjectLog,
) -> None:
    """A member with a stale view of the group may claim a live member's partition, read on,
    commit and give it back (it is not assigned to it). The member it came back to claims it
    again: its heartbeat names the claim, and the consumer forgets the position it kept."""
    produce(clocked_log, per_partition=4)
    options: dict[str, Any] = {"group": "g", "topics": [TOPIC], "auto_offset_reset": "earliest"}
    options.update(heartbeat_interval_ms=50, session_timeout_ms=SESSION_MS, max_poll_records=1)
    lost: set[TopicPartition] = set()
    first = clocked_log.consumer(enable_auto_commit=False, on_lost=lost.update, **options)
    assert len(drain(first, 24)) == 24
    first.commit()
    produce(clocked_log, per_partition=3, start=4)
    store, tp = clocked_log.groups.store, TopicPartition(TOPIC, 0)
    assert store.claim("g", tp, "stale-view", first.generation, seen_owner=first.member_id)
    assert store.commit("g", tp, 7, "", 1, member_id="stale-view", generation=1) is None
    assert store.release("g", tp, "stale-view", None)
    time.sleep(0.06)
    records = first.poll(timeout=0)  # claims it again
    assert lost == {tp}
    assert [r for r in records if r.partition == 0] == []  # not offsets 4 to 6 again
    assert first.position(tp) == 7
    first.commit()
    assert clocked_log.groups.committed("g", [tp])[tp] == (7, "")
    first.close()


def test_max_bytes_bounds_a_poll_to_at_least_one_record(clocked_log: ObjectLog) -> None:
    produce(clocked_log, per_partition=5, partitions=1)  # values "0:0".."0:4", 3 bytes each
    consumer = clocked_log.consumer(auto_offset_reset="earliest")
    consumer.assign([(TOPIC, 0)])
    assert [r.offset for r in consumer.poll(timeout=0, max_bytes=7)] == [0, 1]
    assert [r.offset for r in consumer.poll(timeout=0, max_bytes=1)] == [2]  # over, but one
    assert [r.offset for r in consumer.poll(timeout=0)] == [3, 4]


def test_a_consumer_continues_from_a_state_kept_outside_the_process(
    clocked_log: ObjectLog,
) -> None:
    """REST Proxy's instances keep a Consumer's state in a document between requests: a new
    Consumer restored from it keeps the membership, the partitions and the positions."""
    from objectlog.clients.consumer_state import ConsumerState

    produce(clocked_log, per_partition=4)
    options: dict[str, Any] = dict(
        group="kept", auto_offset_reset="earliest", enable_auto_commit=False
    )
    first = clocked_log.consumer(topics=[TOPIC], **options)
    first_records: list[Record] = []
    while not first_records:
        first_records = first.poll(timeout=1, max_records=10)
    assert len(first_records) == 10
    kept = ConsumerState.from_json(first.state().to_json())
    assert kept == first.state()

    second = clocked_log.consumer(**options)
    second.restore(kept)
    assert second.member_id == first.member_id and second.assignment() == first.assignment()
    rest = drain(second, 14)
    assert keys(first_records + rest) == [(p, o) for p in range(6) for o in range(4)]
    assert len(clocked_log.groups.describe("kept").members) == 1  # no second member joined
