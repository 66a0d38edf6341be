"""The Kafka source's and sink's options, parsed once and checked as Kafka checks them.

Names and JSON forms are the Kafka source's (``subscribe``, ``assign``, ``startingOffsets``
``{"orders":{"0":23,"1":-2}}`` with -2 earliest and -1 latest, ``startingTimestamp``, ...), so
a job moves from Kafka to objectlog by changing its format and connection options only.
Options are case-insensitive, as every Spark option.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from objectlog.errors import InvalidRequest
from objectlog.services.isolation import ISOLATION_LEVELS, READ_UNCOMMITTED
from objectlog.spark.connection import lowered

EARLIEST = -2
LATEST = -1
# Spark's file sources' defaults (spark.sql.files.maxPartitionBytes, .openCostInBytes);
# objectlog.spark.register passes the session's own values, and its parallelism.
DEFAULT_MAX_BYTES_PER_PARTITION = 128 << 20
DEFAULT_OPEN_COST_BYTES = 4 << 20
DEFAULT_MAX_OBJECT_BYTES = 64 << 20

SUBSCRIBE = "subscribe"
SUBSCRIBE_PATTERN = "subscribePattern"
ASSIGN = "assign"
STARTING_OFFSETS = "startingOffsets"
ENDING_OFFSETS = "endingOffsets"
STARTING_TIMESTAMP = "startingTimestamp"
ENDING_TIMESTAMP = "endingTimestamp"
STARTING_BY_TIMESTAMP = "startingOffsetsByTimestamp"
ENDING_BY_TIMESTAMP = "endingOffsetsByTimestamp"
STARTING_BY_TIMESTAMP_STRATEGY = "startingOffsetsByTimestampStrategy"
FAIL_ON_DATA_LOSS = "failOnDataLoss"
MIN_PARTITIONS = "minPartitions"
MAX_OFFSETS_PER_TRIGGER = "maxOffsetsPerTrigger"
INCLUDE_HEADERS = "includeHeaders"
# The Kafka consumer's isolation.level, as the Kafka source takes consumer settings; Spark sets
# none, so its source reads read_uncommitted, the consumer's default (KafkaSourceProvider).
ISOLATION_LEVEL = "kafka.isolation.level"
TYPED_VALUES = "typedValues"  # objectlog's own: the typed table's columns (spark.typed)
MAX_BYTES_PER_PARTITION = "maxBytesPerPartition"  # objectlog's own
OPEN_COST_IN_BYTES = "openCostInBytes"  # objectlog's own, as spark.sql.files.openCostInBytes
DEFAULT_PARALLELISM = "defaultParallelism"  # objectlog's own: the session's, from register()
# The sink's
TOPIC = "topic"
COMPRESSION = "compression"
MAX_OBJECT_BYTES = "maxObjectBytes"
PRODUCER_ID = "producerId"
BATCH_ID = "batchId"
CHECKPOINT_LOCATION = "checkpointLocation"


@dataclass(frozen=True)
class Bound:
    """Where a read starts (or ends) in each partition.

    Kafka's precedence: a global timestamp, then per-partition timestamps, then per-partition
    offsets (-2 earliest, -1 latest), then the default. A partition the JSON does not name
    takes the default (Kafka insists that the JSON names every partition).
    """

    default: int
    offsets: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    timestamps: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    timestamp: int | None = None

    def timestamp_for(self, topic: str, partition: int) -> int | None:
        if self.timestamp is not None:
            return self.timestamp
        return self.timestamps.get(topic, {}).get(partition)

    def offset_for(self, topic: str, partition: int) -> int:
        return self.offsets.get(topic, {}).get(partition, self.default)


@dataclass(frozen=True)
class Subscription:
    """Which topics and partitions: exactly one of subscribe, subscribePattern or assign."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assign: Mapping[str, tuple[int, ...]] | None = None


