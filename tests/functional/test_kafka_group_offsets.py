"""OffsetCommit keeps any offset of a partition that exists, as Kafka's coordinator does (found
by librdkafka's tests 0099 and 0081: AdminClient's alter of a group's offsets, and tools that
reset a group ahead of its producers, were refused with OFFSET_OUT_OF_RANGE)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from objectlog import ObjectLog
from objectlog.groups import OffsetAndMetadata, TopicPartition
from objectlog.kafka.server import AgentThread
from tests.kafka_agent_config import agent_config

TOPIC = "ahead"


@pytest.fixture
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    log.create_topic(TOPIC, partitions=2)
    producer = log.producer()
    producer.send(TOPIC, value=b"only", partition=0)
    producer.close()
    running = AgentThread(log, agent_config()).start()
    yield running
    running.stop()


def test_the_admin_client_alters_offsets_past_the_high_watermark(
    log: ObjectLog, agent: AgentThread
) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka import TopicPartition as KafkaPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": agent.address})
    wanted = [KafkaPartition(TOPIC, 0, 500), KafkaPartition(TOPIC, 1, 7)]
    altered = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions("tool", wanted)])
    result = altered["tool"].result(timeout=10)
    assert [(tp.partition, tp.offset, tp.error) for tp in result.topic_partitions] == [
        (0, 500, None),
        (1, 7, None),
    ]
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("tool")])
    offsets = listed["tool"].result(timeout=10).topic_partitions
    assert sorted((tp.partition, tp.offset) for tp in offsets) == [(0, 500), (1, 7)]
    assert log.groups.committed("tool", [TopicPartition(TOPIC, 0)]) == {
        TopicPartition(TOPIC, 0): OffsetAndMetadata(500, "")
    }


def test_a_kafka_python_member_commits_past_the_high_watermark(agent: AgentThread) -> None:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaPartition
    from kafka.structs import OffsetAndMetadata as KafkaOffset

    consumer = KafkaConsumer(bootstrap_servers=agent.address, group_id="ahead-of-producers")
    try:
        partition = KafkaPartition(TOPIC, 0)
        consumer.assign([partition])
        consumer.commit({partition: KafkaOffset(42, "", -1)})
        assert consumer.committed(partition) == 42
    finally:
        consumer.close()


@pytest.mark.parametrize("group", ["roundrobin,range", "team/orders: v1 ü"])
def test_a_group_id_may_be_any_kafka_takes(log: ObjectLog, agent: AgentThread, group: str) -> None:
    """librdkafka's test 0132 names its group after its assignors ("roundrobin,range"): any
    non-empty id without control characters is a group id, as in Kafka."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": agent.address,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([TOPIC])
        message = None
        for _ in range(60):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                break
        assert message is not None and message.value() == b"only"
        consumer.commit(message, asynchronous=False)
    finally:
        consumer.close()
    assert log.groups.committed(group, [TopicPartition(TOPIC, 0)]) == {
        TopicPartition(TOPIC, 0): OffsetAndMetadata(1, "")
    }
    assert group in log.groups.list_groups()


def test_a_commits_leader_epoch_comes_back_with_its_offset(agent: AgentThread) -> None:
    """OffsetCommit v6+'s committed_leader_epoch is kept and OffsetFetch answers it, as Kafka
    does (librdkafka's test 0081 compares the epochs it committed with those it reads back)."""
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions
    from confluent_kafka import TopicPartition as KafkaPartition
    from confluent_kafka.admin import AdminClient

    consumer = Consumer({"bootstrap.servers": agent.address, "group.id": "epochs"})
    try:
        wanted = [KafkaPartition(TOPIC, 0, 10, leader_epoch=1), KafkaPartition(TOPIC, 1, 20)]
        consumer.commit(offsets=wanted, asynchronous=False)
        committed = consumer.committed([KafkaPartition(TOPIC, p) for p in (0, 1)], timeout=10)
    finally:
        consumer.close()
    assert [(tp.offset, tp.leader_epoch) for tp in committed] == [(10, 1), (20, None)]
    admin = AdminClient({"bootstrap.servers": agent.address})
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("epochs")])
    offsets = listed["epochs"].result(timeout=10).topic_partitions
    assert sorted((tp.partition, tp.leader_epoch) for tp in offsets) == [(0, 1), (1, None)]


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_offsets_of_topics_no_member_subscribes_to_are_deleted_and_the_others_kept(
    log: ObjectLog, agent: AgentThread, protocol: str
) -> None:
    """OffsetDelete as Kafka's coordinator answers it while the group has members: the offsets
    of a topic no member subscribes to are deleted, those of a subscribed topic are refused
    partition by partition with GROUP_SUBSCRIBED_TO_TOPIC (librdkafka's test 0081 deletes a
    subscribed group's offsets; the whole request was refused before)."""
    from confluent_kafka import Consumer
    from kafka import TopicPartition as KafkaPartition
    from kafka.admin import KafkaAdminClient
    from kafka.errors import GroupSubscribedToTopicError, NoError

    log.create_topic("unsubscribed", partitions=1)
    group = f"deleting-{protocol}"
    subscribed, unsubscribed = TopicPartition(TOPIC, 0), TopicPartition("unsubscribed", 0)
    log.groups.commit(group, {subscribed: 1, unsubscribed: 5})
    consumer = Consumer(
        {"bootstrap.servers": agent.address, "group.id": group, "group.protocol": protocol}
    )
    admin = KafkaAdminClient(bootstrap_servers=agent.address)
    try:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 20
        while len(consumer.assignment()) < 2 and time.monotonic() < deadline:
            consumer.poll(0.05)
        assert len(consumer.assignment()) == 2
        deleted = admin.delete_group_offsets(group, [KafkaPartition(*unsubscribed)])
        refused = admin.delete_group_offsets(group, [KafkaPartition(*subscribed)])
    finally:
        consumer.close()
        admin.close()
    assert list(deleted.values()) == [NoError]
    assert list(refused.values()) == [GroupSubscribedToTopicError]
    assert log.groups.committed(group, [subscribed, unsubscribed]) == {
        subscribed: OffsetAndMetadata(1, ""),
        unsubscribed: None,
    }
