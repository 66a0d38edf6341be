"""The objectlog data source and sink in one local Spark session, against the embedded server.

Spark-level tests (the DataFrame a user sees) share one session; planning-level tests call the
planner, the readers and the sink's driver code directly, without a JVM round trip.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from objectlog import ObjectLog
from objectlog.errors import InvalidRequest, OffsetOutOfRange
from objectlog.format.partitioner import partition_for_key
from objectlog.format.segment import decode_parquet
from objectlog.stores.dynamo_metadata import DynamoMetadata, head_key
from objectlog.stores.local import LocalObjectStore
from tests.e2e.spark_session import local_builder

pytest.importorskip("pyspark", reason="make test installs pyspark (the spark extra)")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("PySpark needs Java 17", allow_module_level=True)

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

import objectlog.spark
from objectlog.compaction.compactor import CompactionSettings
from objectlog.compaction.maintenance import run_maintenance
from objectlog.spark.options import ReadOptions, SinkOptions
from objectlog.spark.planning import plan_batch
from objectlog.spark.reading import read_task
from objectlog.spark.sink import commit_uploads, upload_task
from objectlog.spark.source import FilteringBatchReader, StreamReader

# The Kafka source's schema, as Spark's KafkaRecordToRowConverter declares it.
KAFKA_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
)
KAFKA_HEADERS = StructField(
    "headers",
    ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())])),
)
EXAMPLE = Path(__file__).parents[2] / "examples" / "spark_pipeline.py"


@pytest.fixture(scope="session")
def spark(aws_endpoint: str) -> Iterator[Any]:
    session = (
        local_builder("objectlog-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.stateStore.maintenanceInterval", "600s")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    objectlog.spark.register(session)
    yield session
    session.stop()


def options(log: ObjectLog, **extra: str) -> dict[str, str]:
    return {
        "endpoint": log.config.s3_endpoint or "",
        "bucket": log.config.bucket,
        "table": log.config.table,
        **extra,
    }


def load(spark: Any, log: ObjectLog, **extra: str) -> Any:
    return spark.read.format("objectlog").options(**options(log, **extra)).load()


def offsets_of(frame: Any) -> list[tuple[int, int]]:
    return sorted((r.partition, r.offset) for r in frame.select("partition", "offset").collect())


@pytest.fixture
def produced(log: ObjectLog) -> dict[tuple[int, int], bytes]:
    """orders: 3 partitions, 4 flushes of 9 keyed records at t = 1 s, 2 s, 3 s, 4 s."""
    log.create_topic("orders", partitions=3)
    log.create_topic("other", partitions=1)
    sent = {}
    with log.producer(linger_ms=0) as producer:
        for flush in range(4):
            futures = {
                i: producer.send(
                    "orders",
                    b"v%d-%d" % (flush, i),
                    key=b"k%d" % i,
                    headers=[("h", b"%d" % i)],
                    timestamp_ms=1_000 * (flush + 1),
                )
                for i in range(9)
            }
            producer.flush()
            for i, future in futures.items():
                md = future.result()
                sent[(md.partition, md.offset)] = b"v%d-%d" % (flush, i)
        producer.send("other", b"x").result()
    return sent


def ends(produced: dict[tuple[int, int], bytes]) -> dict[int, int]:
    return {p: max(o for (pp, o) in produced if pp == p) + 1 for p in range(3)}


def remove_below(log: ObjectLog, topic: str, partition: int, offset: int) -> None:
    """What retention (issue 6) does to a head: the log now starts at offset."""
    assert isinstance(log.items.metadata, DynamoMetadata)
    log.items.metadata.table.update(
        head_key(topic, partition), "SET lso = :o", values={":o": offset}, repeatable=True
    )


# ---- batch read ------------------------------------------------------------------------


def test_schema_is_the_kafka_sources(spark: Any, log: ObjectLog, produced: Any) -> None:
    assert load(spark, log, subscribe="orders").schema == KAFKA_SCHEMA
    with_headers = load(spark, log, subscribe="orders", includeHeaders="true")
    assert with_headers.schema == StructType([*KAFKA_SCHEMA.fields, KAFKA_HEADERS])
    assert objectlog.spark.read(spark, **options(log, subscribe="orders")).schema == KAFKA_SCHEMA


def test_batch_read_returns_what_was_produced(spark: Any, log: ObjectLog, produced: Any) -> None:
    rows = load(spark, log, subscribe="orders", includeHeaders="true").collect()
    assert len(rows) == len(produced) == 36
    assert {(r.partition, r.offset): bytes(r.value) for r in rows} == produced
    for row in rows:
        assert row.topic == "orders" and row.timestampType == 0
        assert row.partition == partition_for_key(bytes(row.key), 3)
        assert [(h.key, bytes(h.value)) for h in row.headers] == [("h", bytes(row.key)[1:])]
    assert {int(r.timestamp.timestamp()) for r in rows} == {1, 2, 3, 4}
    assert load(spark, log, subscribe="orders,other").count() == 37


def test_offset_options(spark: Any, log: ObjectLog, produced: Any) -> None:
    latest = ends(produced)
    starting = json.dumps({"orders": {"0": 2, "1": -2, "2": 3}})
    ending = json.dumps({"orders": {"0": 4, "1": -1, "2": -1}})
    got = offsets_of(
        load(spark, log, subscribe="orders", startingOffsets=starting, endingOffsets=ending)
    )
    assert got == [(0, 2), (0, 3)] + [(1, o) for o in range(latest[1])] + [
        (2, o) for o in range(3, latest[2])
    ]
    # Pruning as Spark sees it: one input partition per segment, only the segments needed.
    per_segment = {"subscribe": "orders", "maxBytesPerPartition": "1"}
    assert load(spark, log, **per_segment).rdd.getNumPartitions() == 12
    assert load(spark, log, **per_segment, startingTimestamp="4000").rdd.getNumPartitions() == 3
    # Timestamps: the first offset whose timestamp is >= the value (ending: exclusive).
    window = load(spark, log, subscribe="orders", startingTimestamp="2000", endingTimestamp="4000")
    assert sorted({int(r.timestamp.timestamp()) for r in window.collect()}) == [2, 3]
    by_time = load(
        spark,
        log,
        subscribe="orders",
        startingOffsetsByTimestamp=json.dumps({"orders": {"0": 4000}}),
        endingOffsetsByTimestamp=json.dumps({"orders": {"1": 2000}}),
    ).collect()
    assert {int(r.timestamp.timestamp()) for r in by_time if r.partition == 0} == {4}
    assert {int(r.timestamp.timestamp()) for r in by_time if r.partition == 1} == {1}
    assert len([r for r in by_time if r.partition == 2]) == latest[2]


def test_offset_options_checked_as_kafka_does(log: ObjectLog, produced: Any) -> None:
    def plan(**extra: str) -> list[Any]:
        return plan_batch(log, ReadOptions.parse(options(log, **extra), streaming=False))

    assert {t.partition for t in plan(assign=json.dumps({"orders": [1]}))} == {1}
    assert {t.topic for t in plan(subscribePattern="ord.*|oth.*")} == {"orders", "other"}
    assert {t.topic for t in plan(subscribePattern="ord")} == set()  # a full match, as Kafka
    with pytest.raises(InvalidRequest, match="latest"):
        plan(subscribe="orders", startingOffsets="latest")
    with pytest.raises(InvalidRequest, match="earliest"):
        plan(subscribe="orders", endingOffsets=json.dumps({"orders": {"0": -2}}))
    with pytest.raises(InvalidRequest, match="exactly one"):
        plan(subscribe="orders", assign=json.dumps({"orders": [0]}))
    with pytest.raises(InvalidRequest, match="timestamp"):
        plan(subscribe="orders", startingTimestamp="9000")
    assert (
        plan(
            subscribe="orders",
            startingTimestamp="9000",
            startingOffsetsByTimestampStrategy="latest",
        )
        == []
    )
    with pytest.raises(InvalidRequest, match="streaming"):
        ReadOptions.parse({"subscribe": "orders", "endingOffsets": "latest"}, streaming=True)
    # Retention removed offsets 0..2 of partition 0: fail, or skip them with failOnDataLoss=false.
    remove_below(log, "orders", 0, 3)
    with pytest.raises(OffsetOutOfRange, match="failOnDataLoss"):
        plan(subscribe="orders", startingOffsets=json.dumps({"orders": {"0": 0}}))
    tasks = plan(
        subscribe="orders", startingOffsets=json.dumps({"orders": {"0": 0}}), failOnDataLoss="false"
    )
    assert min(t.start_offset for t in tasks if t.partition == 0) == 3


def test_input_partitions_are_cut_on_segments(log: ObjectLog, produced: Any) -> None:
    def plan(**extra: str) -> list[Any]:
        return plan_batch(log, ReadOptions.parse(options(log, **extra), streaming=False))

    everything = plan(subscribe="orders")
    assert sum(len(t.slices) for t in everything) == 12  # 4 flushes x 3 partitions
    assert len(everything) == 3  # one task per partition (no parallelism given: 128 MiB)
    one_each = plan(subscribe="orders", maxBytesPerPartition="1")
    assert len(one_each) == 12 and all(len(t.slices) == 1 for t in one_each)
    assert len(plan(subscribe="orders", minPartitions="8")) >= 8
    # An offset range reads only the segments that hold it.
    latest = ends(produced)
    tail = plan(
        subscribe="orders",
        startingOffsets=json.dumps({"orders": {"0": latest[0], "1": latest[1], "2": 3}}),
    )
    per_flush = latest[2] // 4  # the keys land alike in every flush
    assert sum(len(t.slices) for t in tail) == 4 - 3 // per_flush  # partition 2 from offset 3


def test_input_partitions_follow_the_sessions_parallelism_and_bytes(
    spark: Any, log: ObjectLog, produced: Any
) -> None:
    """As Spark's file sources pack small files: three partitions of a few KiB, each counted
    with its 4 MiB open cost, spread over the session's two cores; with the open cost at 0 and
    a split size of one byte, every slice is one input partition."""
    assert load(spark, log, subscribe="orders").rdd.getNumPartitions() == 2
    spread = load(spark, log, subscribe="orders", openCostInBytes="0", maxBytesPerPartition="1")
    assert spread.rdd.getNumPartitions() == 12  # 4 flushes x 3 partitions
    rows = spread.select("partition", "offset", "value").collect()
    assert {(r.partition, r.offset): bytes(r.value) for r in rows} == produced


def test_filters_are_pushed_where_spark_allows_it(
    spark: Any, log: ObjectLog, produced: Any
) -> None:
    """Spark 4.1+ with spark.sql.python.filterPushdown.enabled (read at register()): only the
    filtered partition's slices are planned; without it, every slice, and the same rows."""
    from pyspark import __version__ as version

    if tuple(int(part) for part in version.split(".")[:2]) < (4, 1):
        pytest.skip("Spark 4.0 never pushes filters to Python sources")
    one_slice_each = {"openCostInBytes": "0", "maxBytesPerPartition": "1"}

    def read() -> Any:
        return load(spark, log, subscribe="orders", **one_slice_each).where("partition = 1")

    unpushed = read()
    spark.conf.set(objectlog.spark.PUSHDOWN_CONF, "true")
    objectlog.spark.register(spark)
    try:
        pushed = read()
        assert pushed.rdd.getNumPartitions() == 4 < unpushed.rdd.getNumPartitions()
        assert sorted(map(str, pushed.collect())) == sorted(map(str, unpushed.collect()))
    finally:
        spark.conf.unset(objectlog.spark.PUSHDOWN_CONF)
        objectlog.spark.register(spark)


