"""The asyncio client's admin calls (objectlog.aio): topics, configs and offsets on
AIOObjectLog, groups and ACLs on AIOAdminClient, with the threaded client's errors."""

from __future__ import annotations

import pytest

from objectlog import ObjectLog
from objectlog.aio import AIOObjectLog
from objectlog.errors import GroupNotEmpty, GroupNotFound, InvalidConfig, TopicExists, TopicNotFound
from objectlog.format.acls import (
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from objectlog.stores.groups import TopicPartition
from tests.aio_run import run


@pytest.mark.aio_full
def test_topics_configs_and_offsets(log: ObjectLog) -> None:
    async def admin(aio: AIOObjectLog) -> None:
        await aio.create_topic("orders", 2, {"retention.ms": 60_000})
        with pytest.raises(TopicExists):
            await aio.create_topic("orders")
        with pytest.raises(InvalidConfig):
            await aio.alter_topic_config("orders", {"no.such.config": 1})
        topic = await aio.alter_topic_config("orders", {"retention.ms": 120_000})
        assert topic.config.overrides["retention.ms"] == "120000"
        assert (await aio.add_partitions("orders", 3)).partitions == 3
        assert await aio.list_topics() == ["orders"]
        async with aio.producer() as producer:
            for i in range(5):
                await producer.send_and_wait("orders", f"v{i}".encode(), partition=0)
        description = await aio.describe_topic("orders")
        assert [p.high_watermark for p in description.partitions] == [5, 0, 0]
        assert await aio.delete_records("orders", {0: 2}) == {0: 2}
        assert (await aio.offsets("orders", 0)).earliest == 2
        fetched = await aio.fetch("orders", 0, 2)
        assert [r.value for r in fetched.records] == [b"v2", b"v3", b"v4"]
        await aio.delete_topic("orders")
        with pytest.raises(TopicNotFound):
            await aio.describe_topic("orders")

    run(log, admin)


@pytest.mark.aio_full
def test_groups_and_acls(log: ObjectLog) -> None:
    log.create_topic("events", partitions=2)
    with log.producer() as producer:
        for i in range(6):
            producer.send("events", b"v", partition=i % 2)

    async def admin(aio: AIOObjectLog) -> None:
        admin = aio.admin()
        consumer = aio.consumer("events", group_id="billing", auto_offset_reset="earliest")
        await consumer.start()
        while sum(len(r) for r in (await consumer.getmany(timeout_ms=200)).values()) == 0:
            pass
        await consumer.commit()
        assert await admin.list_groups() == ["billing"]
        described = await admin.describe_group("billing")
        assert len(described.members) == 1
        with pytest.raises(GroupNotEmpty):
            await admin.reset_offsets("billing", ["events"], to="earliest")
        await consumer.stop()
        moved = await admin.reset_offsets("billing", ["events"], to="earliest", dry_run=True)
        assert moved == {TopicPartition("events", 0): 0, TopicPartition("events", 1): 0}
        await admin.reset_offsets("billing", ["events"], to="latest")
        committed = await admin.committed_offsets("billing", [("events", 0), ("events", 1)])
        assert {tp: c.offset for tp, c in committed.items() if c} == {
            TopicPartition("events", 0): 3,
            TopicPartition("events", 1): 3,
        }
        await admin.delete_group("billing")
        with pytest.raises(GroupNotFound):
            await admin.describe_group("billing")

        read = AclBinding(
            ResourceType.TOPIC,
            "events",
            PatternType.LITERAL,
            "User:alice",
            "*",
            Operation.READ,
            Permission.ALLOW,
        )
        [created] = await admin.create_acls([read])
        assert created.created and created.error is None
        assert await admin.describe_acls(AclFilter(principal="User:alice")) == [read]
        assert await admin.describe_acls(AclFilter(principal="User:bob")) == []
        assert await admin.delete_acls(AclFilter(resource_name="events")) == [[read]]
        assert await admin.describe_acls() == []

    run(log, admin)
