"""Groups as Kafka's admin clients see them: KIP-848 consumer groups (objectlog's own groups)
described by ConsumerGroupDescribe, classic groups by DescribeGroups, and ListGroups v5 giving
each group's type, filtered by type and state, as a Kafka 3.9/4.x broker answers them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from objectlog import ObjectLog
from objectlog.groups import TopicPartition
from objectlog.kafka import operations
from objectlog.kafka.context import topic_uuid
from objectlog.kafka.server import AgentThread
from tests.functional.test_kafka_groups import call, consumer_heartbeat, join
from tests.kafka_agent_config import agent_config

TOPIC = "events"  # the topic the wire helpers of test_kafka_groups use
PARTITIONS = 4
LIST_GROUPS, DESCRIBE_GROUPS, CONSUMER_GROUP_DESCRIBE = 16, 15, 69


@pytest.fixture
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    log.create_topic(TOPIC, partitions=PARTITIONS)
    running = AgentThread(log, agent_config()).start()
    yield running
    running.stop()


def consumer(address: str, group: str, **options: Any) -> Any:
    import confluent_kafka

    settings = {"bootstrap.servers": address, "group.id": group, "enable.auto.commit": False}
    member = confluent_kafka.Consumer({**settings, **options})
    member.subscribe([TOPIC])
    return member


def poll_until(members: list[Any], done: Callable[[], bool], timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        for member in members:
            member.poll(0.05)
    assert done()


def partitions(assignment: Any) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in assignment.topic_partitions}


def test_confluent_kafka_describes_a_kip_848_group_as_a_consumer_group_with_its_members(
    log: ObjectLog, agent: AgentThread
) -> None:
    """A group of a KIP-848 consumer and a member of objectlog's own consumer API: a consumer
    group (not classic, as it was while ConsumerGroupDescribe was not offered), its members
    with their client ids, assignments and target assignments, and the group's operations."""
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType
    from confluent_kafka.admin import AclOperation, AdminClient

    kip_848 = consumer(agent.address, "mixed", **{"group.protocol": "consumer", "client.id": "k"})
    try:
        poll_until([kip_848], lambda: len(kip_848.assignment()) == PARTITIONS)
        groups = log.groups
        own = groups.join("mixed", [TOPIC], client_id="library", strategies=("sticky",))

        def settled() -> bool:
            mine = groups.heartbeat("mixed", own.member_id)
            return len(mine.owned) == len(kip_848.assignment()) == PARTITIONS // 2

        poll_until([kip_848], settled)
        admin = AdminClient({"bootstrap.servers": agent.address})
        described = admin.describe_consumer_groups(["mixed"], include_authorized_operations=True)
        group = described["mixed"].result(timeout=10)
    finally:
        kip_848.close()
    assert (group.type, group.state) == (ConsumerGroupType.CONSUMER, ConsumerGroupState.STABLE)
    assert (group.partition_assignor, group.is_simple_consumer_group) == ("uniform", False)
    members = {m.client_id: m for m in group.members}
    assert set(members) == {"k", "library"}
    assert members["library"].member_id == own.member_id
    for member in members.values():
        assert len(partitions(member.assignment)) == PARTITIONS // 2
        assert partitions(member.target_assignment) == partitions(member.assignment)
    assert partitions(members["library"].assignment) == {
        (tp.topic, tp.partition) for tp in own.assigned
    }
    assert set(group.authorized_operations) == {
        AclOperation.READ,
        AclOperation.DELETE,
        AclOperation.DESCRIBE,
    }


def test_confluent_kafka_lists_groups_by_type_and_state_and_describes_classic_ones(
    log: ObjectLog, agent: AgentThread
) -> None:
    """ListGroups v5: a classic group and a simple one (offsets committed from outside any
    group) are classic, objectlog's own groups are consumer groups; the type and state filters
    select them. The classic groups are described as classic, through DescribeGroups."""
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType
    from confluent_kafka.admin import AdminClient

    classic = consumer(agent.address, "classic", **{"client.id": "c"})
    try:
        poll_until([classic], lambda: len(classic.assignment()) == PARTITIONS)
        groups = log.groups
        groups.join("stable", [TOPIC], client_id="library")
        left = groups.join("left", [TOPIC], client_id="library")
        groups.leave("left", left.member_id)
        groups.commit("simple", {TopicPartition(TOPIC, 0): 0})  # a consumer with assign()
        admin = AdminClient({"bootstrap.servers": agent.address})

        def listed(**filters: Any) -> dict[str, tuple[Any, Any]]:
            found = admin.list_consumer_groups(**filters).result(timeout=10)
            assert not found.errors
            return {g.group_id: (g.type, g.state) for g in found.valid}

        everything = listed()
        by_type = listed(types={ConsumerGroupType.CLASSIC})
        empty_consumer_groups = listed(
            types={ConsumerGroupType.CONSUMER}, states={ConsumerGroupState.EMPTY}
        )
        stable = listed(states={ConsumerGroupState.STABLE})
        described = admin.describe_consumer_groups(["classic", "simple"])
        classic_group = described["classic"].result(timeout=10)
        simple_group = described["simple"].result(timeout=10)
    finally:
        classic.close()
    consumer_type, classic_type = ConsumerGroupType.CONSUMER, ConsumerGroupType.CLASSIC
    stable_state, empty = ConsumerGroupState.STABLE, ConsumerGroupState.EMPTY
    assert everything == {
        "classic": (classic_type, stable_state),
        "simple": (classic_type, empty),
        "stable": (consumer_type, stable_state),
        "left": (consumer_type, empty),
    }
    assert by_type == {g: v for g, v in everything.items() if v[0] == classic_type}
    assert empty_consumer_groups == {"left": (consumer_type, empty)}
    assert set(stable) == {"classic", "stable"}
    assert (classic_group.type, classic_group.state) == (classic_type, stable_state)
    assert [m.client_id for m in classic_group.members] == ["c"]
    assert len(partitions(classic_group.members[0].assignment)) == PARTITIONS
    assert (simple_group.type, simple_group.state) == (classic_type, empty)
    assert simple_group.is_simple_consumer_group and simple_group.members == []


