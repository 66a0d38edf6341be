"""The agent answers a fetch at the tail of still partitions from its view of their heads
(kafka.fetch, services.activity.still) without reading them, and still reads its writes: a
record acknowledged before a fetch arrives, by another ObjectLog, another agent or this
agent's own log, is in that fetch's answer. Fetches are raw frames (max_wait 0: answered at
once), the activity's waits shortened so the partitions go still within a second."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.kafka.server import AgentThread
from objectlog.services.activity import ActivitySettings
from tests.head_reads import HeadReads, fast_reader, fast_writer
from tests.kafka_agent_config import agent_config
from tests.kafka_frames import answer

TOPIC = "viewed"
PARTITIONS = 4
FETCH = 1


@pytest.fixture
def writer(log: ObjectLog) -> ObjectLog:
    return fast_writer(log, TOPIC, PARTITIONS)


@pytest.fixture
def reader(writer: ObjectLog) -> Iterator[ObjectLog]:
    with fast_reader(writer) as log:
        yield log


@pytest.fixture
def agent(reader: ObjectLog) -> Iterator[AgentThread]:
    running = AgentThread(reader, agent_config()).start()
    yield running
    running.stop()


def fetch(agent: AgentThread, offsets: dict[int, int], max_wait_ms: int = 0) -> dict[int, Any]:
    """Each partition's answer to one Fetch (v11) at these offsets."""
    request = {
        "max_wait": max_wait_ms,
        "max_bytes": 1 << 20,
        "topics": [
            {
                "topic": TOPIC,
                "partitions": [
                    {"partition": p, "fetch_offset": o, "partition_max_bytes": 1 << 20}
                    for p, o in offsets.items()
                ],
            }
        ],
    }
    found = answer(agent.address, FETCH, 11, request).responses[0].partitions
    return {p.partition_index: p for p in found}


def until_answered_from_the_view(agent: AgentThread, heads: HeadReads, offsets: dict) -> None:
    """Fetch until five fetches in a row read no head."""
    deadline, quiet = time.monotonic() + 10, 0
    while quiet < 5:
        assert time.monotonic() < deadline, "every fetch kept reading the heads"
        before = heads.count
        assert all(not p.records for p in fetch(agent, offsets, 50).values())
        quiet = quiet + 1 if heads.count == before else 0


def test_fetches_at_the_tail_of_still_partitions_read_no_head(
    reader: ObjectLog, agent: AgentThread
) -> None:
    heads = HeadReads(reader)
    until_answered_from_the_view(agent, heads, dict.fromkeys(range(PARTITIONS), 0))
    answered = fetch(agent, dict.fromkeys(range(PARTITIONS), 0))
    assert {p.high_watermark for p in answered.values()} == {0}
    assert {p.log_start_offset for p in answered.values()} == {0}


def test_a_record_another_log_acknowledged_is_in_the_next_fetch_s_answer(
    writer: ObjectLog, reader: ObjectLog, agent: AgentThread
) -> None:
    heads = HeadReads(reader)
    until_answered_from_the_view(agent, heads, dict.fromkeys(range(PARTITIONS), 0))
    with writer.producer() as producer:
        producer.send(TOPIC, value=b"acknowledged", partition=2)
    answered = fetch(agent, dict.fromkeys(range(PARTITIONS), 0))  # at once, no wait
    assert answered[2].high_watermark == 1 and answered[2].records


def test_a_record_another_agent_acknowledged_is_in_the_next_fetch_s_answer(
    writer: ObjectLog, reader: ObjectLog, agent: AgentThread
) -> None:
    from confluent_kafka import Producer

    heads = HeadReads(reader)
    until_answered_from_the_view(agent, heads, dict.fromkeys(range(PARTITIONS), 0))
    other = AgentThread(writer, agent_config()).start()
    try:
        producer = Producer({"bootstrap.servers": other.address, "linger.ms": 0})
        producer.produce(TOPIC, b"through another agent", partition=1)
        assert producer.flush(20) == 0
    finally:
        other.stop()
    answered = fetch(agent, dict.fromkeys(range(PARTITIONS), 0))
    assert answered[1].high_watermark == 1 and answered[1].records


def test_this_log_s_own_commit_is_read_though_it_touched_nothing(
    reader: ObjectLog, agent: AgentThread
) -> None:
    """The second record's commit does not touch the activity (the first one's touch was
    under a minute ago): the agent's log knows of its own commit, and reads the head."""
    reader.activity.settings = ActivitySettings(
        touch_every_s=60, guard_s=0.3, idle_after_s=0.6, poll_s=0.1
    )
    heads = HeadReads(reader)
    with reader.producer() as producer:
        producer.send(TOPIC, value=b"touches", partition=0)
    touches = reader.activity.touches
    offsets = {0: 1, 1: 0, 2: 0, 3: 0}
    until_answered_from_the_view(agent, heads, offsets)
    with reader.producer() as producer:
        producer.send(TOPIC, value=b"touches nothing", partition=3)
    assert reader.activity.touches == touches
    answered = fetch(agent, offsets)
    assert answered[3].high_watermark == 1 and answered[3].records
