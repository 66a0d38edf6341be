"""Spark 3.5 reading topics' Iceberg tables on the embedded S3, as EMR 7 reads them on AWS.

`make test-spark-iceberg` runs this file in the PySpark 3.5 virtualenv with Iceberg's Spark
runtime, its S3 FileIO and its Glue client (shaded, from a PyPI wheel: FACTS.md, Iceberg) and
Debian's SQLite JDBC driver; the default suite deselects it (marker spark_iceberg). Spark reads
through the same two catalogs objectlog writes: the SQL catalog (sqlite, the dev stack's) with
Iceberg's JdbcCatalog, and Glue (the endpoint's, as on AWS) with Iceberg's GlueCatalog. It must
return exactly the rows the log serves for the compacted range, after merges, retention and key
compaction; read a retained snapshot (time travel); and open only one partition's files for a
filter on that partition (Iceberg's scan metrics, counted).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.clock import ManualClock
from objectlog.config import Config
from tests.e2e.spark_session import local_builder
from tests.functional.test_tables import Row, compacted_rows, maintain, produce

pytestmark = pytest.mark.spark_iceberg

pyspark = pytest.importorskip("pyspark", reason="make test-spark-iceberg installs PySpark 3.5")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("PySpark needs Java 17", allow_module_level=True)

SHADED = "smfs.shaded.org.apache.iceberg."  # the package the wheel's jar relocates Iceberg to
JARS_VARIABLE = "OBJECTLOG_ICEBERG_SPARK_JARS"


def iceberg_jars() -> str:
    jars = os.environ.get(JARS_VARIABLE, "")
    missing = [jar for jar in jars.split(",") if not jar or not Path(jar).is_file()]
    if missing or not jars:
        raise AssertionError(
            f"{JARS_VARIABLE} must list the Iceberg runtime and SQLite JDBC jars (got {jars!r}, "
            f"missing {missing}): run `make test-spark-iceberg`, which builds them"
        )
    return jars


def catalog_settings(name: str, implementation: str, **settings: str) -> dict[str, str]:
    prefix = f"spark.sql.catalog.{name}"
    common = {
        "catalog-impl": f"{SHADED}{implementation}",
        "io-impl": f"{SHADED}aws.s3.S3FileIO",
        "s3.path-style-access": "true",
        "client.region": os.environ["AWS_DEFAULT_REGION"],
        "cache-enabled": "false",  # see each compaction's snapshot at once (docs/spark.md)
    }
    options = {f"{prefix}.{key}": value for key, value in {**common, **settings}.items()}
    return {prefix: f"{SHADED}spark.SparkCatalog", **options}


@pytest.fixture(scope="module")
def sql_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("catalog") / "catalog.db"


@pytest.fixture(scope="module")
def spark(aws_endpoint: str, sql_catalog: Path) -> Iterator[Any]:
    builder = local_builder("objectlog-spark-iceberg").config("spark.jars", iceberg_jars())
    endpoints = {"s3.endpoint": aws_endpoint}
    settings = {
        # pyiceberg's SqlCatalog names its catalog rows "objectlog"; JdbcCatalog reads the rows
        # of its own Spark catalog name, so the two names must be the same.
        **catalog_settings(
            "objectlog",
            "jdbc.JdbcCatalog",
            uri=f"jdbc:sqlite:{sql_catalog}",
            warehouse="s3://unused/",  # JdbcCatalog requires one; tables carry their location
            # pyiceberg made the catalog's tables; Iceberg's check for them leaves a statement
            # open on the connection, whose read transaction then pins an old catalog state
            **{"jdbc.schema-version": "V1", "jdbc.init-catalog-tables": "false"},
            **endpoints,
        ),
        **catalog_settings(
            "glue", "aws.glue.GlueCatalog", **{"glue.endpoint": aws_endpoint}, **endpoints
        ),
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def sqlite_log(log_config: Config, sql_catalog: Path, clock: ManualClock) -> Iterator[ObjectLog]:
    config = replace(log_config, catalog=f"sqlite:///{sql_catalog}", delete_grace_ms=600_000)
    with ObjectLog(config, clock=clock) as log:  # snapshots kept 10 minutes: time travel
        log.ensure_resources()
        yield log


@pytest.fixture
def glue_log(log_config: Config, clock: ManualClock) -> Iterator[ObjectLog]:
    with ObjectLog(replace(log_config, catalog="glue"), clock=clock) as log:
        log.ensure_resources()
        yield log


def spark_table(log: ObjectLog, catalog: str, topic: str) -> str:
    table = log.table(topic)
    assert table is not None, f"{topic} has no table yet"
    namespace, name = table.name()[-2:]
    return f"{catalog}.{namespace}.{name}"


def spark_rows(spark: Any, query: str) -> set[Row]:
    frame = spark.sql(
        "SELECT partition, offset, key, value, unix_millis(timestamp) AS millis, headers "
        f"FROM ({query})"
    )
    return {
        (
            row["partition"],
            row["offset"],
            None if row["key"] is None else bytes(row["key"]),
            None if row["value"] is None else bytes(row["value"]),
            row["millis"],
            tuple(
                (h["key"], None if h["value"] is None else bytes(h["value"]))
                for h in row["headers"] or ()
            ),
        )
        for row in frame.collect()
    }


def scan_metrics(frame: Any) -> dict[str, int]:
    """The Iceberg batch scan's metrics of a frame that has run (Spark's SQL metrics)."""
    plan = frame._jdf.queryExecution().executedPlan()
    leaves = plan.collectLeaves()
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        if leaf.nodeName().startswith("BatchScan"):
            metrics: dict[str, int] = {}
            entries = leaf.metrics().iterator()
            while entries.hasNext():
                entry = entries.next()
                metrics[entry._1()] = int(entry._2().value())
            return metrics
    raise AssertionError(f"no Iceberg batch scan in the plan:\n{plan.toString()}")


def test_spark_reads_exactly_the_compacted_log_after_merges_retention_and_key_compaction(
    spark: Any, sqlite_log: ObjectLog, clock: ManualClock
) -> None:
    sqlite_log.create_topic("Events.v1-EU", partitions=2, config={"retention.ms": "60000"})
    sqlite_log.create_topic("state", partitions=2, config={"cleanup.policy": "compact"})
    for topic in ("Events.v1-EU", "state"):
        produce(sqlite_log, topic, flushes=30)
    maintain(sqlite_log)
    first = {}
    for topic in ("Events.v1-EU", "state"):
        first[topic] = (compacted_rows(sqlite_log, topic), sqlite_log.table(topic))
        assert first[topic][0], "nothing was compacted"
        table = spark_table(sqlite_log, "objectlog", topic)
        assert spark_rows(spark, f"SELECT * FROM {table}") == first[topic][0]

    clock.advance(61_000)  # Events: the first flushes fall out of retention
    for topic in ("Events.v1-EU", "state"):
        produce(sqlite_log, topic, flushes=30)  # state: every key written again
    second = {r.topic: r for r in maintain(sqlite_log).tables}
    assert second["Events.v1-EU"].removed > 0 and second["state"].removed > 0
    assert sqlite_log.offsets("Events.v1-EU", 0).earliest > 0  # retention moved the log start
    for topic in ("Events.v1-EU", "state"):
        table = spark_table(sqlite_log, "objectlog", topic)
        assert spark_rows(spark, f"SELECT * FROM {table}") == compacted_rows(sqlite_log, topic)
        # the first run's snapshot is retained (within the delete grace period), files and all
        rows, before = first[topic]
        snapshot = before.current_snapshot().snapshot_id
        assert spark_rows(spark, f"SELECT * FROM {table} VERSION AS OF {snapshot}") == rows


def test_a_partition_filter_opens_only_that_partitions_files(
    spark: Any, sqlite_log: ObjectLog
) -> None:
    sqlite_log.create_topic("orders", partitions=3)
    produce(sqlite_log, "orders", flushes=30)
    maintain(sqlite_log)
    files = [task.file.file_path for task in sqlite_log.table("orders").scan().plan_files()]
    table = spark_table(sqlite_log, "objectlog", "orders")
    everything = compacted_rows(sqlite_log, "orders")
    for partition in range(3):
        frame = spark.sql(f"SELECT * FROM {table} WHERE partition = {partition}")
        assert {row["offset"] for row in frame.collect()} == {
            offset for p, offset, *_ in everything if p == partition
        }
        metrics = scan_metrics(frame)
        own = [path for path in files if f"/partition={partition}/" in path]
        assert 0 < metrics["resultDataFiles"] == len(own) < len(files), (partition, metrics)
        assert metrics["skippedDataFiles"] == len(files) - len(own)


def test_spark_reads_the_glue_catalog_as_on_emr(spark: Any, glue_log: ObjectLog) -> None:
    glue_log.create_topic("clicks", partitions=2)
    produce(glue_log, "clicks", flushes=30)
    maintain(glue_log)
    expected = compacted_rows(glue_log, "clicks")
    assert expected, "nothing was compacted"
    table = spark_table(glue_log, "glue", "clicks")
    assert spark_rows(spark, f"SELECT * FROM {table}") == expected


def test_spark_reads_a_typed_tables_columns_through_an_evolution(
    spark: Any, sqlite_log: ObjectLog
) -> None:
    from tests.functional.test_typed_tables import (
        ORDER_V1,
        ORDER_V2,
        framed,
        order,
        register,
    )
    from tests.functional.test_typed_tables import produce as produce_values

    topic = "typed_orders"
    sqlite_log.create_topic(
        topic, 1, {"objectlog.table.mode": "value_schema_id_prefix", "objectlog.table.lag.ms": 0}
    )
    v1 = register(sqlite_log, f"{topic}-value", ORDER_V1)
    produce_values(sqlite_log, topic, [framed(v1, ORDER_V1, order(n)) for n in range(2)])
    maintain(sqlite_log)
    v2 = register(sqlite_log, f"{topic}-value", ORDER_V2)
    evolved = [framed(v2, ORDER_V2, order(2, ship={"city": "Oslo"})), b"not framed"]
    produce_values(sqlite_log, topic, evolved)
    maintain(sqlite_log)
    name = spark_table(sqlite_log, "objectlog", topic)
    spark.sql(f"REFRESH TABLE {name}")
    rows = spark.sql(
        f"SELECT offset, value_decoded.item, value_decoded.ship.city AS city, "
        f"value_decoded.price, value_schema_id, value_error FROM {name} ORDER BY offset"
    ).collect()
    assert [(r.offset, r.item, r.city, r.value_schema_id) for r in rows] == [
        (0, "item-0", None, v1),
        (1, "item-1", None, v1),
        (2, "item-2", "Oslo", v2),
        (3, None, None, None),
    ]
    assert str(rows[1].price) == "1.25" and rows[3].value_error.startswith("not framed")
