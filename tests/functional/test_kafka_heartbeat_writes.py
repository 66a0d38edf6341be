"""A classic group's heartbeats write the group's document only when the member's stored
session is older than a fifth of its timeout (kafka.groups.RENEW_SHARE): Kafka's clients beat
every 3 s of a 45 s session, so a waiting member costs a write every third beat, not every
one; a rebalance is still answered at the next beat (a member that stops beating lapses
within its session: tests/functional/test_kafka_groups.py). Raw frames against the agent
(tests.functional.test_kafka_groups' helpers), on moto server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from objectlog import ObjectLog
from objectlog.kafka.server import AgentThread
from tests.functional.test_kafka_groups import call, join
from tests.kafka_agent_config import agent_config

SESSION_MS = 1500


class DocumentWrites:
    """Writes of group documents (the agent log's PutItem calls on doc# items)."""

    def __init__(self, log: ObjectLog) -> None:
        self.count = 0
        log.metadata.client.meta.events.register(
            "provide-client-params.dynamodb.PutItem", self._put
        )

    def _put(self, params: dict[str, Any], **_: Any) -> None:
        self.count += str(params["Item"]["pk"].get("S", "")).startswith("doc#")


@pytest.fixture
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    log.create_topic("beats", partitions=1)
    running = AgentThread(log, agent_config()).start()
    yield running
    running.stop()


def synced_member(address: str, session_ms: int = SESSION_MS) -> str:
    from kio.schema.sync_group.v5.request import SyncGroupRequestAssignment

    asked = join(address)
    joined = join(address, asked.member_id, session_ms=session_ms)
    assert (joined.error_code, joined.generation_id) == (ErrorCode.none, 1)
    synced = call(
        address,
        14,
        5,
        group_id="wire",
        generation_id=1,
        member_id=asked.member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=(SyncGroupRequestAssignment(member_id=asked.member_id, assignment=b"a"),),
    )
    assert synced.error_code == ErrorCode.none
    return str(asked.member_id)


def beat(address: str, member_id: str) -> ErrorCode:
    answer = call(
        address,
        12,
        4,
        group_id="wire",
        generation_id=1,
        member_id=member_id,
        group_instance_id=None,
    )
    return ErrorCode(answer.error_code)


def test_a_stable_member_s_heartbeats_within_a_fifth_of_its_session_write_nothing(
    log: ObjectLog, agent: AgentThread
) -> None:
    member = synced_member(agent.address, session_ms=60_000)  # stored at its SyncGroup
    writes = DocumentWrites(log)
    for _ in range(10):
        assert beat(agent.address, member) == ErrorCode.none
        time.sleep(0.05)
    assert writes.count == 0  # each beat wrote it before


def test_a_rebalance_is_answered_at_the_next_heartbeat_however_fresh_the_session(
    agent: AgentThread,
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    member = synced_member(agent.address)
    assert beat(agent.address, member) == ErrorCode.none  # its session fresh: not written
    with ThreadPoolExecutor(1) as pool:
        asked = join(agent.address)
        newcomer = pool.submit(join, agent.address, asked.member_id, SESSION_MS)
        deadline = time.monotonic() + 10
        while (code := beat(agent.address, member)) == ErrorCode.none:
            assert time.monotonic() < deadline, "the heartbeat never saw the rebalance"
            time.sleep(0.02)
        assert code == ErrorCode.rebalance_in_progress
        rejoined = join(agent.address, member, SESSION_MS)  # completes the newcomer's too
        assert rejoined.error_code == ErrorCode.none and rejoined.generation_id == 2
        assert newcomer.result(timeout=10).error_code == ErrorCode.none
