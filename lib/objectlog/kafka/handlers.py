"""The Kafka APIs the agent answers, over the objectlog library (DESIGN.md section 12).

Each handler takes the parsed request and returns the response as a mapping of the newest
version's fields (wire.build fits it to the version asked for), or None for a request Kafka
does not answer (Produce with acks=0). Library calls are synchronous: they run on the agent's
worker threads, never on the event loop.

The agent is one logical broker: leader of every partition and coordinator of every group, at
the address it advertises (a load balancer's on AWS, where several agents stand behind it).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa
from kio.schema.errors import ErrorCode
from ulid import ULID

from objectlog.cache import LruCache
from objectlog.clients.direct import ObjectLog
from objectlog.errors import ObjectLogError, TopicExists, TopicNotFound, UnknownPartition
from objectlog.format.topics import (
    Topic,
    TopicConfig,
    validate_config,
    validate_partition_count,
    validate_topic_name,
)
from objectlog.kafka.batches import InvalidBatch, decode_batches, encode_batch
from objectlog.kafka.errors import error_code
from objectlog.kafka.wire import Request
from objectlog.services.append import PartitionBatch
from objectlog.services.fetch import FetchRequest, FetchResult
from objectlog.stores.metadata import KafkaSequence

T = TypeVar("T")
EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
LOG_APPEND_TIME = 1
TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5  # Kafka's config sources
NO_PRODUCER = -1
MAX_EPOCH = 32767
WINDOW_HINTS = 100_000
NO_AUTHORIZED_OPERATIONS = -2147483648  # Kafka's "not asked for"
FETCH_RETRY_S = (0.01, 0.25)  # the long poll's first and longest pause between head reads

# API key: (lowest, highest) version offered. ApiVersions answers exactly this table.
PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS, INIT_PRODUCER_ID = 18, 19, 20, 22
SUPPORTED: dict[int, tuple[int, int]] = {
    INIT_PRODUCER_ID: (0, 4),
    PRODUCE: (3, 11),
    FETCH: (4, 16),
    LIST_OFFSETS: (1, 9),
    METADATA: (1, 12),
    API_VERSIONS: (0, 4),
    CREATE_TOPICS: (2, 7),
    DELETE_TOPICS: (1, 6),
}


@dataclass(frozen=True)
class Broker:
    """What the agent advertises: one broker, at the load balancer's address."""

    host: str
    port: int
    node_id: int = 1
    cluster_id: str = "objectlog"

    def as_node(self) -> dict[str, Any]:
        return {"node_id": self.node_id, "host": self.host, "port": self.port, "rack": None}


def topic_uuid(topic_id: str) -> uuid.UUID:
    """Kafka's topic id for a topic: its ULID's 128 bits, one to one."""
    return uuid.UUID(bytes=ULID.from_str(topic_id).bytes)


