"""Two Kafka agents side by side over one log: a group whose members connect to different
agents shares the partitions and commits correctly, and behind a TCP balancer (as behind a
Network Load Balancer) an agent killed mid-produce loses nothing acknowledged while an
idempotent producer writes no duplicate."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.groups import TopicPartition
from objectlog.kafka.server import AgentThread
from tests.kafka_agent_config import agent_config
from tests.kafka_group_state import group_state
from tests.kafka_python_members import kafka_python_member

TOPIC = "shared"
PARTITIONS = 4


class Balancer:
    """A TCP balancer on loopback: each new connection goes to the next live backend."""

    def __init__(self, backends: list[tuple[str, int]]) -> None:
        self.backends = backends
        self.down: set[tuple[str, int]] = set()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.turn = 0
        self.port = 0

    def start(self) -> Balancer:
        self.thread.start()
        server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._forward, "127.0.0.1", 0), self.loop
        ).result(10)
        self.server = server
        self.port = server.sockets[0].getsockname()[1]
        return self

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        live = [b for b in self.backends if b not in self.down]
        if not live:
            writer.close()
            return
        self.turn += 1
        host, port = live[self.turn % len(live)]
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(host, port)
        except OSError:
            writer.close()
            return

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await source.read(1 << 16):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    def stop(self) -> None:
        self.server.close()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def topic(log: ObjectLog) -> None:
    log.create_topic(TOPIC, partitions=PARTITIONS)


def agent(log: ObjectLog, **options: Any) -> AgentThread:
    return AgentThread(log, agent_config(**options)).start()


def test_a_group_whose_members_use_different_agents_shares_partitions_and_commits(
    log_config: Any, topic: None, caplog: pytest.LogCaptureFixture
) -> None:
    """The members know the topic's partitions before they join: without that, a kafka-python
    3.0.12 leader can be left stuck mid-join (learn_partitions_before_joining). Should a member
    still hold no partition after 30 s, the failure prints the group's state and kafka-python's
    coordinator lines (caplog at DEBUG), to tell which side stopped."""
    caplog.set_level(logging.DEBUG, logger="kafka.coordinator")
    with ObjectLog(log_config) as other_log:  # the second agent: its own process state
        first, second = agent(ObjectLog(log_config)), agent(other_log)
        with ObjectLog(log_config) as log, log.producer() as producer:
            for i in range(40):
                producer.send(TOPIC, b"%d" % i, partition=i % PARTITIONS)
        members = [kafka_python_member(a.address, TOPIC, "across") for a in (first, second)]
        seen: list[tuple[int, int]] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for member in members:
                polled = member.poll(timeout_ms=100)
                seen.extend((r.partition, r.offset) for b in polled.values() for r in b)
                if polled:
                    member.commit()
            split = [len(m.assignment()) for m in members]
            if len(seen) >= 40 and split == [2, 2]:
                break
        split = [len(m.assignment()) for m in members]
        assert "No partition metadata" not in caplog.text  # no leader assigned blind
        assert split == [2, 2], f"{split}; group: {group_state(other_log, 'across')}"
        assert sorted(set(seen)) == [(p, o) for p in range(PARTITIONS) for o in range(10)]
        for member in members:
            commit_once_rejoined(member)
            member.close()
        committed = other_log.groups.committed(
            "across", [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        )
        assert {tp.partition: v.offset for tp, v in committed.items() if v} == {
            p: 10 for p in range(PARTITIONS)
        }
        first.stop()
        second.stop()


def commit_once_rejoined(member: Any, timeout_s: float = 15) -> None:
    """Commit a kafka-python member's positions. A member can still be rejoining when the loop
    ends: a heartbeat answered REBALANCE_IN_PROGRESS during the last rebalance makes it join
    once more, and the agent answers with the same generation. kafka-python then refuses a
    commit with RebalanceInProgressError until poll() completes the join, as its message
    advises; so poll, then commit again."""
    from kafka.errors import RebalanceInProgressError

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            member.commit()
            return
        except RebalanceInProgressError:
            if time.monotonic() > deadline:
                raise
            member.poll(timeout_ms=100)


def test_an_agent_killed_mid_produce_loses_nothing_acknowledged_and_duplicates_nothing(
    log_config: Any, topic: None
) -> None:
    from kafka import KafkaProducer

    balancer = Balancer([]).start()
    advertised = {"advertised_host": "127.0.0.1", "advertised_port": balancer.port}
    logs = [ObjectLog(log_config), ObjectLog(log_config)]
    agents = [agent(log, **advertised) for log in logs]
    balancer.backends = [("127.0.0.1", a.agent.port) for a in agents]
    producer = KafkaProducer(
        bootstrap_servers=f"127.0.0.1:{balancer.port}",
        acks="all",
        enable_idempotence=True,  # retried batches keep their offsets (the default from 3.0)
        retries=20,
        retry_backoff_ms=50,
        linger_ms=2,
    )
    futures = []
    for i in range(600):
        futures.append(producer.send(TOPIC, b"%d" % i, key=b"%d" % i))
        if i == 200:
            balancer.down.add(balancer.backends[0])
            agents[0].stop()  # mid-produce: its connections drop, requests in flight
        time.sleep(0.001)
    producer.flush(60)
    acknowledged = {}
    for i, future in enumerate(futures):
        with contextlib.suppress(Exception):
            metadata = future.get(timeout=1)
            acknowledged[b"%d" % i] = (metadata.partition, metadata.offset)
    producer.close()
    assert len(acknowledged) == 600  # the retries found the other agent
    stored: dict[bytes, list[tuple[int, int]]] = {}
    for p in range(PARTITIONS):
        offset = 0
        while records := logs[1].fetch(TOPIC, p, offset, max_records=1000).records:
            for r in records:
                assert r.value is not None
                stored.setdefault(r.value, []).append((p, r.offset))
            offset = records[-1].offset + 1
    assert {value: places for value, places in stored.items() if len(places) > 1} == {}
    assert {value: places[0] for value, places in stored.items()} == acknowledged
    produced = [a.agent.metrics.snapshot().get("produce") for a in agents]
    assert all(counts is not None and counts.requests > 0 for counts in produced)  # both served
    agents[1].stop()
    balancer.stop()
    for log in logs:
        log.close()
