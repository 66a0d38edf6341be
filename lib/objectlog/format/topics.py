"""Topic names and per-topic configuration, with Kafka's rules and defaults."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from objectlog.errors import InvalidConfig, InvalidRequest, InvalidTopicName

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
TABLE_ENABLED = "objectlog.table.enabled"  # objectlog's own: keep an Iceberg table of the topic
# objectlog's own: a compaction run puts every record older than this into the table (the
# default is the default compaction interval, so the table trails the log by at most two)
TABLE_LAG_MS = "objectlog.table.lag.ms"

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
TIMESTAMP_TYPES = {CREATE_TIME: 0, LOG_APPEND_TIME: 1}

INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1


def _long(minimum: int, maximum: int = INT64_MAX) -> Callable[[str], str]:
    def check(value: str) -> str:
        try:
            number = int(value)
        except ValueError:
            raise ValueError(f"must be an integer, got {value!r}") from None
        if not minimum <= number <= maximum:
            raise ValueError(f"must be between {minimum} and {maximum}, got {number}")
        return str(number)

    return check


def _cleanup_policy(value: str) -> str:
    parts = sorted({part.strip() for part in value.split(",") if part.strip()})
    if not parts or any(part not in ("compact", "delete") for part in parts):
        raise ValueError(f"must be 'delete', 'compact' or 'compact,delete', got {value!r}")
    return ",".join(parts)


def _boolean(value: str) -> str:
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError(f"must be true or false, got {value!r}")
    return lowered


def _timestamp_type(value: str) -> str:
    if value not in TIMESTAMP_TYPES:
        raise ValueError(f"must be {CREATE_TIME} or {LOG_APPEND_TIME}, got {value!r}")
    return value


# Kafka's broker defaults; -1 means unlimited for the retention settings.
DEFAULTS: dict[str, str] = {
    RETENTION_MS: "604800000",
    RETENTION_BYTES: "-1",
    CLEANUP_POLICY: "delete",
    DELETE_RETENTION_MS: "86400000",
    MIN_COMPACTION_LAG_MS: "0",
    MAX_MESSAGE_BYTES: "1048588",
    MESSAGE_TIMESTAMP_TYPE: CREATE_TIME,
    TABLE_ENABLED: "true",
    TABLE_LAG_MS: "300000",
}

VALIDATORS: dict[str, Callable[[str], str]] = {
    RETENTION_MS: _long(-1),
    RETENTION_BYTES: _long(-1),
    CLEANUP_POLICY: _cleanup_policy,
    DELETE_RETENTION_MS: _long(0),
    MIN_COMPACTION_LAG_MS: _long(0),
    MAX_MESSAGE_BYTES: _long(0, INT32_MAX),
    MESSAGE_TIMESTAMP_TYPE: _timestamp_type,
    TABLE_ENABLED: _boolean,
    TABLE_LAG_MS: _long(0),
}


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
    """Normalize a config override map; unknown keys and bad values raise InvalidConfig."""
    normalized: dict[str, str] = {}
    for key, raw in (config or {}).items():
        validator = VALIDATORS.get(key)
        if validator is None:
            known = ", ".join(sorted(VALIDATORS))
            raise InvalidConfig(f"unknown topic config {key!r}; known: {known}", field=key)
        try:
            normalized[key] = validator(str(raw))
        except ValueError as e:
            raise InvalidConfig(f"{key} {e}", field=key) from None
    return normalized


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
    def table_enabled(self) -> bool:
        return self.get(TABLE_ENABLED) == "true"

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
