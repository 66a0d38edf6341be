"""Every topic config objectlog accepts: Kafka 3.9's (LogConfig) and objectlog's own.

One table, one row per config: its Kafka type, default, how a value is checked and normalized
(as Kafka's ConfigDef parses and validates it), whether it has an effect here and why, and a
line of documentation. Validation, DescribeConfigs and docs/kafka.md ("Topic configs") all read
this table: a config Kafka defines is accepted and reported even where objectlog has nothing
for it to act on (Kafka tools, Terraform providers and clients' test suites set them), and a
key Kafka does not define is refused, as Kafka refuses it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")  # Kafka's ThrottledReplicaListValidator

Check = Callable[[str], str]  # a value as given -> as stored, or ValueError saying why


class ConfigType(Enum):
    """Kafka's ConfigDef types that topic configs use (DescribeConfigs reports them)."""

    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"


@dataclass(frozen=True)
class Effect:
    """Whether a group of configs acts on objectlog's topics, and why (docs/kafka.md)."""

    applies: bool
    reason: str


APPLIED = Effect(True, "objectlog's write path, reads or compactor apply it, as Kafka does")
OBJECTLOG_OWN = Effect(True, "objectlog's own: the topic's Iceberg table (docs/spark.md)")
_STRATEGY = "io.confluent.kafka.serializers.subject."  # Confluent's subject name strategies
TOPIC_NAME_STRATEGY = f"{_STRATEGY}TopicNameStrategy"  # <topic>-value
RECORD_NAME_STRATEGY = f"{_STRATEGY}RecordNameStrategy"  # <record name>
TOPIC_RECORD_NAME_STRATEGY = f"{_STRATEGY}TopicRecordNameStrategy"  # <topic>-<record name>
SUBJECT_STRATEGIES = (TOPIC_NAME_STRATEGY, RECORD_NAME_STRATEGY, TOPIC_RECORD_NAME_STRATEGY)
# How a topic's table is shaped (Redpanda's redpanda.iceberg.mode): schemas.typed_values.
KEY_VALUE = "key_value"
VALUE_SCHEMA_ID_PREFIX = "value_schema_id_prefix"
VALUE_SCHEMA_LATEST = "value_schema_latest"
TABLE_MODES = (KEY_VALUE, VALUE_SCHEMA_ID_PREFIX, VALUE_SCHEMA_LATEST)
SCHEMA_VALIDATION = Effect(
    True,
    "Confluent's broker-side schema ID validation: every door refuses a record whose value "
    "(or key) does not carry the Schema Registry's wire format with an id registered under "
    "the topic's subject (docs/schemas.md)",
)
NO_LOCAL_SEGMENTS = Effect(
    False,
    "objectlog keeps no local segment files, indexes or page cache: each produce request is "
    "one S3 object, committed before it is acknowledged, and the compactor sizes the Parquet "
    "files; replaced objects are deleted after the deployment's grace period "
    "(OBJECTLOG_DELETE_GRACE_MS), not a topic's",
)
COMPACTOR_SCHEDULE = Effect(
    False,
    "the compactor runs on its schedule (docs/compaction.md) and compacts what is cleanable "
    "at each run: there is no dirty ratio to wait for, and no lag bound but its schedule",
)
NO_REPLICAS = Effect(
    False,
    "there are no replicas: S3 keeps every object in several zones, and the one broker the "
    "agents advertise leads every partition",
)
STORED_AS_PARQUET = Effect(
    False,
    "records are stored as Parquet, compressed as objectlog chooses (zstd in the compactor's "
    "files), and fetches serve each partition as one uncompressed batch: a producer's "
    "compression ends at the agent",
)
RECORD_BATCH_V2 = Effect(
    False,
    "the agent speaks record batch v2 only (Produce v3+, Fetch v4+): there is no older format "
    "to write or convert to",
)
NO_TIERED_STORAGE = Effect(
    False,
    "there is no tiered storage to turn on: every record is already in S3; "
    "remote.storage.enable=true is refused, as a broker without tiered storage refuses it",
)
TIMESTAMPS_NOT_BOUNDED = Effect(
    False,
    "not enforced: records keep the timestamps they were produced with (CreateTime), as with "
    "Kafka's defaults (unbounded); message.timestamp.type=LogAppendTime stamps them with the "
    "log's time instead",
)


