"""Leaders, replicas and log dirs over the wire, as a one-broker Kafka 3.9 answers them:
ElectLeaders finds every leader already preferred, DescribeLogDirs reports the one log dir (the
bucket and prefix) with each partition's bytes in the index, AlterReplicaLogDirs accepts only
that log dir, AlterPartitionReassignments only the one broker, and no reassignment is ever
listed. With kafka-python's and confluent-kafka's admin clients and raw frames (for what the
clients do not show: messages, null topic lists, versions).

One agent serves the whole module (each test has topics of its own), to keep it fast.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.errors import StorageUnavailable
from objectlog.kafka.handlers import (
    ALTER_PARTITION_REASSIGNMENTS,
    DESCRIBE_LOG_DIRS,
    ELECT_LEADERS,
    LIST_PARTITION_REASSIGNMENTS,
)
from objectlog.kafka.server import AgentThread
from tests.kafka_agent_config import agent_config
from tests.kafka_frames import answer

PREFERRED, UNCLEAN = 0, 1
NOT_NEEDED = "Leader election not needed for topic partition."
PREFIX = "cluster-admin/"


@pytest.fixture(scope="module")
def log(aws_endpoint: str) -> Iterator[ObjectLog]:
    """A deployment of its own, under a prefix: the log dir names both."""
    suffix = uuid.uuid4().hex[:12]
    config = Config.from_env(bucket=f"objectlog-test-{suffix}", table=f"objectlog-test-{suffix}")
    with ObjectLog(replace(config, prefix=PREFIX)) as objectlog:
        objectlog.ensure_resources()
        yield objectlog


@pytest.fixture(scope="module")
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    running = AgentThread(log, agent_config()).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def admin(agent: AgentThread) -> Iterator[Any]:
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=agent.address, client_id="cluster-admin-test")
    yield client
    client.close()


def new_topic(log: ObjectLog, partitions: int) -> str:
    name = f"cluster-{uuid.uuid4().hex[:8]}"
    log.create_topic(name, partitions=partitions)
    return name


def produce(log: ObjectLog, topic: str, counts: dict[int, int]) -> None:
    with log.producer() as producer:
        for partition, count in counts.items():
            for i in range(count):
                producer.send(topic, b"value-%d" % i, key=b"k", partition=partition)


def partition_results(response: Any) -> dict[tuple[str, int], tuple[int, str | None]]:
    """An ElectLeaders answer (kafka-python's or kio's) by topic and partition."""
    return {
        (topic.topic, p.partition_id): (p.error_code, p.error_message)
        for topic in response.replica_election_results
        for p in topic.partition_result
    }


# ---- ElectLeaders ---------------------------------------------------------------------------


def test_kafka_python_elects_no_leader_as_every_one_is_preferred_already(
    admin: Any, log: ObjectLog
) -> None:
    name = new_topic(log, 2)
    for election_type in (PREFERRED, UNCLEAN):
        response = admin.elect_leaders(election_type, {name: [0, 1]})
        assert partition_results(response) == {
            (name, 0): (ErrorCode.election_not_needed, NOT_NEEDED),
            (name, 1): (ErrorCode.election_not_needed, NOT_NEEDED),
        }
    response = admin.elect_leaders(PREFERRED, {name: [2], "no-such-topic": [0]}, raise_errors=False)
    assert partition_results(response) == {
        (name, 2): (ErrorCode.unknown_topic_or_partition, f"No such partition as {name}-2"),
        ("no-such-topic", 0): (
            ErrorCode.unknown_topic_or_partition,
            "No such topic as no-such-topic",
        ),
    }


def test_confluent_kafka_elects_no_leader(agent: AgentThread, log: ObjectLog) -> None:
    from confluent_kafka import ElectionType, KafkaError, TopicPartition
    from confluent_kafka.admin import AdminClient

    name = new_topic(log, 2)
    client = AdminClient({"bootstrap.servers": agent.address})
    asked = [TopicPartition(name, 0), TopicPartition(name, 1), TopicPartition(name, 5)]
    results = client.elect_leaders(ElectionType.PREFERRED, asked).result(timeout=10)
    codes = {(tp.topic, tp.partition): error.code() for tp, error in results.items()}
    assert codes == {
        (name, 0): KafkaError.ELECTION_NOT_NEEDED,
        (name, 1): KafkaError.ELECTION_NOT_NEEDED,
        (name, 5): KafkaError.UNKNOWN_TOPIC_OR_PART,
    }
    # every partition: Kafka lists only those whose election was needed, so none
    assert client.elect_leaders(ElectionType.UNCLEAN, None).result(timeout=10) == {}


def test_elect_leaders_for_every_partition_and_of_an_unknown_type(
    agent: AgentThread, log: ObjectLog
) -> None:
    name = new_topic(log, 3)
    every = answer(
        agent.address, ELECT_LEADERS, 2, {"election_type": PREFERRED, "topic_partitions": None}
    )
    assert every.error_code == ErrorCode.none
    assert [(t.topic, t.partition_result) for t in every.replica_election_results] == [
        (topic, ()) for topic in log.list_topics()
    ]
    assert name in {t.topic for t in every.replica_election_results}

    asked = {"election_type": 2, "topic_partitions": [{"topic": name, "partitions": [0, 1]}]}
    refused = answer(agent.address, ELECT_LEADERS, 2, asked)
    assert refused.error_code == ErrorCode.invalid_request
    assert partition_results(refused) == {
        (name, p): (ErrorCode.invalid_request, "Unknown election type 2") for p in (0, 1)
    }

    v0 = answer(
        agent.address, ELECT_LEADERS, 0, {"topic_partitions": [asked["topic_partitions"][0]]}
    )
    assert partition_results(v0) == {
        (name, p): (ErrorCode.election_not_needed, NOT_NEEDED) for p in (0, 1)
    }


# ---- DescribeLogDirs, AlterReplicaLogDirs ------------------------------------------------------


def test_kafka_python_describes_the_one_log_dir_with_each_partitions_bytes(
    admin: Any, log: ObjectLog
) -> None:
    name = new_topic(log, 3)
    produce(log, name, {0: 5, 1: 50})
    sizes = {p.partition: p.bytes for p in log.describe_topic(name).partitions}
    assert sizes[0] > 0 and sizes[1] > sizes[0] and sizes[2] == 0

    described = admin.describe_log_dirs({name: [0, 1, 2, 7], "no-such-topic": [0]})
    assert described == [
        {
            "broker": 1,
            "log_dirs": [
                {
                    "error_code": 0,
                    "log_dir": f"s3://{log.config.bucket}/cluster-admin",
                    "topics": [
                        {
                            "name": name,
                            "partitions": [
                                {
                                    "partition_index": p,
                                    "partition_size": sizes[p],
                                    "offset_lag": 0,
                                    "is_future_key": False,
                                }
                                for p in (0, 1, 2)
                            ],
                        }
                    ],
                    "total_bytes": -1,
                    "usable_bytes": -1,
                }
            ],
        }
    ]
    only_one = admin.describe_log_dirs({name: [1]})[0]["log_dirs"][0]["topics"]
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in only_one] == [
        (name, [1])
    ]


def test_describe_log_dirs_of_every_partition_reads_each_topic_once(
    agent: AgentThread, log: ObjectLog
) -> None:
    """Null topics: every partition of every topic, from the topic list (a GetItem and a
    BatchGetItem) and, per topic, its item and one BatchGetItem of its heads; no index is
    spilled here, so no object is read."""
    name = new_topic(log, 4)
    produce(log, name, {3: 2})
    topics = log.list_topics()
    calls: list[str] = []
    hooks = [
        (log.metadata.client.meta.events, "before-call.dynamodb", _counter(calls, "dynamodb")),
        (log.store.client.meta.events, "before-call.s3", _counter(calls, "s3")),
    ]
    for events, event, count in hooks:
        events.register(event, count)
    try:
        described = answer(agent.address, DESCRIBE_LOG_DIRS, 4, {"topics": None})
    finally:
        for events, event, count in hooks:
            events.unregister(event, count)
    [result] = described.results
    assert (result.error_code, result.total_bytes, result.usable_bytes) == (ErrorCode.none, -1, -1)
    listed = {
        t.name: [(p.partition_index, p.partition_size) for p in t.partitions] for t in result.topics
    }
    assert set(listed) == set(topics)
    sizes = {p.partition: p.bytes for p in log.describe_topic(name).partitions}
    assert listed[name] == sorted(sizes.items()) and sizes[3] > 0
    assert sorted(calls) == sorted(
        ["dynamodb.GetItem", "dynamodb.BatchGetItem"] * (1 + len(topics))
    ), calls


def _counter(calls: list[str], service: str) -> Any:
    return lambda model, **_: calls.append(f"{service}.{model.name}")


def test_describe_log_dirs_at_its_first_version(agent: AgentThread, log: ObjectLog) -> None:
    name = new_topic(log, 1)
    asked = {"topics": [{"topic": name, "partitions": [0]}]}
    [result] = answer(agent.address, DESCRIBE_LOG_DIRS, 1, asked).results
    assert result.log_dir == f"s3://{log.config.bucket}/cluster-admin"
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in result.topics] == [
        (name, [0])
    ]


def test_a_storage_error_fails_the_log_dir_and_each_partition_asked_for(
    agent: AgentThread, log: ObjectLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Kafka answers a log dir it cannot read (KAFKA_STORAGE_ERROR), not as if the
    partitions did not exist."""
    name = new_topic(log, 1)

    def unavailable(*_: Any, **__: Any) -> Any:
        raise StorageUnavailable("DynamoDB is unavailable")

    monkeypatch.setattr(log, "describe_topic", unavailable)
    monkeypatch.setattr(log, "topic", unavailable)
    asked = [{"topic": name, "partitions": [0]}]
    [result] = answer(agent.address, DESCRIBE_LOG_DIRS, 4, {"topics": asked}).results
    assert (result.error_code, result.topics) == (ErrorCode.kafka_storage_error, ())
    elected = answer(
        agent.address, ELECT_LEADERS, 2, {"election_type": PREFERRED, "topic_partitions": asked}
    )
    assert partition_results(elected) == {
        (name, 0): (ErrorCode.kafka_storage_error, "DynamoDB is unavailable")
    }


