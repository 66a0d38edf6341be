"""The produce benchmark's workload and the floors bench.run measures the producer against.

Workload: 1 MiB flushes of 1,024 records of 1 KiB (a 16-byte key), record i of a flush to
partition i % 4, so every flush touches all 4 partitions.

Floors, each a bare boto3 loop with the log's own clients (the same botocore settings):

- ``EncodingFloor``, the produce floor since issue 38: per flush, encode the same Parquet
  slices from ready Arrow tables with the writer objectlog uses (format.segment.write_parquet),
  in the thread that then PUTs them; the PUT of those bytes; one minimal conditional UpdateItem
  per touched partition, concurrent. Flushes pipelined at the producer's depth
  (PRODUCER_DEPTH).
- ``ProduceFloor``, the floor of issue 18 (printed beside it): the PUT of an already made body
  of the same size and the same UpdateItems, one by one, concurrent, or one PUT ahead.
- ``OwnRequests``: objectlog's own requests (the same PUT, its commits, its spills) from a
  bare loop, with no producer and no encoding: the library's overhead beside its requests'.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

import pyarrow as pa

from objectlog import ObjectLog
from objectlog.format.index import SegmentRef
from objectlog.format.segment import slice_table, write_parquet
from objectlog.services.append import Appender, PartitionBatch, StagedFlush

MIB = 1 << 20
RECORD_BYTES = 1024  # key + value
KEY_BYTES = 16
PARTITIONS = 4
RECORDS_PER_FLUSH = MIB // RECORD_BYTES  # 1 MiB of records per flush
T = TypeVar("T")
# Flushes a Producer has in flight at once (clients/producer.py): the committer commits one,
# the next one waits for it, staged (its PUT on the Appender's upload thread), and the sender
# stages the one after (encodes it, hands its PUT to the upload thread) before it blocks.
# tests/functional/test_produce_floors.py measures it on a real Producer.
PRODUCER_DEPTH = 3


def flush_tables(topic: str, keys: Sequence[bytes], value: bytes, now_ms: int) -> list[pa.Table]:
    """One flush's slice tables, one per partition, as the producer builds them: record i
    (key keys[i], the value, timestamp now_ms) goes to partition i % PARTITIONS."""
    tables = []
    for partition in range(PARTITIONS):
        mine = keys[partition::PARTITIONS]
        tables.append(
            slice_table(topic, partition, mine, [value] * len(mine), [now_ms] * len(mine), 0)
        )
    return tables


def encode_slices(tables: Sequence[pa.Table], compression: str = "none") -> list[pa.Buffer]:
    """One self-contained Parquet slice per table, with objectlog's writer and the producer's
    compression (Appender._encode_slices)."""
    parts: list[pa.Buffer] = []
    for table in tables:
        sink = pa.BufferOutputStream()
        write_parquet(sink, table, compression)
        parts.append(sink.getvalue())
    return parts


def pipelined(
    flushes: int,
    depth: int,
    pool: ThreadPoolExecutor,
    stage: Callable[[], T],
    commit: Callable[[T], object],
) -> None:
    """Run flushes as a producer does, depth deep: stage (on pool) runs ahead of commit (on
    this thread) by up to depth - 1 flushes, so at most depth flushes are in flight, the one
    committing included. Commits run in order, each given its own flush's stage's answer."""
    ahead: deque[Future[T]] = deque()  # flushes staged or staging, oldest first
    for flush in range(flushes):
        while len(ahead) < depth and flush + len(ahead) < flushes:
            ahead.append(pool.submit(stage))
        commit(ahead.popleft().result())


class ProduceFloor:
    """The requests a flush needs at the least, from a bare boto3 loop: one PutObject of the
    same bytes, then per partition one conditional UpdateItem that adds to its next offset,
    idempotently (the producer's sequence must follow the last one)."""

    def __init__(self, log: ObjectLog, object_bytes: int) -> None:
        self.s3 = log.store.client
        self.dynamodb = log.metadata.client
        self.bucket, self.table = log.config.bucket, log.config.table
        self.body = os.urandom(object_bytes)
        self.sequences = [0] * PARTITIONS
        self.items = uuid.uuid4().hex[:8]  # its own items: sequences start at 0
        self.pool = ThreadPoolExecutor(PARTITIONS)
        self.put_pool = ThreadPoolExecutor(1)
        self.put_seconds: list[float] = []
        self.update_seconds: list[float] = []

    def put(self) -> None:
        self.put_body(self.body)

    def put_body(self, body: bytes) -> None:
        started = time.perf_counter()
        self.s3.put_object(
            Bucket=self.bucket, Key=f"floor/{uuid.uuid4().hex}", Body=body, IfNoneMatch="*"
        )
        self.put_seconds.append(time.perf_counter() - started)

    def update(self, partition: int) -> None:
        started = time.perf_counter()
        sequence = self.sequences[partition]
        self.dynamodb.update_item(
            TableName=self.table,
            Key={"pk": {"S": f"floor#{self.items}#{partition}"}, "sk": {"S": "head"}},
            UpdateExpression="SET sq = :seq ADD nx :n",
            ConditionExpression="attribute_not_exists(sq) OR sq = :prev",
            ExpressionAttributeValues={
                ":seq": {"N": str(sequence)},
                ":prev": {"N": str(sequence - 1)},
                ":n": {"N": str(RECORDS_PER_FLUSH // PARTITIONS)},
            },
            ReturnValues="UPDATED_NEW",
        )
        self.sequences[partition] = sequence + 1
        self.update_seconds.append(time.perf_counter() - started)

    def update_all(self, concurrent: bool = True) -> None:
        if concurrent:
            list(self.pool.map(self.update, range(PARTITIONS)))
        else:
            for partition in range(PARTITIONS):
                self.update(partition)

    def run(self, flushes: int, concurrent: bool, pipelined: bool = False) -> Callable[[], float]:
        """pipelined: the next flush's PUT in flight while this one's UpdateItems run."""

        def run() -> float:
            started = time.perf_counter()
            if pipelined:
                upload = self.put_pool.submit(self.put)
                for flush in range(flushes):
                    upload.result()
                    if flush + 1 < flushes:
                        upload = self.put_pool.submit(self.put)
                    self.update_all(concurrent)
            else:
                for _ in range(flushes):
                    self.put()
                    self.update_all(concurrent)
            return time.perf_counter() - started

        return run


class EncodingFloor(ProduceFloor):
    """The produce floor of issue 38: ProduceFloor's PUT and UpdateItems, with each flush's
    body encoded from ready Arrow tables (the producer's slices) by the thread that PUTs it,
    flushes in flight at the producer's depth.

    run_pipelined(split=True) does the same work with the producer's thread split instead
    (services/append.py: the sender encodes, the upload thread PUTs, the committer commits):
    not the floor issue 38 decided, printed beside it for reference."""

    def __init__(
        self,
        log: ObjectLog,
        tables: Sequence[pa.Table],
        depth: int = PRODUCER_DEPTH,
        compression: str = "none",
    ) -> None:
        super().__init__(log, 0)
        self.tables, self.depth, self.compression = list(tables), depth, compression
        self.encode_seconds: list[float] = []
        self.commit_seconds: list[float] = []
        self.body_bytes = 0  # the last body's
        self.encode_pool = ThreadPoolExecutor(1)  # split=True's encoding thread

    def encode(self) -> bytes:
        """One flush's object body: its slices side by side (one copy, as Appender._encode)."""
        started = time.perf_counter()
        body = b"".join(encode_slices(self.tables, self.compression))
        self.encode_seconds.append(time.perf_counter() - started)
        self.body_bytes = len(body)
        return body

    def put(self) -> None:
        self.put_body(self.encode())

    def commit(self) -> None:
        """The flush's UpdateItems, one per partition, concurrent (as the Appender's)."""
        started = time.perf_counter()
        self.update_all()
        self.commit_seconds.append(time.perf_counter() - started)

    def _encode_then_put(self) -> Future[None]:
        return self.put_pool.submit(self.put_body, self.encode())

    def _commit_after(self, upload: Future[None]) -> None:
        upload.result()
        self.commit()

    def run_pipelined(self, flushes: int, split: bool = False) -> Callable[[], float]:
        def run() -> float:
            started = time.perf_counter()
            if split:
                pool, stage, commit = self.encode_pool, self._encode_then_put, self._commit_after
                pipelined(flushes, self.depth, pool, stage, commit)
            else:
                pipelined(flushes, self.depth, self.put_pool, self.put, lambda _: self.commit())
            return time.perf_counter() - started

        return run


class PreEncoded(Appender):
    """An Appender whose flushes are one fixed, already encoded body (no Parquet encoding):
    the producer's requests (PUT, commits, carried or own spills) without its client work."""

    def __init__(self, log: ObjectLog, body: bytes, refs: list[SegmentRef]) -> None:
        super().__init__(log.store, log.metadata, log.index, log.config.prefix, log.clock)
        self.body, self.refs = body, refs

    def _encode_slices(
        self, batches: Sequence[PartitionBatch]
    ) -> tuple[list[pa.Buffer | bytes], list[SegmentRef]]:
        return [self.body], list(self.refs)


class OwnRequests:
    """objectlog's own requests for a flush, from a bare loop (no producer, no encoding):
    the same PutObject (the next one in flight while a flush commits, as in the producer), the
    same commit UpdateItems (concurrent), carrying the same spills."""

    def __init__(self, log: ObjectLog, topic: str, body: bytes, refs: list[SegmentRef]) -> None:
        self.appender = PreEncoded(log, body, refs)
        info = log.topic(topic)
        one_row = slice_table(topic, 0, [None], [b""], [0], 0)
        self.batches = [PartitionBatch(info, p, one_row) for p in range(PARTITIONS)]
        self.sequence = 0
        self.put_pool = ThreadPoolExecutor(1)

    def run(self, flushes: int) -> Callable[[], float]:
        appender = self.appender

        def commit(staged: StagedFlush) -> None:
            for outcome in staged.outcomes:
                outcome.batch.sequence = self.sequence
            self.sequence += 1
            for outcome in appender.commit_staged(staged, "bench-own"):
                assert outcome.error is None, outcome.error

        def run() -> float:
            started = time.perf_counter()
            staged = self.put_pool.submit(appender.stage, self.batches)  # pipelined as the producer
            for flush in range(flushes):
                current = staged.result()
                if flush + 1 < flushes:
                    staged = self.put_pool.submit(appender.stage, self.batches)
                commit(current)
            return time.perf_counter() - started

        return run


def one_flush(topic: str, value: bytes, keys: list[bytes]) -> tuple[bytes, list[SegmentRef]]:
    """One flush's L0 object as the Appender writes it: its body and one ref per partition."""
    now = int(time.time() * 1000)
    parts = encode_slices(flush_tables(topic, keys, value, now))
    refs, position = [], 0
    for part, partition in zip(parts, range(PARTITIONS), strict=True):
        count = len(keys[partition::PARTITIONS])
        refs.append(SegmentRef(0, "", position, part.size, count, count, now, now))
        position += part.size
    return b"".join(parts), refs
