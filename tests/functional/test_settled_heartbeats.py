"""A settled member's heartbeats read no offset items while it commits nothing
(groups.settled), and still learn every change that matters: a rebalance, a new commit, a
partition a stale view took, the periodic read. Against moto server, with the test's clock."""

from __future__ import annotations

from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.clock import ManualClock
from objectlog.groups import GroupCoordinator, Membership, TopicPartition

TOPIC = "settled"
PARTITIONS = 4


class OffsetReads:
    """Offset items the log reads (its DynamoDB client's BatchGetItem keys)."""

    def __init__(self, log: ObjectLog) -> None:
        self.count = 0
        log.metadata.client.meta.events.register(
            "provide-client-params.dynamodb.BatchGetItem", self._batch
        )

    def _batch(self, params: dict[str, Any], **_: Any) -> None:
        keys = [k for t in params["RequestItems"].values() for k in t["Keys"]]
        self.count += sum(str(k["sk"].get("S", "")).startswith("offset#") for k in keys)


@pytest.fixture
def groups(clocked_log: ObjectLog) -> GroupCoordinator:
    clocked_log.create_topic(TOPIC, partitions=PARTITIONS)
    return clocked_log.groups


def beat(groups: GroupCoordinator, view: Membership) -> Membership:
    return groups.heartbeat("g", view.member_id, owned=view.owned)


def test_a_settled_member_s_heartbeats_read_no_offset_item_until_it_commits(
    clocked_log: ObjectLog, groups: GroupCoordinator
) -> None:
    reads = OffsetReads(clocked_log)
    view = beat(groups, groups.join("g", [TOPIC]))  # the join claims, this read confirms
    assert len(view.owned) == PARTITIONS and reads.count == 2 * PARTITIONS
    for _ in range(5):
        assert beat(groups, view) == view
    assert reads.count == 2 * PARTITIONS  # answered from the settled view
    groups.commit("g", {view.owned[0]: 3}, member_id=view.member_id, generation=view.generation)
    assert beat(groups, view) == view
    assert reads.count == 3 * PARTITIONS  # a commit: the next heartbeat reads them all
    beat(groups, view)
    assert reads.count == 3 * PARTITIONS


def test_a_settled_member_learns_a_rebalance_from_the_group_item(
    groups: GroupCoordinator,
) -> None:
    first = beat(groups, groups.join("g", [TOPIC]))
    beat(groups, first)
    second = groups.join("g", [TOPIC])
    view = beat(groups, first)  # a new generation: read, and give up what moved
    assert view.generation == second.generation and len(view.assigned) == PARTITIONS // 2
    moving = set(view.owned) - set(view.assigned)
    assert moving
    view = groups.heartbeat(
        "g", first.member_id, owned=view.assigned, release=dict.fromkeys(moving)
    )
    second = groups.heartbeat("g", second.member_id)
    assert set(second.owned) == moving


def test_a_partition_a_stale_view_took_is_claimed_back_at_the_next_commit(
    clocked_log: ObjectLog, groups: GroupCoordinator
) -> None:
    """A member with a stale view claims an idle member's partition and gives it back; the
    idle member's heartbeats do not see it, its next commit there is refused, and the
    heartbeat after reads, claims it back and names the claim (the consumer drops the
    position it kept)."""
    from objectlog.errors import CommitFailed

    view = beat(groups, groups.join("g", [TOPIC]))
    beat(groups, view)
    tp, store = TopicPartition(TOPIC, 1), clocked_log.groups.store
    assert store.claim("g", tp, "stale-view", view.generation, seen_owner=view.member_id)
    assert store.release("g", tp, "stale-view", (9, "", 1))
    assert beat(groups, view).claimed == ()  # idle: not looked at
    with pytest.raises(CommitFailed):
        groups.commit("g", {tp: 5}, member_id=view.member_id, generation=view.generation)
    again = beat(groups, view)
    assert again.claimed == (tp,) and set(again.owned) == set(view.owned)
    assert groups.committed("g", [tp])[tp] == (9, "")


def test_a_settled_member_reads_its_items_again_after_check_ms(
    clocked_log: ObjectLog, groups: GroupCoordinator, clock: ManualClock
) -> None:
    reads = OffsetReads(clocked_log)
    view = beat(groups, groups.join("g", [TOPIC], session_timeout_ms=600_000))
    beat(groups, view)
    before = reads.count
    clock.advance(groups.settled.check_ms - 1)
    beat(groups, view)
    assert reads.count == before
    clock.advance(1)
    beat(groups, view)
    assert reads.count == before + PARTITIONS
