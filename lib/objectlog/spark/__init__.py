"""Spark reads objectlog topics as it reads Kafka: ``spark.read.format("objectlog")``.

    import objectlog.spark
    objectlog.spark.register(spark)
    df = spark.read.format("objectlog").option("subscribe", "orders").load()

For Spark 3.5 (no Python data sources), ``objectlog.spark.read(spark, subscribe="orders")``
gives the same DataFrame through ``mapInArrow``.
"""

from __future__ import annotations

from typing import Any

from objectlog.spark.planning import connection_config, plan, read_task, schema_ddl, truthy

__all__ = ["read", "register"]


def register(spark: Any) -> None:
    """Register the "objectlog" data source (Spark 4.0+)."""
    from objectlog.spark.source import ObjectLogDataSource

    spark.dataSource.register(ObjectLogDataSource)


def read(spark: Any, **options: str) -> Any:
    """The batch read on any Spark with mapInArrow (3.3+): plan on the driver, read in tasks."""
    import pickle

    from objectlog.log import ObjectLog

    options = {k: str(v) for k, v in options.items()}
    include_headers = truthy(options.get("includeHeaders", "false"))
    config = connection_config(options)
    with ObjectLog(config) as log:
        tasks = plan(log, options)
    payloads = [(pickle.dumps(task),) for task in tasks]
    frame = spark.createDataFrame(payloads or [(b"",)], "task binary", verifySchema=False)
    if not tasks:
        frame = frame.limit(0)
    frame = frame.repartition(max(1, len(tasks)))

    def read_batches(batches: Any) -> Any:
        with ObjectLog(config) as executor_log:
            for batch in batches:
                for raw in batch.column("task").to_pylist():
                    yield from read_task(executor_log, pickle.loads(raw), include_headers)

    return frame.mapInArrow(read_batches, schema_ddl(include_headers))
