import pytest

from objectlog import ObjectLog
from objectlog.errors import (
    InvalidConfig,
    InvalidRequest,
    InvalidTopicName,
    TopicExists,
    TopicNotFound,
    UnknownPartition,
)
from objectlog.format.topics import DEFAULTS


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("", id="empty"),
        pytest.param(".", id="dot"),
        pytest.param("..", id="dotdot"),
        pytest.param("a" * 250, id="too-long"),
        pytest.param("has space", id="space"),
        pytest.param("../etc/passwd", id="traversal"),
        pytest.param("tópico", id="non-ascii"),
        pytest.param("a/b", id="slash"),
    ],
)
def test_kafka_topic_name_rules_reject(log: ObjectLog, name: str) -> None:
    with pytest.raises(InvalidTopicName):
        log.create_topic(name)
    assert log.list_topics() == []


@pytest.mark.parametrize("name", ["a", "A.b_c-9", "x" * 249, "..."])
def test_kafka_topic_name_rules_accept(log: ObjectLog, name: str) -> None:
    log.create_topic(name)
    assert name in log.list_topics()


def test_create_list_describe_delete(log: ObjectLog) -> None:
    created = log.create_topic(
        "orders", partitions=3, config={"retention.ms": "604800000", "cleanup.policy": "compact"}
    )
    log.create_topic("payments")
    assert log.list_topics() == ["orders", "payments"]
    described = log.describe_topic("orders")
    assert described.topic.topic_id == created.topic_id
    assert [p.partition for p in described.partitions] == [0, 1, 2]
    assert all(p.high_watermark == 0 and p.log_start_offset == 0 for p in described.partitions)
    config = described.topic.config.effective()
    assert config["cleanup.policy"] == "compact"
    assert config["max.message.bytes"] == DEFAULTS["max.message.bytes"]
    log.delete_topic("orders")
    assert log.list_topics() == ["payments"]
    with pytest.raises(TopicNotFound):
        log.describe_topic("orders")
    with pytest.raises(TopicNotFound):
        log.delete_topic("orders")


def test_describe_counts_segments_and_bytes(log: ObjectLog) -> None:
    log.create_topic("t", partitions=2)
    with log.producer() as producer:
        producer.send("t", b"x" * 100, partition=0).result()
        producer.send("t", b"y" * 100, partition=0).result()
    parts = log.describe_topic("t").partitions
    assert parts[0].high_watermark == 2 and parts[0].segments == 2 and parts[0].bytes > 200
    assert parts[1].high_watermark == 0 and parts[1].segments == 0 and parts[1].bytes == 0


def test_duplicate_topic_is_rejected(log: ObjectLog) -> None:
    log.create_topic("t", partitions=2)
    with pytest.raises(TopicExists):
        log.create_topic("t", partitions=5)
    assert log.topic("t").partitions == 2


@pytest.mark.parametrize(
    "config",
    [
        pytest.param({"retention.mss": "1"}, id="unknown-key"),
        pytest.param({"retention.ms": "soon"}, id="not-a-number"),
        pytest.param({"retention.ms": "-2"}, id="below-minimum"),
        pytest.param({"cleanup.policy": "archive"}, id="bad-policy"),
        pytest.param({"max.message.bytes": str(2**31)}, id="int32-overflow"),
        pytest.param({"message.timestamp.type": "Whenever"}, id="bad-timestamp-type"),
    ],
)
def test_bad_config_is_rejected_and_nothing_is_stored(log: ObjectLog, config: dict) -> None:
    with pytest.raises(InvalidConfig) as error:
        log.create_topic("t", config=config)
    assert error.value.field == next(iter(config))
    assert log.list_topics() == []
    with pytest.raises(TopicNotFound):
        log.topic("t")


@pytest.mark.parametrize("partitions", [0, -1, 10_001, 1.5, "3", True])
def test_bad_partition_counts(log: ObjectLog, partitions: object) -> None:
    with pytest.raises(InvalidRequest):
        log.create_topic("t", partitions=partitions)  # type: ignore[arg-type]
    assert log.list_topics() == []


def test_alter_config_sets_and_resets(log: ObjectLog) -> None:
    log.create_topic("t", config={"retention.ms": "1000"})
    altered = log.alter_topic_config(
        "t", set={"cleanup.policy": "delete,compact"}, delete=["retention.ms"]
    )
    assert altered.config.get("cleanup.policy") == "compact,delete"
    assert altered.config.get("retention.ms") == DEFAULTS["retention.ms"]
    with pytest.raises(InvalidConfig):
        log.alter_topic_config("t", set={"nope": "1"})
    with pytest.raises(TopicNotFound):
        log.alter_topic_config("missing", set={"retention.ms": "1"})


def test_add_partitions(log: ObjectLog) -> None:
    log.create_topic("t", partitions=2)
    with log.producer() as producer:
        with pytest.raises(UnknownPartition):
            producer.send("t", b"v", partition=3).result()
        assert log.add_partitions("t", 4).partitions == 4
        log.forget_topic("t")
        assert producer.send("t", b"v", partition=3).result().offset == 0
    with pytest.raises(InvalidRequest):
        log.add_partitions("t", 3)
    assert len(log.describe_topic("t").partitions) == 4


def test_recreated_topic_starts_empty(log: ObjectLog) -> None:
    log.create_topic("t")
    with log.producer() as producer:
        producer.send("t", b"old").result()
    log.delete_topic("t")
    log.create_topic("t")
    assert log.offsets("t", 0).latest == 0
    with log.producer() as producer:
        assert producer.send("t", b"new").result().offset == 0
    assert [r.value for r in log.fetch("t", 0, 0).records] == [b"new"]
