"""Produce and InitProducerId: Kafka record batches into objectlog's write path.

The requests of all connections that arrive while a flush is under way become one L0 object
and one commit per partition (kafka/coalesce.py's group commit; an idempotent or transactional
producer's batches commit on their own, with their sequences, DESIGN.md section 12). Idempotent
producers get ids from a DynamoDB counter and their epochs bumped as KIP-360 asks; the head
keeps each one's last five batches (stores.kafka_window).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from objectlog.cache import LruCache
from objectlog.errors import InvalidRecord, ObjectLogError
from objectlog.format.records import check_keys
from objectlog.format.segment import concat_slices
from objectlog.format.topics import check_partition
from objectlog.kafka.batches import InvalidBatch, decode_batches
from objectlog.kafka.coalesce import GroupCommit
from objectlog.kafka.context import ApiContext
from objectlog.kafka.errors import error_code
from objectlog.kafka.wire import Request
from objectlog.services.append import PartitionBatch
from objectlog.services.group_commit import Entry
from objectlog.stores.metadata import KafkaSequence, kafka_producer

LOG_APPEND_TIME = 1
NO_PRODUCER = -1
MAX_EPOCH = 32767
WINDOW_HINTS = 100_000


class ProduceApi:
    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx
        self.appender = ctx.log.new_appender()
        self.group_commit = GroupCommit(self.appender)  # every connection's requests
        # (topic, partition, producer key) -> the window's batch count the last commit left
        self.windows: LruCache[tuple[str, int, str], int] = LruCache(WINDOW_HINTS)

    async def stop(self) -> None:
        await self.group_commit.stop()

    def close(self) -> None:
        self.appender.close()

    async def produce(self, request: Request) -> dict[str, Any] | None:
        body = request.body
        answers: dict[tuple[str, int], dict[str, Any]] = {}
        entries: list[Entry] = []
        for topic_data in body.topic_data:
            for data in topic_data.partition_data:
                key = (topic_data.name, data.index)
                try:
                    batch, producer = await self._partition_batch(topic_data.name, data)
                except (ObjectLogError, InvalidBatch) as e:
                    answers[key] = _produce_error(data.index, e)
                    continue
                entries.append(Entry(batch, producer))
        outcomes = await self.group_commit.append(entries) if entries else []
        for entry, outcome in zip(entries, outcomes, strict=True):
            self._remember_window(outcome, entry.producer)
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
        topic = await self.ctx.call(self.ctx.log.topic, name)
        check_partition(topic, data.index)
        stamped = topic.config.timestamp_type == LOG_APPEND_TIME
        now = self.ctx.log.clock.now_ms() if stamped else None
        decoded = decode_batches(data.records or b"", name, data.index, log_append_ms=now)
        table = concat_slices([batch.table for batch in decoded])
        if table.num_rows == 0:
            raise InvalidBatch(f"{name}/{data.index}: no records")
        check_keys(topic, table.column("key"))  # refuses the partition's batch, as Kafka does
        if topic.config.schema_validated:  # the same: a schema id the topic's subject lacks
            check = self.ctx.log.schema_validator.check
            columns = [table.column(name) for name in ("key", "value", "headers")]
            await self.ctx.call(check, topic, *columns)
        producer, sequence = self._sequence(name, data.index, decoded)
        transactional = decoded[0].transactional and sequence is not None
        batch = PartitionBatch(
            topic, data.index, table, kafka=sequence, transactional=transactional
        )
        return batch, producer

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
        if len({b.transactional for b in decoded}) > 1:
            raise InvalidBatch(f"{topic}/{partition}: transactional and other batches mixed")
        expected = first.base_sequence
        for batch in decoded:
            same = (batch.producer_id, batch.producer_epoch) == (
                first.producer_id,
                first.producer_epoch,
            )
            if not same or batch.base_sequence != expected:
                raise InvalidBatch(f"{topic}/{partition}: the batches' sequences do not follow")
            expected += batch.records
        key = kafka_producer(first.producer_id)
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
        producer_id = getattr(body, "producer_id", NO_PRODUCER)
        epoch = getattr(body, "producer_epoch", NO_PRODUCER)
        if producer_id != NO_PRODUCER and 0 <= epoch < MAX_EPOCH:
            producer_id, epoch = producer_id, epoch + 1  # KIP-360: the same producer, bumped
        else:
            producer_id, epoch = await self.ctx.call(self.ctx.log.metadata.next_producer_id), 0
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "producer_id": producer_id,
            "producer_epoch": epoch,
        }


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
        "record_errors": _record_errors(error),
    }


def _record_errors(error: BaseException | ErrorCode) -> list[dict[str, Any]]:
    """KIP-467: the records of a refused batch that broke a rule (the rest only shared its
    batch: librdkafka then fails them with _INVALID_DIFFERENT_RECORD, not INVALID_RECORD)."""
    if not isinstance(error, InvalidRecord):
        return []
    return [{"batch_index": i, "batch_index_error_message": error.message} for i in error.records]