def test_objects_dir_reads_a_local_copy_of_the_bucket(
    spark: Any, log: ObjectLog, produced: Any, tmp_path: Path
) -> None:
    """objectsDir: the objects from a directory (as `aws s3 sync` leaves a copy), the heads
    and manifests' pointers from DynamoDB as always."""
    copy = LocalObjectStore(tmp_path / "bucket")
    keys = [info.key for info in log.store.list(log.config.prefix)]
    for key in keys:
        copy.put_if_absent(key, log.store.get(key))
    log.store.delete_many(keys)  # only the copy has them now
    frame = load(spark, log, subscribe="orders", objectsDir=str(tmp_path / "bucket"))
    rows = frame.select("partition", "offset", "value").collect()
    assert {(r.partition, r.offset): bytes(r.value) for r in rows} == produced


def test_planning_reads_through_manifests(log: ObjectLog) -> None:
    log.create_topic("long", partitions=1)
    values = produce(log, "long", 100)  # 20 flushes of 5: the head spills refs into manifests
    head = log.metadata.get_head("long", 0)
    assert head is not None and head.manifest_list and len(head.tail) < 20
    read = ReadOptions.parse(
        options(log, subscribe="long", startingOffsets=json.dumps({"long": {"0": 12}})),
        streaming=False,
    )
    tasks = plan_batch(log, read)
    assert sum(len(t.slices) for t in tasks) == 18  # offsets 12..99: segments 2..19
    rows = pa.Table.from_batches([b for t in tasks for b in read_task(log, t, False)])
    assert rows.column("offset").to_pylist() == list(range(12, 100))
    assert rows.column("value").to_pylist() == values[12:]


