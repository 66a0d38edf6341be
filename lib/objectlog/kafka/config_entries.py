"""Configs as Kafka's DescribeConfigs reports them (Kafka 3.9's ConfigHelper): each entry's
type, source, synonyms and documentation, for a topic's configs and for the one broker's.

A topic config's synonyms are its override (DYNAMIC_TOPIC_CONFIG), then the broker configs it
falls back to (ServerTopicConfigSynonyms: log.retention.ms, then log.retention.hours, for
retention.ms) with their values, as Kafka lists them: each one that has a value, from the first
name on (Kafka drops the ones before it, so segment.ms, whose log.roll.ms has no default, lists
none). The entry's source is its first synonym's, DEFAULT_CONFIG when there is none.

The broker's configs are those a Kafka broker reports that mean something here: the
deployment's settings (STATIC_BROKER_CONFIG: what server.properties would set) and the
broker-level defaults of the topic configs objectlog applies (DEFAULT_CONFIG). Every one is
read-only: objectlog changes none of them at run time (AlterConfigs refuses them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from objectlog.config import Config
from objectlog.format.topic_configs import (
    BOOLEAN,
    BY_NAME,
    INT,
    LIST,
    LONG,
    STRING,
    UNBOUNDED,
    ConfigType,
    TopicConfigSpec,
)
from objectlog.format.topics import DEFAULTS, Topic
from objectlog.kafka.context import Broker

# DescribeConfigsResponse's ConfigSource and ConfigType codes.
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
TYPE_CODES = {
    ConfigType.BOOLEAN: 1,
    ConfigType.STRING: 2,
    ConfigType.INT: 3,
    ConfigType.LONG: 5,
    ConfigType.DOUBLE: 6,
    ConfigType.LIST: 7,
}

# Kafka 3.9's ServerTopicConfigSynonyms, each list widened as DynamicBrokerConfig's
# brokerConfigSynonyms widens it (log.retention.ms, .minutes and .hours are one setting).
TOPIC_SYNONYMS: dict[str, tuple[str, ...]] = {
    "segment.bytes": ("log.segment.bytes",),
    "segment.ms": ("log.roll.ms", "log.roll.hours"),
    "segment.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "segment.index.bytes": ("log.index.size.max.bytes",),
    "flush.messages": ("log.flush.interval.messages",),
    "flush.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    "retention.bytes": ("log.retention.bytes",),
    "retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "max.message.bytes": ("message.max.bytes",),
    "index.interval.bytes": ("log.index.interval.bytes",),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms",),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms",),
    "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms",),
    "file.delete.delay.ms": ("log.segment.delete.delay.ms",),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio",),
    "cleanup.policy": ("log.cleanup.policy",),
    "unclean.leader.election.enable": ("unclean.leader.election.enable",),
    "min.insync.replicas": ("min.insync.replicas",),
    "compression.type": ("compression.type",),
    "compression.gzip.level": ("compression.gzip.level",),
    "compression.lz4.level": ("compression.lz4.level",),
    "compression.zstd.level": ("compression.zstd.level",),
    "preallocate": ("log.preallocate",),
    "message.format.version": ("log.message.format.version",),
    "message.timestamp.type": ("log.message.timestamp.type",),
    "message.timestamp.difference.max.ms": ("log.message.timestamp.difference.max.ms",),
    "message.timestamp.before.max.ms": ("log.message.timestamp.before.max.ms",),
    "message.timestamp.after.max.ms": ("log.message.timestamp.after.max.ms",),
    "message.downconversion.enable": ("log.message.downconversion.enable",),
    "local.retention.ms": ("log.local.retention.ms",),
    "local.retention.bytes": ("log.local.retention.bytes",),
}
# Broker configs whose default is not their topic config's: Kafka leaves the first three unset
# (None) and derives the value from the next synonym; objectlog states log.retention.ms.
_OTHER_BROKER_DEFAULTS: dict[str, str | None] = {
    "log.roll.ms": None,
    "log.roll.hours": "168",
    "log.roll.jitter.ms": None,
    "log.roll.jitter.hours": "0",
    "log.flush.interval.ms": None,
    "log.flush.scheduler.interval.ms": UNBOUNDED,
    "log.retention.minutes": None,
    "log.retention.hours": "168",
}
BROKER_DEFAULTS: dict[str, str | None] = {
    **{names[0]: DEFAULTS[key] for key, names in TOPIC_SYNONYMS.items()},
    **_OTHER_BROKER_DEFAULTS,
}


@dataclass(frozen=True)
class BrokerSetting:
    """One config of the broker, with its value here and Kafka's own default."""

    name: str
    type: ConfigType
    value: str | None
    source: int
    kafka_default: str | None
    doc: str


def topic_entry(
    topic: Topic, key: str, value: str, *, synonyms: bool, documentation: bool
) -> dict[str, Any]:
    """A topic config's DescribeConfigs entry (also CreateTopics' configs)."""
    spec = BY_NAME[key]
    chain = [_synonym(key, value, DYNAMIC_TOPIC_CONFIG)] if key in topic.config.overrides else []
    chain += _broker_synonyms(TOPIC_SYNONYMS.get(key, ()))
    return {
        "name": key,
        "value": value,
        "read_only": False,
        "config_source": chain[0]["source"] if chain else DEFAULT_CONFIG,
        "is_sensitive": False,
        "synonyms": chain if synonyms else [],
        "config_type": TYPE_CODES[spec.type],
        "documentation": topic_documentation(spec) if documentation else None,
    }


