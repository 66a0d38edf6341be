"""Unchanged commits through one session (a Kafka connection) cost no write, and a stale
memory of them only ever costs one (groups.unchanged, issue 38): other sessions, other members,
other processes, lapsed leases, transactions; commits without a session always write."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.clock import ManualClock
from objectlog.config import Config
from objectlog.errors import CommitFailed
from objectlog.groups import GroupCoordinator, TopicPartition
from objectlog.groups.unchanged import REWRITE_AFTER_MS, Committed, UnchangedCommits

TOPIC = "quiet"
SESSION_MS = 10_000
P0 = TopicPartition(TOPIC, 0)


def count_offset_writes(log: ObjectLog) -> list[str]:
    """The offset items of the DynamoDB writes that store an offset (a commit, a release with
    its final offset, a transaction settled), as botocore sends them."""
    written: list[str] = []

    def count(params: dict[str, Any], **_: Any) -> None:
        sort_key = params.get("Key", {}).get("sk", {}).get("S", "")
        if sort_key.startswith("offset#") and "off = :off" in params.get("UpdateExpression", ""):
            written.append(sort_key)

    log.metadata.client.meta.events.register("before-parameter-build.dynamodb.UpdateItem", count)
    return written


@pytest.fixture
def groups(clocked_log: ObjectLog) -> GroupCoordinator:
    clocked_log.create_topic(TOPIC, partitions=1)
    return clocked_log.groups


@pytest.fixture
def other_process(log_config: Config, clock: ManualClock) -> Iterator[ObjectLog]:
    """A second ObjectLog on the same table: another process's coordinator and memory."""
    with ObjectLog(log_config, clock=clock) as objectlog:
        yield objectlog


def test_a_members_repeated_commit_writes_once_until_it_changes_or_its_lease_ends(
    clocked_log: ObjectLog, groups: GroupCoordinator, clock: ManualClock
) -> None:
    writes = count_offset_writes(clocked_log)
    member = groups.join("g", [TOPIC], session_timeout_ms=SESSION_MS)
    as_member = {"member_id": member.member_id, "generation": member.generation, "session": "c1"}
    for _ in range(5):
        groups.commit("g", {P0: 3}, **as_member)
    assert len(writes) == 1
    groups.commit("g", {P0: (3, "meta")}, **as_member)
    groups.commit("g", {P0: 4}, **as_member)
    assert len(writes) == 3 and groups.committed("g", [P0])[P0] == (4, "")
    groups.commit("g", {P0: 4}, **as_member)
    assert len(writes) == 3
    groups.commit("g", {P0: 4}, **{**as_member, "session": "c2"})  # another connection
    assert len(writes) == 4
    groups.commit("g", {P0: 4}, member_id=member.member_id, generation=member.generation)
    assert len(writes) == 5  # no session: the library and HTTP doors always write

    groups.commit("g", {P0: 4}, **as_member)
    clock.advance(SESSION_MS)  # its lease, as this process renewed it, ran out
    groups.commit("g", {P0: 4}, **as_member)
    assert len(writes) == 7


def test_a_member_whose_partition_moved_is_fenced_not_answered_from_memory(
    clocked_log: ObjectLog, groups: GroupCoordinator, clock: ManualClock
) -> None:
    first = groups.join("g", [TOPIC], session_timeout_ms=SESSION_MS)
    as_first = {"member_id": first.member_id, "generation": first.generation, "session": "c1"}
    groups.commit("g", {P0: 5}, **as_first)
    groups.leave("g", first.member_id)
    second = groups.join("g", [TOPIC], session_timeout_ms=SESSION_MS)
    assert second.owned == (P0,)
    with pytest.raises(CommitFailed):
        groups.commit("g", {P0: 5}, **as_first)


def test_another_process_commit_is_never_skipped_over(
    clocked_log: ObjectLog, groups: GroupCoordinator, other_process: ObjectLog
) -> None:
    """The same member commits 5 here, 9 through another process (a Kafka client that
    reconnected to another agent: another session), then 5 here again on a new connection:
    written, whether or not a heartbeat read the item in between."""
    writes = count_offset_writes(clocked_log)
    member = groups.join("g", [TOPIC], session_timeout_ms=SESSION_MS)
    as_member = {"member_id": member.member_id, "generation": member.generation}
    groups.commit("g", {P0: 5}, **as_member, session="c1")
    other_process.groups.commit("g", {P0: 9}, **as_member, session="c2")
    groups.commit("g", {P0: 5}, **as_member, session="c3")
    assert len(writes) == 2 and groups.committed("g", [P0])[P0] == (5, "")
    other_process.groups.commit("g", {P0: 9}, **as_member, session="c4")
    groups.heartbeat("g", member.member_id)  # reads the offset items, as it does anyway
    groups.commit("g", {P0: 5}, **as_member, session="c3")
    assert len(writes) == 3 and groups.committed("g", [P0])[P0] == (5, "")


def test_a_transaction_holding_the_offset_makes_the_next_commit_write(
    clocked_log: ObjectLog, groups: GroupCoordinator
) -> None:
    writes = count_offset_writes(clocked_log)
    member = groups.join("g", [TOPIC], session_timeout_ms=SESSION_MS)
    as_member = {"member_id": member.member_id, "generation": member.generation, "session": "c1"}
    groups.commit("g", {P0: 5}, **as_member)
    groups.transactional.hold(
        "g", "txn-mark", [P0], member_id=member.member_id, generation=member.generation
    )
    groups.commit("g", {P0: 5}, **as_member)
    assert len(writes) == 2
    assert groups.committed_items("g", [P0])[P0].pending is None  # the plain commit won


def test_a_commit_from_outside_the_group_or_without_a_session_always_writes(
    clocked_log: ObjectLog, groups: GroupCoordinator
) -> None:
    writes = count_offset_writes(clocked_log)
    for _ in range(3):
        groups.commit("g", {P0: 2}, session="c1")  # outside the group: nothing vouches
        groups.commit("h", {P0: 2}, generation=1)  # a classic member, no session
    groups.commit("k", {P0: 2}, generation=1, session="c1")
    groups.commit("k", {P0: 2}, generation=1, session="c1")
    assert len(writes) == 7


def test_of_two_commits_in_flight_neither_is_remembered() -> None:
    """Their order on the item is not known here: either may have landed last."""
    memory = UnchangedCommits()
    memory.renewed("g", "m", until_ms=10**12)
    five, six = (Committed("m", 1, offset, "", -1, "c1") for offset in (5, 6))
    first, second = memory.begin("g", P0), memory.begin("g", P0)
    memory.end("g", P0, second, six, now_ms=0)
    memory.end("g", P0, first, five, now_ms=0)
    assert not memory.skips("g", P0, five, 1) and not memory.skips("g", P0, six, 1)

    number = memory.begin("g", P0)
    with memory.writing("g", [P0]):  # a release or claim beside it
        pass
    memory.end("g", P0, number, five, now_ms=0)
    assert not memory.skips("g", P0, five, 1)

    number = memory.begin("g", P0)
    memory.end("g", P0, number, five, now_ms=0)
    assert memory.skips("g", P0, five, 1)

    assert not memory.skips("g", P0, five, REWRITE_AFTER_MS)  # written again once it aged
