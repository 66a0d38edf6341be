"""Spark read: objectlog's data source vs Spark's own Parquet reader, same session, same run.

    .venv/bin/python -m bench.spark                 # about 3 minutes (make bench-spark)
    .venv/bin/python -m bench.spark --no-compact    # read the L0 slices instead (no compactor)
    .venv/bin/python -m bench.spark --dynamodb local  # DynamoDB Local for DynamoDB

The query is ``sum(length(value))`` (a count() would read only Parquet footers). The topic is
produced as L0 objects, then compacted (``run_maintenance``: 64 MiB L1 files, 2 MiB row groups,
zstd). One side reads the compacted records through ``spark.read.format("objectlog")`` from
`objectlog dev` in its own process (bench.server), with ``endingOffsets`` at the end of the L1
files (a partition's newest two refs stay L0 in its tail); the other reads a local copy of the
very L1 files ``objectlog.spark.live_files`` lists with ``spark.read.parquet``. With
``--no-compact`` the data source reads the L0 slices and the native side an L1-like copy this
bench writes from the topic's records (one file per partition, uncompressed, 2 MiB row groups).

Sides, alternating in rounds, each reporting its median round (as in bench.run): the data
source on the endpoint and on a local copy of the bucket (``objectsDir``: the same reader, the
objects from files, so storage is not the limit); ``spark.read.parquet`` on local copies of the
files; a minimal Python data source over those files with the full schema and with the value
column only; and a Python data source doing only the ranged GETs of the objectlog source's own
input partitions, on the same endpoint (the floor in Spark). Outside Spark, the data source's
Python code against the same GETs from a bare loop.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from bench.meter import Stopwatch
from bench.report import Report, Row, console
from bench.run import MIB, alternate, connect, median
from bench.server import add_endpoint_argument, embedded_endpoint
from objectlog import ObjectLog
from objectlog.compaction.compactor import CompactionSettings
from objectlog.compaction.maintenance import run_maintenance
from objectlog.config import ENV_DYNAMODB_ENDPOINT, ENV_S3_ENDPOINT, Config
from objectlog.spark import reading
from objectlog.spark.connection import connect as connect_log
from objectlog.spark.connection import connection_config
from objectlog.spark.files import live_files
from objectlog.spark.options import ReadOptions
from objectlog.spark.planning import ReadTask, pack, plan_batch
from objectlog.stores.local import LocalObjectStore

ROOT = Path(__file__).resolve().parent.parent
TOPIC = "spark-read"
KEY_BYTES = 16
VALUE_BYTES = 1024
TARGET = 0.5  # of the native reader's rate

OURS = "objectlog data source, objects on the endpoint"
OURS_LOCAL = "objectlog data source, objects from a local copy (objectsDir)"
NATIVE = "spark.read.parquet"
FLOOR = "Python data source over the local files"
FLOOR_VALUE = "Python data source over the local files, value column only"
GETS_IN_SPARK = "ranged GETs in Spark (same splits), no decoding"
SIDES = (OURS, OURS_LOCAL, NATIVE, FLOOR, FLOOR_VALUE, GETS_IN_SPARK)
GETS_TARGET = 0.85  # of the ranged GETs in Spark
PLAN = "planning: topic, heads, manifests -> input partitions (fresh clients, cold caches)"
GETS = "ranged GETs, 8 slices read ahead, one thread each"
DECODE = "decoding, in the same threads: ParquetFile.read, absolute offsets, trim"
CONVERT = "Kafka-schema Arrow, in the same threads: topic and timestamp casts"
ROLES = ("endpoint (objectlog dev, DynamoDB Local)", "JVM", "Python workers", "bench driver")


# ---- the data ---------------------------------------------------------------------------


def produce(log: ObjectLog, partitions: int, total_mib: int, flush_mib: float) -> int:
    """total_mib of 1 KiB values, spread evenly, one send_table (one L0 object) per flush."""
    log.create_topic(TOPIC, partitions=partitions)
    per_flush = int(flush_mib * MIB) // VALUE_BYTES
    flushes = total_mib * MIB // VALUE_BYTES // per_flush
    offsets = pa.array(np.arange(per_flush + 1, dtype=np.int32) * VALUE_BYTES)
    keys = pa.array([b"%016d" % i for i in range(per_flush)], pa.binary())
    partition = pa.array(np.arange(per_flush, dtype=np.int32) % partitions)
    with log.producer() as producer:
        for _ in range(flushes):
            values = pa.Array.from_buffers(
                pa.binary(),
                per_flush,
                [None, offsets.buffers()[1], pa.py_buffer(os.urandom(per_flush * VALUE_BYTES))],
            )
            producer.send_table(
                TOPIC, pa.table({"key": keys, "value": values, "partition": partition})
            )
    return flushes * per_flush


def write_copy(
    log: ObjectLog, tasks: list[ReadTask], directory: Path, row_group_mib: float
) -> list[Path]:
    """The topic's records as L1-like Parquet: one file per partition, in offset order.

    Read with the data source's own executor code (read_task), so the rows are exactly what
    Spark gets from the topic: the Kafka source's columns, topic a plain string, timestamps
    in microseconds. Written as the segments are (no compression, dictionary on topic only),
    under the L1 layout's ``partition=<p>/`` directories.
    """
    rows_per_group = int(row_group_mib * MIB) // (KEY_BYTES + VALUE_BYTES)
    batches: dict[int, list[pa.RecordBatch]] = {}
    for task in sorted(tasks, key=lambda t: (t.partition, t.start_offset)):
        batches.setdefault(task.partition, []).extend(
            reading.read_task(log, task, include_headers=False)
        )
    paths = []
    for partition, parts in sorted(batches.items()):
        path = directory / f"partition={partition}" / "00000000000000000000.parquet"
        path.parent.mkdir(parents=True)
        pq.write_table(
            pa.Table.from_batches(parts),
            path,
            row_group_size=rows_per_group,
            compression="none",
            use_dictionary=["topic"],
        )
        paths.append(path)
    return paths


def compact_topic(log: ObjectLog, partitions: int, row_group_mib: float) -> dict[int, int]:
    """Merge the topic into L1 files; each partition's end of L1 data (its tail's start)."""
    settings = CompactionSettings(row_group_bytes=int(row_group_mib * MIB))
    while any(
        p.refs_in
        for p in run_maintenance(log, [TOPIC], settings=settings, collect=False).partitions
    ):
        pass
    heads = log.metadata.get_heads(TOPIC, range(partitions))
    return {p: head.tail_base for p, head in heads.items()}


def copy_live_files(log: ObjectLog, directory: Path) -> list[Path]:
    """The live L1 files, as live_files lists them, copied to local disk."""
    paths = []
    for uri in live_files(log, TOPIC):
        key = uri.split("/", 3)[3]
        path = directory / key.split("/", 3)[3]  # partition=<p>/<name>.parquet
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(log.store.get(key))
        paths.append(path)
    return paths


def value_bytes_of(paths: Sequence[Path]) -> int:
    total = 0
    for path in paths:
        values = pq.read_table(path, columns=["value"]).column("value")
        total += int(pc.sum(pc.binary_length(values)).as_py() or 0)
    return total


# ---- Spark ------------------------------------------------------------------------------


class LocalParquetSource(DataSource):
    """The floor of any Python data source: local Parquet files, one row group per batch, the
    files dealt over ``splits`` input partitions; ``valueOnly`` yields the value column alone
    (what column pruning would give, which no PySpark 4.x offers a Python source)."""

    @classmethod
    def name(cls) -> str:
        return "bench_local_parquet"

    def schema(self) -> str:
        if self.options.get("valueOnly") == "true":
            return "value binary"
        return reading.schema_ddl(include_headers=False)

    def reader(self, schema: Any) -> DataSourceReader:
        paths = self.options["paths"].split(",")
        splits = int(self.options.get("splits", len(paths)))
        return LocalParquetReader(paths, splits, self.options.get("valueOnly") == "true")


class LocalParquetReader(DataSourceReader):
    def __init__(self, paths: list[str], splits: int, value_only: bool) -> None:
        self.paths = paths
        self.splits = splits
        self.value_only = value_only

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(self.paths[i :: self.splits]) for i in range(self.splits)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        columns = ["value"] if self.value_only else reading.WITHOUT_HEADERS.names
        for path in partition.value:
            file = pq.ParquetFile(path)
            for group in range(file.num_row_groups):
                table = file.read_row_group(group, columns=columns)
                if not self.value_only:
                    table = reading.to_spark_arrow(table, include_headers=False)
                yield from table.to_batches()


class RangedGetSource(DataSource):
    """The floor in Spark on the endpoint: the objectlog source's own input partitions (same
    slices, same splits), each task doing only the ranged GETs, as many in flight as the
    reader's read-ahead, and yielding one row: the bytes it got."""

    @classmethod
    def name(cls) -> str:
        return "bench_ranged_gets"

    def schema(self) -> str:
        return "bytes long"

    def reader(self, schema: Any) -> DataSourceReader:
        return RangedGetReader(self.options)


