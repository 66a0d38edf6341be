"""The table of topic configs: every config Kafka 3.9 defines (LogConfig) with Kafka's type,
default and validation, objectlog's own, and what each does here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from objectlog.errors import InvalidConfig
from objectlog.format.topic_configs import BY_NAME, SPECS, ConfigType
from objectlog.format.topics import (
    DEFAULTS,
    Topic,
    TopicConfig,
    validate_alteration,
    validate_config,
)
from objectlog.kafka.config_entries import BROKER_DEFAULTS, TOPIC_SYNONYMS, TYPE_CODES
from objectlog.kafka.config_entries import topic_entry as describe

DOCS = Path(__file__).parents[2] / "docs" / "kafka.md"

# Kafka 3.9's LogConfig: each topic config's ConfigDef type and default.
KAFKA_TOPIC_CONFIGS = {
    "cleanup.policy": ("LIST", "delete"),
    "compression.gzip.level": ("INT", "-1"),
    "compression.lz4.level": ("INT", "9"),
    "compression.type": ("STRING", "producer"),
    "compression.zstd.level": ("INT", "3"),
    "delete.retention.ms": ("LONG", "86400000"),
    "file.delete.delay.ms": ("LONG", "60000"),
    "flush.messages": ("LONG", "9223372036854775807"),
    "flush.ms": ("LONG", "9223372036854775807"),
    "follower.replication.throttled.replicas": ("LIST", ""),
    "index.interval.bytes": ("INT", "4096"),
    "leader.replication.throttled.replicas": ("LIST", ""),
    "local.retention.bytes": ("LONG", "-2"),
    "local.retention.ms": ("LONG", "-2"),
    "max.compaction.lag.ms": ("LONG", "9223372036854775807"),
    "max.message.bytes": ("INT", "1048588"),
    "message.downconversion.enable": ("BOOLEAN", "true"),
    "message.format.version": ("STRING", "3.0-IV1"),
    "message.timestamp.after.max.ms": ("LONG", "9223372036854775807"),
    "message.timestamp.before.max.ms": ("LONG", "9223372036854775807"),
    "message.timestamp.difference.max.ms": ("LONG", "9223372036854775807"),
    "message.timestamp.type": ("STRING", "CreateTime"),
    "min.cleanable.dirty.ratio": ("DOUBLE", "0.5"),
    "min.compaction.lag.ms": ("LONG", "0"),
    "min.insync.replicas": ("INT", "1"),
    "preallocate": ("BOOLEAN", "false"),
    "remote.log.copy.disable": ("BOOLEAN", "false"),
    "remote.log.delete.on.disable": ("BOOLEAN", "false"),
    "remote.storage.enable": ("BOOLEAN", "false"),
    "retention.bytes": ("LONG", "-1"),
    "retention.ms": ("LONG", "604800000"),
    "segment.bytes": ("INT", "1073741824"),
    "segment.index.bytes": ("INT", "10485760"),
    "segment.jitter.ms": ("LONG", "0"),
    "segment.ms": ("LONG", "604800000"),
    "unclean.leader.election.enable": ("BOOLEAN", "false"),
}
# not Kafka's: objectlog's own, and Confluent's schema validation (docs/schemas.md)
OBJECTLOG_CONFIGS = {
    "objectlog.table.enabled",
    "objectlog.table.lag.ms",
    "objectlog.table.mode",
    "confluent.value.schema.validation",
    "confluent.key.schema.validation",
    "confluent.value.subject.name.strategy",
    "confluent.key.subject.name.strategy",
    "objectlog.schema.validation.strict",
}
APPLIED = {
    "retention.ms",
    "retention.bytes",
    "cleanup.policy",
    "delete.retention.ms",
    "min.compaction.lag.ms",
    "max.message.bytes",
    "message.timestamp.type",
    *OBJECTLOG_CONFIGS,
}

# For every config: values Kafka accepts (as given -> as stored) and values it refuses.
ACCEPTED: dict[str, dict[str, str]] = {
    "cleanup.policy": {"delete, compact": "compact,delete", "compact": "compact", "": ""},
    "compression.gzip.level": {"-1": "-1", "1": "1", "9": "9"},
    "compression.lz4.level": {"1": "1", "17": "17"},
    "compression.type": {"zstd": "zstd", " uncompressed ": "uncompressed", "producer": "producer"},
    "compression.zstd.level": {"-131072": "-131072", "22": "22"},
    "delete.retention.ms": {"0": "0", "+86400000": "86400000"},
    "file.delete.delay.ms": {"0": "0"},
    "flush.messages": {"1": "1"},
    "flush.ms": {"0": "0"},
    "follower.replication.throttled.replicas": {"*": "*", "0:1, 1:1": "0:1,1:1", "": ""},
    "index.interval.bytes": {"0": "0"},
    "leader.replication.throttled.replicas": {"0:1": "0:1"},
    "local.retention.bytes": {"-2": "-2", "1024": "1024"},
    "local.retention.ms": {"-2": "-2", "-1": "-1"},
    "max.compaction.lag.ms": {"1": "1"},
    "max.message.bytes": {"0": "0", "2147483647": "2147483647"},
    "message.downconversion.enable": {"FALSE": "false"},
    "message.format.version": {"2.8.1": "2.8.1", "0.10.0-IV1": "0.10.0-IV1", "3.9": "3.9"},
    "message.timestamp.after.max.ms": {"3600000": "3600000"},
    "message.timestamp.before.max.ms": {"0": "0"},
    "message.timestamp.difference.max.ms": {"0": "0"},
    "message.timestamp.type": {"LogAppendTime": "LogAppendTime"},
    "min.cleanable.dirty.ratio": {"0": "0.0", "0.50": "0.5", "1": "1.0", "1e-1": "0.1"},
    "min.compaction.lag.ms": {"0": "0"},
    "min.insync.replicas": {"2": "2"},
    "preallocate": {" True ": "true"},
    "remote.log.copy.disable": {"true": "true"},
    "remote.log.delete.on.disable": {"true": "true"},
    "remote.storage.enable": {"false": "false"},
    "retention.bytes": {"-5": "-5", "0": "0"},
    "retention.ms": {"-1": "-1", " 1000 ": "1000"},
    "segment.bytes": {"14": "14"},
    "segment.index.bytes": {"4": "4"},
    "segment.jitter.ms": {"0": "0"},
    "segment.ms": {"1": "1"},
    "unclean.leader.election.enable": {"true": "true"},
    "objectlog.table.enabled": {"False": "false"},
    "objectlog.table.lag.ms": {"0": "0"},
    "objectlog.table.mode": {" value_schema_latest ": "value_schema_latest"},
    "confluent.value.schema.validation": {"TRUE": "true"},
    "confluent.key.schema.validation": {"false": "false"},
    "confluent.value.subject.name.strategy": {
        " io.confluent.kafka.serializers.subject.RecordNameStrategy": (
            "io.confluent.kafka.serializers.subject.RecordNameStrategy"
        )
    },
    "objectlog.schema.validation.strict": {"True": "true"},
    "confluent.key.subject.name.strategy": {
        "io.confluent.kafka.serializers.subject.TopicNameStrategy": (
            "io.confluent.kafka.serializers.subject.TopicNameStrategy"
        )
    },
}
REFUSED: dict[str, list[str]] = {
    "cleanup.policy": ["archive", "compact,,delete", "Compact"],
    "compression.gzip.level": ["0", "10", "-2"],
    "compression.lz4.level": ["0", "18"],
    "compression.type": ["brotli", "ZSTD", "none"],
    "compression.zstd.level": ["-131073", "23"],
    "delete.retention.ms": ["-1", "1_000", "1.5"],
    "file.delete.delay.ms": ["-1"],
    "flush.messages": ["0", "9223372036854775808"],
    "flush.ms": ["-1"],
    "follower.replication.throttled.replicas": ["0-1", "*,0:1", "a:b"],
    "index.interval.bytes": ["-1"],
    "leader.replication.throttled.replicas": ["0:1:2"],
    "local.retention.bytes": ["-3"],
    "local.retention.ms": ["-3"],
    "max.compaction.lag.ms": ["0"],
    "max.message.bytes": ["-1", "2147483648"],
    "message.downconversion.enable": ["yes"],
    "message.format.version": ["4.0", "3.10", "1.2", "banana"],
    "message.timestamp.after.max.ms": ["-1"],
    "message.timestamp.before.max.ms": ["-1"],
    "message.timestamp.difference.max.ms": ["-1"],
    "message.timestamp.type": ["createtime", "Whenever"],
    "min.cleanable.dirty.ratio": ["1.01", "-0.1", "nan", "inf", "half"],
    "min.compaction.lag.ms": ["-1"],
    "min.insync.replicas": ["0", "1.0"],
    "preallocate": ["1"],
    "remote.log.copy.disable": ["on"],
    "remote.log.delete.on.disable": ["off"],
    "remote.storage.enable": ["true"],
    "retention.bytes": ["9223372036854775808", "lots"],
    "retention.ms": ["-2", "soon"],
    "segment.bytes": ["13", "2147483648"],
    "segment.index.bytes": ["3"],
    "segment.jitter.ms": ["-1"],
    "segment.ms": ["0"],
    "unclean.leader.election.enable": ["no"],
    "objectlog.table.enabled": ["maybe"],
    "objectlog.table.lag.ms": ["-1"],
    "objectlog.table.mode": ["typed", "KEY_VALUE"],
    "confluent.value.schema.validation": ["yes"],
    "confluent.key.schema.validation": [""],
    "confluent.value.subject.name.strategy": ["RecordNameStrategy", "x"],
    "confluent.key.subject.name.strategy": [""],
    "objectlog.schema.validation.strict": ["strict"],
}


def test_the_table_has_every_kafka_topic_config_with_kafkas_type_and_default() -> None:
    kafkas = {name for name in BY_NAME if name not in OBJECTLOG_CONFIGS}
    assert kafkas == set(KAFKA_TOPIC_CONFIGS)
    for name, (kind, default) in KAFKA_TOPIC_CONFIGS.items():
        assert (BY_NAME[name].type.value, BY_NAME[name].default) == (kind, default), name
    assert len(SPECS) == len(BY_NAME) == len(DEFAULTS)


def test_every_config_is_checked_on_every_value_as_kafka_checks_it() -> None:
    assert set(ACCEPTED) == set(REFUSED) == set(BY_NAME)
    for name, spec in BY_NAME.items():
        assert spec.check(spec.default) == spec.default, name
        for given, stored in ACCEPTED[name].items():
            assert validate_config({name: given}) == {name: stored}, (name, given)
        for value in REFUSED[name]:
            with pytest.raises(InvalidConfig, match=f"for configuration {name}") as refused:
                validate_config({name: value})
            assert refused.value.field == name


def test_an_unknown_key_is_refused_as_kafka_names_it() -> None:
    with pytest.raises(InvalidConfig, match=r"^Unknown topic config name: segment\.msec$"):
        validate_config({"segment.msec": "1"})
    with pytest.raises(InvalidConfig, match="Unknown topic config name"):
        validate_alteration(TopicConfig(), {}, ["segment.msec"])


def test_compaction_lags_are_checked_against_each_other_on_the_whole_config() -> None:
    with pytest.raises(InvalidConfig, match=r"min.compaction.lag.ms \(9\) > max.compaction"):
        validate_config({"min.compaction.lag.ms": "9", "max.compaction.lag.ms": "5"})
    capped = TopicConfig({"max.compaction.lag.ms": "5"})
    with pytest.raises(InvalidConfig, match=r"\(9\) > max.compaction.lag.ms \(5\)"):
        validate_alteration(capped, {"min.compaction.lag.ms": "9"}, [])
    assert validate_alteration(capped, {"min.compaction.lag.ms": "9"}, ["max.compaction.lag.ms"])


def test_what_has_an_effect_here_is_one_rule_and_the_docs_table_says_the_same() -> None:
    assert {name for name, spec in BY_NAME.items() if spec.effect.applies} == APPLIED
    section = DOCS.read_text().split("### Topic configs", 1)[1].split("\n### ", 1)[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| ")]
    listed = []
    for effect_cell, configs_cell, _why in rows[1:]:  # after the header
        names = re.findall(r"`([a-z0-9.]+)`", configs_cell)
        assert len({BY_NAME[name].effect for name in names}) == 1, names  # one group a row
        assert {BY_NAME[name].effect.applies for name in names} == {effect_cell == "| applied"}
        listed += names
    assert sorted(listed) == sorted(BY_NAME)


def test_describe_configs_types_synonyms_and_defaults_cover_the_table() -> None:
    topic = Topic("t", "01J0000000000000000000000A", 1, TopicConfig(), 0)
    for name, spec in BY_NAME.items():
        entry = describe(topic, name, spec.default, synonyms=True, documentation=True)
        assert entry["config_type"] == TYPE_CODES[spec.type] > 0
        assert entry["config_source"] == 5 and entry["documentation"]
    assert set(TOPIC_SYNONYMS) <= set(BY_NAME)
    assert {TYPE_CODES[kind] for kind in ConfigType} == {1, 2, 3, 5, 6, 7}
    assert all(BROKER_DEFAULTS[names[-1]] is not None for names in TOPIC_SYNONYMS.values())
