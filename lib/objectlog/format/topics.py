"""Topic names and per-topic configuration, with Kafka's rules and defaults."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from objectlog.errors import InvalidConfig, InvalidRequest, InvalidTopicName, UnknownPartition
from objectlog.format.topic_configs import SPECS, check_consistent

MAX_TOPIC_NAME_LENGTH = 249
MAX_PARTITIONS = 10_000
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")

RETENTION_MS = "retention.ms"
RETENTION_BYTES = "retention.bytes"
CLEANUP_POLICY = "cleanup.policy"
DELETE_RETENTION_MS = "delete.retention.ms"
MIN_COMPACTION_LAG_MS = "min.compaction.lag.ms"
MAX_MESSAGE_BYTES = "max.message.bytes"
MESSAGE_TIMESTAMP_TYPE = "message.timestamp.type"
VALUE_SCHEMA_VALIDATION = "confluent.value.schema.validation"  # Confluent's (docs/schemas.md)
KEY_SCHEMA_VALIDATION = "confluent.key.schema.validation"
STRICT_SCHEMA_VALIDATION = "objectlog.schema.validation.strict"  # objectlog's own
VALUE_SUBJECT_STRATEGY = "confluent.value.subject.name.strategy"
KEY_SUBJECT_STRATEGY = "confluent.key.subject.name.strategy"
TABLE_ENABLED = "objectlog.table.enabled"  # objectlog's own: keep an Iceberg table of the topic
# objectlog's own: a compaction run puts every record older than this into the table (the
# default is the default compaction interval, so the table trails the log by at most two)
TABLE_LAG_MS = "objectlog.table.lag.ms"
TABLE_MODE = "objectlog.table.mode"  # objectlog's own: the table's columns (schemas.typed_values)

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
TIMESTAMP_TYPES = {CREATE_TIME: 0, LOG_APPEND_TIME: 1}

# Every config's default (Kafka's broker defaults; -1 means unlimited for the retention
# settings) and check, from the one table of topic configs.
DEFAULTS: dict[str, str] = {spec.name: spec.default for spec in SPECS}
VALIDATORS: dict[str, Callable[[str], str]] = {spec.name: spec.check for spec in SPECS}


def validate_topic_name(name: object) -> str:
    """Return the name if Kafka would accept it, else raise InvalidTopicName."""
    if not isinstance(name, str) or not name:
        raise InvalidTopicName("topic name must be a non-empty string", field="topic")
    if name in (".", ".."):
        raise InvalidTopicName(f"topic name cannot be {name!r}", field="topic")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicName(
            f"topic name is {len(name)} characters; the limit is {MAX_TOPIC_NAME_LENGTH}",
            field="topic",
        )
    if not _LEGAL_NAME.match(name):
        raise InvalidTopicName(
            f"topic name {name!r} may contain only ASCII letters, digits, '.', '_' and '-'",
            field="topic",
        )
    return name


def check_partition(topic: Topic, partition: int) -> None:
    """Refuse a partition the topic does not have: the one place UnknownPartition is raised
    for a topic's partition count (a produce, a fetch, a commit, a DeleteRecords)."""
    if not 0 <= partition < topic.partitions:
        raise UnknownPartition(
            f"topic {topic.name!r} has {topic.partitions} partitions; "
            f"there is no partition {partition}",
            field="partition",
        )


def validate_partition_count(partitions: object) -> int:
    if isinstance(partitions, bool) or not isinstance(partitions, int):
        raise InvalidRequest("partitions must be an integer", field="partitions")
    if not 1 <= partitions <= MAX_PARTITIONS:
        raise InvalidRequest(
            f"partitions must be between 1 and {MAX_PARTITIONS}, got {partitions}",
            field="partitions",
        )
    return partitions


def validate_config(config: Mapping[str, object] | None) -> dict[str, str]:
    """Normalize a config override map; unknown keys and bad values raise InvalidConfig, as
    Kafka answers them (INVALID_CONFIG, with its messages)."""
    normalized = {key: _checked(key, raw) for key, raw in (config or {}).items()}
    _check_consistent(normalized)
    return normalized


def validate_alteration(
    current: TopicConfig, set: Mapping[str, object] | None, delete: Iterable[str]
) -> tuple[dict[str, str], list[str]]:
    """The overrides to set and the keys to reset (both checked), such that the topic's
    configs afterwards are consistent as a whole (Kafka checks the result, not the change)."""
    to_set = validate_config(set)
    to_delete = list(delete)
    for key in to_delete:
        _known(key)
    kept = {k: v for k, v in current.overrides.items() if k not in to_delete}
    _check_consistent({**kept, **to_set})
    return to_set, to_delete


def _known(key: str) -> Callable[[str], str]:
    validator = VALIDATORS.get(key)
    if validator is None:
        raise InvalidConfig(f"Unknown topic config name: {key}", field=key)
    return validator


def _checked(key: str, raw: object) -> str:
    try:
        return _known(key)(str(raw))
    except ValueError as e:
        raise InvalidConfig(
            f"Invalid value {raw} for configuration {key}: {e}", field=key
        ) from None


def _check_consistent(overrides: Mapping[str, str]) -> None:
    try:
        check_consistent({**DEFAULTS, **overrides})
    except ValueError as e:
        raise InvalidConfig(str(e), field="max.compaction.lag.ms") from None


@dataclass(frozen=True)
class TopicConfig:
    """A topic's config overrides; effective values fall back to Kafka's defaults."""

    overrides: Mapping[str, str] = field(default_factory=dict)

    def get(self, key: str) -> str:
        return self.overrides.get(key, DEFAULTS[key])

    def effective(self) -> dict[str, str]:
        return {**DEFAULTS, **self.overrides}

    @property
    def max_message_bytes(self) -> int:
        return int(self.get(MAX_MESSAGE_BYTES))

    @property
    def timestamp_type(self) -> int:
        return TIMESTAMP_TYPES[self.get(MESSAGE_TIMESTAMP_TYPE)]

    @property
    def retention_ms(self) -> int:
        return int(self.get(RETENTION_MS))

    @property
    def retention_bytes(self) -> int:
        return int(self.get(RETENTION_BYTES))

    @property
    def compacted(self) -> bool:
        return "compact" in self.get(CLEANUP_POLICY).split(",")

    @property
    def schema_validated(self) -> bool:
        """Whether records' values or keys are checked against the Schema Registry
        (schemas.validation)."""
        return "true" in (self.get(VALUE_SCHEMA_VALIDATION), self.get(KEY_SCHEMA_VALIDATION))

    @property
    def table_enabled(self) -> bool:
        return self.get(TABLE_ENABLED) == "true"

    @property
    def table_mode(self) -> str:
        return self.get(TABLE_MODE)

    @property
    def table_lag_ms(self) -> int:
        return int(self.get(TABLE_LAG_MS))


@dataclass(frozen=True)
class Topic:
    """A topic as stored: its id separates it from a deleted topic of the same name."""

    name: str
    topic_id: str
    partitions: int
    config: TopicConfig
    created_ms: int
    state: str = "ACTIVE"


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    log_start_offset: int
    high_watermark: int
    segments: int
    bytes: int


@dataclass(frozen=True)
class TopicDescription:
    topic: Topic
    partitions: list[PartitionInfo]

    def to_dict(self) -> dict[str, object]:
        return {
            "topic": self.topic.name,
            "topic_id": self.topic.topic_id,
            "partition_count": self.topic.partitions,
            "config": self.topic.config.effective(),
            "partitions": [vars(p) for p in self.partitions],
        }