def test_pushed_filters_prune_segments(log: ObjectLog, produced: Any) -> None:
    """Spark 4.1's pushFilters, with its Filter classes' shape (4.0 never calls it)."""

    @dataclass(frozen=True)
    class EqualTo:
        attribute: tuple[str, ...]
        value: Any

    @dataclass(frozen=True)
    class GreaterThanOrEqual(EqualTo):
        pass

    @dataclass(frozen=True)
    class LessThan(EqualTo):
        pass

    from datetime import UTC, datetime

    reader = FilteringBatchReader(options(log, subscribe="orders"))
    timestamp = GreaterThanOrEqual(("timestamp",), datetime.fromtimestamp(3, tz=UTC))
    pushed = [EqualTo(("partition",), 1), GreaterThanOrEqual(("offset",), 1), timestamp]
    remaining = list(reader.pushFilters(pushed))
    assert remaining == [timestamp] and remaining[0] is timestamp  # Spark re-checks time
    tasks = [t for p in reader.partitions() for t in p.value]
    assert {t.partition for t in tasks} == {1}
    assert sum(len(t.slices) for t in tasks) == 2  # the flushes at 3 s and 4 s only
    rows = pa.Table.from_batches([b for t in tasks for b in read_task(log, t, False)])
    wanted = [
        r.offset for r in fetch_all(log, "orders") if r.partition == 1 and r.timestamp >= 3000
    ]
    assert rows.column("offset").to_pylist() == wanted
    only_offset = FilteringBatchReader(options(log, subscribe="orders"))
    assert list(only_offset.pushFilters([LessThan(("offset",), 1)])) == []
    assert [(t.start_offset, t.end_offset) for p in only_offset.partitions() for t in p.value] == [
        (0, 1)
    ] * 3