class Handlers:
    def __init__(self, log: ObjectLog, broker: Broker) -> None:
        self.log = log
        self.broker = broker
        self.appender = log.new_appender()
        self.routes: dict[int, Callable[[Request], Any]] = {
            API_VERSIONS: self.api_versions,
            METADATA: self.metadata,
            PRODUCE: self.produce,
            FETCH: self.fetch,
            LIST_OFFSETS: self.list_offsets,
            CREATE_TOPICS: self.create_topics,
            DELETE_TOPICS: self.delete_topics,
            INIT_PRODUCER_ID: self.init_producer_id,
        }
        # (topic, partition, producer key) -> the window's batch count the last commit left
        self.windows: LruCache[tuple[str, int, str], int] = LruCache(WINDOW_HINTS)

    def close(self) -> None:
        self.appender.close()

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(function, *args)

    # ---- ApiVersions, Metadata -----------------------------------------------------------

    async def api_versions(self, request: Request) -> dict[str, Any]:
        offered = [
            {"api_key": key, "min_version": low, "max_version": high}
            for key, (low, high) in sorted(SUPPORTED.items())
        ]
        low, high = SUPPORTED[API_VERSIONS]
        supported = low <= request.api_version <= high
        return {
            "error_code": ErrorCode.none if supported else ErrorCode.unsupported_version,
            "api_keys": offered,
            "throttle_time": 0,
        }

    async def metadata(self, request: Request) -> dict[str, Any]:
        asked = request.body.topics
        if asked is None:
            names = await self.call(self.log.list_topics)
        else:
            names = [t.name for t in asked if t.name is not None]
        topics = [await self._topic_metadata(name) for name in names]
        return {
            "throttle_time": 0,
            "brokers": [self.broker.as_node()],
            "cluster_id": self.broker.cluster_id,
            "controller_id": self.broker.node_id,
            "topics": topics,
        }

    async def _topic_metadata(self, name: str) -> dict[str, Any]:
        try:
            topic = await self.call(self.log.topic, name)
        except ObjectLogError as e:
            return {"error_code": error_code(e), "name": name, "partitions": []}
        node = self.broker.node_id
        return {
            "error_code": ErrorCode.none,
            "name": name,
            "topic_id": topic_uuid(topic.topic_id),
            "is_internal": False,
            "partitions": [
                {
                    "error_code": ErrorCode.none,
                    "partition_index": p,
                    "leader_id": node,
                    "leader_epoch": 0,
                    "replica_nodes": [node],
                    "isr_nodes": [node],
                    "offline_replicas": [],
                }
                for p in range(topic.partitions)
            ],
            "topic_authorized_operations": NO_AUTHORIZED_OPERATIONS,
        }

    # ---- Produce ---------------------------------------------------------------------------

    async def produce(self, request: Request) -> dict[str, Any] | None:
        body = request.body
        answers: dict[tuple[str, int], dict[str, Any]] = {}
        by_producer: dict[str | None, list[PartitionBatch]] = {}
        for topic_data in body.topic_data:
            for data in topic_data.partition_data:
                key = (topic_data.name, data.index)
                try:
                    batch, producer = await self._partition_batch(topic_data.name, data)
                except (ObjectLogError, InvalidBatch) as e:
                    answers[key] = _produce_error(data.index, e)
                    continue
                by_producer.setdefault(producer, []).append(batch)
        for producer, batches in by_producer.items():
            outcomes = await self.call(self.appender.append, batches, producer)
            for outcome in outcomes:
                self._remember_window(outcome, producer)
                answers[(outcome.batch.topic.name, outcome.batch.partition)] = _produced(outcome)
        if body.acks == 0:
            return None
        return {
            "responses": [
                {
                    "name": topic_data.name,
                    "partition_responses": [
                        answers[(topic_data.name, data.index)] for data in topic_data.partition_data
                    ],
                }
                for topic_data in body.topic_data
            ],
            "throttle_time": 0,
        }

    async def _partition_batch(self, name: str, data: Any) -> tuple[PartitionBatch, str | None]:
        """The partition's records as one batch, and its producer's key in the head (None for
        a producer that is not idempotent)."""
        topic = await self.call(self.log.topic, name)
        _check_partition(topic, data.index)
        stamped = topic.config.timestamp_type == LOG_APPEND_TIME
        now = self.log.clock.now_ms() if stamped else None
        decoded = decode_batches(data.records or b"", name, data.index, log_append_ms=now)
        table = pa.concat_tables([batch.table for batch in decoded])
        if len(decoded) > 1:  # positions run on across the batches
            table = table.set_column(
                table.schema.get_field_index("offset"),
                "offset",
                pa.array(range(table.num_rows), type=pa.int64()),
            )
        producer, sequence = self._sequence(name, data.index, decoded)
        return PartitionBatch(topic, data.index, table, kafka=sequence), producer

    def _sequence(
        self, topic: str, partition: int, decoded: list[Any]
    ) -> tuple[str | None, KafkaSequence | None]:
        """The producer's key and the idempotence fields of a partition's batches (one run of
        sequences), or None and None for a producer that is not idempotent."""
        first = decoded[0]
        if first.producer_id == NO_PRODUCER:
            if any(b.producer_id != NO_PRODUCER for b in decoded):
                raise InvalidBatch(f"{topic}/{partition}: idempotent and plain batches mixed")
            return None, None
        if any(b.transactional for b in decoded):
            raise InvalidBatch(f"{topic}/{partition}: transactions are not offered")
        expected = first.base_sequence
        for batch in decoded:
            same = (batch.producer_id, batch.producer_epoch) == (
                first.producer_id,
                first.producer_epoch,
            )
            if not same or batch.base_sequence != expected:
                raise InvalidBatch(f"{topic}/{partition}: the batches' sequences do not follow")
            expected += batch.records
        key = f"k{first.producer_id}"
        seen = self.windows.get((topic, partition, key))
        return key, KafkaSequence(first.producer_epoch, first.base_sequence, expected - 1, seen)

    def _remember_window(self, outcome: Any, producer: str | None) -> None:
        head = outcome.head
        if producer is None or head is None:
            return
        state = head.producers.get(producer)
        if state is not None and state.window is not None:
            key = (outcome.batch.topic.name, outcome.batch.partition, producer)
            self.windows.put(key, state.window.batches)

    async def init_producer_id(self, request: Request) -> dict[str, Any]:
        body = request.body
        if body.transactional_id is not None:  # transactions are not offered (docs/kafka.md)
            return {
                "throttle_time": 0,
                "error_code": ErrorCode.invalid_request,
                "producer_id": -1,
                "producer_epoch": -1,
            }
        producer_id = getattr(body, "producer_id", NO_PRODUCER)
        epoch = getattr(body, "producer_epoch", NO_PRODUCER)
        if producer_id != NO_PRODUCER and 0 <= epoch < MAX_EPOCH:
            producer_id, epoch = producer_id, epoch + 1  # KIP-360: the same producer, bumped
        else:
            producer_id, epoch = await self.call(self.log.metadata.next_producer_id), 0
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "producer_id": producer_id,
            "producer_epoch": epoch,
        }

    # ---- Fetch, ListOffsets ----------------------------------------------------------------

    async def fetch(self, request: Request) -> dict[str, Any]:
        body = request.body
        names = await self._names_by_id() if request.api_version >= 13 else {}
        wanted: list[tuple[Any, Any, str | None]] = []
        for topic in body.topics:
            name = names.get(topic.topic_id) if request.api_version >= 13 else topic.topic
            for partition in topic.partitions:
                wanted.append((topic, partition, name))
        deadline = time.monotonic() + body.max_wait.total_seconds()
        pause = FETCH_RETRY_S[0]
        while True:
            answers = await self._fetch_once(wanted, body.max_bytes)
            size = sum(len(a.get("records") or b"") for a in answers)
            if size >= max(body.min_bytes, 1) or time.monotonic() >= deadline:
                break
            await asyncio.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 2, FETCH_RETRY_S[1])
        by_topic: dict[int, list[dict[str, Any]]] = {}
        for (topic, _, _), answer in zip(wanted, answers, strict=True):
            by_topic.setdefault(id(topic), []).append(answer)
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "session_id": 0,
            "responses": [
                {
                    "topic": getattr(topic, "topic", None),
                    "topic_id": getattr(topic, "topic_id", None),
                    "partitions": by_topic.get(id(topic), []),
                }
                for topic in body.topics
            ],
        }

    async def _fetch_once(
        self, wanted: Sequence[tuple[Any, Any, str | None]], max_bytes: int
    ) -> list[dict[str, Any]]:
        requests, positions, answers = [], [], []
        for i, (_, partition, name) in enumerate(wanted):
            if name is None:
                answers.append(_fetch_error(partition, ErrorCode.unknown_topic_id))
                continue
            answers.append({})
            requests.append(
                FetchRequest(
                    name,
                    partition.partition,
                    partition.fetch_offset,
                    max(1, partition.partition_max_bytes),
                )
            )
            positions.append(i)
        results = await self._fetch_each(requests)
        left = max_bytes
        for i, result in zip(positions, results, strict=True):
            partition = wanted[i][1]
            if isinstance(result, BaseException):
                answers[i] = _fetch_error(partition, error_code(result))
                continue
            records = encode_batch(result.table) if left > 0 else b""
            left -= len(records)
            answers[i] = {
                "partition_index": partition.partition,
                "error_code": ErrorCode.none,
                "high_watermark": result.high_watermark,
                "last_stable_offset": result.high_watermark,
                "log_start_offset": result.log_start_offset,
                "aborted_transactions": [],
                "preferred_read_replica": -1,
                "records": records,
            }
        return answers

    async def _fetch_each(
        self, requests: Sequence[FetchRequest]
    ) -> list[FetchResult | BaseException]:
        """All partitions in one library call; when that fails, each alone, so one bad
        partition (an offset out of range, a deleted topic) does not fail the others."""
        if not requests:
            return []
        try:
            return list(await self.call(self.log.fetch_many, list(requests)))
        except ObjectLogError:
            results: list[FetchResult | BaseException] = []
            for one in requests:
                try:
                    results.extend(await self.call(self.log.fetch_many, [one]))
                except ObjectLogError as e:
                    results.append(e)
            return results

    async def _names_by_id(self) -> dict[uuid.UUID, str]:
        def load() -> dict[uuid.UUID, str]:
            names = self.log.list_topics()
            return {topic_uuid(self.log.topic(n).topic_id): n for n in names}

        return await self.call(load)

    async def list_offsets(self, request: Request) -> dict[str, Any]:
        topics = []
        for topic in request.body.topics:
            partitions = []
            for partition in topic.partitions:
                try:
                    offset, stamp = await self.call(
                        self._offset_at, topic.name, partition.partition_index, partition.timestamp
                    )
                    code = ErrorCode.none
                except ObjectLogError as e:
                    offset, stamp, code = -1, -1, error_code(e)
                partitions.append(
                    {
                        "partition_index": partition.partition_index,
                        "error_code": code,
                        "timestamp": stamp,
                        "offset": offset,
                        "leader_epoch": 0,
                    }
                )
            topics.append({"name": topic.name, "partitions": partitions})
        return {"throttle_time": 0, "topics": topics}

    def _offset_at(self, topic: str, partition: int, timestamp: int) -> tuple[int, int]:
        _check_partition(self.log.topic(topic), partition)
        bounds = self.log.offsets(topic, partition)
        if timestamp == EARLIEST:
            return bounds.earliest, -1
        if timestamp == LATEST:
            return bounds.latest, -1
        if timestamp == MAX_TIMESTAMP:
            return self._max_timestamp(topic, partition, bounds.earliest, bounds.latest)
        found = self.log.offset_for_time(topic, partition, timestamp)
        if found is None:
            return -1, -1
        record = self.log.fetch(topic, partition, found, max_records=1).records
        return found, record[0].timestamp if record else timestamp

    def _max_timestamp(self, topic: str, partition: int, start: int, end: int) -> tuple[int, int]:
        """The offset and timestamp of the record with the largest timestamp (the first such)."""
        best = (-1, -1)
        offset = start
        while offset < end:
            result = self.log.fetch(topic, partition, offset)
            if not result.records:
                break
            for record in result.records:
                if record.timestamp > best[1]:
                    best = (record.offset, record.timestamp)
            offset = result.next_offset
        return best

    # ---- CreateTopics, DeleteTopics --------------------------------------------------------

    async def create_topics(self, request: Request) -> dict[str, Any]:
        body = request.body
        results = []
        for topic in body.topics:
            config = {c.name: c.value for c in topic.configs}
            count = topic.num_partitions if topic.num_partitions > 0 else 1
            if topic.assignments:
                message = "objectlog places partitions itself: no replica assignment"
                results.append(
                    _topic_error(topic.name, ErrorCode.invalid_replica_assignment, message)
                )
                continue
            try:
                if body.validate_only:
                    created = await self.call(self._validate_topic, topic.name, count, config)
                else:
                    created = await self.call(self.log.create_topic, topic.name, count, config)
                results.append(_created(created))
            except ObjectLogError as e:
                results.append(_topic_error(topic.name, error_code(e), str(e)))
        return {"throttle_time": 0, "topics": results}

    def _validate_topic(self, name: str, partitions: int, config: Mapping[str, str]) -> Topic:
        """What create_topic would create (CreateTopics with validate_only), storing nothing."""
        if name in self.log.list_topics():
            raise TopicExists(f"topic {name!r} already exists", field="topic")
        return Topic(
            validate_topic_name(name),
            str(ULID()),
            validate_partition_count(partitions),
            TopicConfig(validate_config(config)),
            0,
        )

    async def delete_topics(self, request: Request) -> dict[str, Any]:
        body = request.body
        if request.api_version >= 6:
            names = await self._names_by_id()
            targets = [(t.name or names.get(t.topic_id), t.topic_id) for t in body.topics]
        else:
            targets = [(name, None) for name in body.topic_names]
        responses = []
        for name, topic_id in targets:
            code, message = ErrorCode.none, None
            try:
                if name is None:
                    raise TopicNotFound("no topic has that id", field="topic")
                await self.call(self.log.delete_topic, name)
            except ObjectLogError as e:
                code, message = error_code(e), str(e)
            responses.append(
                {"name": name, "topic_id": topic_id, "error_code": code, "error_message": message}
            )
        return {"throttle_time": 0, "responses": responses}


