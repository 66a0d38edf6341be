"""Consumer groups with faults injected on the moto server (DESIGN.md section 9, invariant 5).

Lost answers (the write applied, its answer lost) and throttling on a share of every DynamoDB
call the group protocol makes; consumers killed at random points; zombies that try to commit
after their partitions moved. Every record must be processed, committed offsets must never go
backwards, and no zombie commit may land.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.clients.consumer import Consumer
from objectlog.clock import ManualClock
from objectlog.errors import CommitFailed
from objectlog.groups import TopicPartition
from tests.faults import FaultInjector, fast_retries

TOPIC = "events"
PARTITIONS = 4
PER_PARTITION = 25
SESSION_MS = 10_000
GROUP_OPERATIONS = ("UpdateItem", "PutItem", "GetItem", "BatchGetItem", "BatchWriteItem")


def on_group_items(params: Any) -> bool:
    return "group#" in str(params)


@pytest.fixture(autouse=True)
def topic(clocked_log: ObjectLog) -> None:
    clocked_log.create_topic(TOPIC, partitions=PARTITIONS)
    with clocked_log.producer() as producer:
        for p in range(PARTITIONS):
            for i in range(PER_PARTITION):
                producer.send(TOPIC, value=f"{p}:{i}".encode(), partition=p)


@pytest.fixture
def faults(clocked_log: ObjectLog, monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultInjector]:
    fast_retries(monkeypatch)
    injector = FaultInjector(seed=11)
    client = clocked_log.metadata.client
    for operation in GROUP_OPERATIONS:
        injector.lose_answer(client, operation, share=0.15, when=on_group_items)
        injector.throttle(client, operation, share=0.15, when=on_group_items)
    yield injector
    injector.remove()


def committed_offsets(log: ObjectLog, group: str) -> dict[int, int]:
    found = log.groups.committed(group, [TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    return {tp.partition: v.offset for tp, v in found.items() if v is not None}


def test_killed_consumers_and_zombies_under_faults_skip_nothing(
    clocked_log: ObjectLog, clock: ManualClock, faults: FaultInjector
) -> None:
    rng = random.Random(5)
    everything = {(p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION)}
    done = dict.fromkeys(range(PARTITIONS), PER_PARTITION)
    processed: set[tuple[int, int]] = set()
    highest: dict[int, int] = {}
    zombies: list[Consumer] = []
    fenced = incarnations = 0
    while (processed != everything or highest != done) and incarnations < 200:
        incarnations += 1
        consumer = clocked_log.consumer(
            group="g",
            topics=[TOPIC],
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=SESSION_MS,
            max_poll_records=rng.randint(1, 20),
        )
        crash = rng.choice(["mid_processing", "before_commit", "after_commit"])
        records = consumer.poll(timeout=0.2)
        if crash == "mid_processing":
            records = records[: rng.randint(0, len(records))]
        processed.update((r.partition, r.offset) for r in records)
        if crash != "before_commit" and records:
            consumer.commit({TopicPartition(TOPIC, r.partition): r.offset + 1 for r in records})
        for partition, offset in committed_offsets(clocked_log, "g").items():
            assert offset >= highest.get(partition, 0), "a committed offset went backwards"
            highest[partition] = offset

        # The previous incarnation's partitions have moved to this one: its commit is fenced.
        before = committed_offsets(clocked_log, "g")
        for zombie in zombies:
            if zombie.assignment():
                with pytest.raises(CommitFailed):
                    zombie.commit({tp: 0 for tp in zombie.assignment()})
                fenced += 1
        assert committed_offsets(clocked_log, "g") == before
        zombies = [consumer]
        clock.advance(SESSION_MS + 1)  # killed without close(): its lease lapses

    assert processed == everything  # nothing skipped
    assert highest == done
    assert fenced > 0
    assert faults.injected("lost-answer") > 0 and faults.injected("throttle") > 0