def test_mapinarrow_path_matches_the_data_source(spark: Any, log: ObjectLog, produced: Any) -> None:
    extra = {
        "subscribe": "orders",
        "includeHeaders": "true",
        "startingOffsets": json.dumps({"orders": {"0": 1}}),
    }
    direct = objectlog.spark.read(spark, **options(log, **extra))
    source = load(spark, log, **extra)
    assert direct.schema == source.schema
    assert sorted(map(str, direct.collect())) == sorted(map(str, source.collect()))


def test_an_empty_topic_reads_as_no_rows(spark: Any, log: ObjectLog) -> None:
    log.create_topic("empty", partitions=2)
    assert load(spark, log, subscribe="empty").count() == 0
    assert objectlog.spark.read(spark, **options(log, subscribe="empty")).count() == 0


# ---- streaming read --------------------------------------------------------------------


def produce(log: ObjectLog, topic: str, count: int, start: int = 0, **send: Any) -> list[bytes]:
    values = [b"m%d" % i for i in range(start, start + count)]
    with log.producer(linger_ms=0) as producer:
        for value in values:
            producer.send(topic, value, **send)
            if int(value[1:]) % 5 == 4:
                producer.flush()
    return values


def test_stream_reader_offsets(log: ObjectLog) -> None:
    """Offsets, maxOffsetsPerTrigger, new partitions and failOnDataLoss, without a JVM."""
    log.create_topic("events", partitions=2)
    for p in range(2):
        produce(log, "events", 10, partition=p)
    reader = StreamReader(
        options(log, subscribe="events", startingOffsets="earliest", maxOffsetsPerTrigger="8")
    )
    start = reader.initialOffset()
    assert start == {"events": {"0": 0, "1": 0}}
    first = reader.latestOffset()
    assert first == {"events": {"0": 4, "1": 4}}  # 8 shared by backlog
    tasks = [t for p in reader.partitions(start, first) for t in p.value]
    assert {(t.partition, t.start_offset, t.end_offset) for t in tasks} == {(0, 0, 4), (1, 0, 4)}
    reader.commit(first)
    second = reader.latestOffset()
    assert second == {"events": {"0": 8, "1": 8}}
    log.add_partitions("events", 3)
    produce(log, "events", 2, partition=2)
    reader.partitions(first, second)
    third = reader.latestOffset()
    assert third == {"events": {"0": 10, "1": 10, "2": 2}}  # the new partition, from its start
    assert [
        (t.partition, t.start_offset)
        for p in reader.partitions(second, third)
        for t in p.value
        if t.partition == 2
    ] == [(2, 0)]
    # Retention removed what the checkpoint points at.
    remove_below(log, "events", 0, 9)
    with pytest.raises(OffsetOutOfRange, match="failOnDataLoss"):
        reader.partitions(second, third)
    lenient = StreamReader(options(log, subscribe="events", failOnDataLoss="false"))
    assert lenient.initialOffset() == {"events": {"0": 10, "1": 10, "2": 2}}  # latest by default
    tasks = [t for p in lenient.partitions(second, third) for t in p.value]
    assert [t.start_offset for t in tasks if t.partition == 0] == [9]