def test_kafka_python_moves_a_replica_only_to_the_one_log_dir(admin: Any, log: ObjectLog) -> None:
    from kafka.errors import LogDirNotFoundError, NoError, UnknownTopicOrPartitionError
    from kafka.structs import TopicPartitionReplica

    name = new_topic(log, 2)
    log_dir = admin.describe_log_dirs({name: [0]})[0]["log_dirs"][0]["log_dir"]
    moves = {
        TopicPartitionReplica(name, 0, 1): log_dir,
        TopicPartitionReplica(name, 1, 1): "/var/lib/kafka/data",
        TopicPartitionReplica(name, 2, 1): log_dir,
        TopicPartitionReplica("no-such-topic", 0, 1): log_dir,
        TopicPartitionReplica("no-such-topic", 1, 1): "/tmp",
    }
    assert admin.alter_replica_log_dirs(moves) == {
        TopicPartitionReplica(name, 0, 1): NoError,
        TopicPartitionReplica(name, 1, 1): LogDirNotFoundError,
        TopicPartitionReplica(name, 2, 1): UnknownTopicOrPartitionError,
        TopicPartitionReplica("no-such-topic", 0, 1): UnknownTopicOrPartitionError,
        TopicPartitionReplica("no-such-topic", 1, 1): LogDirNotFoundError,
    }


