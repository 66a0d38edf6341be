"""An end-to-end pipeline on objectlog: read a topic, aggregate, write the result to a topic.

"orders" holds one record per order: key = customer id, value = JSON ``{"amount": 12.5}``.
The job keeps a running count and total per customer and writes every changed total to
"order-totals" (key = customer, value = JSON ``{"customer", "orders", "amount"}``), where the
latest record of a key is that customer's current total (a compacted topic's natural input).

It is a Structured Streaming query, exactly once across restarts: the source's offsets live in
the checkpoint, and each micro-batch's totals are written with the sink's ``producerId`` and
``batchId`` options, so a micro-batch Spark replays after a crash writes nothing twice. (The
running totals need the "update" output mode, which Spark 4.0 gives Python sinks only through
foreachBatch; a stateless job can use ``writeStream.format("objectlog")`` directly.)

    spark-submit examples/spark_pipeline.py \\
        --checkpoint s3://my-bucket/checkpoints/order-totals --available-now

(with objectlog installed for the driver's and executors' Python; see docs/spark.md.)

Connection settings come from the environment (AWS_ENDPOINT_URL, OBJECTLOG_BUCKET, ...) or
from --option name=value (endpoint, bucket, table, prefix, region); see docs/spark.md.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

import objectlog.spark


def order_totals(orders: Any) -> Any:
    """Kafka-schema records of "orders" -> (key, value) records of running totals."""
    from pyspark.sql import functions as F

    parsed = orders.select(
        F.col("key").cast("string").alias("customer"),
        F.get_json_object(F.col("value").cast("string"), "$.amount").cast("double").alias("amount"),
    )
    totals = parsed.groupBy("customer").agg(
        F.count("*").alias("orders"), F.sum("amount").alias("amount")
    )
    return totals.select(
        F.col("customer").alias("key"),
        F.to_json(F.struct("customer", "orders", "amount")).alias("value"),
    )


def start(
    spark: Any,
    checkpoint: str,
    *,
    source: str = "orders",
    sink: str = "order-totals",
    options: Mapping[str, str] | None = None,
    available_now: bool = False,
) -> Any:
    """Start the query; it reads ``source`` from its earliest offset on the first run."""
    objectlog.spark.register(spark)
    orders = (
        spark.readStream.format("objectlog")
        .options(**(options or {}))
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .load()
    )

    def write_totals(totals: Any, batch_id: int) -> None:
        (
            totals.write.format("objectlog")
            .options(**(options or {}))
            .option("topic", sink)
            .option("producerId", checkpoint)  # with batchId: a replayed batch writes nothing
            .option("batchId", str(batch_id))
            .mode("append")
            .save()
        )

    writer = (
        order_totals(orders)
        .writeStream.outputMode("update")
        .foreachBatch(write_totals)
        .option("checkpointLocation", checkpoint)
    )
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def main(argv: list[str] | None = None) -> None:
    from pyspark.sql import SparkSession

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint location")
    parser.add_argument("--source", default="orders")
    parser.add_argument("--sink", default="order-totals")
    parser.add_argument("--available-now", action="store_true", help="process what is there, stop")
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args(argv)
    options = dict(item.split("=", 1) for item in args.option)
    spark = SparkSession.builder.appName("objectlog-order-totals").getOrCreate()
    query = start(
        spark,
        args.checkpoint,
        source=args.source,
        sink=args.sink,
        options=options,
        available_now=args.available_now,
    )
    query.awaitTermination()


if __name__ == "__main__":
    main()