def test_stream_with_restart_reads_each_record_once(
    spark: Any, log: ObjectLog, tmp_path: Path
) -> None:
    log.create_topic("events", partitions=2)
    values = produce(log, "events", 15, partition=0) + produce(log, "events", 15, 15, partition=1)
    batches: list[tuple[int, list[tuple[str, int, int, bytes]]]] = []

    def collect(frame: Any, batch_id: int) -> None:
        rows = frame.select("topic", "partition", "offset", "value").collect()
        batches.append((batch_id, [(r.topic, r.partition, r.offset, bytes(r.value)) for r in rows]))

    def run() -> None:
        query = (
            spark.readStream.format("objectlog")
            .options(
                **options(
                    log, subscribe="events", startingOffsets="earliest", maxOffsetsPerTrigger="10"
                )
            )
            .load()
            .writeStream.foreachBatch(collect)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .start()
        )
        try:
            query.processAllAvailable()
        finally:
            query.stop()

    run()
    first_run = [b for b in batches if b[1]]
    assert len(first_run) == 3 and all(len(rows) == 10 for _, rows in first_run)
    log.add_partitions("events", 3)  # picked up by the restarted query
    values += produce(log, "events", 3, 30, partition=0) + produce(
        log, "events", 3, 33, partition=1
    )
    values += produce(log, "events", 3, 36, partition=2)
    run()
    rows = [row for _, batch in batches for row in batch]
    assert len(rows) == len({(t, p, o) for t, p, o, _ in rows})  # no duplicate
    assert sorted(v for *_, v in rows) == sorted(values)  # no loss
    assert {p for _, p, _, _ in rows} == {0, 1, 2}


