"""Compaction: many small L0 slices merged into L1 files, and catch-up fetch before and after.

    .venv/bin/python -m bench.compaction                  # about 6 minutes on 2 CPUs
    .venv/bin/python -m bench.compaction --slices 2000    # a quick look (about 1.5 minutes)
    .venv/bin/python -m bench.compaction --dynamodb local # DynamoDB Local for DynamoDB

One partition receives `--slices` flushes of 8 records of 1 KiB (random values, 16-byte keys),
each flush one L0 slice of its own object, as a low-rate producer writes them (one
``send_table`` at a time: a PutObject and a commit each, about 50 a second against moto, so
producing takes most of the run). Then:

1. catch-up fetch from offset 0 to the end, 1 MiB per fetch_many, cold caches each round
   (about a minute a round for 10,000 slices: hence one round by default);
2. one compaction (run_maintenance, no GC), repeated until a run finds nothing left to merge:
   compaction MiB/s (L0 bytes read / seconds) and write amplification (L1 bytes written /
   L0 bytes read), with where its time goes;
3. the same catch-up fetch again, over the L1 row groups, and the ratio after / before;
4. the records read before and after must be identical (offsets, keys, values, timestamps).

The endpoint is `objectlog dev` in its own process (bench.server). Fetch rounds before and
after cannot alternate (compaction sits between them), so each side's median is taken over
its own rounds; a fixed-size GET probe timed in both phases shows whether the machine's speed
moved between them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

import objectlog.compaction.compactor as compaction_module
from bench.meter import Stopwatch
from bench.report import Report, Row, console
from bench.run import MIB, alternate, cold_caches, connect, median
from bench.server import add_endpoint_argument, embedded_endpoint
from objectlog import FetchRequest, ObjectLog
from objectlog.cache import LruCache
from objectlog.compaction.compactor import CompactionSettings, PartitionReport
from objectlog.compaction.maintenance import run_maintenance
from objectlog.format.index import LEVEL_L0

TOPIC = "compaction"
KEY_BYTES = 16
VALUE_BYTES = 1024
COMPARED = ["offset", "key", "value", "timestamp", "partition"]
MAX_RUNS = 20  # compaction runs before giving up on "nothing left to merge"

GETS = "GETs of the L0 slices (READ_CONCURRENCY in flight; thread-seconds)"
MANIFEST_GETS = "GETs of manifests and manifest lists"
DECODE = "decoding the slices (decode_ref; thread-seconds)"
ENCODE = "encoding L1 files (encode_l1: Parquet, zstd)"
PUTS = "PUTs: L1 files, manifests, manifest list"
HEADS = "DynamoDB: lease, epoch stamp, heads, swap"


@dataclass
class Shape:
    """The partition's index at one moment."""

    refs: Counter[int] = field(default_factory=Counter)  # by level
    objects: Counter[int] = field(default_factory=Counter)  # distinct objects, by level
    bytes: Counter[int] = field(default_factory=Counter)  # ref bytes, by level
    manifests: int = 0
    tail: int = 0
    head_segments: int = 0  # what describe_topic reports (IndexStore.extent: list summaries + tail)
    head_bytes: int = 0

    @property
    def counters_match(self) -> bool:
        """Do the head's counters agree with the refs its index lists?"""
        return self.head_segments == sum(self.refs.values()) and self.head_bytes == sum(
            self.bytes.values()
        )

    def describe(self) -> str:
        levels = sorted(self.refs)
        parts = [
            f"L{level}: {self.refs[level]:,} refs in {self.objects[level]:,} objects, "
            f"{self.bytes[level] / MIB:.1f} MiB"
            for level in levels
        ]
        return "; ".join(parts) + f"; {self.manifests} manifests, {self.tail} refs in the tail"


def shape(log: ObjectLog) -> Shape:
    head = log.metadata.get_head(TOPIC, 0)
    assert head is not None
    segments, size = log.index.extent(head)
    found = Shape(tail=len(head.tail), head_segments=segments, head_bytes=size)
    if head.manifest_list:
        found.manifests = len(log.index.manifest_list(head.manifest_list).entries)
    objects: dict[int, set[str]] = {}
    for placed in log.index.placed_refs(head, head.log_start_offset):
        ref = placed.ref
        found.refs[ref.level] += 1
        found.bytes[ref.level] += ref.length
        objects.setdefault(ref.level, set()).add(ref.object_id)
    for level, ids in objects.items():
        found.objects[level] = len(ids)
    return found