@dataclass(frozen=True)
class ReadOptions:
    subscription: Subscription
    starting: Bound
    ending: Bound
    streaming: bool
    fail_on_data_loss: bool = True
    min_partitions: int = 0
    max_offsets_per_trigger: int | None = None
    include_headers: bool = False
    typed_values: bool = False
    max_bytes_per_partition: int = DEFAULT_MAX_BYTES_PER_PARTITION
    open_cost_bytes: int = DEFAULT_OPEN_COST_BYTES
    parallelism: int = 0  # the session's default parallelism; 0: not known
    # What a starting timestamp past every record means: "error" (Kafka's default) or "latest".
    by_timestamp_strategy: str = "error"
    # read_committed: "latest" is the last stable offset, aborted transactions are left out.
    isolation: str = READ_UNCOMMITTED

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
        given = lowered(options)
        if streaming:
            for name in (ENDING_OFFSETS, ENDING_TIMESTAMP, ENDING_BY_TIMESTAMP):
                if given.get(name.lower()):
                    raise InvalidRequest(f"{name} is not valid in streaming queries", field=name)
        strategy = given.get(STARTING_BY_TIMESTAMP_STRATEGY.lower(), "error").strip().lower()
        if strategy not in ("error", "latest"):
            raise InvalidRequest(
                f"{STARTING_BY_TIMESTAMP_STRATEGY} must be 'error' or 'latest'",
                field=STARTING_BY_TIMESTAMP_STRATEGY,
            )
        max_per_trigger = _int(given, MAX_OFFSETS_PER_TRIGGER, 0, minimum=1)
        return cls(
            subscription=_subscription(given),
            starting=_bound(given, "starting", streaming),
            ending=_bound(given, "ending", streaming),
            streaming=streaming,
            fail_on_data_loss=_bool(given, FAIL_ON_DATA_LOSS, True),
            min_partitions=_int(given, MIN_PARTITIONS, 0, minimum=1),
            max_offsets_per_trigger=max_per_trigger or None,
            include_headers=_bool(given, INCLUDE_HEADERS, False),
            typed_values=_bool(given, TYPED_VALUES, False),
            max_bytes_per_partition=_int(
                given, MAX_BYTES_PER_PARTITION, DEFAULT_MAX_BYTES_PER_PARTITION, minimum=1
            ),
            open_cost_bytes=_int(given, OPEN_COST_IN_BYTES, DEFAULT_OPEN_COST_BYTES, minimum=0),
            parallelism=_int(given, DEFAULT_PARALLELISM, 0, minimum=1),
            by_timestamp_strategy=strategy,
            isolation=_isolation(given),
        )


@dataclass(frozen=True)
class SinkOptions:
    topic: str | None
    compression: str
    max_object_bytes: int
    producer_id: str | None
    checkpoint_location: str | None
    # A batch write with producerId and batchId is idempotent (foreachBatch's replays).
    batch_id: int | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SinkOptions:
        given = lowered(options)
        return cls(
            topic=given.get(TOPIC.lower()) or None,
            compression=given.get(COMPRESSION.lower(), "none"),
            max_object_bytes=_int(given, MAX_OBJECT_BYTES, DEFAULT_MAX_OBJECT_BYTES, minimum=1),
            producer_id=given.get(PRODUCER_ID.lower()) or None,
            checkpoint_location=given.get(CHECKPOINT_LOCATION.lower()) or None,
            batch_id=_int(given, BATCH_ID, -1, minimum=0) if given.get(BATCH_ID.lower()) else None,
        )


def include_headers(options: Mapping[str, str]) -> bool:
    return _bool(lowered(options), INCLUDE_HEADERS, False)


def typed_values(options: Mapping[str, str]) -> bool:
    return _bool(lowered(options), TYPED_VALUES, False)


def _isolation(given: Mapping[str, str]) -> str:
    """kafka.isolation.level, checked as the Kafka consumer checks it (exact lower-case)."""
    text = given.get(ISOLATION_LEVEL, "").strip()
    if not text:
        return READ_UNCOMMITTED
    if text not in ISOLATION_LEVELS:
        raise InvalidRequest(
            f"{ISOLATION_LEVEL} must be {' or '.join(ISOLATION_LEVELS)}, got {text!r}",
            field=ISOLATION_LEVEL,
        )
    return text


def _subscription(given: Mapping[str, str]) -> Subscription:
    named = [n for n in (SUBSCRIBE, SUBSCRIBE_PATTERN, ASSIGN) if given.get(n.lower(), "").strip()]
    if len(named) != 1:
        raise InvalidRequest(
            "set exactly one of the options 'subscribe', 'subscribePattern' or 'assign'"
            + (f" (got {', '.join(named)})" if named else ""),
            field=SUBSCRIBE,
        )
    value = given[named[0].lower()].strip()
    if named[0] == SUBSCRIBE:
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        return Subscription(topics=topics)
    if named[0] == SUBSCRIBE_PATTERN:
        try:
            re.compile(value)
        except re.error as e:
            raise InvalidRequest(f"subscribePattern: {e}", field=SUBSCRIBE_PATTERN) from e
        return Subscription(pattern=value)
    parsed = _json(value, ASSIGN, 'a JSON object such as {"orders":[0,1]}')
    try:
        assign = {
            str(topic): tuple(sorted({int(p) for p in parts})) for topic, parts in parsed.items()
        }
    except (TypeError, ValueError, AttributeError) as e:
        raise InvalidRequest('assign must look like {"orders":[0,1]}', field=ASSIGN) from e
    if not assign:
        raise InvalidRequest("assign names no partition", field=ASSIGN)
    return Subscription(assign=assign)


