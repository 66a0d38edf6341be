"""Topic and broker configs over the wire, as Kafka's clients use them: every topic config Kafka
3.9 defines is accepted, validated as Kafka validates it and described back with its type,
source, synonyms and documentation; the broker reports the deployment's settings; the legacy
AlterConfigs replaces a topic's overrides; DescribeTopicPartitions pages; replica assignments
that name the one broker are accepted; ListConfigResources lists topics and the broker.

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
from objectlog.errors import TopicNotFound
from objectlog.format.topics import DEFAULTS
from objectlog.kafka.handlers import (
    ALTER_CONFIGS,
    DESCRIBE_CONFIGS,
    DESCRIBE_TOPIC_PARTITIONS,
    INCREMENTAL_ALTER_CONFIGS,
    LIST_CONFIG_RESOURCES,
)
from objectlog.kafka.server import AgentThread
from tests.kafka_agent_config import agent_config
from tests.kafka_frames import answer

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
KAFKAS_CONFIGS = {
    "segment.ms": "3600000",
    "segment.bytes": "536870912",
    "compression.type": "zstd",
    "min.insync.replicas": "2",
    "min.cleanable.dirty.ratio": "0.25",
    "flush.messages": "10000",
    "unclean.leader.election.enable": "true",
    "cleanup.policy": "compact,delete",
}


@pytest.fixture(scope="module")
def log(aws_endpoint: str) -> Iterator[ObjectLog]:
    """A log whose deployment creates topics on first use with 3 partitions (as the broker
    configs must then report)."""
    suffix = uuid.uuid4().hex[:12]
    config = Config.from_env(bucket=f"objectlog-test-{suffix}", table=f"objectlog-test-{suffix}")
    config = replace(config, auto_create_topics=True, num_partitions=3)
    with ObjectLog(config) as objectlog:
        objectlog.ensure_resources()
        yield objectlog


@pytest.fixture(scope="module")
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    running = AgentThread(log, agent_config(initial_rebalance_delay_ms=1234)).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def admin(agent: AgentThread) -> Iterator[Any]:
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=agent.address, client_id="configs-test")
    yield client
    client.close()


def confluent(agent: AgentThread) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": agent.address})


def described(address: str, resources: list[tuple[int, str, list[str] | None]], **flags: bool):
    body = {
        "resources": [
            {"resource_type": kind, "resource_name": name, "configuration_keys": keys}
            for kind, name, keys in resources
        ],
        **flags,
    }
    return answer(address, DESCRIBE_CONFIGS, 4, body).results


# ---- topic configs ------------------------------------------------------------------------


def test_kafkas_topic_configs_are_stored_and_described_back_with_types_and_sources(
    log: ObjectLog, admin: Any
) -> None:
    from kafka.errors import InvalidConfigurationError

    admin.create_topics({"kafka-configs": {"num_partitions": 2, "configs": KAFKAS_CONFIGS}})
    assert log.topic("kafka-configs", fresh=True).config.overrides == KAFKAS_CONFIGS

    configs = topic_configs(admin, "kafka-configs", config_filter="all")
    assert set(configs) == set(DEFAULTS)  # every config, Kafka's and objectlog's
    types = {key: configs[key]["config_type"] for key in KAFKAS_CONFIGS}
    assert types == {
        "segment.ms": "LONG",
        "segment.bytes": "INT",
        "compression.type": "STRING",
        "min.insync.replicas": "INT",
        "min.cleanable.dirty.ratio": "DOUBLE",
        "flush.messages": "LONG",
        "unclean.leader.election.enable": "BOOLEAN",
        "cleanup.policy": "LIST",
    }
    assert {key: configs[key]["value"] for key in KAFKAS_CONFIGS} == KAFKAS_CONFIGS
    sources = {key: entry["config_source"] for key, entry in configs.items()}
    assert {sources[key] for key in KAFKAS_CONFIGS} == {"DYNAMIC_TOPIC_CONFIG"}
    assert sources["retention.ms"] == sources["objectlog.table.lag.ms"] == "DEFAULT_CONFIG"
    assert not any(entry["read_only"] or entry["is_sensitive"] for entry in configs.values())
    # kafka-python's default filter: what differs from the defaults, exactly what was set
    assert set(topic_configs(admin, "kafka-configs")) == set(KAFKAS_CONFIGS)
    unknown = {"unknown-config": {"configs": {"segment.msec": "1"}}}
    with pytest.raises(InvalidConfigurationError, match=r"Unknown topic config name: segment\.ms"):
        admin.create_topics(unknown)
    assert "unknown-config" not in log.list_topics()


@pytest.mark.parametrize(
    ("key", "good", "bad"),
    [
        ("segment.ms", "1", "0"),  # below Kafka's minimum of 1
        ("segment.bytes", "2147483647", "2147483648"),  # not an INT
        ("compression.type", "gzip", "brotli"),
        ("min.cleanable.dirty.ratio", "1", "1.5"),
        ("min.insync.replicas", "3", "two"),
        ("unclean.leader.election.enable", "TRUE", "yes"),
        ("leader.replication.throttled.replicas", "*", "0-1"),
        ("message.format.version", "2.8", "9.9"),
        ("remote.storage.enable", "false", "true"),  # no tiered storage, as Kafka without it
    ],
)
def test_a_kafka_config_is_validated_as_kafka_validates_it_and_a_bad_value_stores_nothing(
    log: ObjectLog, agent: AgentThread, key: str, good: str, bad: str
) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    client = confluent(agent)
    name = f"checked-{key}"
    [accepted, refused] = client.create_topics(
        [NewTopic(name, 1, config={key: good}), NewTopic(f"{name}-bad", 1, config={key: bad})]
    ).values()
    accepted.result(timeout=10)
    assert key in log.topic(name, fresh=True).config.overrides
    with pytest.raises(KafkaException) as error:
        refused.result(timeout=10)
    assert error.value.args[0].code() == KafkaError.INVALID_CONFIG, error.value
    assert f"Invalid value {bad} for configuration {key}" in str(error.value)
    with pytest.raises(TopicNotFound):
        log.topic(f"{name}-bad", fresh=True)


def test_an_altered_config_is_checked_against_the_topics_other_configs(
    log: ObjectLog, agent: AgentThread
) -> None:
    """Kafka checks the configs a change leaves, not the change alone."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    log.create_topic("lagging", config={"max.compaction.lag.ms": "1000"})
    lag = ConfigEntry("min.compaction.lag.ms", "5000", incremental_operation=AlterConfigOpType.SET)
    change = ConfigResource("TOPIC", "lagging", incremental_configs=[lag])
    client = confluent(agent)
    with pytest.raises(KafkaException) as refused:
        client.incremental_alter_configs([change])[change].result(timeout=10)
    assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert "min.compaction.lag.ms (5000) > max.compaction.lag.ms (1000)" in str(refused.value)
    assert log.topic("lagging", fresh=True).config.overrides == {"max.compaction.lag.ms": "1000"}


