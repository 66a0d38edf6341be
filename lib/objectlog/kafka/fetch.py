"""Fetch and ListOffsets: objectlog's read path as Kafka record batches.

A fetch reads every asked partition in one library call (one BatchGetItem, concurrent ranged
GETs); when nothing is there yet it waits on the agent's head watcher (kafka.watch) until a
partition moves or max_wait passes, as a Kafka broker holds a fetch. A fetch at the tail of
partitions that stay still reads no head: it is answered from their ends as last read, once
the topic's activity proves that nothing acknowledged before the fetch arrived is missing
from them (services.activity, "Read your writes"), so a consumer waiting at the tail of an
idle topic costs the agent a read of the activity item per wait, not one of every head.
Records go back as uncompressed record batches, transaction markers as Kafka's control
batches, in offset order (kafka.batches.encode_records). Fetch sessions are declined
(session id 0): every fetch names its partitions.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from objectlog.clients.fetch_ahead import fresh_ends
from objectlog.errors import ObjectLogError
from objectlog.format.topics import check_partition
from objectlog.kafka.batches import encode_records, records_within
from objectlog.kafka.context import ApiContext
from objectlog.kafka.errors import error_code
from objectlog.kafka.watch import HeadWatcher
from objectlog.kafka.wire import Request
from objectlog.services.activity import End
from objectlog.services.fetch import FetchRequest, FetchResult
from objectlog.services.isolation import READ_COMMITTED, READ_UNCOMMITTED

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
NEXT_OFFSET = "next offset"  # kept beside a partition's answer for the wait, not sent


class FetchApi:
    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx
        self.watcher = HeadWatcher(ctx)

    async def fetch(self, request: Request) -> dict[str, Any]:
        body = request.body
        by_id = request.api_version >= 13
        names = await self.ctx.names_by_id(t.topic_id for t in body.topics) if by_id else {}
        wanted: list[tuple[Any, Any, str | None]] = []
        for topic in body.topics:
            name = names.get(topic.topic_id) if by_id else topic.topic
            for partition in topic.partitions:
                wanted.append((topic, partition, name))
        deadline = time.monotonic() + body.max_wait.total_seconds()
        isolation = _isolation(body)
        committed = isolation == READ_COMMITTED
        arrived = self.ctx.log.activity.now()
        answers = await self._still(wanted, committed, None)  # a hint, proven before it is sent
        hinted = answers is not None
        if answers is None:
            answers = await self._fetch_once(wanted, body.max_bytes, isolation)
        while True:
            size = sum(len(a.get("records") or b"") for a in answers)
            if size >= max(body.min_bytes, 1):
                break
            if time.monotonic() >= deadline:
                if hinted:
                    answers = await self._proven(wanted, body.max_bytes, isolation, arrived)
                break
            # Wait beyond what was read: past a marker or an aborted transaction's records
            # at the tail (offsets with nothing to answer), not at the client's position,
            # which the watcher would find passed at once.
            positions = {
                (name, partition.partition): max(
                    partition.fetch_offset, answer.get(NEXT_OFFSET, partition.fetch_offset)
                )
                for (_, partition, name), answer in zip(wanted, answers, strict=True)
                if name is not None
            }
            waited = deadline - time.monotonic()
            if await self.watcher.wait_beyond(positions, waited, committed=committed):
                answers, hinted = await self._fetch_once(wanted, body.max_bytes, isolation), False
                continue
            # the last look: from the partitions' ends as last read if they hold everything
            # acknowledged before the fetch arrived (read your writes), else read afresh
            answers = await self._proven(wanted, body.max_bytes, isolation, arrived)
            break
        by_topic: dict[int, list[dict[str, Any]]] = {}
        for (topic, _, _), answer in zip(wanted, answers, strict=True):
            answer.pop(NEXT_OFFSET, None)
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

    async def _proven(
        self,
        wanted: Sequence[tuple[Any, Any, str | None]],
        max_bytes: int,
        isolation: str,
        arrived: float,
    ) -> list[dict[str, Any]]:
        still = await self._still(wanted, isolation == READ_COMMITTED, arrived)
        return still if still is not None else await self._fetch_once(wanted, max_bytes, isolation)

    async def _still(
        self, wanted: Sequence[tuple[Any, Any, str | None]], committed: bool, since: float | None
    ) -> list[dict[str, Any]] | None:
        """Empty answers from the partitions' ends as last read, when every one is at the
        tail there and none is due a read (services.activity.still: with since, when the
        fetch arrived, the proof that nothing acknowledged before it is missing from them;
        without, the newest sample's word, a hint to wait on). None: read them."""
        by_topic: dict[str, list[int]] = {}
        for _, partition, name in wanted:
            if name is not None:
                by_topic.setdefault(name, []).append(partition.partition)
        if not by_topic:
            return None
        ends = await self.ctx.call(self._ends_if_still, by_topic, since)
        if ends is None:
            return None
        answers = []
        for _, partition, name in wanted:
            if name is None:
                answers.append(_fetch_error(partition, ErrorCode.unknown_topic_id))
                continue
            end = ends.get((name, partition.partition))
            if end is None or partition.fetch_offset != (end[1] if committed else end[0]):
                return None  # not at the tail as last read: read the head
            answers.append(
                {
                    "partition_index": partition.partition,
                    "error_code": ErrorCode.none,
                    "high_watermark": end[0],
                    "last_stable_offset": end[1],
                    "log_start_offset": end[2],
                    "aborted_transactions": [],
                    "preferred_read_replica": -1,
                    "records": b"",
                    NEXT_OFFSET: partition.fetch_offset,
                }
            )
        return answers

    def _ends_if_still(
        self, by_topic: dict[str, list[int]], since: float | None
    ) -> dict[tuple[str, int], End] | None:
        activity, ends = self.ctx.log.activity, {}
        try:  # a topic deleted (seen within the topic cache's 10 s) is read: its error
            for topic in by_topic:
                self.ctx.log.topic(topic)
        except ObjectLogError:
            return None
        activity.refresh(list(by_topic), since)  # the proofs' counter reads: one request
        for topic, partitions in by_topic.items():
            found = activity.still(topic, partitions, since)
            if found is None:
                return None
            ends.update({(topic, p): end for p, end in found.items()})
        return ends

    async def _fetch_once(
        self, wanted: Sequence[tuple[Any, Any, str | None]], max_bytes: int, isolation: str
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
                    max(1, min(partition.partition_max_bytes, max_bytes)),
                    isolation=isolation,
                )
            )
            positions.append(i)
        started = self.ctx.log.activity.now()
        results = await self._fetch_each(requests)
        done = [
            (q, r) for q, r in zip(requests, results, strict=True) if isinstance(r, FetchResult)
        ]
        for topic, found in fresh_ends([q for q, _ in done], [r for _, r in done]).items():
            self.ctx.log.activity.saw(topic, found, started)  # the watcher's view of them
        left = max_bytes
        for i, result in zip(positions, results, strict=True):
            partition = wanted[i][1]
            if isinstance(result, BaseException):
                answers[i] = _fetch_error(partition, error_code(result))
                continue
            # Kafka's limits (KIP-74): the answer's max_bytes and each partition's, both soft
            # only for the first partition with records, which gets at least one
            budget = min(left, partition.partition_max_bytes)
            table = records_within(result.table, budget, at_least_one=left == max_bytes)
            whole = table.num_rows == result.table.num_rows
            reached = result.next_offset if whole else None
            records = encode_records(table, result.refs, partition.fetch_offset, reached)
            left -= len(records)
            answers[i] = {
                "partition_index": partition.partition,
                "error_code": ErrorCode.none,
                "high_watermark": result.high_watermark,
                "last_stable_offset": result.last_stable_offset,
                "log_start_offset": result.log_start_offset,
                # read_committed's answer holds committed records only (aborted ones are
                # left out here, unread, not by the client): no aborted transaction to list;
                # the abort's control batch moves a consumer past the range at once
                "aborted_transactions": [],
                "preferred_read_replica": -1,
                "records": records,
                NEXT_OFFSET: result.next_offset,  # for the long poll's wait, not the client
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
            return list(await self.ctx.call(self.ctx.log.fetch_many, list(requests)))
        except ObjectLogError:
            results: list[FetchResult | BaseException] = []
            for one in requests:
                try:
                    results.extend(await self.ctx.call(self.ctx.log.fetch_many, [one]))
                except ObjectLogError as e:
                    results.append(e)
            return results

    async def list_offsets(self, request: Request) -> dict[str, Any]:
        committed = _isolation(request.body) == READ_COMMITTED  # v2+: latest is the LSO
        topics = []
        for topic in request.body.topics:
            partitions = []
            for partition in topic.partitions:
                try:
                    offset, stamp = await self.ctx.call(
                        self._offset_at,
                        topic.name,
                        partition.partition_index,
                        partition.timestamp,
                        committed,
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

    def _offset_at(
        self, topic: str, partition: int, timestamp: int, committed: bool = False
    ) -> tuple[int, int]:
        check_partition(self.ctx.log.topic(topic), partition)
        bounds = self.ctx.log.offsets(topic, partition)
        if timestamp == EARLIEST:
            return bounds.earliest, -1
        if timestamp == LATEST:  # the last stable offset for read_committed, from one read
            return bounds.end(READ_COMMITTED if committed else READ_UNCOMMITTED), -1
        if timestamp == MAX_TIMESTAMP:
            return self._max_timestamp(topic, partition, bounds.earliest, bounds.latest)
        found = self.ctx.log.offset_for_time(topic, partition, timestamp)
        if found is None:
            return -1, -1
        record = self.ctx.log.fetch(topic, partition, found, max_records=1).records
        return found, record[0].timestamp if record else timestamp

    def _max_timestamp(self, topic: str, partition: int, start: int, end: int) -> tuple[int, int]:
        """The offset and timestamp of the record with the largest timestamp (the first such)."""
        best = (-1, -1)
        offset = start
        while offset < end:
            result = self.ctx.log.fetch(topic, partition, offset)
            if not result.records:
                break
            for record in result.records:
                if record.timestamp > best[1]:
                    best = (record.offset, record.timestamp)
            offset = result.next_offset
        return best


def _isolation(body: Any) -> str:
    """Fetch's (v4+) and ListOffsets' (v2+) isolation_level: 0 read_uncommitted, 1
    read_committed."""
    level = getattr(body, "isolation_level", 0)
    return READ_COMMITTED if int(getattr(level, "value", level)) == 1 else READ_UNCOMMITTED


def _fetch_error(partition: Any, code: ErrorCode) -> dict[str, Any]:
    return {
        "partition_index": partition.partition,
        "error_code": code,
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "preferred_read_replica": -1,
        "records": b"",  # Kafka's empty records: librdkafka drops an answer holding a null
    }
