"""The classic group protocol's transitions (kafka.classic): sessions of members that wait on
the group, as Kafka's coordinator counts them."""

from __future__ import annotations

import io
import json
import struct

from objectlog.kafka import classic
from objectlog.kafka.classic import COMPLETING, PREPARING, STABLE, ClassicGroup, Member

SESSION_MS = 6_000
REBALANCE_MS = 30_000


def member(member_id: str) -> Member:
    return Member(
        member_id=member_id,
        client_id=member_id,
        instance_id=None,
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=REBALANCE_MS,
        protocols=[("range", "")],
        joined=0,
        seen_ms=0,
    )


def stable_group_of_one() -> ClassicGroup:
    group = ClassicGroup()
    classic.join(group, member("first"), now_ms=0)
    classic.sync(group, "first", {"first": b"all"})
    assert group.phase == STABLE and group.leader == "first"
    return group


def test_a_member_whose_join_waits_for_the_others_outlives_its_session() -> None:
    group = stable_group_of_one()
    classic.join(group, member("second"), now_ms=1_000)  # waits for first to rejoin
    assert group.phase == PREPARING
    group.members["first"].seen_ms = 9_000  # first heartbeats, learns of the rebalance
    assert not classic.expire(group, now_ms=10_000)  # second's session would have lapsed
    assert set(group.members) == {"first", "second"}
    classic.join(group, member("first"), now_ms=12_000)
    assert group.phase == COMPLETING and set(group.members) == {"first", "second"}


def test_a_member_that_never_rejoins_is_dropped_at_the_rebalance_deadline() -> None:
    group = stable_group_of_one()
    classic.join(group, member("second"), now_ms=20_000)
    group.members["first"].seen_ms = 20_000 + REBALANCE_MS - 1  # heartbeats, never rejoins
    classic.expire(group, now_ms=20_000 + REBALANCE_MS - 1)
    assert group.phase == PREPARING
    assert classic.expire(group, now_ms=20_000 + REBALANCE_MS)
    assert group.phase == COMPLETING and set(group.members) == {"second"}


def test_a_follower_waiting_for_the_leaders_sync_outlives_its_session() -> None:
    group = stable_group_of_one()
    classic.join(group, member("second"), now_ms=1_000)
    classic.join(group, member("first"), now_ms=2_000)  # completes: first leads
    group.members["second"].seen_ms, group.members["second"].synced = 2_000, group.generation
    group.members["first"].seen_ms = 7_000  # the leader heartbeats while it assigns
    classic.expire(group, now_ms=2_000 + SESSION_MS + 1)
    assert group.phase == COMPLETING and set(group.members) == {"first", "second"}


def test_a_leader_that_never_syncs_is_dropped_a_session_after_the_join_completed() -> None:
    group = stable_group_of_one()
    classic.join(group, member("second"), now_ms=1_000)
    classic.join(group, member("first"), now_ms=2_000)
    group.members["second"].seen_ms, group.members["second"].synced = 2_000, group.generation
    assert not classic.expire(group, now_ms=2_000 + SESSION_MS)
    assert classic.expire(group, now_ms=2_000 + SESSION_MS + 1)
    assert "first" not in group.members and group.phase == PREPARING  # second rejoins next


def test_a_stable_member_that_stops_heartbeating_lapses() -> None:
    group = stable_group_of_one()
    group.members["first"].seen_ms = 5_000
    assert not classic.expire(group, now_ms=5_000 + SESSION_MS)
    assert classic.expire(group, now_ms=5_000 + SESSION_MS + 1)
    assert not group.members


def test_a_completed_join_is_answered_though_another_member_started_the_next_rebalance() -> None:
    """Found under load (test_kafka_agents): the first member's join completed, a second
    joined before the first's JoinGroup read the result, and the answer UNKNOWN_MEMBER_ID
    made the client drop a member id the group then waited for until the rebalance timeout."""
    group = ClassicGroup()
    classic.join(group, member("first"), now_ms=0)
    assert group.phase == COMPLETING and group.generation == 1
    classic.join(group, member("second"), now_ms=10)
    assert group.phase == PREPARING and group.generation == 1
    answered = classic.join_result(group, "first")
    assert answered is not None and [m.member_id for m in answered] == ["first"]
    classic.leave(group, ["first"], now_ms=20)
    assert classic.join_result(group, "first") is None  # dropped: UNKNOWN_MEMBER_ID


# ---- the initial rebalance delay (Kafka's group.initial.rebalance.delay.ms) --------------

DELAY_MS = 3_000


def test_an_empty_groups_first_join_waits_the_initial_delay_though_every_member_joined() -> None:
    group = ClassicGroup()
    classic.join(group, member("first"), now_ms=0, initial_delay_ms=DELAY_MS)
    assert group.phase == PREPARING and group.generation == 0
    assert not classic.expire(group, now_ms=DELAY_MS - 1)
    assert group.phase == PREPARING
    assert classic.expire(group, now_ms=DELAY_MS)
    assert group.phase == COMPLETING and group.generation == 1 and group.leader == "first"