def produce(log: ObjectLog, slices: int, records: int) -> tuple[float, int]:
    """`slices` flushes of `records` records to partition 0, one at a time; seconds, bytes."""
    log.create_topic(TOPIC, partitions=1)
    rng = np.random.default_rng(7)
    per_table = [
        pa.table(
            {
                "key": pa.array([b"%016d" % (i * records + r) for r in range(records)]),
                "value": pa.array(
                    [rng.bytes(VALUE_BYTES) for _ in range(records)], type=pa.binary()
                ),
            }
        )
        for i in range(min(slices, 64))
    ]
    started = time.perf_counter()
    report_every = max(1, slices // 5)
    with log.producer(linger_ms=0) as producer:
        for i in range(slices):
            producer.send_table(TOPIC, per_table[i % len(per_table)], partition=0)
            if (i + 1) % report_every == 0:
                elapsed = time.perf_counter() - started
                console.print(
                    f"    {i + 1:,} slices in {elapsed:.0f} s ({(i + 1) / elapsed:.0f} slices/s)"
                )
        bytes_put = producer.stats.bytes_put
    return time.perf_counter() - started, bytes_put


class CatchUp:
    """Read the partition from offset 0 to its end, 1 MiB per fetch_many, from cold caches."""

    def __init__(self, log: ObjectLog, total: int) -> None:
        self.log = log
        self.total = total
        self.table: pa.Table | None = None  # the last round's records
        self.fetches = 0

    def __call__(self) -> float:
        log = self.log
        cold_caches(log)
        log.footers._cache = LruCache(512)
        tables: list[pa.Table] = []
        fetches = 0
        started = time.perf_counter()
        offset = 0
        while True:
            (result,) = log.fetch_many([FetchRequest(TOPIC, 0, offset, max_bytes=MIB)])
            fetches += 1
            tables.append(result.table)
            if result.next_offset >= result.high_watermark:
                break
            assert result.next_offset > offset, (offset, result.next_offset)
            offset = result.next_offset
        seconds = time.perf_counter() - started
        table = pa.concat_tables(tables).select(COMPARED)
        assert table.num_rows == self.total, (table.num_rows, self.total)
        assert np.array_equal(table.column("offset").to_numpy(), np.arange(self.total))
        self.table, self.fetches = table, fetches
        return seconds


def warm_up(log: ObjectLog) -> None:
    """One fetch of the first MiB: clients, connections, the topic cache (a whole catch-up
    before compaction would take as long as a measured round)."""
    cold_caches(log)
    log.fetch_many([FetchRequest(TOPIC, 0, 0, max_bytes=MIB)])


class Probe:
    """The machine's speed at a moment: the same 64 ranged GETs of 128 KiB, one by one."""

    def __init__(self, log: ObjectLog) -> None:
        self.log = log
        self.key = f"{log.config.prefix}bench-probe"
        log.store.client.put_object(
            Bucket=log.config.bucket, Key=self.key, Body=os.urandom(64 * 128 << 10)
        )

    def __call__(self) -> float:
        started = time.perf_counter()
        for i in range(64):
            self.log.store.get_range(self.key, i * (128 << 10), 128 << 10)
        return time.perf_counter() - started


def compact(
    log: ObjectLog, settings: CompactionSettings
) -> tuple[list[PartitionReport], float, int, Counter[str], Counter[str]]:
    """Runs until one finds nothing to merge: the reports that merged, their seconds, the
    runs (the idle one too), and the merging runs' seconds and calls by stage."""
    stopwatch = Stopwatch()
    wrapped: list[tuple[Any, str, Any]] = []  # (owner, name, its own attribute or None)

    def wrap(owner: Any, name: str, label: str) -> None:
        wrapped.append((owner, name, vars(owner).get(name)))
        setattr(owner, name, stopwatch.wrap(label, getattr(owner, name)))

    wrap(log.store, "get_range", GETS)
    wrap(log.store, "get", MANIFEST_GETS)
    wrap(log.store, "put_if_absent", PUTS)
    wrap(compaction_module, "decode_ref", DECODE)
    wrap(compaction_module, "encode_l1", ENCODE)
    for name in ("get_head", "stamp_compactor_epoch", "swap_index"):
        wrap(log.metadata, name, HEADS)
    for name in ("acquire", "release"):
        wrap(compaction_module.Leases, name, HEADS)
    cold_caches(log)  # the compactor runs elsewhere (a Lambda), its caches empty
    merged: list[PartitionReport] = []
    seconds = 0.0
    runs = 0
    stage_seconds: Counter[str] = Counter()
    stage_calls: Counter[str] = Counter()
    try:
        for runs in range(1, MAX_RUNS + 1):
            report = run_maintenance(log, [TOPIC], settings=settings, collect=False)
            (partition,) = report.partitions
            run_seconds, run_calls = stopwatch.take()
            if not partition.refs_in:
                assert partition.skipped == "idle", partition.skipped
                break
            assert partition.skipped is None, partition.skipped
            merged.append(partition)
            seconds += report.seconds
            stage_seconds.update(run_seconds)
            stage_calls.update(run_calls)
            console.print(
                f"    run {runs}: {partition.refs_in:,} refs, "
                f"{partition.bytes_in / MIB:.1f} MiB in, {partition.bytes_out / MIB:.1f} MiB "
                f"out in {partition.files_written} files, {report.seconds:.1f} s"
            )
        else:
            raise AssertionError(f"still merging after {MAX_RUNS} runs")
    finally:
        for owner, name, own in reversed(wrapped):
            if own is None:
                delattr(owner, name)  # an instance's wrapper over its class's method
            else:
                setattr(owner, name, own)
    return merged, seconds, runs, stage_seconds, stage_calls


def bench_compaction(log: ObjectLog, report: Report, args: argparse.Namespace) -> None:
    total = args.slices * args.records
    payload = total * (KEY_BYTES + VALUE_BYTES)
    console.print(
        f"  producing {args.slices:,} flushes of {args.records} x {VALUE_BYTES} B records "
        "to one partition, one L0 object each ..."
    )
    produce_s, bytes_put = produce(log, args.slices, args.records)
    report.add(
        Row(
            f"produce: {args.slices:,} flushes of {args.records} records (send_table, one by one)",
            args.slices / produce_s,
            "flushes/s",
            note=f"{produce_s:.0f} s, {bytes_put / MIB:.1f} MiB of L0 objects",
        )
    )
    before_shape = shape(log)
    console.print(f"  index before: {before_shape.describe()}")

    catch_up = CatchUp(log, total)
    probe = Probe(log)
    warm_up(log)
    before = alternate(args.rounds_before, {"fetch": catch_up, "probe": probe})
    before_table, before_fetches = catch_up.table, catch_up.fetches
    console.print(
        "  fetch before: "
        + ", ".join(f"{payload / MIB / s:.1f}" for s in before["fetch"])
        + " MiB/s"
    )

    settings = CompactionSettings(
        target_file_bytes=args.target_mib * MIB, row_group_bytes=args.row_group_mib * MIB
    )
    console.print(
        f"  compacting (target file {args.target_mib} MiB, row groups {args.row_group_mib} MiB, "
        f"at most {settings.max_bytes_per_run // MIB} MiB a run) ..."
    )
    merged, compact_s, runs, seconds, calls = compact(log, settings)
    bytes_in = sum(p.bytes_in for p in merged)
    bytes_out = sum(p.bytes_out for p in merged)
    refs_in = sum(p.refs_in for p in merged)
    files = sum(p.files_written for p in merged)
    assert sum(p.records_in for p in merged) == sum(p.records_out for p in merged)
    after_shape = shape(log)
    console.print(f"  index after: {after_shape.describe()}")

    warm_up(log)
    after = alternate(args.rounds_after, {"fetch": catch_up, "probe": probe})
    after_table, after_fetches = catch_up.table, catch_up.fetches
    console.print(
        "  fetch after: " + ", ".join(f"{payload / MIB / s:.1f}" for s in after["fetch"]) + " MiB/s"
    )
    assert before_table is not None and after_table is not None
    identical = before_table.equals(after_table)
    assert identical, "the records read after compaction differ from those read before"

    # ---- figures -------------------------------------------------------------------------
    compaction_rate = bytes_in / MIB / compact_s
    report.add(
        Row(
            f"compaction: {refs_in:,} L0 refs ({bytes_in / MIB:.1f} MiB) into {files} L1 "
            f"file(s), {len(merged)} run(s)",
            compaction_rate,
            "MiB/s",
            note=f"{compact_s:.1f} s; {refs_in / compact_s:,.0f} refs/s; "
            f"{payload / MIB / compact_s:.1f} MiB/s of record bytes",
        )
    )
    report.add(
        Row(
            "write amplification (L1 bytes written / L0 bytes read)",
            bytes_out / bytes_in,
            "x",
            note=f"{bytes_out / MIB:.1f} MiB written, {bytes_in / MIB:.1f} MiB read; "
            "random values: zstd has nothing to squeeze, the saving is per-slice Parquet "
            "overhead",
        )
    )
    before_rate = payload / MIB / median(before["fetch"])
    after_rate = payload / MIB / median(after["fetch"])
    report.add(
        Row(
            f"catch-up fetch before merging: {payload / MIB:.0f} MiB, 1 MiB per fetch_many",
            before_rate,
            "MiB/s",
            note=f"{before_fetches} fetches, {before_shape.refs[LEVEL_L0]:,} L0 refs",
        )
    )
    report.add(
        Row(
            "catch-up fetch after merging",
            after_rate,
            "MiB/s",
            before_rate,
            "(before merging)",
            note=f"{after_fetches} fetches, {after_shape.refs[1]:,} L1 row groups",
        )
    )
    probe_before, probe_after = median(before["probe"]), median(after["probe"])
    report.add(
        Row(
            "machine check: 64 GETs of 128 KiB, after vs before",
            probe_before / probe_after,
            "x speed",
            note=f"{probe_before * 1000:.0f} ms before, {probe_after * 1000:.0f} ms after "
            "(near 1: the fetch figures are comparable)",
        )
    )
    report.add(
        Row(
            "records read after == records read before (offset, key, value, timestamp)",
            float(total),
            "records",
            target="identical",
            passed=identical,
        )
    )

    index = report.section("the partition's index before and after", "", "before", "after", "note")
    for level in sorted(set(before_shape.refs) | set(after_shape.refs)):
        index.rows.append(
            (
                f"L{level} refs",
                f"{before_shape.refs[level]:,}",
                f"{after_shape.refs[level]:,}",
                "L1: one ref per row group" if level else "L0: one ref per slice",
            )
        )
        index.rows.append(
            (
                f"L{level} objects",
                f"{before_shape.objects[level]:,}",
                f"{after_shape.objects[level]:,}",
                "",
            )
        )
        index.rows.append(
            (
                f"L{level} MiB",
                f"{before_shape.bytes[level] / MIB:.1f}",
                f"{after_shape.bytes[level] / MIB:.1f}",
                "",
            )
        )
    index.rows.append(("manifests", str(before_shape.manifests), str(after_shape.manifests), ""))
    for when, found in (("before", before_shape), ("after", after_shape)):
        if not found.counters_match:
            console.print(
                f"  [red]described extent {when}: segments {found.head_segments:,}, bytes "
                f"{found.head_bytes:,}; the index lists {sum(found.refs.values()):,} refs, "
                f"{sum(found.bytes.values()):,} bytes[/]"
            )
    index.rows.append(
        (
            "head counters (segs, nbytes) == the index's refs, bytes",
            str(before_shape.counters_match),
            str(after_shape.counters_match),
            "",
        )
    )
    index.rows.append(
        (
            "refs in the head's tail",
            str(before_shape.tail),
            str(after_shape.tail),
            "the tail is never compacted (producers append to it)",
        )
    )

    split = report.section(
        f"compaction: where the time goes ({compact_s:.1f} s, {len(merged)} merging run(s))",
        "stage",
        "seconds",
        "calls",
        "note",
    )
    for name in (HEADS, MANIFEST_GETS, GETS, DECODE, ENCODE, PUTS):
        per = seconds.get(name, 0.0) / max(1, calls[name]) * 1000
        split.rows.append(
            (name, f"{seconds.get(name, 0.0):.2f}", f"{calls[name]:,}", f"{per:.2f} ms each")
        )
    split.rows.append(
        (
            "wall: the whole compaction",
            f"{compact_s:.2f}",
            "",
            "the GET and decode rows overlap: they are summed over the reading threads",
        )
    )
    report.note(
        f"{args.slices:,} slices of {args.records} records ({KEY_BYTES} B keys, {VALUE_BYTES} B "
        f"random values, L0 uncompressed); fetch rounds: {args.rounds_before} before and "
        f"{args.rounds_after} after, medians, each from cold caches (decoded slices, "
        "manifests, L1 footers); "
        f"compaction: target file {args.target_mib} MiB, row groups {args.row_group_mib} MiB, "
        f"zstd, {runs} runs (the last found nothing to merge and is not counted)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--slices", type=int, default=10_000, help="L0 slices (flushes)")
    parser.add_argument("--records", type=int, default=8, help="records per slice")
    parser.add_argument("--rounds-before", type=int, default=1, help="fetch rounds before")
    parser.add_argument("--rounds-after", type=int, default=3, help="fetch rounds after")
    parser.add_argument("--target-mib", type=int, default=64, help="L1 target file size")
    parser.add_argument("--row-group-mib", type=int, default=2, help="L1 row group size")
    add_endpoint_argument(parser)
    args = parser.parse_args()
    report = Report()
    started = time.perf_counter()
    console.print(
        f"client: Python {sys.version.split()[0]}, pyarrow {pa.__version__}, "
        f"{os.cpu_count()} CPUs shared with the server (`objectlog dev` in its own process)"
    )
    with embedded_endpoint(args.dynamodb) as endpoint:
        report.endpoint(endpoint.description)
        log = connect(endpoint)
        try:
            bench_compaction(log, report, args)
        finally:
            log.close()
    report.print()
    console.print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