class RangedGetReader(DataSourceReader):
    def __init__(self, options: Any) -> None:
        self.options = ReadOptions.parse(options, streaming=False)
        self.config = connection_config(options)

    def partitions(self) -> Sequence[InputPartition]:
        tasks = plan_batch(connect_log(self.config), self.options)
        return [InputPartition(split) for split in pack(tasks, self.options)]

    def read(self, partition: InputPartition) -> Iterator[tuple[int]]:
        from concurrent.futures import ThreadPoolExecutor

        log = connect_log(self.config)
        slices = [s for task in partition.value for s in task.slices]
        with ThreadPoolExecutor(reading.READ_AHEAD) as pool:
            read = log.range_reads.read_many
            got = pool.map(lambda s: len(read([(s.key, s.start, s.length)])[0]), slices)
            yield (sum(got),)


@contextmanager
def spark_session(cores: int) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    import objectlog.spark

    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only, no other interface
    # The workers unpickle LocalParquetSource by reference: they need bench/ on their path.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p
    )
    session = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("objectlog-bench-spark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    objectlog.spark.register(session)
    session.dataSource.register(LocalParquetSource)
    session.dataSource.register(RangedGetSource)
    try:
        yield session
    finally:
        session.stop()


def value_bytes(frame: Any) -> int:
    from pyspark.sql import functions as F

    return int(frame.select(F.sum(F.length("value"))).collect()[0][0])


def bytes_got(frame: Any) -> int:
    from pyspark.sql import functions as F

    return int(frame.select(F.sum("bytes")).collect()[0][0])


def mirror_bucket(log: ObjectLog, directory: Path) -> None:
    """Every object of the log, copied below directory (as `aws s3 sync` would)."""
    copy = LocalObjectStore(directory)
    for info in log.store.list(log.config.prefix):
        copy.put_if_absent(info.key, log.store.get(info.key))


# ---- CPU by process (Linux /proc) --------------------------------------------------------


def _stat(pid: int) -> tuple[int, str, float, float] | None:
    """ppid, name, own CPU seconds, CPU seconds of reaped children."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = text[text.index("(") + 1 : text.rindex(")")]
    fields = text[text.rindex(")") + 2 :].split()
    tick = os.sysconf("SC_CLK_TCK")
    own = (int(fields[11]) + int(fields[12])) / tick
    return int(fields[1]), name, own, (int(fields[13]) + int(fields[14])) / tick


def _descends(stats: dict[int, tuple[int, str, float, float]], pid: int, ancestor: int) -> bool:
    parent = stats[pid][0]
    while parent > 1 and parent in stats:
        if parent == ancestor:
            return True
        parent = stats[parent][0]
    return False


def cpu_by_role(server_pid: int) -> dict[str, float]:
    """CPU seconds so far: the endpoint (and its children), Spark's JVM, its Python workers,
    this process."""
    stats = {
        int(pid): stat
        for pid in os.listdir("/proc")
        if pid.isdigit() and (stat := _stat(int(pid))) is not None
    }
    me = os.getpid()
    jvms = {pid for pid, s in stats.items() if s[0] == me and s[1] == "java"}
    totals = dict.fromkeys(ROLES, 0.0)
    for pid, (ppid, _, own, reaped) in stats.items():
        if pid == server_pid or _descends(stats, pid, server_pid):  # DynamoDB Local's JVM too
            totals[ROLES[0]] += own + reaped
        elif pid in jvms:
            totals[ROLES[1]] += own
            totals[ROLES[2]] += reaped  # Python daemons that exited
        elif pid == me:
            totals[ROLES[3]] += own
        else:
            ancestor = ppid
            while ancestor > 1 and ancestor not in jvms and ancestor in stats:
                ancestor = stats[ancestor][0]
            if ancestor in jvms:
                totals[ROLES[2]] += own + reaped
    return totals


# ---- the sides ---------------------------------------------------------------------------


def timed(
    query: Callable[[], int], expected: int, cpu: Callable[[], dict[str, float]], into: list[Any]
) -> Callable[[], float]:
    """Run the query; check its answer; record CPU seconds by role in into."""

    def run() -> float:
        before = cpu()
        started = time.perf_counter()
        total = query()
        seconds = time.perf_counter() - started
        after = cpu()
        assert total == expected, (total, expected)
        into.append({role: after[role] - before[role] for role in ROLES})
        return seconds

    return run


def endpoint_options(config: Config) -> dict[str, str]:
    """The reader options that point Spark at the bench log's endpoints.

    One endpoint for both services (moto) is the `endpoint` option. The data source has no
    option for a DynamoDB endpoint of its own, so with DynamoDB Local the endpoints go to this
    process's environment (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_DYNAMODB), which Spark's JVM
    and its Python workers inherit when the session starts after this call and the data
    source's Config.from_env() reads.
    """
    assert config.s3_endpoint is not None and config.dynamodb_endpoint is not None
    if config.s3_endpoint == config.dynamodb_endpoint:
        return {"endpoint": config.s3_endpoint}
    os.environ[ENV_S3_ENDPOINT] = config.s3_endpoint
    os.environ[ENV_DYNAMODB_ENDPOINT] = config.dynamodb_endpoint
    return {}


def python_side(log: ObjectLog, options: dict[str, str], phases: Stopwatch) -> float:
    """The data source's Python code in this process, tasks one after another.

    Planning runs on a fresh ObjectLog (Spark plans in a fresh Python process: clients and
    manifests cold); reading on log (an executor's Python worker keeps its log between tasks).
    """
    started = time.perf_counter()
    with ObjectLog(connection_config(options)) as fresh:
        tasks = phases.wrap(PLAN, plan_batch)(fresh, ReadOptions.parse(options, streaming=False))
    for task in tasks:
        for _ in reading.read_task(log, task, include_headers=False):
            pass
    return time.perf_counter() - started


def instrument(log: ObjectLog, phases: Stopwatch) -> Callable[[], None]:
    """Time the read path's phases in this process; returns the undo."""
    reads = log.range_reads
    originals = (reads.read_many, reading._records, reading.to_spark_arrow)
    reads.read_many = phases.wrap(GETS, reads.read_many)
    reading._records = phases.wrap(DECODE, reading._records)
    reading.to_spark_arrow = phases.wrap(CONVERT, reading.to_spark_arrow)

    def undo() -> None:
        reads.read_many, reading._records, reading.to_spark_arrow = originals

    return undo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=256, help="MiB of values in the topic")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--flush-mib", type=float, default=1.0, help="MiB per produced object")
    parser.add_argument("--row-group-mib", type=float, default=2.0, help="row groups of the copy")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    parser.add_argument("--cores", type=int, default=2, help="Spark's local[N]")
    parser.add_argument(
        "--no-compact", dest="compact", action="store_false", help="read L0 slices instead"
    )
    add_endpoint_argument(parser)
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    report = Report()
    started = time.perf_counter()
    copy_dir = Path(tempfile.mkdtemp(prefix="objectlog-bench-spark-"))
    cpu: dict[str, list[dict[str, float]]] = {name: [] for name in SIDES}
    bucket_dir = copy_dir / "bucket"
    try:
        with embedded_endpoint(args.dynamodb) as endpoint:
            report.endpoint(endpoint.description)
            log = connect(endpoint)
            produced = time.perf_counter()
            records = produce(log, args.partitions, args.mib, args.flush_mib)
            produced = time.perf_counter() - produced
            expected = records * VALUE_BYTES
            options = {
                **endpoint_options(log.config),
                "bucket": log.config.bucket,
                "table": log.config.table,
                "subscribe": TOPIC,
            }
            if args.compact:
                compacted = time.perf_counter()
                ends = compact_topic(log, args.partitions, args.row_group_mib)
                compacted = time.perf_counter() - compacted
                options["endingOffsets"] = json.dumps({TOPIC: {str(p): e for p, e in ends.items()}})
                paths = copy_live_files(log, copy_dir / "files")
                expected = value_bytes_of(paths)
            tasks = plan_batch(log, ReadOptions.parse(options, streaming=False))
            if not args.compact:
                paths = write_copy(log, tasks, copy_dir / "files", args.row_group_mib)
            mirror_bucket(log, bucket_dir)
            files = [str(p) for p in paths]
            slices = sum(len(t.slices) for t in tasks)
            segment_bytes = sum(t.bytes for t in tasks)
            copy_bytes = sum(p.stat().st_size for p in paths)
            groups = sum(pq.ParquetFile(p).metadata.num_row_groups for p in paths)
            console.print(
                f"client: Python {sys.version.split()[0]}, pyarrow {pa.__version__}, "
                f"{os.cpu_count()} CPUs shared by the server, Spark's JVM and its Python workers"
            )
            read_as = "L1 row groups" if args.compact else "L0 slices"
            console.print(
                f"  topic {TOPIC!r}: {records:,} records of {KEY_BYTES} B key + {VALUE_BYTES} B "
                f"value in {args.partitions} partitions, produced in {produced:.0f} s as "
                f"{args.flush_mib:g} MiB L0 objects"
                + (f", compacted in {compacted:.0f} s" if args.compact else "")
                + f"; the data source reads {slices} {read_as} of "
                f"{segment_bytes / slices / 1024:.0f} KiB, {segment_bytes / MIB:.0f} MiB, "
                f"{len(tasks)} input partitions"
            )
            console.print(
                f"  native side: {len(paths)} local "
                + ("copies of the live L1 files" if args.compact else "L1-like files")
                + f", {copy_bytes / MIB:.0f} MiB, {groups} row groups of "
                f"{copy_bytes / groups / MIB:.1f} MiB"
            )
            with spark_session(args.cores) as spark:
                version = spark.version
                usage = lambda: cpu_by_role(endpoint.pid)  # noqa: E731
                local = {**options, "objectsDir": str(bucket_dir)}

                def floor(value_only: bool) -> Any:
                    return (
                        spark.read.format(LocalParquetSource.name())
                        .options(paths=",".join(files), splits=str(args.cores))
                        .option("valueOnly", str(value_only).lower())
                        .load()
                    )

                def objectlog_source(read_options: dict[str, str]) -> Any:
                    return spark.read.format("objectlog").options(**read_options).load()

                queries: dict[str, tuple[Callable[[], int], int]] = {
                    OURS: (lambda: value_bytes(objectlog_source(options)), expected),
                    OURS_LOCAL: (lambda: value_bytes(objectlog_source(local)), expected),
                    NATIVE: (lambda: value_bytes(spark.read.parquet(*files)), expected),
                    FLOOR: (lambda: value_bytes(floor(False)), expected),
                    FLOOR_VALUE: (lambda: value_bytes(floor(True)), expected),
                    GETS_IN_SPARK: (
                        lambda: bytes_got(
                            spark.read.format(RangedGetSource.name()).options(**options).load()
                        ),
                        segment_bytes,
                    ),
                }
                sides = {
                    name: timed(query, answer, usage, cpu[name])
                    for name, (query, answer) in queries.items()
                }
                input_partitions = objectlog_source(options).rdd.getNumPartitions()
                for run in sides.values():
                    run()  # warm up: JVM, Python workers, clients, manifest caches
                for samples in cpu.values():
                    samples.clear()
                results = alternate(args.rounds, sides)

            ranges = [(s.key, s.start, s.length) for t in tasks for s in t.slices]
            read_many = log.range_reads.read_many
            phases = Stopwatch()
            undo = instrument(log, phases)

            def gets() -> float:
                began = time.perf_counter()
                read_many(ranges)
                return time.perf_counter() - began

            outside = alternate(
                3, {"python": lambda: python_side(log, options, phases), "gets": gets}
            )
            undo()
            seconds, calls = phases.take()
            log.close()
    finally:
        shutil.rmtree(copy_dir, ignore_errors=True)

    mib = expected / MIB
    at = {name: median(results[name]) for name in SIDES}
    where = (
        f"{mib:.0f} MiB of 1 KiB values, {args.partitions} partitions, local[{args.cores}], "
        f"{input_partitions} input partitions"
    )
    copies = "local copies of the L1 files" if args.compact else "local L1-like files"
    report.add(
        Row(
            f"Spark {version} sum(length(value)), objects from a local copy, {where}",
            mib / at[OURS_LOCAL],
            "MiB/s",
            mib / at[NATIVE],
            f"spark.read.parquet of the same records ({copies})",
            f">= {TARGET} x native",
            at[NATIVE] / at[OURS_LOCAL] >= TARGET,
            note="the objectlog source's Spark path where storage is not the limit",
        )
    )
    report.add(
        Row(
            "objectlog data source, objects on the endpoint",
            segment_bytes / MIB / at[OURS],
            "MiB/s read",
            segment_bytes / MIB / at[GETS_IN_SPARK],
            "the same ranged GETs in Spark, same splits and read-ahead, no decoding",
            f">= {GETS_TARGET} x the GETs",
            at[GETS_IN_SPARK] / at[OURS] >= GETS_TARGET,
        )
    )
    report.add(
        Row(
            "objectlog data source, objects on the endpoint",
            mib / at[OURS],
            "MiB/s",
            mib / at[NATIVE],
            "spark.read.parquet (local files)",
        )
    )
    for name in (FLOOR, FLOOR_VALUE):
        report.add(
            Row(
                f"a minimal {name[0].lower()}{name[1:]} ({args.cores} input partitions)",
                mib / at[name],
                "MiB/s",
                mib / at[NATIVE],
                "spark.read.parquet",
                note="Spark's Python data source path on its own",
            )
        )
    report.add(
        Row(
            "objectlog data source (local copy) vs the minimal full-schema Python data source",
            mib / at[OURS_LOCAL],
            "MiB/s",
            mib / at[FLOOR],
            "",
        )
    )
    python_s, gets_s = median(outside["python"]), median(outside["gets"])
    report.add(
        Row(
            "outside Spark: the data source's Python code, one process, task after task",
            mib / python_s,
            "MiB/s",
            mib / gets_s,
            "the same ranged GETs from a bare loop, 32 in flight, no decoding",
            note="the endpoint's floor",
        )
    )
    report.note(
        "rounds (s): "
        + "; ".join(
            f"{name} " + ", ".join(f"{s:.2f}" for s in values) for name, values in results.items()
        )
    )
    cpu_split = report.section(
        f"Spark read: CPU seconds per query by process ({os.cpu_count()} CPUs; median rounds)",
        "side",
        "wall s",
        *ROLES,
        "all",
    )
    for name in SIDES:
        by_role = {role: median([sample[role] for sample in cpu[name]]) for role in ROLES}
        cpu_split.rows.append(
            (
                name,
                f"{median(results[name]):.2f}",
                *(f"{by_role[role]:.2f}" for role in ROLES),
                f"{sum(by_role.values()):.2f}",
            )
        )
    split = report.section(
        "Spark read: the data source's Python code outside Spark "
        f"({len(outside['python'])} reads of {mib:.0f} MiB in one process)",
        "stage",
        "ms per MiB",
        "note",
    )
    reads = len(outside["python"])
    for name in (PLAN, GETS, DECODE, CONVERT):
        split.rows.append(
            (
                name,
                f"{seconds[name] * 1000 / (reads * mib):.2f}",
                f"{calls[name] / reads:.0f} per read, {seconds[name] / calls[name] * 1000:.2f} ms "
                + ("each" if name == PLAN else "each, summed over the threads"),
            )
        )
    split.rows += [
        ("wall: planning and reading, tasks one after another", f"{python_s * 1000 / mib:.2f}", ""),
        ("wall: the same GETs, bare, 32 in flight", f"{gets_s * 1000 / mib:.2f}", "the floor"),
    ]
    report.print()
    console.print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
