"""The sink's work outside Spark: executors upload L0 objects, the driver commits them.

Columns are the Kafka sink's: ``value`` (string or binary, required), ``key`` (string or
binary), ``topic`` (string; the ``topic`` option overrides it), ``partition`` (int; else
murmur2 of the key as Kafka's producer, else null keys spread over the partitions) and
``headers`` (array<struct<key string, value binary>>). Other columns are ignored, as the Kafka
sink ignores them.

An executor encodes its rows through the producer's columnar path (services.columnar: sizes,
partitions, slices) and writes one L0 object per ``maxObjectBytes`` of input (Appender.upload:
no commit). The driver commits every slice with one conditional UpdateItem on its partition
head (HeadStore.commit), under one producer id per query (a hash of the checkpoint location,
or the ``producerId`` option) and

    sequence = batch_id * 2**40 + task * 2**16 + chunk

committed in increasing order per partition. A replayed micro-batch (the driver died after
committing, before Spark recorded the batch as done) carries sequences the head has already
seen: with allow_sequence_gaps the commit reports a duplicate and writes nothing. Gaps are
allowed because a batch may leave a partition out. Objects of an aborted batch are never
referenced; garbage collection removes them.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import random
import secrets
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from objectlog.clients.direct import ObjectLog
from objectlog.clock import ulid_time_ms
from objectlog.errors import (
    HorizonPassed,
    InvalidRequest,
    ObjectLogError,
    StorageUnavailable,
    UnknownOutcome,
)
from objectlog.format.index import SegmentRef
from objectlog.services.append import BACKOFF_S, COMMIT_ATTEMPTS, Appender, PartitionBatch
from objectlog.services.columnar import (
    RecordColumns,
    assign_partitions,
    binary_column,
    headers_column,
    table_batches,
)
from objectlog.spark.options import SinkOptions
from objectlog.stores.metadata import Commit, CommitResult

BATCH_SHIFT = 40
TASK_SHIFT = 16
MAX_TASKS = 1 << (BATCH_SHIFT - TASK_SHIFT)
MAX_CHUNKS = 1 << TASK_SHIFT
COMMIT_THREADS = 8
COLUMN_TYPES = {
    "topic": ("string",),
    "key": ("string", "binary"),
    "value": ("string", "binary"),
    "partition": ("int",),
    "headers": ("array<struct<key:string,value:binary>>",),
}


@dataclass(frozen=True, slots=True)
class UploadedSlice:
    """One partition's slice of an uploaded object, waiting for the driver's commit."""

    topic: str
    topic_id: str
    partition: int
    object_id: str
    ref: SegmentRef
    chunk: int


@dataclass(frozen=True, slots=True)
class TaskUpload:
    """What one write task uploaded (a Spark commit message carries it to the driver)."""

    task: int
    slices: tuple[UploadedSlice, ...]


@dataclass
class CommitSummary:
    committed: int = 0  # slices appended
    duplicates: int = 0  # slices a replayed batch had already committed
    records: int = 0


def check_schema(fields: Sequence[tuple[str, str]], options: SinkOptions) -> None:
    """The Kafka sink's checks on the DataFrame's (name, Spark type) columns."""
    types = {name: kind for name, kind in fields}
    if "value" not in types:
        raise InvalidRequest("the objectlog sink needs a 'value' column", field="value")
    if options.topic is None and "topic" not in types:
        raise InvalidRequest(
            "set the 'topic' option or give the DataFrame a 'topic' column", field="topic"
        )
    for name, allowed in COLUMN_TYPES.items():
        if name in types and types[name] not in allowed:
            raise InvalidRequest(
                f"column {name!r} must be {' or '.join(allowed)}, not {types[name]}", field=name
            )


def sink_producer_id(options: SinkOptions) -> str:
    """The query's producer id: stable across restarts, so replays are recognised."""
    identity = options.producer_id or options.checkpoint_location
    if identity is None:
        raise InvalidRequest(
            "the objectlog streaming sink needs a checkpointLocation (or the producerId option) "
            "to commit each micro-batch exactly once",
            field="checkpointLocation",
        )
    return "s" + hashlib.sha256(identity.encode()).hexdigest()[:15]


def batch_commit_identity(options: SinkOptions) -> tuple[str, int]:
    """(producer id, batch id) of a batch write.

    With the producerId and batchId options (foreachBatch passes its batch id) a replayed
    write commits nothing; without them each write is new, and only its own retried commits
    are recognised.
    """
    if (options.producer_id is None) != (options.batch_id is None):
        raise InvalidRequest(
            "set both producerId and batchId for an idempotent write, or neither",
            field="batchId",
        )
    if options.producer_id is not None and options.batch_id is not None:
        return sink_producer_id(options), options.batch_id
    return "b" + secrets.token_hex(7), 0


def sequence_of(batch_id: int, task: int, chunk: int) -> int:
    if not (0 <= task < MAX_TASKS and 0 <= chunk < MAX_CHUNKS and batch_id >= 0):
        raise InvalidRequest(f"batch {batch_id}, task {task}, chunk {chunk} out of range")
    return (batch_id << BATCH_SHIFT) + (task << TASK_SHIFT) + chunk


# ---- executors ---------------------------------------------------------------------------


def upload_task(
    log: ObjectLog,
    batches: Iterable[pa.RecordBatch],
    options: SinkOptions,
    task: int,
    rng: random.Random | None = None,
) -> TaskUpload:
    """Upload a write task's rows: one L0 object per maxObjectBytes of input, no commit."""
    rng = rng or random.Random()
    appender = log.new_appender(compression=options.compression)
    slices: list[UploadedSlice] = []
    chunk = 0
    try:
        pending: list[pa.RecordBatch] = []
        size = 0
        for batch in batches:
            if not batch.num_rows:
                continue
            pending.append(batch)
            size += batch.nbytes
            if size >= options.max_object_bytes:
                slices += _upload_chunk(log, appender, pending, options, chunk, rng)
                pending, size, chunk = [], 0, chunk + 1
        if pending:
            slices += _upload_chunk(log, appender, pending, options, chunk, rng)
    finally:
        appender.close()
    return TaskUpload(task, tuple(slices))


