"""Spark reads and writes objectlog topics as it reads and writes Kafka.

    import objectlog.spark
    objectlog.spark.register(spark)                        # Spark 4.0+ (EMR 8)
    df = spark.read.format("objectlog").option("subscribe", "orders").load()
    df = objectlog.spark.read(spark, subscribe="orders")   # Spark 3.5 (EMR 7): mapInArrow
    spark.read.parquet(*objectlog.spark.live_files("orders"))  # the compacted L1 files

Connection options (``endpoint``, ``bucket``, ``table``, ``prefix``, ``region``) fall back to
the environment (``AWS_ENDPOINT_URL``, ``OBJECTLOG_BUCKET``, ...). See docs/spark.md.
"""

from __future__ import annotations

import pickle
from typing import Any

from objectlog.clients.direct import ObjectLog
from objectlog.spark import startup
from objectlog.spark.connection import connect, connection_config
from objectlog.spark.files import live_files as _live_files
from objectlog.spark.options import ReadOptions
from objectlog.spark.planning import plan_batch
from objectlog.spark.reading import read_task, schema_ddl

__all__ = ["live_files", "read", "register"]

# Every Spark worker that runs objectlog code imports this package first (SPARK-54744).
startup.keep_zip_caches()


def register(spark: Any) -> None:
    """Register the "objectlog" data source with the session (Spark 4.0+)."""
    if not hasattr(spark, "dataSource"):
        raise RuntimeError(
            "Python data sources need Spark 4.0+; on Spark 3.5 use objectlog.spark.read(spark, ...)"
        )
    from objectlog.spark.source import ObjectLogDataSource

    spark.dataSource.register(ObjectLogDataSource)


def read(spark: Any, **options: Any) -> Any:
    """The batch read on Spark 3.3+ through mapInArrow: same schema, options and plan.

    The driver plans the input partitions; each becomes one row of a DataFrame with one
    partition per row, which mapInArrow turns into the records.
    """
    options = {name: str(value) for name, value in options.items()}
    parsed = ReadOptions.parse(options, streaming=False)
    config = connection_config(options)
    tasks = plan_batch(connect(config), parsed)
    rows = [(pickle.dumps(task),) for task in tasks]
    if rows:
        frame = spark.sparkContext.parallelize(rows, len(rows)).toDF("task binary")
    else:
        frame = spark.createDataFrame([], "task binary")

    def read_tasks(batches: Any) -> Any:
        log = connect(config)
        for batch in batches:
            for raw in batch.column("task").to_pylist():
                yield from read_task(
                    log, pickle.loads(raw), parsed.include_headers, parsed.fail_on_data_loss
                )

    return frame.mapInArrow(read_tasks, schema_ddl(parsed.include_headers))


def live_files(
    topic: str, *, log: ObjectLog | None = None, scheme: str = "s3", **options: Any
) -> list[str]:
    """The topic's live L1 Parquet files, for ``spark.read.parquet(*files)``.

    Read these, never the topic's directory: it also holds files a compaction replaced that
    are still inside their deletion grace period (see objectlog.spark.files). ``scheme`` is
    "s3" on EMR, "s3a" with Hadoop's S3A connector.
    """
    if log is None:
        log = connect(connection_config({k: str(v) for k, v in options.items()}))
    return _live_files(log, topic, scheme=scheme)