def test_consumer_group_describe_on_the_wire_answers_as_kafkas_broker(
    log: ObjectLog, agent: AgentThread
) -> None:
    """KIP-848 members by raw heartbeats: the second has joined, the first still holds every
    partition, so the group is Reconciling and the second's current assignment is empty. Each
    version and the groups it cannot describe (classic, missing) as Kafka answers them, and
    DescribeGroups and ListGroups of the same groups."""
    first = consumer_heartbeat(agent.address, "", 0)
    owned = first.assignment.topic_partitions
    assert consumer_heartbeat(agent.address, first.member_id, 1, owned).error_code == 0
    second = consumer_heartbeat(agent.address, "", 0)
    assert second.member_epoch == 2
    assert join(agent.address).error_code == ErrorCode.member_id_required  # classic "wire"
    group_ids = ("kip848-wire", "wire", "missing")
    newest = call(
        agent.address,
        CONSUMER_GROUP_DESCRIBE,
        1,
        group_ids=group_ids,
        include_authorized_operations=False,
    )
    group, classic, missing = newest.groups
    assert (group.group_state, group.group_epoch, group.assignment_epoch) == ("Reconciling", 2, 2)
    assert (group.assignor_name, group.authorized_operations) == ("uniform", operations.NOT_ASKED)
    topic_id = topic_uuid(log.topic(TOPIC).topic_id)
    members = {m.member_id: m for m in group.members}
    assert set(members) == {first.member_id, second.member_id}
    targets = []
    for member in members.values():
        assert (member.member_epoch, member.client_id, member.member_type) == (2, "raw", 1)
        assert (member.subscribed_topic_names, member.instance_id) == ((TOPIC,), None)
        [target] = member.target_assignment.topic_partitions
        assert (target.topic_id, target.topic_name, len(target.partitions)) == (topic_id, TOPIC, 2)
        targets.extend(target.partitions)
    assert sorted(targets) == list(range(PARTITIONS))
    assert members[second.member_id].assignment.topic_partitions == ()  # the first holds them
    assert members[first.member_id].assignment == members[first.member_id].target_assignment
    assert (classic.error_code, classic.error_message) == (
        ErrorCode.group_id_not_found,
        "Group wire is not a consumer group.",
    )
    assert (missing.error_code, missing.error_message) == (
        ErrorCode.group_id_not_found,
        "Group missing not found.",
    )
    oldest = call(
        agent.address,
        CONSUMER_GROUP_DESCRIBE,
        0,
        group_ids=("kip848-wire",),
        include_authorized_operations=True,
    )
    assert oldest.groups[0].authorized_operations == operations.authorized(operations.GROUP, True)
    assert not hasattr(oldest.groups[0].members[0], "member_type")  # KIP-1099's v1 field

    # DescribeGroups describes classic groups only: a consumer group is Dead, an error from v6
    before = call(
        agent.address,
        DESCRIBE_GROUPS,
        5,
        groups=("kip848-wire",),
        include_authorized_operations=False,
    ).groups[0]
    assert (before.error_code, before.group_state, before.members) == (0, "Dead", ())
    v6 = call(
        agent.address,
        DESCRIBE_GROUPS,
        6,
        groups=("kip848-wire",),
        include_authorized_operations=False,
    ).groups[0]
    assert (v6.error_code, v6.group_state, v6.error_message) == (
        ErrorCode.group_id_not_found,
        "Dead",
        "Group kip848-wire is not a classic group.",
    )

    def listed(states: tuple[str, ...] = (), types: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
        answer = call(agent.address, LIST_GROUPS, 5, states_filter=states, types_filter=types)
        return {(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in answer.groups}

    kip_848 = ("kip848-wire", "consumer", "Reconciling", "consumer")
    assert listed() == {kip_848, ("wire", "", "Empty", "classic")}  # a member id handed out
    assert listed(states=(" RECONCILING ",)) == listed(types=("Consumer", "bogus")) == {kip_848}
    assert listed(types=("bogus",)) == set()