# ---- AlterPartitionReassignments, ListPartitionReassignments -----------------------------------


def test_kafka_python_reassigns_only_to_the_one_broker_and_lists_none(
    admin: Any, log: ObjectLog
) -> None:
    from kafka import TopicPartition
    from kafka.errors import (
        InvalidReplicationAssignmentError,
        NoReassignmentInProgressError,
        UnknownTopicOrPartitionError,
    )

    name = new_topic(log, 3)
    asked = {
        TopicPartition(name, 0): [1],
        TopicPartition(name, 1): None,
        TopicPartition(name, 2): [1, 2],
        TopicPartition(name, 3): [1],
        TopicPartition("no-such-topic", 0): [1],
    }
    assert admin.alter_partition_reassignments(asked) == {
        TopicPartition(name, 0): None,
        TopicPartition(name, 1): NoReassignmentInProgressError,
        TopicPartition(name, 2): InvalidReplicationAssignmentError,
        TopicPartition(name, 3): UnknownTopicOrPartitionError,
        TopicPartition("no-such-topic", 0): UnknownTopicOrPartitionError,
    }
    assert admin.list_partition_reassignments() == {}
    assert admin.list_partition_reassignments([TopicPartition(name, 0)]) == {}


def test_reassignments_are_refused_with_kafkas_messages(agent: AgentThread, log: ObjectLog) -> None:
    name = new_topic(log, 5)
    replicas = {0: [2], 1: [1, 1], 2: [], 3: None, 4: [1], 9: [1]}
    asked = {
        "topics": [
            {
                "name": name,
                "partitions": [{"partition_index": p, "replicas": r} for p, r in replicas.items()],
            },
            {"name": "no-such-topic", "partitions": [{"partition_index": 0, "replicas": [1]}]},
        ]
    }
    response = answer(agent.address, ALTER_PARTITION_REASSIGNMENTS, 0, asked)
    assert (response.error_code, response.error_message) == (ErrorCode.none, None)
    results = {
        (t.name, p.partition_index): (p.error_code, p.error_message)
        for t in response.responses
        for p in t.partitions
    }
    invalid = ErrorCode.invalid_replica_assignment
    unknown = ErrorCode.unknown_topic_or_partition
    assert results == {
        (name, 0): (
            invalid,
            "The manual partition assignment includes broker 2, but no such broker is registered.",
        ),
        (name, 1): (
            invalid,
            "The manual partition assignment includes the broker 1 more than once.",
        ),
        (name, 2): (invalid, "The manual partition assignment includes an empty replica list."),
        (name, 3): (ErrorCode.no_reassignment_in_progress, None),
        (name, 4): (ErrorCode.none, None),
        (name, 9): (unknown, f"Unable to find partition {name}:9."),
        ("no-such-topic", 0): (unknown, "Unable to find a topic named no-such-topic."),
    }
    listed = answer(agent.address, LIST_PARTITION_REASSIGNMENTS, 0, {"topics": None})
    assert (listed.error_code, listed.error_message, listed.topics) == (ErrorCode.none, None, ())