def _bound(given: Mapping[str, str], kind: str, streaming: bool) -> Bound:
    """startingOffsets and friends (kind "starting"), or endingOffsets and friends ("ending")."""
    offsets_name = STARTING_OFFSETS if kind == "starting" else ENDING_OFFSETS
    timestamp_name = STARTING_TIMESTAMP if kind == "starting" else ENDING_TIMESTAMP
    by_time_name = STARTING_BY_TIMESTAMP if kind == "starting" else ENDING_BY_TIMESTAMP
    # Kafka's defaults: a batch reads everything; a stream starts at the end.
    default = LATEST if kind == "ending" or streaming else EARLIEST
    text = given.get(offsets_name.lower(), "").strip()
    offsets: dict[str, dict[int, int]] = {}
    if text.lower() == "earliest":
        default = EARLIEST
    elif text.lower() == "latest":
        default = LATEST
    elif text:
        offsets = _partition_map(text, offsets_name)
        for parts in offsets.values():
            for offset in parts.values():
                if offset < EARLIEST:
                    raise InvalidRequest(f"{offsets_name}: bad offset {offset}", field=offsets_name)
    # Kafka's checks: a batch can neither start at latest nor end at earliest.
    if not streaming:
        forbidden = LATEST if kind == "starting" else EARLIEST
        word = "latest" if forbidden == LATEST else "earliest"
        if default == forbidden or any(forbidden in p.values() for p in offsets.values()):
            raise InvalidRequest(
                f"{offsets_name} can't be {word} ({forbidden}) for batch queries",
                field=offsets_name,
            )
    timestamp = None
    if given.get(timestamp_name.lower(), "").strip():
        timestamp = _int(given, timestamp_name, 0, minimum=0)
    timestamps = {}
    if given.get(by_time_name.lower(), "").strip():
        timestamps = _partition_map(given[by_time_name.lower()], by_time_name)
    return Bound(default, offsets, timestamps, timestamp)


def _partition_map(text: str, name: str) -> dict[str, dict[int, int]]:
    parsed = _json(text, name, 'earliest, latest or JSON such as {"orders":{"0":23,"1":-2}}')
    try:
        return {
            str(topic): {int(p): int(o) for p, o in parts.items()}
            for topic, parts in parsed.items()
        }
    except (TypeError, ValueError, AttributeError) as e:
        raise InvalidRequest(
            f'{name} must look like {{"orders":{{"0":23,"1":-2}}}}', field=name
        ) from e


def _json(text: str, name: str, expected: str) -> dict[str, Any]:
    try:
        parsed = json.loads(text)
    except ValueError as e:
        raise InvalidRequest(f"{name} must be {expected}", field=name) from e
    if not isinstance(parsed, dict):
        raise InvalidRequest(f"{name} must be {expected}", field=name)
    return parsed


def _bool(given: Mapping[str, str], name: str, default: bool) -> bool:
    text = given.get(name.lower(), "").strip().lower()
    if not text:
        return default
    if text not in ("true", "false"):
        raise InvalidRequest(f"{name} must be true or false, got {text!r}", field=name)
    return text == "true"


def _int(given: Mapping[str, str], name: str, default: int, *, minimum: int) -> int:
    text = given.get(name.lower(), "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise InvalidRequest(f"{name} must be an integer >= {minimum}, got {text!r}", field=name)
    return value


_BYTE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def byte_size(text: str) -> int:
    """A Spark byte-size setting ("134217728", "128m", "128MB", "4b") in bytes."""
    cleaned = text.strip().lower().removesuffix("ib").removesuffix("b")
    number = cleaned.rstrip("kmgt")
    unit = cleaned[len(number) :]
    try:
        return int(number) * _BYTE_UNITS[unit]
    except (KeyError, ValueError):
        raise InvalidRequest(f"not a byte size: {text!r}") from None
