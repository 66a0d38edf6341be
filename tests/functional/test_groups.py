"""Consumer groups against moto server: membership, leases, fencing, offsets, admin."""

from __future__ import annotations

from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.clock import ManualClock
from objectlog.errors import (
    CommitFailed,
    GroupNotEmpty,
    GroupNotFound,
    InvalidRequest,
    TopicNotFound,
    UnknownMemberId,
    UnknownPartition,
)
from objectlog.groups import GroupCoordinator, Membership, OffsetAndMetadata, TopicPartition

TOPIC = "orders"
SESSION_MS = 10_000


@pytest.fixture
def groups(clocked_log: ObjectLog) -> GroupCoordinator:
    clocked_log.create_topic(TOPIC, partitions=6)
    return clocked_log.groups


def produce(log: ObjectLog, topic: str, per_partition: int, partitions: int) -> None:
    with log.producer() as producer:
        for p in range(partitions):
            for i in range(per_partition):
                producer.send(topic, value=f"{p}-{i}".encode(), partition=p)


def tps(*numbers: int) -> set[TopicPartition]:
    return {TopicPartition(TOPIC, n) for n in numbers}


def settle(groups: GroupCoordinator, views: list[Membership]) -> list[Membership]:
    """Heartbeat every member as the Consumer does, releasing what moved away, until stable."""
    owned = {v.member_id: set(v.owned) for v in views}
    for _ in range(5):
        for i, v in enumerate(views):
            view = groups.heartbeat("g", v.member_id, owned=owned[v.member_id])
            revoked = owned[v.member_id] - set(view.assigned)
            if revoked:
                view = groups.heartbeat(
                    "g",
                    v.member_id,
                    owned=owned[v.member_id] - revoked,
                    release={tp: None for tp in revoked},
                )
            owned[v.member_id] = set(view.owned)
            views[i] = view
        if all(set(v.owned) == set(v.assigned) for v in views):
            return views
    raise AssertionError(f"the group did not settle: {views}")


def test_three_members_share_six_partitions_evenly(groups: GroupCoordinator) -> None:
    members = [groups.join("g", [TOPIC], strategies=["range"]) for _ in range(3)]
    views = settle(groups, members)
    assert {v.generation for v in views} == {3}
    owned = [set(v.owned) for v in views]
    assert [len(o) for o in owned] == [2, 2, 2]
    assert set().union(*owned) == tps(*range(6))
    assert all(set(v.owned) == set(v.assigned) for v in views)


@pytest.mark.emulators
def test_a_partition_moves_only_after_its_owner_releases_it(groups: GroupCoordinator) -> None:
    first = groups.join("g", [TOPIC], strategies=["sticky"])
    assert set(first.owned) == set(first.claimed) == tps(*range(6))
    second = groups.join("g", [TOPIC], strategies=["sticky"])
    assert len(second.assigned) == 3
    assert second.owned == second.claimed == ()  # the first member still holds them
    with pytest.raises(CommitFailed, match="now owned by"):
        groups.commit("g", {second.assigned[0]: 0}, member_id=second.member_id, generation=2)

    view = groups.heartbeat("g", first.member_id, owned=first.owned)
    assert view.claimed == ()  # held since the join, not claimed again
    moving = set(first.owned) - set(view.assigned)
    assert moving == set(second.assigned)
    groups.commit("g", {tp: 0 for tp in moving}, member_id=first.member_id, generation=1)
    groups.heartbeat("g", first.member_id, owned=view.assigned, release={tp: None for tp in moving})
    second = groups.heartbeat("g", second.member_id)
    assert set(second.owned) == set(second.claimed) == moving
    with pytest.raises(CommitFailed):  # the first member no longer owns them
        groups.commit("g", {tp: 0 for tp in moving}, member_id=first.member_id, generation=2)


def test_a_member_removed_while_it_claimed_from_a_stale_view_is_told_to_rejoin(
    groups: GroupCoordinator, clock: ManualClock
) -> None:
    """A heartbeat paused between reading the group and claiming: meanwhile the member's
    session lapsed and a newcomer took its partitions. The stale view lets it claim them back;
    the heartbeat then finds it is no longer a member, and the newcomer claims them again."""
    first = groups.join("g", [TOPIC], session_timeout_ms=SESSION_MS)
    real_read = groups.store.read
    newcomer: list[Membership] = []

    def paused(group: str, members: Any, partitions: Any) -> Any:
        groups.store.read = real_read  # type: ignore[method-assign]
        if partitions:
            clock.advance(SESSION_MS + 1)
            newcomer.append(groups.join("g", [TOPIC], session_timeout_ms=SESSION_MS))
        else:
            groups.store.read = paused  # type: ignore[method-assign]
        return real_read(group, members, partitions)

    groups.store.read = paused  # type: ignore[method-assign]
    with pytest.raises(UnknownMemberId, match="removed from group g meanwhile"):
        groups.heartbeat("g", first.member_id, owned=first.owned)
    assert set(newcomer[0].owned) == tps(*range(6))
    with pytest.raises(CommitFailed):  # it claimed them back, but it is not a member
        groups.commit("g", {tps(0).pop(): 0}, member_id=first.member_id, generation=1)
    again = groups.heartbeat("g", newcomer[0].member_id, owned=newcomer[0].owned)
    assert set(again.owned) == set(again.claimed) == tps(*range(6))