def _check_partition(topic: Topic, partition: int) -> None:
    if not 0 <= partition < topic.partitions:
        raise UnknownPartition(
            f"topic {topic.name!r} has no partition {partition}", field="partition"
        )


def _produced(outcome: Any) -> dict[str, Any]:
    if outcome.error is not None:
        return _produce_error(outcome.batch.partition, outcome.error)
    if outcome.duplicate and outcome.base_offset < 0:  # older than the window: Kafka's answer
        return _produce_error(
            outcome.batch.partition, ErrorCode.duplicate_sequence_number, "an older duplicate"
        )
    head = outcome.head
    return {
        "index": outcome.batch.partition,
        "error_code": ErrorCode.none,
        "base_offset": outcome.base_offset,
        "log_append_time": -1,
        "log_start_offset": head.log_start_offset if head is not None else -1,
    }


def _produce_error(
    partition: int, error: BaseException | ErrorCode, message: str | None = None
) -> dict[str, Any]:
    code = error if isinstance(error, ErrorCode) else error_code(error)
    return {
        "index": partition,
        "error_code": code,
        "base_offset": -1,
        "log_append_time": -1,
        "log_start_offset": -1,
        "error_message": message or str(error),
    }


def _fetch_error(partition: Any, code: ErrorCode) -> dict[str, Any]:
    return {
        "partition_index": partition.partition,
        "error_code": code,
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "preferred_read_replica": -1,
        "records": None,
    }


def _created(topic: Topic) -> dict[str, Any]:
    return {
        "name": topic.name,
        "topic_id": topic_uuid(topic.topic_id),
        "error_code": ErrorCode.none,
        "num_partitions": topic.partitions,
        "replication_factor": 1,
        "configs": [
            {
                "name": key,
                "value": value,
                "read_only": False,
                "config_source": TOPIC_CONFIG if key in topic.config.overrides else DEFAULT_CONFIG,
                "is_sensitive": False,
            }
            for key, value in sorted(topic.config.effective().items())
        ],
    }


def _topic_error(name: str, code: ErrorCode, message: str) -> dict[str, Any]:
    return {"name": name, "error_code": code, "error_message": message, "num_partitions": -1}
