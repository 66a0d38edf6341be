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
from objectlog.spark.options import (
    DEFAULT_PARALLELISM,
    MAX_BYTES_PER_PARTITION,
    OPEN_COST_IN_BYTES,
    ReadOptions,
    byte_size,
)
from objectlog.spark.planning import pack, plan_batch
from objectlog.spark.reading import read_task, schema_ddl
from objectlog.spark.typed import planned_for, read_schema

__all__ = ["live_files", "read", "register"]

# Every Spark worker that runs objectlog code imports this package first (SPARK-54744).
startup.keep_zip_caches()


# The session's settings a read is planned by, as Spark's file sources plan theirs.
PARALLELISM_CONFS = ("spark.sql.files.minPartitionNum", "spark.sql.leafNodeDefaultParallelism")
FILE_CONFS = {
    MAX_BYTES_PER_PARTITION: "spark.sql.files.maxPartitionBytes",
    OPEN_COST_IN_BYTES: "spark.sql.files.openCostInBytes",
}
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"  # Spark 4.1+


def register(spark: Any) -> None:
    """Register the "objectlog" data source with the session (Spark 4.0+).

    The source plans reads by the session's parallelism and file split settings as they are
    now, and takes pushed filters if spark.sql.python.filterPushdown.enabled is true now:
    register again after changing them."""
    if not hasattr(spark, "dataSource"):
        raise RuntimeError(
            "Python data sources need Spark 4.0+; on Spark 3.5 use objectlog.spark.read(spark, ...)"
        )
    from objectlog.spark.source import ObjectLogDataSource

    registered = type(
        "RegisteredObjectLogDataSource",
        (ObjectLogDataSource,),
        {
            "session_defaults": session_read_defaults(spark),
            "push_filters": str(spark.conf.get(PUSHDOWN_CONF, None)).lower() == "true",
        },
    )
    spark.dataSource.register(registered)


def session_read_defaults(spark: Any) -> dict[str, str]:
    """Read options from the session: its default parallelism, maxPartitionBytes and
    openCostInBytes (where set); a query's own options win over these."""
    defaults = {
        option: str(byte_size(value))
        for option, conf in FILE_CONFS.items()
        if (value := spark.conf.get(conf, None)) is not None
    }
    parallelism = session_parallelism(spark)
    if parallelism:
        defaults[DEFAULT_PARALLELISM] = str(parallelism)
    return defaults


def session_parallelism(spark: Any) -> int:
    """spark.sql.files.minPartitionNum, else the leaf-node parallelism, else the default
    parallelism (0 where Spark Connect does not say)."""
    for conf in PARALLELISM_CONFS:
        value = spark.conf.get(conf, None)
        if value is not None:
            return int(value)
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext
        return int(spark.conf.get("spark.default.parallelism", None) or 0)


def read(spark: Any, **options: Any) -> Any:
    """The batch read on Spark 3.3+ through mapInArrow: same schema, options and plan.

    The driver plans the input partitions; each becomes one row of a DataFrame with one
    partition per row, which mapInArrow turns into the records.
    """
    options = {**session_read_defaults(spark), **{k: str(v) for k, v in options.items()}}
    parsed = ReadOptions.parse(options, streaming=False)
    config = connection_config(options)
    splits = pack(plan_batch(connect(config), parsed), parsed)
    planned = planned_for(connect(config), parsed)
    rows = [(pickle.dumps(split),) for split in splits]
    if rows:
        frame = spark.sparkContext.parallelize(rows, len(rows)).toDF("task binary")
    else:
        frame = spark.createDataFrame([], "task binary")

    def read_tasks(batches: Any) -> Any:
        log = connect(config)
        for batch in batches:
            for raw in batch.column("task").to_pylist():
                for task in pickle.loads(raw):
                    yield from read_task(
                        log, task, parsed.include_headers, parsed.fail_on_data_loss, planned
                    )

    if planned is None:
        return frame.mapInArrow(read_tasks, schema_ddl(parsed.include_headers))
    return frame.mapInArrow(read_tasks, read_schema(parsed.include_headers, planned))


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
