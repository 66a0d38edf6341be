"""kcat (Debian's, librdkafka 2.0) and aiokafka against the Kafka agent: produce keyed records,
read them back alone and in a group, and the placement matches objectlog's partitioner when
the client uses murmur2."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest

from objectlog import ObjectLog
from objectlog.format.partitioner import partition_for_key
from objectlog.kafka.server import AgentThread
from tests.kafka_agent_config import agent_config

TOPIC = "clicks"
PARTITIONS = 3
KCAT = shutil.which("kcat")


@pytest.fixture
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    log.create_topic(TOPIC, partitions=PARTITIONS)
    running = AgentThread(log, agent_config()).start()
    yield running
    running.stop()


def kcat(*arguments: str, data: bytes | None = None) -> str:
    assert KCAT, "kcat is missing: make prereqs installs Debian's kcat"
    done = subprocess.run([KCAT, *arguments], input=data, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def test_kcat_produces_with_murmur2_and_consumes_alone_and_in_a_group(
    log: ObjectLog, agent: AgentThread
) -> None:
    lines = b"".join(b"key-%d:value-%d\n" % (i, i) for i in range(12))
    kcat("-b", agent.address, "-P", "-t", TOPIC, "-K", ":", "-z", "lz4",
         "-X", "partitioner=murmur2_random", data=lines)  # fmt: skip
    stored = {
        (r.key, r.value, p) for p in range(PARTITIONS) for r in log.fetch(TOPIC, p, 0).records
    }
    assert stored == {
        (b"key-%d" % i, b"value-%d" % i, partition_for_key(b"key-%d" % i, PARTITIONS))
        for i in range(12)
    }
    alone = kcat("-b", agent.address, "-C", "-t", TOPIC, "-e", "-f", "%p %o %k %s\\n")
    grouped = kcat("-b", agent.address, "-G", "kcat-group", TOPIC, "-e", "-f", "%p %o %k %s\\n",
                   "-X", "auto.offset.reset=earliest")  # fmt: skip
    expected = {
        f"{p} {r.offset} {r.key.decode()} {r.value.decode()}"
        for p in range(PARTITIONS)
        for r in log.fetch(TOPIC, p, 0).records
        if r.key is not None and r.value is not None
    }
    assert set(alone.split("\n")) - {""} == expected
    assert set(grouped.split("\n")) - {""} == expected
    listing = kcat("-b", agent.address, "-L", "-t", TOPIC)
    assert f'topic "{TOPIC}" with {PARTITIONS} partitions' in listing


def test_aiokafka_produces_and_a_group_consumes_and_commits(
    log: ObjectLog, agent: AgentThread
) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition

    async def run() -> tuple[list[tuple[int, int]], dict[int, int]]:
        producer = AIOKafkaProducer(bootstrap_servers=agent.address, compression_type="gzip")
        await producer.start()
        sent = [
            await producer.send_and_wait(TOPIC, b"aio-%d" % i, key=b"a-%d" % i) for i in range(9)
        ]
        await producer.stop()
        assert [m.partition for m in sent] == [partition_for_key(b"a-%d" % i, 3) for i in range(9)]
        consumer = AIOKafkaConsumer(
            TOPIC,
            bootstrap_servers=agent.address,
            group_id="aio",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        got: list[tuple[int, int]] = []
        deadline = time.monotonic() + 20
        while len(got) < 9 and time.monotonic() < deadline:
            for batch in (await consumer.getmany(timeout_ms=200)).values():
                got.extend((m.partition, m.offset) for m in batch)
        await consumer.commit()
        committed = {
            p: await consumer.committed(TopicPartition(TOPIC, p)) for p in range(PARTITIONS)
        }
        await consumer.stop()
        return got, committed

    got, committed = asyncio.run(run())
    expected = sorted(
        (p, r.offset) for p in range(PARTITIONS) for r in log.fetch(TOPIC, p, 0).records
    )
    assert sorted(got) == expected
    assert committed == {p: log.offsets(TOPIC, p).latest for p in range(PARTITIONS)}