def test_a_member_that_leaves_hands_its_partitions_over(groups: GroupCoordinator) -> None:
    a, b, c = settle(groups, [groups.join("g", [TOPIC], strategies=["sticky"]) for _ in range(3)])
    leaving = c
    groups.leave("g", c.member_id, release={tp: OffsetAndMetadata(0) for tp in leaving.owned})
    after = settle(groups, [a, b])
    assert set(after[0].owned) | set(after[1].owned) == tps(*range(6))
    assert [len(v.owned) for v in after] == [3, 3]
    assert set(leaving.owned) <= set(after[0].owned) | set(after[1].owned)
    with pytest.raises(UnknownMemberId):
        groups.heartbeat("g", c.member_id)


@pytest.mark.emulators
def test_a_silent_member_is_expired_and_its_commits_are_fenced(
    groups: GroupCoordinator, clock: ManualClock, clocked_log: ObjectLog
) -> None:
    produce(clocked_log, TOPIC, per_partition=3, partitions=6)
    joined = [groups.join("g", [TOPIC], session_timeout_ms=SESSION_MS) for _ in range(2)]
    live, zombie = settle(groups, joined)
    assert len(zombie.owned) == 3

    clock.advance(SESSION_MS // 2)
    live = groups.heartbeat("g", live.member_id, owned=live.owned)
    clock.advance(SESSION_MS // 2 + 1)  # the zombie's lease has lapsed, the live one's not
    live = groups.heartbeat("g", live.member_id, owned=live.owned)
    assert live.members == (live.member_id,)
    assert set(live.owned) == tps(*range(6))

    with pytest.raises(CommitFailed, match="rejoin"):
        groups.commit(
            "g", {zombie.owned[0]: 1}, member_id=zombie.member_id, generation=zombie.generation
        )
    with pytest.raises(UnknownMemberId):
        groups.heartbeat("g", zombie.member_id, owned=zombie.owned)
    assert groups.committed("g", [zombie.owned[0]])[zombie.owned[0]] is None


def test_commits_are_checked_against_the_topic_not_the_high_watermark(
    groups: GroupCoordinator, clocked_log: ObjectLog
) -> None:
    produce(clocked_log, TOPIC, per_partition=5, partitions=1)
    member = groups.join("g", [TOPIC])
    tp = TopicPartition(TOPIC, 0)
    groups.commit("g", {tp: OffsetAndMetadata(5, "done")}, member_id=member.member_id, generation=1)
    assert groups.committed("g", [tp]) == {tp: OffsetAndMetadata(5, "done")}
    # past the high watermark too, as Kafka's coordinator keeps any offset
    groups.commit("g", {tp: 9}, member_id=member.member_id, generation=member.generation)
    assert groups.committed("g", [tp]) == {tp: OffsetAndMetadata(9, "")}
    assert groups.describe("g").offsets[0].lag == 0
    with pytest.raises(UnknownPartition):
        groups.commit("g", {TopicPartition(TOPIC, 99): 0}, member_id=member.member_id)
    assert groups.committed("g", [tp]) == {tp: OffsetAndMetadata(9, "")}  # nothing stored
    for bad in (-1, "3", 2.5):
        with pytest.raises(InvalidRequest):
            groups.commit("g", {tp: bad}, member_id=member.member_id, generation=1)  # type: ignore[dict-item]
    with pytest.raises(TopicNotFound):
        groups.commit("g", {TopicPartition("nope", 0): 0}, member_id=member.member_id)


def test_describe_shows_members_offsets_and_lag(
    groups: GroupCoordinator, clocked_log: ObjectLog
) -> None:
    produce(clocked_log, TOPIC, per_partition=4, partitions=6)
    member = groups.join("g", [TOPIC], client_id="billing")
    groups.commit(
        "g",
        {TopicPartition(TOPIC, 0): 1, TopicPartition(TOPIC, 1): 4},
        member_id=member.member_id,
        generation=member.generation,
    )
    description = groups.describe("g")
    assert description.state == "Stable"
    assert [m.client_id for m in description.members] == ["billing"]
    lags = {(p.partition): p.lag for p in description.offsets}
    assert lags == {0: 3, 1: 0, 2: None, 3: None, 4: None, 5: None}
    assert description.total_lag == 3
    assert all(p.high_watermark == 4 for p in description.offsets)
    assert groups.list_groups() == ["g"]
    with pytest.raises(GroupNotFound):
        groups.describe("other")


def test_two_groups_read_independently(groups: GroupCoordinator) -> None:
    one = groups.join("one", [TOPIC])
    two = groups.join("two", [TOPIC])
    assert set(one.owned) == set(two.owned) == tps(*range(6))
    groups.commit("one", {TopicPartition(TOPIC, 0): 0}, member_id=one.member_id, generation=1)
    assert groups.committed("two", [TopicPartition(TOPIC, 0)])[TopicPartition(TOPIC, 0)] is None


def test_reset_offsets_needs_an_empty_group(
    groups: GroupCoordinator, clocked_log: ObjectLog, clock: ManualClock
) -> None:
    produce(clocked_log, TOPIC, per_partition=3, partitions=6)
    member = groups.join("g", [TOPIC], session_timeout_ms=SESSION_MS)
    with pytest.raises(GroupNotEmpty):
        groups.reset_offsets("g", [TOPIC], to="earliest")
    groups.leave("g", member.member_id)

    assert groups.reset_offsets("g", [TOPIC], to="latest", dry_run=True) == {
        tp: 3 for tp in tps(*range(6))
    }
    assert all(v is None for v in groups.committed("g", tps(*range(6))).values())
    groups.reset_offsets("g", [TOPIC], to="latest")
    assert {tp: v.offset for tp, v in groups.committed("g", tps(0, 1)).items() if v} == {
        TopicPartition(TOPIC, 0): 3,
        TopicPartition(TOPIC, 1): 3,
    }
    groups.reset_offsets("g", [TOPIC], to="current", shift_by=-2)
    assert groups.committed("g", tps(0))[TopicPartition(TOPIC, 0)] == OffsetAndMetadata(1)
    groups.reset_offsets("g", [TOPIC], to="offset", offsets={TopicPartition(TOPIC, 2): 99})
    assert groups.committed("g", tps(2))[TopicPartition(TOPIC, 2)] == OffsetAndMetadata(3)
    with pytest.raises(InvalidRequest, match="to must be"):
        groups.reset_offsets("g", [TOPIC], to="sideways")

    # A member whose lease lapsed does not keep the group busy.
    groups.join("g", [TOPIC], session_timeout_ms=SESSION_MS)
    clock.advance(SESSION_MS + 1)
    groups.reset_offsets("g", [TOPIC], to="earliest")
    assert groups.committed("g", tps(0))[TopicPartition(TOPIC, 0)] == OffsetAndMetadata(0)


def test_reset_to_a_timestamp(groups: GroupCoordinator, clocked_log: ObjectLog) -> None:
    with clocked_log.producer() as producer:
        for i in range(4):
            producer.send(TOPIC, value=b"x", partition=0, timestamp_ms=1_000 * (i + 1))
    targets = groups.reset_offsets("g", [TOPIC], to="timestamp", timestamp_ms=2_500)
    assert targets[TopicPartition(TOPIC, 0)] == 2
    assert targets[TopicPartition(TOPIC, 1)] == 0  # empty partition: its end


def test_delete_group(groups: GroupCoordinator) -> None:
    member = groups.join("g", [TOPIC])
    groups.commit("g", {TopicPartition(TOPIC, 0): 0}, member_id=member.member_id, generation=1)
    with pytest.raises(GroupNotEmpty):
        groups.delete_group("g")
    groups.leave("g", member.member_id)
    groups.delete_group("g")
    assert groups.list_groups() == []
    with pytest.raises(GroupNotFound):
        groups.describe("g")
    assert groups.committed("g", tps(0))[TopicPartition(TOPIC, 0)] is None


def test_new_partitions_are_assigned(groups: GroupCoordinator, clocked_log: ObjectLog) -> None:
    member = groups.join("g", [TOPIC])
    clocked_log.add_partitions(TOPIC, 8)
    view = groups.heartbeat("g", member.member_id, owned=member.owned)
    assert set(view.owned) == tps(*range(8))
    assert view.generation == 2


def test_bad_joins_are_rejected(groups: GroupCoordinator) -> None:
    with pytest.raises(TopicNotFound):
        groups.join("g", ["missing"])
    with pytest.raises(InvalidRequest, match="group id"):
        groups.join("bad\ngroup", [TOPIC])
    with pytest.raises(InvalidRequest, match="group id"):
        groups.join("g" * 250, [TOPIC])
    with pytest.raises(InvalidRequest, match="session_timeout_ms"):
        groups.join("g", [TOPIC], session_timeout_ms=5)
    with pytest.raises(InvalidRequest, match="strategies"):
        groups.join("g", [TOPIC], strategies=["fastest"])
    groups.join("g", [TOPIC], strategies=["range"])
    from objectlog.errors import InconsistentGroupProtocol

    with pytest.raises(InconsistentGroupProtocol):
        groups.join("g", [TOPIC], strategies=["roundrobin"])
    assert groups.list_groups() == ["g"]


def test_repeated_topics_and_partitions_are_read_once(groups: GroupCoordinator) -> None:
    """BatchGetItem refuses duplicate keys: found by the API fuzzer (a 503 before the fix)."""
    assert groups.reset_offsets("g", [TOPIC, TOPIC], to="earliest", dry_run=True) == {
        tp: 0 for tp in tps(*range(6))
    }
    zero = TopicPartition(TOPIC, 0)
    assert groups.committed("g", [zero, zero]) == {zero: None}
