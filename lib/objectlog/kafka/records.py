"""DeleteRecords over Kafka: kafka-delete-records.sh, AdminClient.deleteRecords (Java),
confluent-kafka's and kafka-python's delete_records, and Kafka Streams purging repartition
topics move a partition's log start forward (services.delete_records).

Answered as Kafka's broker answers it: per partition, the new log start as the low watermark,
or an error code with low watermark -1 (UNKNOWN_TOPIC_OR_PARTITION, OFFSET_OUT_OF_RANGE past
the high watermark or below 0 other than -1, POLICY_VIOLATION on a topic compacted only). The
log start is set when the answer goes out, so the request's timeout has nothing to wait for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from objectlog.errors import ObjectLogError
from objectlog.kafka.context import ApiContext
from objectlog.kafka.errors import error_code
from objectlog.kafka.wire import Request

NO_LOW_WATERMARK = -1  # Kafka's answer for a partition whose deletion failed


class RecordsApi:
    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx

    async def delete_records(self, request: Request) -> dict[str, Any]:
        topics = []
        for topic in request.body.topics:
            offsets = {p.partition_index: p.offset for p in topic.partitions}
            answers = await self.ctx.call(self._delete, topic.name, offsets)
            partitions = [answers[p.partition_index] for p in topic.partitions]
            topics.append({"name": topic.name, "partitions": partitions})
        return {"throttle_time": 0, "topics": topics}

    def _delete(self, topic: str, offsets: Mapping[int, int]) -> dict[int, dict[str, Any]]:
        """Every partition in one library call; when that fails, each alone, so one bad
        partition does not fail the others (the library checks the whole request before it
        writes anything: a refused request moved no log start)."""
        try:
            starts = self.ctx.log.delete_records(topic, offsets)
        except ObjectLogError:
            return {p: self._delete_one(topic, p, offset) for p, offset in offsets.items()}
        return {p: _answer(p, ErrorCode.none, start) for p, start in starts.items()}

    def _delete_one(self, topic: str, partition: int, offset: int) -> dict[str, Any]:
        try:
            start = self.ctx.log.delete_records(topic, {partition: offset})[partition]
        except ObjectLogError as e:
            return _answer(partition, error_code(e), NO_LOW_WATERMARK)
        return _answer(partition, ErrorCode.none, start)


def _answer(partition: int, code: ErrorCode, low_watermark: int) -> dict[str, Any]:
    return {"partition_index": partition, "low_watermark": low_watermark, "error_code": code}