def _upload_chunk(
    log: ObjectLog,
    appender: Appender,
    batches: list[pa.RecordBatch],
    options: SinkOptions,
    chunk: int,
    rng: random.Random,
) -> list[UploadedSlice]:
    table = pa.Table.from_batches(batches)
    partition_batches = _partition_batches(log, table, options, rng)
    object_id, refs = appender.upload(partition_batches)
    return [
        UploadedSlice(b.topic.name, b.topic.topic_id, b.partition, object_id, ref, chunk)
        for b, ref in zip(partition_batches, refs, strict=True)
    ]


def _partition_batches(
    log: ObjectLog, table: pa.Table, options: SinkOptions, rng: random.Random
) -> list[PartitionBatch]:
    count = table.num_rows
    names = table.column_names
    if options.topic is not None:
        groups = [(options.topic, np.arange(count))]
    else:
        topics = table.column("topic").combine_chunks().cast(pa.string())
        if topics.null_count:
            raise InvalidRequest(
                "a row has a null topic and no 'topic' option is set", field="topic"
            )
        groups = [
            (topic, np.flatnonzero(pc.equal(topics, topic).to_numpy(zero_copy_only=False)))
            for topic in sorted(pc.unique(topics).to_pylist())
        ]
    columns = RecordColumns(
        keys=binary_column(table.column("key")) if "key" in names else pa.nulls(count, pa.binary()),
        values=binary_column(table.column("value")),
        headers=headers_column(table.column("headers")) if "headers" in names else None,
    )  # no timestamps: the Kafka sink stamps records when it writes them
    explicit = table.column("partition").combine_chunks() if "partition" in names else None
    now = log.clock.now_ms()
    out: list[PartitionBatch] = []
    for topic, rows in groups:
        info = log.topic(topic)
        take = pa.array(rows)
        partitions = assign_partitions(
            info,
            columns.keys.take(take),
            None if explicit is None else explicit.take(take),
            functools.partial(_spread, info.partitions, rng=rng),
        )
        out += [batch for _, batch in table_batches(info, columns, partitions, now, rows)]
    return out


def _spread(partitions: int, n: int, rng: random.Random) -> np.ndarray:
    """Null keys, as a sticky partitioner over many batches: contiguous blocks, one per
    partition, starting at a random one."""
    first = rng.randrange(partitions)
    return (first + np.arange(n) * partitions // n) % partitions


# ---- the driver --------------------------------------------------------------------------


def commit_uploads(
    log: ObjectLog,
    uploads: Iterable[TaskUpload | None],
    producer_id: str,
    batch_id: int,
    sleep: float = BACKOFF_S,
) -> CommitSummary:
    """Commit every uploaded slice; partitions in parallel, each in sequence order."""
    by_partition: dict[tuple[str, int], list[tuple[int, UploadedSlice]]] = defaultdict(list)
    for upload in uploads:
        if upload is None:
            continue
        for piece in upload.slices:
            sequence = sequence_of(batch_id, upload.task, piece.chunk)
            by_partition[(piece.topic, piece.partition)].append((sequence, piece))
    summary = CommitSummary()

    def commit_partition(pieces: list[tuple[int, UploadedSlice]]) -> list[CommitResult]:
        return [
            _commit_one(log, piece, producer_id, sequence, sleep)
            for sequence, piece in sorted(pieces, key=lambda item: item[0])
        ]

    jobs = [by_partition[key] for key in sorted(by_partition)]
    try:
        with ThreadPoolExecutor(max_workers=COMMIT_THREADS) as pool:
            outcomes = list(pool.map(commit_partition, jobs))
    finally:  # waiters at the tail of a still topic learn it moved (services.activity)
        log.activity.committed(topic for topic, _ in by_partition)
    for pieces, results in zip(jobs, outcomes, strict=True):
        for (_, piece), result in zip(sorted(pieces, key=lambda i: i[0]), results, strict=True):
            if result.duplicate:
                summary.duplicates += 1
            else:
                summary.committed += 1
                summary.records += piece.ref.records
        last = results[-1].head if results else None
        if last is not None and log.index.needs_spill(last):
            with contextlib.suppress(ObjectLogError):  # the next commit spills again
                log.index.spill(last)
    return summary


def _commit_one(
    log: ObjectLog, piece: UploadedSlice, producer_id: str, sequence: int, sleep: float
) -> CommitResult:
    last_error: ObjectLogError | None = None
    for attempt in range(COMMIT_ATTEMPTS):
        try:
            return log.metadata.commit(
                Commit(
                    topic_id=piece.topic_id,
                    topic=piece.topic,
                    partition=piece.partition,
                    ref=piece.ref,
                    object_time_ms=ulid_time_ms(piece.object_id),
                    producer_id=producer_id,
                    sequence=sequence,
                    now_s=log.clock.now_ms() // 1000,
                    allow_sequence_gaps=True,
                )
            )
        except HorizonPassed as e:
            raise HorizonPassed(
                f"{piece.topic}/{piece.partition}: the batch's object is older than the GC "
                "horizon; the batch fails and its retry uploads again"
            ) from e
        except (UnknownOutcome, StorageUnavailable) as e:  # same sequence: safe to retry
            last_error = e
            time.sleep(sleep * 2**attempt)
    raise last_error or UnknownOutcome("commit did not complete")