@dataclass(frozen=True)
class TopicConfigSpec:
    name: str
    type: ConfigType
    default: str
    check: Check
    effect: Effect
    doc: str


# ---- value checks: Kafka's ConfigDef parsing, then its validators ---------------------------


def _integer(text: str, low: int, high: int, kind: str) -> int:
    """An integer as Java's Integer/Long.parseLong reads it (sign and digits only)."""
    if not _INTEGER.fullmatch(text) or not low <= int(text) <= high:
        raise ValueError(f"Not a number of type {kind}")
    return int(text)


def _at_least(minimum: int | float, maximum: int | float | None, number: int | float) -> None:
    if number < minimum:
        raise ValueError(f"Value must be at least {minimum}")
    if maximum is not None and number > maximum:
        raise ValueError(f"Value must be no more than {maximum}")


def long_at_least(minimum: int = INT64_MIN) -> Check:
    def check(value: str) -> str:
        number = _integer(value.strip(), INT64_MIN, INT64_MAX, "LONG")
        _at_least(minimum, None, number)
        return str(number)

    return check


def int_between(minimum: int = INT32_MIN, maximum: int | None = None) -> Check:
    def check(value: str) -> str:
        number = _integer(value.strip(), INT32_MIN, INT32_MAX, "INT")
        _at_least(minimum, maximum, number)
        return str(number)

    return check


def _gzip_level(value: str) -> str:
    """Kafka's gzip level: 1 (fastest) to 9 (smallest), or -1 (zlib's default)."""
    number = _integer(value.strip(), INT32_MIN, INT32_MAX, "INT")
    if number != -1 and not 1 <= number <= 9:
        raise ValueError("Value must be between 1 and 9 or equal to -1")
    return str(number)


def _ratio(value: str) -> str:
    text = value.strip()
    if not _DECIMAL.fullmatch(text) or math.isinf(float(text)):
        raise ValueError("Not a number of type DOUBLE")
    number = float(text)
    _at_least(0, 1, number)
    return repr(number)  # as Java prints a double: 0.5, 1.0


def _boolean(value: str) -> str:
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("Expected value to be either true or false")
    return lowered


def _false_only(value: str) -> str:
    if _boolean(value) == "true":
        raise ValueError(
            "Tiered Storage functionality is disabled in the broker. Topic cannot be "
            "configured with remote log storage (objectlog keeps every record in S3 already)"
        )
    return "false"


def one_of(*allowed: str) -> Check:
    def check(value: str) -> str:
        if value.strip() not in allowed:
            raise ValueError(f"String must be one of: {', '.join(allowed)}")
        return value.strip()

    return check


def _list_items(value: str) -> list[str]:
    """A LIST value's items, as Kafka splits it (commas, blanks around them)."""
    text = value.strip()
    return [item.strip() for item in text.split(",")] if text else []


def _cleanup_policy(value: str) -> str:
    """compact, delete, both, or none at all (Kafka 3.9 accepts an empty list: the topic is
    neither compacted nor trimmed by retention). Stored sorted and without repeats."""
    items = _list_items(value)
    for item in items:
        if item not in ("compact", "delete"):
            raise ValueError("String must be one of: compact, delete")
    return ",".join(sorted(set(items)))


def _throttled_replicas(value: str) -> str:
    items = _list_items(value)
    if "".join(items) != "*" and not all(_REPLICA.fullmatch(item) for item in items):
        raise ValueError(
            "must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
        )
    return ",".join(items)


# Kafka 3.9's MetadataVersion: each version string, and each production release ("3.9") that
# stands for its newest; message.format.version accepts any of them (and ignores it since 3.0).
# fmt: off
_IV_RELEASES = {
    "0.10.0": 2, "0.10.1": 3, "0.10.2": 1, "0.11.0": 3, "1.0": 1, "1.1": 1, "2.0": 2, "2.1": 3,
    "2.2": 2, "2.3": 2, "2.4": 2, "2.5": 1, "2.6": 1, "2.7": 3, "2.8": 2, "3.0": 2, "3.1": 1,
    "3.2": 1, "3.3": 4, "3.4": 1, "3.5": 3, "3.6": 3, "3.7": 5, "3.8": 1, "3.9": 1, "4.0": 2,
}
# fmt: on
METADATA_VERSIONS = frozenset(
    {"0.8.0", "0.8.1", "0.8.2", "0.9.0"}
    | {f"{release}-IV{n}" for release, count in _IV_RELEASES.items() for n in range(count)}
    | {release for release in _IV_RELEASES if release != "4.0"}  # 4.0 is not production in 3.9
)