def test_append_and_subtract_work_on_list_configs_only(log: ObjectLog, agent: AgentThread) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    log.create_topic("listed", config={"cleanup.policy": "compact,delete"})
    client = confluent(agent)

    def alter(*entries: ConfigEntry) -> None:
        change = ConfigResource("TOPIC", "listed", incremental_configs=list(entries))
        client.incremental_alter_configs([change])[change].result(timeout=10)

    alter(
        ConfigEntry(
            "leader.replication.throttled.replicas",
            "0:1,1:1",
            incremental_operation=AlterConfigOpType.APPEND,
        ),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SUBTRACT),
    )
    assert log.topic("listed", fresh=True).config.overrides == {
        "cleanup.policy": "delete",
        "leader.replication.throttled.replicas": "0:1,1:1",
    }
    with pytest.raises(KafkaException) as refused:
        alter(ConfigEntry("segment.ms", "1", incremental_operation=AlterConfigOpType.APPEND))
    assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert "because its type is not LIST" in str(refused.value)


def test_synonyms_and_documentation_are_kafkas(log: ObjectLog, agent: AgentThread) -> None:
    log.create_topic("synonyms", config={"retention.ms": "3600000"})
    keys = ["retention.ms", "segment.ms", "max.message.bytes", "compression.type"]
    [result] = described(
        agent.address,
        [(TOPIC, "synonyms", keys)],
        include_synonyms=True,
        include_documentation=True,
    )
    entries = {entry.name: entry for entry in result.configs}
    assert list(entries) == sorted(keys)

    def chain(key: str) -> list[tuple[str, str | None, int]]:
        return [(s.name, s.value, s.source) for s in entries[key].synonyms]

    assert chain("retention.ms") == [
        ("retention.ms", "3600000", DYNAMIC_TOPIC_CONFIG),
        ("log.retention.ms", "604800000", DEFAULT_CONFIG),
        ("log.retention.hours", "168", DEFAULT_CONFIG),
    ]
    assert chain("max.message.bytes") == [("message.max.bytes", "1048588", DEFAULT_CONFIG)]
    assert chain("segment.ms") == []  # log.roll.ms has no default: Kafka lists none
    assert chain("compression.type") == [("compression.type", "producer", DEFAULT_CONFIG)]
    assert entries["retention.ms"].config_source == DYNAMIC_TOPIC_CONFIG
    assert entries["max.message.bytes"].config_source == DEFAULT_CONFIG
    assert "MESSAGE_TOO_LARGE" in entries["max.message.bytes"].documentation
    assert "no effect here" in entries["compression.type"].documentation
    [plain] = described(agent.address, [(TOPIC, "synonyms", keys)])
    assert all(e.synonyms == () and e.documentation is None for e in plain.configs)


