"""No bypass (issue 37): every API the agent offers, sent as User:ANONYMOUS (no ACL grants it
anything) naming a topic, group and transactional id that exist, is refused with Kafka's
``*_AUTHORIZATION_FAILED`` code or answers a list with nothing in it, and nothing it asked to
change changed. An API added to kafka.handlers.SUPPORTED without a case here fails the test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import fields, is_dataclass
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from objectlog import ObjectLog
from objectlog.groups import TopicPartition
from objectlog.kafka.context import topic_uuid
from objectlog.kafka.handlers import SUPPORTED
from objectlog.kafka.server import AgentThread
from objectlog.services.access import AccessSettings
from tests.kafka_agent_config import agent_config
from tests.kafka_frames import answer, answer_frame, request

SECRET, GROUP, TXN = "secret", "secret-group", "secret-tx"
AUTH_FAILED = {
    ErrorCode.topic_authorization_failed,
    ErrorCode.group_authorization_failed,
    ErrorCode.cluster_authorization_failed,
    ErrorCode.transactional_id_authorization_failed,
}
NOTHING_NEEDED = {17, 18, 36}  # SaslHandshake, ApiVersions, SaslAuthenticate
TOPIC_PARTITION_0 = [{"name": SECRET, "partitions": [{"partition_index": 0}]}]


@pytest.fixture
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    log.create_topic(SECRET, partitions=1)
    with log.producer() as producer:
        for i in range(3):
            producer.send(SECRET, f"secret {i}".encode(), partition=0)
    log.groups.commit(GROUP, {TopicPartition(SECRET, 0): 2})
    with log.producer(transactional_id=TXN) as txn:
        txn.init_transactions()
        txn.begin_transaction()
        txn.send(SECRET, b"in a transaction", partition=0)
        txn.commit_transaction()
    running = AgentThread(log, agent_config(access=AccessSettings(enabled=True))).start()
    yield running
    running.stop()


def cases(topic_id: uuid.UUID) -> list[tuple[int, dict[str, Any], str | None]]:
    """(API key, request at its newest version, the list that must come back empty — None:
    the answer must carry an authorization error)."""
    offsets = [{"name": SECRET, "partitions": [{"partition_index": 0, "committed_offset": 0}]}]
    return [
        (0, {"acks": -1, "timeout": 5000, "topic_data": [_produce_data()]}, None),
        (
            1,
            {
                "max_wait": 0,
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "topics": [
                    {
                        "topic_id": topic_id,
                        "partitions": [
                            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                        ],
                    }
                ],
            },
            None,
        ),
        (2, {"topics": [{"name": SECRET, "partitions": [{"partition_index": 0}]}]}, None),
        (3, {"topics": None}, "topics"),
        (3, {"topics": [{"name": SECRET}], "allow_auto_topic_creation": True}, None),
        (8, {"group_id": GROUP, "generation_id_or_member_epoch": -1, "topics": offsets}, None),
        (9, {"groups": [{"group_id": GROUP, "topics": None}]}, None),
        (10, {"key_type": 0, "coordinator_keys": [GROUP]}, None),
        (10, {"key_type": 1, "coordinator_keys": [TXN]}, None),
        (
            11,
            {
                "group_id": GROUP,
                "session_timeout": 10000,
                "rebalance_timeout": 10000,
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b""}],
            },
            None,
        ),
        (12, {"group_id": GROUP, "generation_id": 1, "member_id": "m"}, None),
        (13, {"group_id": GROUP, "members": [{"member_id": "m"}]}, None),
        (14, {"group_id": GROUP, "generation_id": 1, "member_id": "m"}, None),
        (15, {"groups": [GROUP]}, None),
        (16, {}, "groups"),
        (
            19,
            {"topics": [{"name": "new-topic", "num_partitions": 1, "replication_factor": 1}]},
            None,
        ),
        (20, {"topics": [{"name": SECRET}]}, None),
        (
            21,
            {"topics": [{"name": SECRET, "partitions": [{"partition_index": 0, "offset": 2}]}]},
            None,
        ),
        (22, {"transactional_id": None, "producer_id": -1, "producer_epoch": -1}, None),
        (22, {"transactional_id": TXN, "transaction_timeout": 60000, "producer_id": -1}, None),
        (
            24,
            {
                "v3_and_below_transactional_id": TXN,
                "v3_and_below_topics": [{"name": SECRET, "partitions": [0]}],
            },
            None,
        ),
        (25, {"transactional_id": TXN, "group_id": GROUP}, None),
        (26, {"transactional_id": TXN, "committed": True}, None),
        (28, {"transactional_id": TXN, "group_id": GROUP, "topics": offsets}, None),
        (
            29,
            {
                "resource_type_filter": 1,
                "pattern_type_filter": 1,
                "operation": 1,
                "permission_type": 1,
            },
            None,
        ),
        (
            30,
            {
                "creations": [
                    {
                        "resource_type": 2,
                        "resource_name": SECRET,
                        "resource_pattern_type": 3,
                        "principal": "User:ANONYMOUS",
                        "host": "*",
                        "operation": 2,
                        "permission_type": 3,
                    }
                ]
            },
            None,
        ),
        (
            31,
            {
                "filters": [
                    {
                        "resource_type_filter": 1,
                        "pattern_type_filter": 1,
                        "operation": 1,
                        "permission_type": 1,
                    }
                ]
            },
            None,
        ),
        (
            32,
            {
                "resources": [
                    {"resource_type": 2, "resource_name": SECRET, "configuration_keys": None},
                    {"resource_type": 4, "resource_name": "1", "configuration_keys": None},
                ]
            },
            None,
        ),
        (
            33,
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": SECRET,
                        "configs": [{"name": "retention.ms", "value": "1000"}],
                    }
                ]
            },
            None,
        ),
        (34, {"dirs": [{"path": "/data", "topics": [{"name": SECRET, "partitions": [0]}]}]}, None),
        (35, {"topics": None}, None),
        (
            37,
            {"topics": [{"name": SECRET, "count": 4, "assignments": None}], "timeout": 5000},
            None,
        ),
        (42, {"groups_names": [GROUP]}, None),
        (
            43,
            {"election_type": 0, "topic_partitions": [{"topic": SECRET, "partitions": [0]}]},
            None,
        ),
        (
            44,
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": SECRET,
                        "configs": [
                            {"name": "retention.ms", "config_operation": 0, "value": "1000"}
                        ],
                    }
                ]
            },
            None,
        ),
        (
            45,
            {"topics": [{"name": SECRET, "partitions": [{"partition_index": 0, "replicas": [1]}]}]},
            None,
        ),
        (46, {"topics": None}, None),
        (47, {"group_id": GROUP, "topics": TOPIC_PARTITION_0}, None),
        (60, {"include_cluster_authorized_operations": True}, None),
        (61, {"topics": [{"name": SECRET, "partition_indexes": [0]}]}, None),
        (65, {"transactional_ids": [TXN]}, None),
        (66, {}, "transaction_states"),
        (
            68,
            {
                "group_id": "secret-848",
                "member_id": uuid.uuid4().hex,
                "member_epoch": 0,
                "rebalance_timeout": 10000,
                "subscribed_topic_names": [SECRET],
                "topic_partitions": [],
            },
            None,
        ),
        (69, {"group_ids": [GROUP]}, None),
        (74, {"resource_types": []}, None),
        (75, {"topics": [{"name": SECRET}], "response_partition_limit": 100}, None),
    ]


def older_versions() -> list[tuple[int, int, dict[str, Any]]]:
    """Versions whose requests or answers are shaped otherwise than the newest's: (API key,
    version, request); each must be refused too."""
    fetch_topics = [
        {
            "topic": SECRET,
            "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}],
        }
    ]
    return [
        (1, 12, {"max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20, "topics": fetch_topics}),
        (9, 7, {"group_id": GROUP, "topics": [{"name": SECRET, "partition_indexes": [0]}]}),
        (9, 7, {"group_id": GROUP, "topics": None}),
        (10, 3, {"key_type": 0, "key": GROUP}),
        (10, 3, {"key_type": 1, "key": TXN}),
        (20, 5, {"topic_names": [SECRET], "timeout": 5000}),
        (15, 4, {"groups": [GROUP]}),
        (22, 1, {"transactional_id": None, "transaction_timeout": 60000}),
    ]


def _produce_data() -> dict[str, Any]:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, 0, None, b"planted", [])
    return {"name": SECRET, "partition_data": [{"index": 0, "records": bytes(builder.build())}]}


def _first_transaction_code(address: str, values: dict[str, Any]) -> ErrorCode:
    """DescribeTransactions v0's first state's error code: after the header (correlation id,
    tagged fields), the throttle time and the array's length (one byte for one state)."""
    data = answer_frame(address, request(65, 0, values))
    assert data is not None
    return ErrorCode(int.from_bytes(data[10:12], "big", signed=True))