def topic_documentation(spec: TopicConfigSpec) -> str:
    if spec.effect.applies:
        return spec.doc
    return f"{spec.doc} Accepted and reported only, no effect here: {spec.effect.reason}."


def broker_settings(broker: Broker, config: Config) -> list[BrokerSetting]:
    """The broker configs the agent reports: the deployment's, then objectlog's defaults."""
    return [
        _static("broker.id", INT, broker.node_id, "-1", "The one broker every agent is."),
        _static(
            "listeners",
            STRING,
            broker.listener(broker.listen_host, broker.listen_port),
            "PLAINTEXT://:9092",
            "Where this agent listens (objectlog agent --listen).",
        ),
        _static(
            "advertised.listeners",
            STRING,
            broker.listener(broker.host, broker.port),
            None,
            "The address every agent advertises (--advertise): a load balancer's on AWS, "
            "where TLS is added in front of it.",
        ),
        _static(
            "auto.create.topics.enable",
            BOOLEAN,
            config.auto_create_topics,
            "true",
            "Create a topic a client's Metadata request names (OBJECTLOG_AUTO_CREATE_TOPICS).",
        ),
        _static(
            "num.partitions",
            INT,
            config.num_partitions,
            "1",
            "Partitions of a topic created on first use or without a count "
            "(OBJECTLOG_NUM_PARTITIONS).",
        ),
        _static(
            "default.replication.factor",
            INT,
            config.default_replication_factor,
            "1",
            "Accepted and reported, no effect: S3 keeps every object in several zones "
            "(OBJECTLOG_DEFAULT_REPLICATION_FACTOR).",
        ),
        _static(
            "group.initial.rebalance.delay.ms",
            INT,
            broker.initial_rebalance_delay_ms,
            "3000",
            "How long an empty classic group waits for more members before its first "
            "rebalance (--initial-rebalance-delay-ms).",
        ),
        _default("log.retention.ms", LONG, "retention.ms"),
        _default("log.retention.hours", INT, "retention.ms"),
        _default("log.retention.bytes", LONG, "retention.bytes"),
        _default("log.cleanup.policy", LIST, "cleanup.policy"),
        _default("log.cleaner.delete.retention.ms", LONG, "delete.retention.ms"),
        _default("log.cleaner.min.compaction.lag.ms", LONG, "min.compaction.lag.ms"),
        _default("message.max.bytes", INT, "max.message.bytes"),
        _default("log.message.timestamp.type", STRING, "message.timestamp.type"),
    ]


def broker_entry(setting: BrokerSetting, *, synonyms: bool, documentation: bool) -> dict[str, Any]:
    chain = _broker_setting_synonyms(setting)
    return {
        "name": setting.name,
        "value": setting.value,
        "read_only": True,
        "config_source": chain[0]["source"] if chain else DEFAULT_CONFIG,
        "is_sensitive": False,
        "synonyms": chain if synonyms else [],
        "config_type": TYPE_CODES[setting.type],
        "documentation": setting.doc if documentation else None,
    }


def _static(
    name: str, kind: ConfigType, value: object, kafka_default: str | None, doc: str
) -> BrokerSetting:
    shown = str(value).lower() if isinstance(value, bool) else str(value)
    return BrokerSetting(name, kind, shown, STATIC_BROKER_CONFIG, kafka_default, doc)


def _default(name: str, kind: ConfigType, topic_key: str) -> BrokerSetting:
    """A broker-level default of a topic config objectlog applies: the value every topic
    without an override of it has (not settable per deployment)."""
    doc = f"The default of the topic config {topic_key}: {BY_NAME[topic_key].doc}"
    value = BROKER_DEFAULTS[name]
    return BrokerSetting(name, kind, value, DEFAULT_CONFIG, value, doc)


def _broker_setting_synonyms(setting: BrokerSetting) -> list[dict[str, Any]]:
    if setting.source == STATIC_BROKER_CONFIG:
        chain = [_synonym(setting.name, setting.value, STATIC_BROKER_CONFIG)]
        if setting.kafka_default is not None:
            chain.append(_synonym(setting.name, setting.kafka_default, DEFAULT_CONFIG))
        return chain
    family = next((names for names in TOPIC_SYNONYMS.values() if setting.name in names), ())
    return _broker_synonyms(family[family.index(setting.name) :])


def _broker_synonyms(names: tuple[str, ...]) -> list[dict[str, Any]]:
    """The broker configs a value falls back to, each that has a default, from the first name
    on (Kafka's configSynonyms: it drops those before the name asked for)."""
    chain = [
        _synonym(name, value, DEFAULT_CONFIG)
        for name in names
        if (value := BROKER_DEFAULTS.get(name)) is not None
    ]
    return chain if chain and names and chain[0]["name"] == names[0] else []


def _synonym(name: str, value: str | None, source: int) -> dict[str, Any]:
    return {"name": name, "value": value, "source": source}
