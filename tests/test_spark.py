"""The objectlog data source in a local Spark session, against the embedded moto server."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator

import pytest

from objectlog import ObjectLog
from objectlog.spark.planning import plan

pyspark = pytest.importorskip("pyspark", reason="make test installs pyspark (the spark extra)")

KAFKA_SCHEMA = (
    "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
    "timestamp:timestamp,timestampType:int>"
)


@pytest.fixture(scope="session")
def spark(aws_endpoint: str) -> Iterator[object]:
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("objectlog-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.executorEnv.AWS_ENDPOINT_URL", aws_endpoint)
        .getOrCreate()
    )
    import objectlog.spark

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


@pytest.fixture
def produced(log: ObjectLog) -> dict[tuple[int, int], bytes]:
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


def test_schema_is_the_kafka_sources(spark, log: ObjectLog, produced) -> None:
    frame = spark.read.format("objectlog").options(**options(log, subscribe="orders")).load()
    assert frame.schema.simpleString() == KAFKA_SCHEMA
    with_headers = (
        spark.read.format("objectlog")
        .options(**options(log, subscribe="orders", includeHeaders="true"))
        .load()
    )
    assert (
        with_headers.schema.simpleString()
        == KAFKA_SCHEMA[:-1] + ",headers:array<struct<key:string,value:binary>>>"
    )


def test_batch_read_returns_what_was_produced(spark, log: ObjectLog, produced) -> None:
    rows = (
        spark.read.format("objectlog")
        .options(**options(log, subscribe="orders", includeHeaders="true"))
        .load()
        .collect()
    )
    assert len(rows) == len(produced) == 36
    for row in rows:
        assert produced[(row.partition, row.offset)] == bytes(row.value)
        assert row.topic == "orders" and row.timestampType == 0
        assert [(h.key, bytes(h.value)) for h in row.headers] == [("h", bytes(row.key)[1:])]
    assert {int(r.timestamp.timestamp()) for r in rows} == {1, 2, 3, 4}


def test_offset_options(spark, log: ObjectLog, produced) -> None:
    read = lambda **o: spark.read.format("objectlog").options(**options(log, **o)).load()  # noqa: E731
    per_partition = {p: max(o for (pp, o) in produced if pp == p) + 1 for p in range(3)}
    starting = json.dumps({"orders": {"0": 2, "1": -2, "2": -1}})
    ending = json.dumps({"orders": {"0": 4, "1": -1, "2": -1}})
    rows = read(subscribe="orders", startingOffsets=starting, endingOffsets=ending).collect()
    assert sorted((r.partition, r.offset) for r in rows) == [(0, 2), (0, 3)] + [
        (1, o) for o in range(per_partition[1])
    ]
    assigned = read(assign=json.dumps({"orders": [1]})).collect()
    assert {r.partition for r in assigned} == {1}
    pattern = read(subscribePattern="ord.*|oth.*").collect()
    assert {r.topic for r in pattern} == {"orders", "other"}
    later = read(subscribe="orders", startingTimestamp="3000").collect()
    assert {int(r.timestamp.timestamp()) for r in later} == {3, 4} and len(later) == 18
    by_time = read(
        subscribe="orders",
        startingOffsetsByTimestamp=json.dumps({"orders": {"0": 4000}}),
        endingTimestamp="0",
    )
    assert all(r.partition == 0 and int(r.timestamp.timestamp()) == 4 for r in by_time.collect())


def test_mapinarrow_path_matches_the_data_source(spark, log: ObjectLog, produced) -> None:
    import objectlog.spark

    direct = objectlog.spark.read(spark, **options(log, subscribe="orders"))
    source = spark.read.format("objectlog").options(**options(log, subscribe="orders")).load()
    assert direct.schema == source.schema
    assert sorted(map(tuple, direct.collect())) == sorted(map(tuple, source.collect()))


def test_pruning_reads_fewer_segments(log: ObjectLog, produced) -> None:
    everything = plan(log, options(log, subscribe="orders"))
    tail = plan(
        log,
        options(
            log,
            subscribe="orders",
            startingOffsets=json.dumps({"orders": {"0": -1, "1": -1, "2": 3}}),
        ),
    )
    assert sum(len(t.slices) for t in everything) == 12  # 4 flushes x 3 partitions
    assert sum(len(t.slices) for t in tail) < 12
    assert len(plan(log, options(log, subscribe="orders", minPartitions="8"))) >= 8
    assert len(plan(log, options(log, subscribe="orders", maxBytesPerPartition="1"))) == 12