def error_codes(entity: Any) -> list[ErrorCode]:
    """Every error code anywhere in a decoded answer."""
    found: list[ErrorCode] = []
    if isinstance(entity, tuple):
        for item in entity:
            found += error_codes(item)
    elif is_dataclass(entity):
        for spec in fields(entity):
            value = getattr(entity, spec.name)
            if isinstance(value, ErrorCode):
                found.append(value)
            elif isinstance(value, tuple) or is_dataclass(value):
                found += error_codes(value)
    return found


def test_every_api_refuses_an_unauthorized_principal(agent: AgentThread, log: ObjectLog) -> None:
    before = log.offsets(SECRET, 0)
    topic_id = topic_uuid(log.topic(SECRET).topic_id)
    checked = set()
    for key, values, empty_list in cases(topic_id):
        version = SUPPORTED[key][1]
        checked.add(key)
        if key == 65:  # kio cannot decode the -1 start time Kafka answers: read the code
            codes = {_first_transaction_code(agent.address, values)}
            assert codes == {ErrorCode.transactional_id_authorization_failed}
            continue
        got = answer(agent.address, key, version, values)
        if empty_list is not None:
            assert getattr(got, empty_list) == (), f"API {key} listed {getattr(got, empty_list)}"
            continue
        codes = set(error_codes(got))
        assert codes & AUTH_FAILED, f"API {key} v{version} was not refused: {got}"
        assert codes <= AUTH_FAILED | {ErrorCode.none}, f"API {key} answered {codes}: {got}"
    assert checked == set(SUPPORTED) - NOTHING_NEEDED
    for key, version, values in older_versions():
        got = answer(agent.address, key, version, values)
        codes = set(error_codes(got))
        assert codes & AUTH_FAILED, f"API {key} v{version} was not refused: {got}"
        assert codes <= AUTH_FAILED | {ErrorCode.none}, f"API {key} answered {codes}: {got}"
        assert "committed_offset=0" not in repr(got), "an offset shown to who may not see it"
    # nothing changed
    assert log.offsets(SECRET, 0) == before
    assert log.topic(SECRET, fresh=True).partitions == 1
    assert "new-topic" not in log.list_topics()
    retention = log.topic(SECRET, fresh=True).config.effective()["retention.ms"]
    assert str(retention) != "1000"
    committed = log.groups.committed(GROUP, [TopicPartition(SECRET, 0)])
    assert committed[TopicPartition(SECRET, 0)] is not None
    assert log.items.acls.list() == []