def _metadata_version(value: str) -> str:
    """As MetadataVersion.fromVersionString reads it: "0.x.y..." by its first three parts,
    other versions by their first two ("3.0.1" is 3.0)."""
    text = value.strip()
    parts = text.split(".")
    keep = 3 if text.startswith("0.") else 2
    key = text if keep >= len(parts) else ".".join(parts[:keep])
    if key not in METADATA_VERSIONS:
        raise ValueError(f"Version {text} is not a valid version")
    return text


# ---- the table -------------------------------------------------------------------------------

LONG, INT, STRING, BOOLEAN, DOUBLE, LIST = (
    ConfigType.LONG,
    ConfigType.INT,
    ConfigType.STRING,
    ConfigType.BOOLEAN,
    ConfigType.DOUBLE,
    ConfigType.LIST,
)
WEEK_MS, DAY_MS = "604800000", "86400000"
UNBOUNDED = str(INT64_MAX)

# fmt: off
SPECS: tuple[TopicConfigSpec, ...] = (
    # Applied
    TopicConfigSpec(
        "retention.ms", LONG, WEEK_MS, long_at_least(-1), APPLIED,
        "The compactor drops a partition's oldest files once all their records are older "
        "than this (-1: kept forever), with cleanup.policy delete.",
    ),
    TopicConfigSpec(
        "retention.bytes", LONG, "-1", long_at_least(), APPLIED,
        "The compactor drops a partition's oldest files while the partition is larger than "
        "this (negative: no limit), with cleanup.policy delete.",
    ),
    TopicConfigSpec(
        "cleanup.policy", LIST, "delete", _cleanup_policy, APPLIED,
        "delete: retention trims the log; compact: the compactor keeps the newest record of "
        "each key; both, or neither (empty).",
    ),
    TopicConfigSpec(
        "delete.retention.ms", LONG, DAY_MS, long_at_least(0), APPLIED,
        "How long a compacted topic keeps a key's tombstone (null value) after compaction.",
    ),
    TopicConfigSpec(
        "min.compaction.lag.ms", LONG, "0", long_at_least(0), APPLIED,
        "Records newer than this are not compacted yet.",
    ),
    TopicConfigSpec(
        "max.message.bytes", INT, "1048588", int_between(0), APPLIED,
        "The largest record the topic accepts (key, value and headers): a larger one is "
        "refused with MESSAGE_TOO_LARGE.",
    ),
    TopicConfigSpec(
        "message.timestamp.type", STRING, "CreateTime", one_of("CreateTime", "LogAppendTime"),
        APPLIED,
        "CreateTime keeps the producer's timestamps; LogAppendTime stamps each record with "
        "the time it was written.",
    ),
    TopicConfigSpec(
        "confluent.value.schema.validation", BOOLEAN, "false", _boolean, SCHEMA_VALIDATION,
        "Confluent's: refuse records whose value does not name a schema id registered under "
        "the topic's value subject (<topic>-value).",
    ),
    TopicConfigSpec(
        "confluent.key.schema.validation", BOOLEAN, "false", _boolean, SCHEMA_VALIDATION,
        "Confluent's: the same for keys (<topic>-key); a null key passes.",
    ),
    TopicConfigSpec(
        "confluent.value.subject.name.strategy", STRING, TOPIC_NAME_STRATEGY,
        one_of(*SUBJECT_STRATEGIES), SCHEMA_VALIDATION,
        "Confluent's: the subject a value's schema id must be registered under: <topic>-value "
        "(TopicNameStrategy), the record's name (RecordNameStrategy) or <topic>-<record name> "
        "(TopicRecordNameStrategy).",
    ),
    TopicConfigSpec(
        "confluent.key.subject.name.strategy", STRING, TOPIC_NAME_STRATEGY,
        one_of(*SUBJECT_STRATEGIES), SCHEMA_VALIDATION,
        "Confluent's: the same for keys (<topic>-key by default).",
    ),
    TopicConfigSpec(
        "objectlog.schema.validation.strict", BOOLEAN, "false", _boolean, SCHEMA_VALIDATION,
        "objectlog's own (Bufstream's semantic validation): a validated topic also decodes "
        "each key or value it checks with its schema and refuses what does not decode.",
    ),
    TopicConfigSpec(
        "objectlog.table.enabled", BOOLEAN, "true", _boolean, OBJECTLOG_OWN,
        "Keep an Iceberg table of the topic (false drops it at the compactor's next run).",
    ),
    TopicConfigSpec(
        "objectlog.table.mode", STRING, KEY_VALUE, one_of(*TABLE_MODES), OBJECTLOG_OWN,
        "The table's columns: the Kafka columns only (key_value); also the value decoded by "
        "the schema id it carries (value_schema_id_prefix) or by its subject's latest schema "
        "(value_schema_latest), as value_decoded, value_schema_id and value_error "
        "(docs/schemas.md).",
    ),
    TopicConfigSpec(
        "objectlog.table.lag.ms", LONG, "300000", long_at_least(0), OBJECTLOG_OWN,
        "A compaction run puts every record older than this into the topic's table.",
    ),
    # Accepted and reported: no local segments
    TopicConfigSpec(
        "segment.bytes", INT, "1073741824", int_between(14), NO_LOCAL_SEGMENTS,
        "Kafka: the size at which a log segment file rolls.",
    ),
    TopicConfigSpec(
        "segment.ms", LONG, WEEK_MS, long_at_least(1), NO_LOCAL_SEGMENTS,
        "Kafka: the age at which a log segment rolls.",
    ),
    TopicConfigSpec(
        "segment.jitter.ms", LONG, "0", long_at_least(0), NO_LOCAL_SEGMENTS,
        "Kafka: a random delay subtracted from segment.ms.",
    ),
    TopicConfigSpec(
        "segment.index.bytes", INT, "10485760", int_between(4), NO_LOCAL_SEGMENTS,
        "Kafka: the size of a segment's offset index.",
    ),
    TopicConfigSpec(
        "index.interval.bytes", INT, "4096", int_between(0), NO_LOCAL_SEGMENTS,
        "Kafka: how often an offset index entry is added.",
    ),
    TopicConfigSpec(
        "preallocate", BOOLEAN, "false", _boolean, NO_LOCAL_SEGMENTS,
        "Kafka: preallocate a new segment file on disk.",
    ),
    TopicConfigSpec(
        "flush.messages", LONG, UNBOUNDED, long_at_least(1), NO_LOCAL_SEGMENTS,
        "Kafka: fsync the log after this many records.",
    ),
    TopicConfigSpec(
        "flush.ms", LONG, UNBOUNDED, long_at_least(0), NO_LOCAL_SEGMENTS,
        "Kafka: fsync the log after this long.",
    ),
    TopicConfigSpec(
        "file.delete.delay.ms", LONG, "60000", long_at_least(0), NO_LOCAL_SEGMENTS,
        "Kafka: how long a deleted segment file stays on disk.",
    ),
    # Accepted and reported: compaction runs on the compactor's schedule
    TopicConfigSpec(
        "min.cleanable.dirty.ratio", DOUBLE, "0.5", _ratio, COMPACTOR_SCHEDULE,
        "Kafka: the share of uncompacted log at which the cleaner compacts a partition.",
    ),
    TopicConfigSpec(
        "max.compaction.lag.ms", LONG, UNBOUNDED, long_at_least(1), COMPACTOR_SCHEDULE,
        "Kafka: the longest a record stays uncompacted. At least min.compaction.lag.ms.",
    ),
    # Accepted and reported: no replicas
    TopicConfigSpec(
        "min.insync.replicas", INT, "1", int_between(1), NO_REPLICAS,
        "Kafka: the replicas that must have a write before acks=all answers.",
    ),
    TopicConfigSpec(
        "unclean.leader.election.enable", BOOLEAN, "false", _boolean, NO_REPLICAS,
        "Kafka: let an out-of-sync replica become leader.",
    ),
    TopicConfigSpec(
        "leader.replication.throttled.replicas", LIST, "", _throttled_replicas, NO_REPLICAS,
        "Kafka: replicas whose replication the leader throttles ('*' or partition:broker).",
    ),
    TopicConfigSpec(
        "follower.replication.throttled.replicas", LIST, "", _throttled_replicas, NO_REPLICAS,
        "Kafka: replicas whose replication the follower throttles ('*' or partition:broker).",
    ),
    # Accepted and reported: stored as Parquet
    TopicConfigSpec(
        "compression.type", STRING, "producer",
        one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), STORED_AS_PARQUET,
        "Kafka: the codec the broker stores batches with (producer: as they came).",
    ),
    TopicConfigSpec(
        "compression.gzip.level", INT, "-1", _gzip_level, STORED_AS_PARQUET,
        "Kafka: the gzip level when compression.type is gzip.",
    ),
    TopicConfigSpec(
        "compression.lz4.level", INT, "9", int_between(1, 17), STORED_AS_PARQUET,
        "Kafka: the lz4 level when compression.type is lz4.",
    ),
    TopicConfigSpec(
        "compression.zstd.level", INT, "3", int_between(-131072, 22), STORED_AS_PARQUET,
        "Kafka: the zstd level when compression.type is zstd.",
    ),
    # Accepted and reported: record batch v2 only
    TopicConfigSpec(
        "message.format.version", STRING, "3.0-IV1", _metadata_version, RECORD_BATCH_V2,
        "Kafka (deprecated, ignored since 3.0): the record format version.",
    ),
    TopicConfigSpec(
        "message.downconversion.enable", BOOLEAN, "true", _boolean, RECORD_BATCH_V2,
        "Kafka (deprecated): convert batches for consumers of older formats.",
    ),
    # Accepted and reported: no tiered storage
    TopicConfigSpec(
        "remote.storage.enable", BOOLEAN, "false", _false_only, NO_TIERED_STORAGE,
        "Kafka: move closed segments to tiered storage. Only false is accepted here.",
    ),
    TopicConfigSpec(
        "local.retention.ms", LONG, "-2", long_at_least(-2), NO_TIERED_STORAGE,
        "Kafka: how long segments stay on local disk with tiered storage (-2: retention.ms).",
    ),
    TopicConfigSpec(
        "local.retention.bytes", LONG, "-2", long_at_least(-2), NO_TIERED_STORAGE,
        "Kafka: how much stays on local disk with tiered storage (-2: retention.bytes).",
    ),
    TopicConfigSpec(
        "remote.log.copy.disable", BOOLEAN, "false", _boolean, NO_TIERED_STORAGE,
        "Kafka: stop copying segments to tiered storage.",
    ),
    TopicConfigSpec(
        "remote.log.delete.on.disable", BOOLEAN, "false", _boolean, NO_TIERED_STORAGE,
        "Kafka: delete tiered data when tiered storage is turned off.",
    ),
    # Accepted and reported: timestamp bounds not enforced
    TopicConfigSpec(
        "message.timestamp.before.max.ms", LONG, UNBOUNDED, long_at_least(0),
        TIMESTAMPS_NOT_BOUNDED,
        "Kafka: refuse a CreateTime record older than this.",
    ),
    TopicConfigSpec(
        "message.timestamp.after.max.ms", LONG, UNBOUNDED, long_at_least(0),
        TIMESTAMPS_NOT_BOUNDED,
        "Kafka: refuse a CreateTime record more than this in the future.",
    ),
    TopicConfigSpec(
        "message.timestamp.difference.max.ms", LONG, UNBOUNDED, long_at_least(0),
        TIMESTAMPS_NOT_BOUNDED,
        "Kafka (deprecated): both bounds above, where they are left at their defaults.",
    ),
)
# fmt: on

BY_NAME: dict[str, TopicConfigSpec] = {spec.name: spec for spec in SPECS}


def check_consistent(config: dict[str, str]) -> None:
    """Kafka's check across configs (LogConfig.validateValues), on a topic's effective
    configs: ValueError naming the conflict."""
    low, high = int(config["min.compaction.lag.ms"]), int(config["max.compaction.lag.ms"])
    if low > high:
        raise ValueError(
            f"conflict topic config setting min.compaction.lag.ms ({low}) > "
            f"max.compaction.lag.ms ({high})"
        )