def test_available_now_reads_what_is_there_and_stops(
    spark: Any, log: ObjectLog, tmp_path: Path
) -> None:
    log.create_topic("events", partitions=2)
    produce(log, "events", 12)

    def run() -> int:
        rows: list[Any] = []
        query = (
            spark.readStream.format("objectlog")
            .options(**options(log, subscribe="events", startingOffsets="earliest"))
            .load()
            .writeStream.foreachBatch(lambda frame, _: rows.extend(frame.collect()))
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(120)
        return len(rows)

    assert run() == 12
    produce(log, "events", 5, start=12)
    assert run() == 5  # restarted from the checkpoint: the new records only


# ---- sink ------------------------------------------------------------------------------


def fetch_all(log: ObjectLog, topic: str) -> list[Any]:
    records = []
    for partition in range(log.topic(topic, fresh=True).partitions):
        offset = 0
        while offset < log.offsets(topic, partition).latest:
            result = log.fetch(topic, partition, offset, max_bytes=1 << 20)
            records += result.records
            offset = result.next_offset
    return records


def test_batch_write_with_kafka_sink_columns(spark: Any, log: ObjectLog) -> None:
    log.create_topic("out", partitions=3)
    log.create_topic("side", partitions=1)
    frame = spark.createDataFrame(
        [(f"k{i}", f"v{i}", None if i % 3 else 2, [("h", b"x")]) for i in range(20)],
        "key string, value string, partition int, headers array<struct<key:string,value:binary>>",
    )
    frame.write.format("objectlog").options(**options(log, topic="out")).mode("append").save()
    records = fetch_all(log, "out")
    assert sorted(r.value for r in records) == sorted(b"v%d" % i for i in range(20))
    for record in records:
        i = int(record.key[1:])
        assert record.partition == (2 if i % 3 == 0 else partition_for_key(record.key, 3))
        assert record.headers == [("h", b"x")]
    # A topic column routes rows; unkeyed rows spread over the partitions.
    routed = spark.createDataFrame(
        [("out" if i % 2 else "side", b"r%d" % i) for i in range(10)], "topic string, value binary"
    )
    routed.write.format("objectlog").options(**options(log)).mode("append").save()
    assert sorted(r.value for r in fetch_all(log, "side")) == sorted(
        b"r%d" % i for i in range(0, 10, 2)
    )
    assert len(fetch_all(log, "out")) == 25
    # producerId with batchId (as foreachBatch passes it): a replayed write writes nothing.
    idempotent = options(log, topic="side", producerId="job-1", batchId="7")
    for _ in range(2):
        routed.select("value").write.format("objectlog").options(**idempotent).mode("append").save()
    assert len(fetch_all(log, "side")) == 5 + 10
    with pytest.raises(Exception, match="value"):
        spark.createDataFrame([("a",)], "key string").write.format("objectlog").options(
            **options(log, topic="out")
        ).mode("append").save()


def test_sink_commits_each_batch_once(log: ObjectLog) -> None:
    """The driver's side: a replayed batch writes nothing; a batch may skip a partition."""
    log.create_topic("dst", partitions=2)
    sink = SinkOptions.parse({"topic": "dst", "checkpointLocation": "/ck"})

    def upload(task: int, partition: int, n: int) -> Any:
        batch = pa.record_batch(
            {"value": [b"x"] * n, "partition": pa.array([partition] * n, pa.int32())}
        )
        return upload_task(log, [batch], sink, task)

    first = [upload(0, 0, 3), upload(1, 1, 2)]
    assert commit_uploads(log, first, "sq", batch_id=0).committed == 2
    replay = [upload(0, 0, 3), upload(1, 1, 2)]  # a retried batch uploads again...
    summary = commit_uploads(log, replay, "sq", batch_id=0)
    assert (summary.committed, summary.duplicates) == (0, 2)  # ...and commits nothing
    assert commit_uploads(log, [upload(0, 0, 1)], "sq", batch_id=1).committed == 1  # p1: no data
    assert commit_uploads(log, [upload(1, 1, 4)], "sq", batch_id=2).committed == 1  # p1: a gap
    assert [log.offsets("dst", p).latest for p in range(2)] == [4, 6]
    # every batch's commits touched the topic's activity: a still topic's waiters wake
    assert log.items.activity.read("dst") >= 1


def test_streaming_sink_is_exactly_once_over_a_replay(
    spark: Any, log: ObjectLog, tmp_path: Path
) -> None:
    log.create_topic("src", partitions=2)
    log.create_topic("dst", partitions=2)
    values = produce(log, "src", 10, partition=0) + produce(log, "src", 10, 10, partition=1)
    checkpoint = tmp_path / "checkpoint"

    def run() -> list[dict[str, Any]]:
        query = (
            spark.readStream.format("objectlog")
            .options(
                **options(
                    log, subscribe="src", startingOffsets="earliest", maxOffsetsPerTrigger="10"
                )
            )
            .load()
            .select("key", "value", "partition")
            .writeStream.format("objectlog")
            .options(**options(log, topic="dst"))
            .option("checkpointLocation", str(checkpoint))
            .start()
        )
        try:
            query.processAllAvailable()
            return [p for p in query.recentProgress if p["numInputRows"]]
        finally:
            query.stop()

    progress = run()
    assert [p["numInputRows"] for p in progress] == [10, 10]
    # Forget that the last batch completed: Spark replays it, and the sink commits it again.
    last = max(int(f.name) for f in (checkpoint / "commits").iterdir() if f.name.isdigit())
    (checkpoint / "commits" / str(last)).unlink()
    (checkpoint / "commits" / f".{last}.crc").unlink(missing_ok=True)
    replayed = run()
    assert [p["batchId"] for p in replayed] == [last]
    records = fetch_all(log, "dst")
    assert sorted(r.value for r in records) == sorted(values)  # once each
    source = {r.value: r.partition for r in fetch_all(log, "src")}
    assert all(r.partition == source[r.value] for r in records)  # the partition column


# ---- L1 files, the example -------------------------------------------------------------


def test_live_files_lists_the_indexed_l1_files(spark: Any, log: ObjectLog) -> None:
    topic = log.create_topic("compacted", partitions=1)
    for _ in range(6):  # six L0 objects; the compactor merges all but the newest two
        produce(log, "compacted", 5, partition=0)
    expected = offsets_of(load(spark, log, subscribe="compacted"))
    run_maintenance(
        log,
        ["compacted"],
        settings=CompactionSettings(target_file_bytes=1 << 20, row_group_bytes=256),
        collect=False,
    )
    # A replaced file still in its grace period is in the directory, but not in the index.
    stale = f"topics/compacted/{topic.topic_id}/partition=0/00000000000000000000-old.parquet"
    log.store.put_if_absent(log.config.prefix + stale, b"PAR1")
    files = objectlog.spark.live_files("compacted", log=log)
    assert len(files) == 1 and "-old" not in files[0]
    assert objectlog.spark.live_files("compacted", **options(log), scheme="s3a")[0].startswith(
        "s3a://"
    )
    read = decode_parquet(log.store.get(files[0].split("/", 3)[3]))
    assert read.column("offset").to_pylist() == list(range(20))
    # The data source reads L1 row groups and L0 slices alike.
    assert offsets_of(load(spark, log, subscribe="compacted")) == expected


def test_example_pipeline_totals_orders_once(spark: Any, log: ObjectLog, tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("spark_pipeline", EXAMPLE)
    assert spec and spec.loader
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    log.create_topic("orders", partitions=2)
    log.create_topic("order-totals", partitions=2)

    def order(customer: str, amount: float) -> None:
        with log.producer(linger_ms=0) as producer:
            producer.send("orders", json.dumps({"amount": amount}).encode(), key=customer.encode())

    def run() -> None:
        query = example.start(
            spark, str(tmp_path / "checkpoint"), options=options(log), available_now=True
        )
        assert query.awaitTermination(120)

    def totals() -> dict[str, dict[str, Any]]:
        latest = {}
        for record in sorted(fetch_all(log, "order-totals"), key=lambda r: (r.partition, r.offset)):
            latest[record.key.decode()] = json.loads(record.value)
        return latest

    order("alice", 10), order("bob", 5), order("alice", 2.5)
    run()
    assert totals() == {
        "alice": {"customer": "alice", "orders": 2, "amount": 12.5},
        "bob": {"customer": "bob", "orders": 1, "amount": 5.0},
    }
    written = len(fetch_all(log, "order-totals"))
    order("bob", 1)
    run()  # restarted from its checkpoint: only bob's total changes
    assert totals()["bob"] == {"customer": "bob", "orders": 2, "amount": 6.0}
    assert len(fetch_all(log, "order-totals")) == written + 1


def test_typed_values_decode_the_live_tail_and_compacted_files_through_the_registry(
    spark: Any, log: ObjectLog
) -> None:
    from decimal import Decimal

    from tests.functional.test_typed_tables import ORDER_V1, ORDER_V2, framed, order, register

    log.create_topic("typed", partitions=1)
    v1 = register(log, "typed-value", ORDER_V1)
    with log.producer(linger_ms=0) as producer:
        for n in range(3):
            producer.send("typed", framed(v1, ORDER_V1, order(n)))
    run_maintenance(log, settings=CompactionSettings(target_file_bytes=1 << 10))
    v2 = register(log, "typed-value", ORDER_V2)
    with log.producer(linger_ms=0) as producer:  # the live tail: L0 objects
        producer.send("typed", framed(v2, ORDER_V2, order(3, ship={"city": "Oslo"})))
        producer.send("typed", b"not framed")
    extra = {"subscribe": "typed", "typedValues": "true"}
    frame = load(spark, log, **extra)
    decoded = frame.schema["value_decoded"].dataType
    assert decoded.fieldNames() == ["id", "item", "price", "at", "tags", "note", "ship"]
    rows = {r.offset: r for r in frame.collect()}
    assert rows[0].value_decoded.item == "item-0" and rows[0].value_decoded.price == Decimal("0.25")
    assert rows[0].value_schema_id == v1 and rows[0].value_decoded.ship is None
    assert rows[3].value_decoded.ship.city == "Oslo" and rows[3].value_schema_id == v2
    assert rows[4].value_decoded is None and rows[4].value_error.startswith("not framed")
    direct = objectlog.spark.read(spark, **options(log, **extra))
    assert direct.schema == frame.schema
    assert sorted(map(str, direct.collect())) == sorted(map(str, frame.collect()))
    with pytest.raises(Exception, match="no schema is registered under orders-value"):
        load(spark, log, subscribe="orders", typedValues="true").schema  # noqa: B018
