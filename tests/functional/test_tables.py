"""Topics as Iceberg tables (DESIGN.md section 11): after merges, retention and key compaction,
pyiceberg, DuckDB and polars read exactly the rows the log serves for the compacted range;
deleted and recreated topics, a crash between swap and table commit, two compactors, garbage
collection and files written before tables existed. The catalog is SQL (sqlite) over the
embedded S3: moto's Glue loses concurrent commits (FACTS.md)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pytest
from click.testing import CliRunner

from objectlog import ObjectLog
from objectlog.clock import ManualClock
from objectlog.compaction.compactor import CompactionSettings
from objectlog.compaction.maintenance import MaintenanceReport, run_maintenance
from objectlog.config import Config
from objectlog.format import l1
from objectlog.format.index import LEVEL_L1
from objectlog.format.segment import SCHEMA, write_parquet
from objectlog.format.tables import table_name
from objectlog.services.tables import Tables
from objectlog.tools.cli import main

SMALL = CompactionSettings(target_file_bytes=4 << 10, row_group_bytes=1 << 10)
Row = tuple[Any, ...]


@pytest.fixture
def tables_config(log_config: Config, tmp_path: Path) -> Config:
    return replace(log_config, catalog=f"sqlite:///{tmp_path}/catalog.db", delete_grace_ms=1_000)


@pytest.fixture
def tabled(tables_config: Config, clock: ManualClock) -> Iterator[ObjectLog]:
    with ObjectLog(tables_config, clock=clock) as log:
        log.ensure_resources()
        yield log


def produce(log: ObjectLog, topic: str, flushes: int, keys: int = 10) -> None:
    """flushes L0 objects of one record per key, each acknowledged, a millisecond apart (the
    test clock moves: GC's horizon, raised to now, must stay behind new objects)."""
    clock = log.clock
    assert isinstance(clock, ManualClock)
    for flush in range(flushes):
        clock.advance(1)
        with log.producer() as producer:
            futures = [
                producer.send(
                    topic,
                    b"v%d-%d" % (flush, i),
                    key=b"k%d" % i,
                    headers=[("flush", b"%d" % flush)],
                    timestamp_ms=clock.now_ms(),
                )
                for i in range(keys)
            ]
        for future in futures:
            future.result()


def maintain(log: ObjectLog, **kwargs: Any) -> MaintenanceReport:
    return run_maintenance(log, settings=SMALL, gc_min_age_ms=0, **kwargs)


def compacted_rows(log: ObjectLog, topic: str) -> set[Row]:
    """What the log serves for the offsets its L1 files cover (the table's range)."""
    info = log.topic(topic, fresh=True)
    rows: set[Row] = set()
    for partition, head in log.metadata.get_heads(topic, range(info.partitions)).items():
        ranges = [
            (p.base_offset, p.base_offset + p.ref.span)
            for p in log.index.all_placed_refs(head)
            if p.ref.level == LEVEL_L1
        ]
        for start, end in ranges:
            offset = start
            while offset < end:
                result = log.fetch(topic, partition, offset, max_records=end - offset)
                rows |= {
                    (r.partition, r.offset, r.key, r.value, r.timestamp, tuple(r.headers))
                    for r in result.records
                    if r.offset < end
                }
                if result.next_offset <= offset:
                    break
                offset = result.next_offset
    return rows


def arrow_rows(table: pa.Table) -> set[Row]:
    columns = table.select(["partition", "offset", "key", "value", "timestamp", "headers"])
    rows = set()
    for row in columns.to_pylist():
        stamp = row["timestamp"]
        millis = stamp if isinstance(stamp, int) else int(stamp.timestamp() * 1000)
        headers = tuple((h["key"], h["value"]) for h in row["headers"] or [])
        rows.add((row["partition"], row["offset"], row["key"], row["value"], millis, headers))
    return rows


def duckdb_rows(log: ObjectLog, metadata_location: str) -> set[Row]:
    # closed here, not left to the garbage collector: a connection with httpfs loaded that is
    # collected later, in whichever thread triggers it, is a native object torn down beside the
    # moto server's threads (a worker's segfault in CI was never traced; this rules one out)
    with duckdb_connection(log) as connection:
        result = connection.execute(
            f'SELECT partition, "offset", key, value, epoch_ms(timestamp) AS timestamp, headers '
            f"FROM iceberg_scan('{metadata_location}')"
        ).to_arrow_table()
    return arrow_rows(result)


def duckdb_connection(log: ObjectLog) -> Any:
    """DuckDB with its Iceberg extension, reading the log's S3 endpoint."""
    import duckdb
    import duckdb_extension_avro
    import duckdb_extension_httpfs
    import duckdb_extension_iceberg

    connection = duckdb.connect()
    for module, name in (
        (duckdb_extension_httpfs, "httpfs"),
        (duckdb_extension_avro, "avro"),
        (duckdb_extension_iceberg, "iceberg"),
    ):
        found = next(Path(module.__file__).parent.glob(f"extensions/*/{name}.duckdb_extension"))
        connection.execute(f"LOAD '{found}'")
    endpoint = (log.config.s3_endpoint or "").split("://", 1)[-1]
    for setting, value in (
        ("s3_endpoint", endpoint),
        ("s3_url_style", "path"),
        ("s3_use_ssl", "false"),
        ("s3_region", log.config.region),
        ("s3_access_key_id", "test"),
        ("s3_secret_access_key", "test"),
    ):
        connection.execute(f"SET {setting} = '{value}'")
    return connection


def assert_every_reader_sees_the_log(log: ObjectLog, topic: str) -> None:
    import os

    import polars

    os.environ.setdefault("POLARS_ICEBERG_PLANNER", "pyiceberg")  # its own planner is a plugin

    expected = compacted_rows(log, topic)
    assert expected, "nothing was compacted"
    table = log.table(topic)
    assert table is not None
    assert arrow_rows(table.scan().to_arrow()) == expected
    assert arrow_rows(polars.scan_iceberg(table).collect().to_arrow()) == expected
    assert duckdb_rows(log, table.metadata_location) == expected


def assert_a_partition_filter_opens_only_that_partitions_files(log: ObjectLog, topic: str) -> None:
    table = log.table(topic)
    everything = [task.file.file_path for task in table.scan().plan_files()]
    for partition in range(log.topic(topic).partitions):
        opened = [
            task.file.file_path
            for task in table.scan(row_filter=f"partition == {partition}").plan_files()
        ]
        assert opened == [p for p in everything if f"/partition={partition}/" in p], partition


def test_readers_see_exactly_the_compacted_log_after_merges_retention_and_key_compaction(
    tabled: ObjectLog, clock: ManualClock
) -> None:
    tabled.create_topic("events", partitions=2, config={"retention.ms": "60000"})
    tabled.create_topic("state", partitions=2, config={"cleanup.policy": "compact"})
    for topic in ("events", "state"):
        produce(tabled, topic, flushes=30)
    first = maintain(tabled)
    assert {r.topic: r.created for r in first.tables} == {"events": True, "state": True}
    for topic in ("events", "state"):
        assert_every_reader_sees_the_log(tabled, topic)
    assert_a_partition_filter_opens_only_that_partitions_files(tabled, "events")

    clock.advance(61_000)  # events: the first flushes fall out of retention
    for topic in ("events", "state"):
        produce(tabled, topic, flushes=30)  # state: every key written again
    second = maintain(tabled)
    changed = {r.topic: r for r in second.tables}
    assert changed["events"].removed > 0 and changed["state"].removed > 0
    for topic in ("events", "state"):
        assert_every_reader_sees_the_log(tabled, topic)
    assert tabled.offsets("events", 0).earliest > 0  # retention did move the log start


def test_names_map_apart_and_a_recreated_topic_gets_a_fresh_table(
    tabled: ObjectLog, log_env: dict[str, str]
) -> None:
    for name in ("Orders.v1-EU", "orders_v1_eu"):
        tabled.create_topic(name)
        produce(tabled, name, flushes=20)
    maintain(tabled)
    first = {name: tabled.table(name) for name in ("Orders.v1-EU", "orders_v1_eu")}
    assert {t.name()[1] for t in first.values()} == {"orders_v1_eu", table_name("Orders.v1-EU")}
    assert first["Orders.v1-EU"].name() != first["orders_v1_eu"].name()
    described = CliRunner().invoke(
        main,
        ["topics", "describe", "Orders.v1-EU"],
        env={**log_env, "OBJECTLOG_CATALOG": tabled.config.catalog or ""},
    )
    assert f"Table: objectlog.{table_name('Orders.v1-EU')}" in described.output, described.output
    # the newest two flushes (10 records each) stay in the head until older than the lag target
    assert "Lag: 20 offset(s), 0 file(s) behind the log" in described.output

    tabled.delete_topic("orders_v1_eu")
    report = maintain(tabled)
    assert report.tables_dropped == ["objectlog.orders_v1_eu"]
    tabled.create_topic("orders_v1_eu")
    produce(tabled, "orders_v1_eu", flushes=20)
    maintain(tabled)
    fresh = tabled.table("orders_v1_eu")
    assert fresh is not None and fresh.location() != first["orders_v1_eu"].location()
    assert_every_reader_sees_the_log(tabled, "orders_v1_eu")


def test_a_crash_between_the_swap_and_the_table_commit_heals_on_the_next_run(
    tabled: ObjectLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    tabled.create_topic("t", partitions=2)
    produce(tabled, "t", flushes=30)

    def crash(self: Tables, topic: Any, live: Any) -> None:
        raise RuntimeError("killed between the swap and the table commit")

    with monkeypatch.context() as patch:
        patch.setattr(Tables, "reconcile", crash)
        with pytest.raises(RuntimeError):
            maintain(tabled)
    assert tabled.table("t") is None  # the swaps happened; the table did not
    maintain(tabled)
    assert_every_reader_sees_the_log(tabled, "t")


def test_two_compactors_leave_a_correct_table(
    tables_config: Config, clock: ManualClock, tabled: ObjectLog
) -> None:
    tabled.create_topic("t", partitions=4)
    produce(tabled, "t", flushes=40)
    errors: list[BaseException] = []

    def compactor() -> None:
        with ObjectLog(tables_config, clock=clock) as own:  # its own catalog connection
            try:
                maintain(own, collect=False)
            except BaseException as e:  # reported below
                errors.append(e)

    threads = [threading.Thread(target=compactor) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    maintain(tabled)
    assert_every_reader_sees_the_log(tabled, "t")


def test_gc_keeps_what_retained_snapshots_list_then_deletes_it(
    tabled: ObjectLog, clock: ManualClock
) -> None:
    tabled.create_topic("s", config={"cleanup.policy": "compact"})
    produce(tabled, "s", flushes=30)
    maintain(tabled)
    before = {task.file.file_path for task in tabled.table("s").scan().plan_files()}
    produce(tabled, "s", flushes=30)
    maintain(tabled)  # key compaction replaces files; the previous snapshot still lists them
    table = tabled.table("s")
    replaced = before - {task.file.file_path for task in table.scan().plan_files()}
    assert replaced
    keys = {uri.split("/", 3)[3] for uri in replaced}
    assert keys <= {info.key for info in tabled.store.list(tabled.config.prefix + "topics/")}

    clock.advance(tabled.config.delete_grace_ms + 1)
    maintain(tabled)  # past the grace: the snapshot is expired, its files unreachable
    maintain(tabled)  # and collected
    left = {info.key for info in tabled.store.list(tabled.config.prefix)}
    assert not keys & left
    assert len(tabled.table("s").snapshots()) == 1
    assert_every_reader_sees_the_log(tabled, "s")


def test_tables_follow_the_topic_config(tabled: ObjectLog) -> None:
    tabled.create_topic("quiet", config={"objectlog.table.enabled": "false"})
    tabled.create_topic("loud")
    for name in ("quiet", "loud"):
        produce(tabled, name, flushes=20)
    assert {r.topic for r in maintain(tabled).tables} == {"loud"}
    assert tabled.table("quiet") is None
    tabled.alter_topic_config("loud", set={"objectlog.table.enabled": "false"})
    assert maintain(tabled).tables_dropped == ["objectlog.loud"]


def test_l1_files_written_before_tables_read_correctly(
    tabled: ObjectLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files from before field ids and partition statistics: read through the name mapping,
    never pruned, never mis-read."""

    def legacy_encode(table: pa.Table, row_group_bytes: int, compression: str = "zstd") -> Any:
        sink = pa.BufferOutputStream()
        rows = max(1, int(row_group_bytes * table.num_rows / max(1, table.nbytes)))
        write_parquet(sink, table.cast(SCHEMA), compression, row_group_rows=rows)
        body = sink.getvalue().to_pybytes()
        metadata = l1.pq.read_metadata(pa.BufferReader(body))
        return body, [l1._row_group(metadata, i) for i in range(metadata.num_row_groups)]

    tabled.create_topic("old", partitions=2)
    produce(tabled, "old", flushes=30)
    with monkeypatch.context() as patch:
        patch.setattr(l1, "encode_l1", legacy_encode)
        from objectlog.compaction import compactor as compactor_module

        patch.setattr(compactor_module, "encode_l1", legacy_encode, raising=False)
        maintain(tabled)
    assert_every_reader_sees_the_log(tabled, "old")
    table = tabled.table("old")
    one = table.scan(row_filter="partition == 1")
    assert one.to_arrow().num_rows == len(
        [row for row in compacted_rows(tabled, "old") if row[0] == 1]
    )


def test_records_older_than_the_table_lag_reach_the_table_from_the_heads_tail(
    tabled: ObjectLog, clock: ManualClock
) -> None:
    """A quiet topic's newest flushes sit in the head's tail, where compaction leaves them,
    until they are older than objectlog.table.lag.ms: then a run spills and merges them."""
    tabled.create_topic("quiet", config={"objectlog.table.lag.ms": "60000"})
    produce(tabled, "quiet", flushes=2)
    maintain(tabled)
    assert len(tabled.metadata.get_head("quiet", 0).tail) == 2  # younger than the lag target
    assert tabled.table("quiet").scan().to_arrow().num_rows == 0
    state = tabled.table_state("quiet")
    assert state is not None and (state.offsets_behind, state.lag_files) == (20, 0)

    clock.advance(60_001)
    report = maintain(tabled)
    assert tabled.metadata.get_head("quiet", 0).tail == ()
    assert report.tables[0].added > 0
    assert tabled.table("quiet").scan().to_arrow().num_rows == 20  # every record produced
    assert_every_reader_sees_the_log(tabled, "quiet")
    assert len(tabled.fetch("quiet", 0, 0, max_records=100).records) == 20
    assert tabled.table_state("quiet").offsets_behind == 0


def test_without_a_table_the_heads_tail_keeps_its_newest_refs(
    tabled: ObjectLog, clock: ManualClock
) -> None:
    tabled.create_topic("plain", config={"objectlog.table.enabled": "false"})
    produce(tabled, "plain", flushes=2)
    clock.advance(3_600_000)
    maintain(tabled)
    assert len(tabled.metadata.get_head("plain", 0).tail) == 2


def test_the_glue_catalog_on_the_endpoint_keeps_the_table(
    log_config: Config, clock: ManualClock
) -> None:
    """One writer (moto's Glue ignores VersionId, so no concurrency here: FACTS.md)."""
    namespace = f"objectlog_{uuid.uuid4().hex[:8]}"
    config = replace(log_config, catalog="glue", table_namespace=namespace)
    with ObjectLog(config, clock=clock) as log:
        log.ensure_resources()
        log.create_topic("Orders.v1", partitions=2)
        produce(log, "Orders.v1", flushes=20)
        maintain(log)
        assert_every_reader_sees_the_log(log, "Orders.v1")
        glue = boto3.client("glue", endpoint_url=config.glue_endpoint, region_name=config.region)
        stored = glue.get_table(DatabaseName=namespace, Name=table_name("Orders.v1"))["Table"]
        assert stored["Parameters"]["metadata_location"] == log.table("Orders.v1").metadata_location