# ---- broker configs -----------------------------------------------------------------------


def test_the_broker_reports_the_deployments_settings(agent: AgentThread) -> None:
    from confluent_kafka.admin import ConfigSource

    resource = _confluent_resource("BROKER", "1")
    client = confluent(agent)
    entries = client.describe_configs([resource])[resource].result(timeout=10)
    host, port = agent.address.rsplit(":", 1)
    values = {name: entry.value for name, entry in entries.items()}
    assert values["broker.id"] == "1"
    assert values["auto.create.topics.enable"] == "true"  # the log's auto_create_topics
    assert values["num.partitions"] == "3"
    assert values["default.replication.factor"] == "1"
    assert values["group.initial.rebalance.delay.ms"] == "1234"
    assert values["listeners"] == values["advertised.listeners"] == f"PLAINTEXT://{host}:{port}"
    assert values["log.retention.ms"] == DEFAULTS["retention.ms"]
    assert values["log.retention.hours"] == "168"
    assert values["log.cleanup.policy"] == "delete"
    assert values["message.max.bytes"] == DEFAULTS["max.message.bytes"]
    static = entries["auto.create.topics.enable"]
    assert static.source == ConfigSource.STATIC_BROKER_CONFIG.value and static.is_read_only
    assert entries["log.retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value

    [raw] = described(
        agent.address,
        [(BROKER, "1", ["num.partitions", "log.retention.hours"])],
        include_synonyms=True,
        include_documentation=True,
    )
    chains = {e.name: [(s.name, s.value, s.source) for s in e.synonyms] for e in raw.configs}
    assert chains == {
        "num.partitions": [
            ("num.partitions", "3", STATIC_BROKER_CONFIG),  # this deployment's
            ("num.partitions", "1", DEFAULT_CONFIG),  # Kafka's
        ],
        "log.retention.hours": [("log.retention.hours", "168", DEFAULT_CONFIG)],
    }
    assert {e.name: e.config_type for e in raw.configs} == {
        "num.partitions": 3,  # INT
        "log.retention.hours": 3,
    }
    assert all(e.documentation for e in raw.configs)


def test_other_broker_ids_the_default_broker_and_loggers_answer_as_kafka(
    agent: AgentThread,
) -> None:
    resources = [(BROKER, "2"), (BROKER, ""), (BROKER_LOGGER, "1"), (BROKER_LOGGER, "2")]
    other, default, loggers, other_loggers = described(
        agent.address, [(kind, name, None) for kind, name in resources]
    )
    assert (other.error_code, other.error_message) == (
        ErrorCode.invalid_request,
        "Unexpected broker id, expected 1 or empty string, but received 2",
    )
    assert (default.error_code, default.configs) == (ErrorCode.none, ())  # no dynamic defaults
    assert (loggers.error_code, loggers.configs) == (ErrorCode.none, ())  # no log4j loggers
    assert other_loggers.error_code == ErrorCode.invalid_request

    def change(kind: int, name: str, key: str) -> dict[str, Any]:
        config = {"name": key, "config_operation": 0, "value": "6"}  # SET
        return {"resource_type": kind, "resource_name": name, "configs": [config]}

    body = {
        "resources": [
            change(BROKER, "1", "num.partitions"),
            change(BROKER_LOGGER, "1", "root"),
            change(TOPIC, "absent", "retention.ms"),
        ],
        "validate_only": False,
    }
    broker, logger, topic = answer(agent.address, INCREMENTAL_ALTER_CONFIGS, 1, body).responses
    assert (broker.error_code, broker.error_message.split(" (")[0]) == (
        ErrorCode.invalid_request,
        "Cannot update these configs dynamically: Set(num.partitions)",
    )
    assert (logger.error_code, logger.error_message) == (
        ErrorCode.invalid_config,
        "Logger root does not exist!",
    )
    assert topic.error_code == ErrorCode.unknown_topic_or_partition


def test_one_request_for_the_broker_and_a_topic_answers_both(
    log: ObjectLog, agent: AgentThread, admin: Any
) -> None:
    log.create_topic("mixed", config={"segment.ms": "60000"})
    answered = admin.describe_configs(
        [_resource("BROKER", "1"), _resource("TOPIC", "mixed"), _resource("TOPIC", "absent")],
        config_filter="all",
    )
    assert answered["broker"]["1"]["num.partitions"]["value"] == "3"
    assert answered["broker"]["1"]["num.partitions"]["config_source"] == "STATIC_BROKER_CONFIG"
    assert answered["topic"]["mixed"]["segment.ms"]["value"] == "60000"
    assert answered["topic"]["absent"] == {}
    broker, topic, absent = described(
        agent.address, [(BROKER, "1", ["broker.id"]), (TOPIC, "mixed", []), (TOPIC, "absent", None)]
    )
    assert [e.name for e in broker.configs] == ["broker.id"]
    assert len(topic.configs) == len(DEFAULTS)  # no keys named: every config, as Kafka
    assert absent.error_code == ErrorCode.unknown_topic_or_partition


# ---- the legacy AlterConfigs --------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")
def test_legacy_alter_configs_replaces_a_topics_overrides(
    log: ObjectLog, agent: AgentThread
) -> None:
    from confluent_kafka import KafkaError, KafkaException

    log.create_topic("replaced", config={"retention.ms": "1000", "segment.ms": "5000"})
    client = confluent(agent)
    new = _confluent_resource("TOPIC", "replaced", {"compression.type": "lz4"})
    client.alter_configs([new], validate_only=True)[new].result(timeout=10)
    assert log.topic("replaced", fresh=True).config.overrides == {
        "retention.ms": "1000",
        "segment.ms": "5000",
    }
    client.alter_configs([new])[new].result(timeout=10)
    assert log.topic("replaced", fresh=True).config.overrides == {"compression.type": "lz4"}

    bad = _confluent_resource("TOPIC", "replaced", {"compression.type": "lz5"})
    broker = _confluent_resource("BROKER", "1", {"num.partitions": "6"})
    futures = client.alter_configs([bad, broker])
    for resource, code in ((bad, KafkaError.INVALID_CONFIG), (broker, KafkaError.INVALID_REQUEST)):
        with pytest.raises(KafkaException) as refused:
            futures[resource].result(timeout=10)
        assert refused.value.args[0].code() == code
    assert "Cannot update these configs dynamically: Set(num.partitions)" in str(refused.value)
    assert log.topic("replaced", fresh=True).config.overrides == {"compression.type": "lz4"}


def test_kafka_pythons_non_incremental_alter_keeps_what_it_reads_back(
    log: ObjectLog, agent: AgentThread, admin: Any
) -> None:
    """kafka-python's alter_configs without IncrementalAlterConfigs describes the topic first
    and sends its modified configs along, because AlterConfigs resets what it does not name."""
    log.create_topic("kept", config={"segment.bytes": "1048576"})
    result = admin.alter_configs(
        [_resource("TOPIC", "kept", {"retention.ms": "7200000"})], incremental=False
    )
    assert result == {"topic": {"kept": "OK"}}
    assert log.topic("kept", fresh=True).config.overrides == {
        "segment.bytes": "1048576",
        "retention.ms": "7200000",
    }
    wire = answer(
        agent.address,
        ALTER_CONFIGS,
        0,
        {
            "resources": [
                {"resource_type": TOPIC, "resource_name": "kept", "configs": []},
                {"resource_type": TOPIC, "resource_name": "kept", "configs": []},
            ],
            "validate_only": False,
        },
    )
    assert [r.error_code for r in wire.responses] == [ErrorCode.invalid_request] * 2
    assert log.topic("kept", fresh=True).config.overrides != {}  # nothing was reset


# ---- DescribeTopicPartitions ------------------------------------------------------------


def test_describe_topic_partitions_pages_with_a_cursor(log: ObjectLog, admin: Any) -> None:
    log.create_topic("pages-a", partitions=3)
    log.create_topic("pages-b", partitions=2)
    first = admin.describe_topic_partitions(
        ["pages-b", "pages-a", "pages-missing"], response_partition_limit=4
    )
    assert partition_indexes(first) == [("pages-a", [0, 1, 2]), ("pages-b", [0])]
    assert first["next_cursor"] == {"topic_name": "pages-b", "partition_index": 1}
    partition = first["topics"][0]["partitions"][0]
    assert partition == {
        "error_code": 0,
        "partition_index": 0,
        "leader_id": 1,
        "leader_epoch": 0,
        "replica_nodes": [1],
        "isr_nodes": [1],
        "eligible_leader_replicas": None,  # an empty list, as kafka-python shows it
        "last_known_elr": None,
        "offline_replicas": [],
    }
    assert first["topics"][0]["topic_authorized_operations"] > 0
    rest = admin.describe_topic_partitions(
        ["pages-b", "pages-a", "pages-missing"], cursor=first["next_cursor"]
    )
    assert [(t["name"], t["error_code"], len(t["partitions"])) for t in rest["topics"]] == [
        ("pages-b", 0, 1),
        ("pages-missing", ErrorCode.unknown_topic_or_partition.value, 0),
    ]
    assert rest["next_cursor"] is None
    stray = admin.describe_topic_partitions(
        ["pages-a"], cursor={"topic_name": "pages-b", "partition_index": 0}
    )
    assert [t["error_code"] for t in stray["topics"]] == [ErrorCode.invalid_request.value]


def test_describe_topic_partitions_of_every_topic_stops_at_the_limit(
    log: ObjectLog, agent: AgentThread
) -> None:
    log.create_topic("pages-c", partitions=2)
    body = {"topics": [], "response_partition_limit": 2, "cursor": None}
    page = answer(agent.address, DESCRIBE_TOPIC_PARTITIONS, 0, body)
    names = [t.name for t in page.topics]
    assert names == sorted(names) and len(page.topics[0].partitions) <= 2
    assert page.next_cursor is not None  # the module's topics hold more than 2 partitions


# ---- replica assignments ----------------------------------------------------------------


def test_assignments_naming_the_one_broker_are_accepted_and_others_refused(
    log: ObjectLog, admin: Any
) -> None:
    from kafka.errors import InvalidReplicationAssignmentError, InvalidReplicationFactorError

    [created] = admin.create_topics({"assigned": {"assignments": {0: [1], 1: [1]}}})["topics"]
    shown = ("error_code", "num_partitions", "replication_factor")
    assert [created[key] for key in shown] == [0, 2, 1]
    assert log.topic("assigned", fresh=True).partitions == 2
    admin.create_partitions({"assigned": {"count": 4, "assignments": [[1], [1]]}})
    assert log.topic("assigned", fresh=True).partitions == 4

    with pytest.raises(InvalidReplicationAssignmentError, match="includes broker 2, but no such"):
        admin.create_partitions({"assigned": {"count": 5, "assignments": [[1, 2]]}})
    with pytest.raises(InvalidReplicationAssignmentError, match="includes broker 2, but no such"):
        admin.create_topics({"elsewhere": {"assignments": {0: [2]}}})
    with pytest.raises(InvalidReplicationFactorError, match="only 1 broker"):
        admin.create_topics({"tripled": {"num_partitions": 1, "replication_factor": 3}})
    assert log.topic("assigned", fresh=True).partitions == 4
    assert "elsewhere" not in log.list_topics() and "tripled" not in log.list_topics()
    defaulted = admin.create_topics({"defaulted": {"replication_factor": 1}})
    assert defaulted["topics"][0]["num_partitions"] == 3  # the deployment's num.partitions


def test_confluent_kafka_creates_partitions_with_an_assignment(
    log: ObjectLog, agent: AgentThread
) -> None:
    from confluent_kafka.admin import NewPartitions, NewTopic

    client = confluent(agent)
    [created] = client.create_topics(
        [NewTopic("assigned-ck", 2, replica_assignment=[[1], [1]])]
    ).values()
    created.result(timeout=10)
    [grown] = client.create_partitions(
        [NewPartitions("assigned-ck", 3, replica_assignment=[[1]])]
    ).values()
    grown.result(timeout=10)
    assert log.topic("assigned-ck", fresh=True).partitions == 3


# ---- ListConfigResources ----------------------------------------------------------------


def test_list_config_resources_lists_topics_and_the_broker(
    log: ObjectLog, agent: AgentThread, admin: Any
) -> None:
    log.create_topic("listed-resource")
    listed = admin.list_config_resources()
    assert "listed-resource" in listed["topic"]
    assert (listed["broker"], listed["broker_logger"]) == (["1"], ["1"])
    assert admin.list_config_resources(["BROKER"]) == {"broker": ["1"]}
    assert admin.list_config_resources(["CLIENT_METRICS"]) == {}
    v0 = answer(agent.address, LIST_CONFIG_RESOURCES, 0, {})
    assert (v0.error_code, v0.config_resources) == (ErrorCode.none, ())
    unknown = answer(agent.address, LIST_CONFIG_RESOURCES, 1, {"resource_types": [64]})
    assert unknown.error_code == ErrorCode.unsupported_version


# ---- helpers ------------------------------------------------------------------------------


def topic_configs(admin: Any, topic: str, **options: Any) -> dict[str, dict[str, Any]]:
    """kafka-python's description of a topic's configs (by default: those overridden)."""
    return admin.describe_configs([_resource("TOPIC", topic)], **options)["topic"][topic]


def partition_indexes(page: dict[str, Any]) -> list[tuple[str, list[int]]]:
    return [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in page["topics"]]


def _resource(kind: str, name: str, configs: dict[str, str] | None = None) -> Any:
    from kafka.admin import ConfigResource

    return ConfigResource(kind, name, configs)


def _confluent_resource(kind: str, name: str, configs: dict[str, str] | None = None) -> Any:
    from confluent_kafka.admin import ConfigResource

    return ConfigResource(kind, name, set_config=configs)