def test_members_joining_during_the_delay_extend_it_and_share_the_first_generation() -> None:
    group = ClassicGroup()
    classic.join(group, member("first"), now_ms=0, initial_delay_ms=DELAY_MS)
    classic.join(group, member("second"), now_ms=2_000, initial_delay_ms=DELAY_MS)
    assert classic.expire(group, now_ms=DELAY_MS)  # extended: a member joined during it
    assert group.phase == PREPARING and group.delay_until_ms == 2 * DELAY_MS
    classic.join(group, member("third"), now_ms=5_000, initial_delay_ms=DELAY_MS)
    assert classic.expire(group, now_ms=2 * DELAY_MS)  # extended again
    assert group.phase == PREPARING
    assert classic.expire(group, now_ms=3 * DELAY_MS)  # nobody joined during the third
    assert group.phase == COMPLETING and group.generation == 1
    assert set(group.members) == {"first", "second", "third"}


def test_the_delay_extends_no_further_than_the_rebalance_timeout() -> None:
    group = ClassicGroup()
    classic.join(group, member("first"), now_ms=0, initial_delay_ms=20_000)
    classic.join(group, member("second"), now_ms=1_000, initial_delay_ms=20_000)
    assert classic.expire(group, now_ms=20_000)  # the rebalance timeout leaves 10 s
    assert group.delay_until_ms == REBALANCE_MS
    classic.join(group, member("third"), now_ms=25_000, initial_delay_ms=20_000)
    assert classic.expire(group, now_ms=REBALANCE_MS)  # none left: the join completes
    assert group.phase == COMPLETING and len(group.members) == 3


def test_a_member_leaving_during_the_delay_does_not_end_it_and_the_last_empties_the_group() -> None:
    group = ClassicGroup()
    classic.join(group, member("first"), now_ms=0, initial_delay_ms=DELAY_MS)
    classic.join(group, member("second"), now_ms=10, initial_delay_ms=DELAY_MS)
    classic.leave(group, ["second"], now_ms=20)
    assert group.phase == PREPARING and group.delay_until_ms == DELAY_MS
    classic.leave(group, ["first"], now_ms=30)
    assert group.phase == classic.EMPTY and not group.delay_until_ms
    classic.join(group, member("third"), now_ms=40, initial_delay_ms=DELAY_MS)
    assert group.delay_until_ms == 40 + DELAY_MS  # a new delay, from the third's join


def test_only_a_group_that_was_empty_waits_the_delay() -> None:
    group = stable_group_of_one()
    classic.join(group, member("second"), now_ms=1_000, initial_delay_ms=DELAY_MS)
    classic.join(group, member("first"), now_ms=1_100, initial_delay_ms=DELAY_MS)
    assert group.phase == COMPLETING and group.generation == 2  # at once, as without a delay


def test_a_delayed_group_survives_a_round_trip_through_its_document() -> None:
    group = ClassicGroup()
    classic.join(group, member("first"), now_ms=0, initial_delay_ms=DELAY_MS)
    classic.join(group, member("second"), now_ms=10, initial_delay_ms=DELAY_MS)
    stored = ClassicGroup.from_json(group.to_json())
    assert stored == group and stored.joined_in_delay
    assert ClassicGroup.from_json('{"members": {}}').delay_until_ms == 0  # written before it


def test_a_group_with_no_delay_under_way_is_written_as_agents_before_the_delay_wrote_it() -> None:
    """During a rolling upgrade, older agents (which refuse fields they do not know) read the
    group, unless it is in its initial delay."""
    group = ClassicGroup()
    classic.join(group, member("first"), now_ms=0, initial_delay_ms=DELAY_MS)
    assert set(classic.DELAY_FIELDS) <= set(json.loads(group.to_json()))
    classic.expire(group, now_ms=DELAY_MS)
    written = json.loads(group.to_json())
    assert not set(classic.DELAY_FIELDS) & set(written)
    assert ClassicGroup.from_json(group.to_json()) == group


def test_the_subscribed_topics_are_read_from_every_members_subscription() -> None:
    """ConsumerProtocolSubscription v3 (kafka-python's and librdkafka's newest) as the members
    send it; a member whose metadata cannot be read adds nothing."""
    from kio.schema.consumer_protocol_subscription.v3.data import ConsumerProtocolSubscription
    from kio.serial import entity_writer

    def subscription(*topics: str) -> str:
        out = io.BytesIO()
        out.write(struct.pack(">h", 3))
        entity_writer(ConsumerProtocolSubscription)(
            out, ConsumerProtocolSubscription(topics=topics, owned_partitions=(), rack_id="a")
        )
        return classic.encode(out.getvalue())

    group = ClassicGroup(protocol="range")
    for name, data in [("a", subscription("x", "y")), ("b", subscription("z")), ("c", "AAM=")]:
        group.members[name] = member(name)
        group.members[name].protocols = [("range", data)]
    assert classic.subscribed_topics(group) == {"x", "y", "z"}
