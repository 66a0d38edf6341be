"""kafka.isolation.level through Spark (issue 36): batch and streaming reads of a topic with a
committed, an aborted and an open transaction (the library's transactional producer, over its
coordinator and the log on the AWS endpoint), under both levels. The planner's cases, without
Spark, are in tests/unit/test_spark_isolation.py, which writes the same log.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from objectlog import ObjectLog
from tests.e2e.spark_session import local_builder
from tests.unit.test_spark_isolation import (
    COMMITTED,
    SEEN_COMMITTED,
    SEEN_UNCOMMITTED,
    TOPIC,
    UNCOMMITTED,
    transactions,
)

pytest.importorskip("pyspark", reason="make test installs pyspark (the spark extra)")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("PySpark needs Java 17", allow_module_level=True)

import objectlog.spark

Rows = list[tuple[int, bytes]]


@pytest.fixture(scope="module")
def spark(aws_endpoint: str) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    running = SparkSession.getActiveSession()  # test_spark.py's, in the same run
    session = running or local_builder("objectlog-isolation").getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    objectlog.spark.register(session)
    yield session
    if running is None:
        session.stop()


def options(log: ObjectLog, isolation: str) -> dict[str, str]:
    return {
        "endpoint": log.config.s3_endpoint or "",
        "bucket": log.config.bucket,
        "table": log.config.table,
        "subscribe": TOPIC,
        "startingOffsets": "earliest",
        "kafka.isolation.level": isolation,
    }


def rows(frame: Any) -> Rows:
    return sorted((r.offset, bytes(r.value)) for r in frame.select("offset", "value").collect())


def test_batch_and_streaming_reads_under_both_levels(
    spark: Any, log: ObjectLog, tmp_path: Path
) -> None:
    open_txn = transactions(log)  # 0-4 data, 5-6 markers, 7 open (the LSO), 8 plain
    batch = {
        level: rows(spark.read.format("objectlog").options(**options(log, level)).load())
        for level in (UNCOMMITTED, COMMITTED)
    }
    assert batch == {UNCOMMITTED: SEEN_UNCOMMITTED, COMMITTED: SEEN_COMMITTED}

    # One query at a time: an idle stream polls its reader's Python worker between batches.
    assert stream(spark, log, UNCOMMITTED, tmp_path) == (SEEN_UNCOMMITTED, [])
    before, after = stream(spark, log, COMMITTED, tmp_path, then=open_txn.commit_transaction)
    open_txn.close()
    assert before == SEEN_COMMITTED  # nothing past the LSO while the transaction is open
    assert after == [(7, b"o7"), (8, b"p8")]  # its marker at 9 moved the LSO to 10


def stream(
    spark: Any, log: ObjectLog, level: str, tmp_path: Path, then: Callable[[], None] | None = None
) -> tuple[Rows, Rows]:
    """What a streaming query at level reads of the topic, before then() and after it."""
    seen: Rows = []
    query = (
        spark.readStream.format("objectlog")
        .options(**options(log, level))
        .load()
        .writeStream.foreachBatch(lambda frame, _: seen.extend(rows(frame)))
        .option("checkpointLocation", str(tmp_path / level))
        .start()
    )
    try:
        query.processAllAvailable()
        before = list(seen)
        if then is not None:
            then()
            query.processAllAvailable()
    finally:
        query.stop()
    return before, seen[len(before) :]


def test_an_unknown_level_fails_the_query_naming_the_option(spark: Any, log: ObjectLog) -> None:
    with pytest.raises(Exception, match=r"kafka\.isolation\.level must be"):
        spark.read.format("objectlog").options(**options(log, "READ_COMMITTED")).load().collect()
