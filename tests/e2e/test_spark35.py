"""Spark 3.5 (EMR 7): objectlog.spark.read, the mapInArrow batch read, on a real PySpark 3.5.

`make test-spark-3.5` runs this file in a virtualenv of its own with PySpark 3.5 (the main
one has PySpark 4); the default suite deselects it (marker spark35). It reads L0 and compacted
L1 data, with headers and offset ranges, and checks every record against the library's fetch.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.compaction.compactor import CompactionSettings
from objectlog.compaction.maintenance import run_maintenance
from objectlog.format.segment import SCHEMA
from tests.e2e.spark_session import local_builder

pytestmark = pytest.mark.spark35

pyspark = pytest.importorskip("pyspark", reason="make test-spark-3.5 installs PySpark 3.5")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("PySpark needs Java 17", allow_module_level=True)

import objectlog.spark  # noqa: E402 (after the skips)

Row = tuple[int, int, bytes | None, bytes | None, int, tuple[tuple[str, bytes | None], ...]]


@pytest.fixture(scope="module")
def spark(aws_endpoint: str) -> Iterator[Any]:
    session = local_builder("objectlog-spark35").getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def connection(log: ObjectLog) -> dict[str, str]:
    return {
        "endpoint": log.config.s3_endpoint or "",
        "bucket": log.config.bucket,
        "table": log.config.table,
    }


def produce(log: ObjectLog, topic: str, flushes: int) -> None:
    with log.producer(linger_ms=0) as producer:
        for flush in range(flushes):
            for i in range(9):
                producer.send(
                    topic,
                    b"v%d-%d" % (flush, i),
                    key=b"k%d" % i,
                    headers=[("h", b"%d" % i)],
                )
            producer.flush()


def fetched(log: ObjectLog, topic: str, partitions: int, start: int = 0) -> set[Row]:
    rows: set[Row] = set()
    for partition in range(partitions):
        offset = start
        while records := log.fetch(topic, partition, offset, max_records=1_000).records:
            rows |= {
                (r.partition, r.offset, r.key, r.value, r.timestamp, tuple(r.headers))
                for r in records
            }
            offset = records[-1].offset + 1
    return rows


def spark_rows(frame: Any) -> set[Row]:
    return {
        (
            row["partition"],
            row["offset"],
            _bytes(row["key"]),
            _bytes(row["value"]),
            int(row["timestamp"].timestamp() * 1000),
            tuple((h["key"], _bytes(h["value"])) for h in row["headers"]),
        )
        for row in frame.collect()
    }


def _bytes(value: bytes | bytearray | None) -> bytes | None:
    return None if value is None else bytes(value)  # Spark 3.5 returns binary as bytearray


def test_this_is_spark_3_5() -> None:
    assert pyspark.__version__.startswith("3.5."), pyspark.__version__


def test_the_data_source_names_the_spark_3_5_path(spark: Any) -> None:
    with pytest.raises(RuntimeError, match=r"objectlog\.spark\.read"):
        objectlog.spark.register(spark)


def test_read_returns_l0_and_l1_records_with_headers(spark: Any, log: ObjectLog) -> None:
    log.create_topic("orders", partitions=3)
    produce(log, "orders", flushes=20)
    run_maintenance(log, settings=CompactionSettings(target_file_bytes=4 << 10))
    produce(log, "orders", flushes=3)  # these stay L0, in the heads' tails
    frame = objectlog.spark.read(
        spark, subscribe="orders", includeHeaders="true", **connection(log)
    )
    assert [f.name for f in frame.schema.fields] == SCHEMA.names  # the Kafka source's
    assert spark_rows(frame) == fetched(log, "orders", 3)


def test_read_honours_offset_ranges(spark: Any, log: ObjectLog) -> None:
    log.create_topic("ranged", partitions=1)
    produce(log, "ranged", flushes=4)
    frame = objectlog.spark.read(
        spark,
        subscribe="ranged",
        startingOffsets=json.dumps({"ranged": {"0": 5}}),
        endingOffsets=json.dumps({"ranged": {"0": 30}}),
        includeHeaders="true",
        **connection(log),
    )
    expected = {row for row in fetched(log, "ranged", 1) if 5 <= row[1] < 30}
    assert spark_rows(frame) == expected
