"""A single-partition Consumer catching up on L0 data, vs raw 1 MiB GETs + decode of the same
bytes, on the same endpoint, same run.

    .venv/bin/python -m bench.consumer                    # about 2 minutes
    .venv/bin/python -m bench.consumer --dynamodb local   # DynamoDB Local for DynamoDB

One partition receives --mib flushes of 1 MiB (1 KiB values) from the default producer: L0
objects of one slice each. Each round, a fresh Consumer (assign, earliest, its own ObjectLog so
its caches are cold) reads the partition from offset 0 to its end:
- poll(), building a Python Record per record, with fetch-ahead (the default) and without;
- poll_table(), the Arrow path, with fetch-ahead.
The floor GETs each slice's byte range and decodes it (objectlog's decode_parquet), one at a
time and two in flight (the consumer's depth: one fetch ahead); the faster is the floor. Sides
alternate in rounds; each reports its median round, as bench.run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from bench.report import Report, Row, console
from bench.run import MIB, alternate, connect, median
from bench.server import add_endpoint_argument, embedded_endpoint
from objectlog import ObjectLog
from objectlog.format.layout import object_key
from objectlog.format.segment import decode_parquet

TOPIC = "single"
VALUE_BYTES = 1024
TARGET = 0.5


def produce(log: ObjectLog, total_mib: int) -> int:
    """total_mib flushes of 1 MiB of 1 KiB values to partition 0; returns the record count."""
    log.create_topic(TOPIC, partitions=1)
    per_flush = MIB // VALUE_BYTES
    zeros = pa.array(np.zeros(per_flush, dtype=np.int32))
    with log.producer() as producer:
        for _ in range(total_mib):
            values = pa.array([os.urandom(VALUE_BYTES) for _ in range(per_flush)], pa.binary())
            producer.send_table(TOPIC, pa.table({"value": values, "partition": zeros}))
            producer.flush()
    return total_mib * per_flush


def slice_ranges(log: ObjectLog) -> list[tuple[str, int, int]]:
    head = log.metadata.get_heads(TOPIC, [0])[0]
    return [
        (object_key(log.config.prefix, p.ref.level, p.ref.object_id), p.ref.start, p.ref.length)
        for p in log.index.placed_refs(head, 0)
    ]


def consumer_side(
    log: ObjectLog, total: int, *, table: bool, fetch_ahead: bool
) -> Callable[[], float]:
    def run() -> float:
        options = {} if fetch_ahead else {"fetch_ahead_bytes": 0}
        with (
            ObjectLog(log.config) as own,
            own.consumer(
                auto_offset_reset="earliest", max_poll_records=100_000, **options
            ) as consumer,
        ):
            started = time.perf_counter()
            consumer.assign([(TOPIC, 0)])
            read = 0
            while read < total:
                if table:
                    read += consumer.poll_table(timeout=1).num_rows
                else:
                    read += len(consumer.poll(timeout=1))
            seconds = time.perf_counter() - started
        assert read == total, (read, total)
        return seconds

    return run


def floor_side(
    log: ObjectLog, ranges: list[tuple[str, int, int]], total: int, in_flight: int
) -> Callable[[], float]:
    s3 = log.store.client
    bucket = log.config.bucket
    pool = ThreadPoolExecutor(in_flight)

    def get_and_decode(item: tuple[str, int, int]) -> int:
        key, start, length = item
        response = s3.get_object(
            Bucket=bucket, Key=key, Range=f"bytes={start}-{start + length - 1}"
        )
        return int(decode_parquet(response["Body"].read()).num_rows)

    def run() -> float:
        started = time.perf_counter()
        if in_flight == 1:
            rows = sum(map(get_and_decode, ranges))
        else:
            rows = sum(pool.map(get_and_decode, ranges))
        seconds = time.perf_counter() - started
        assert rows == total, (rows, total)
        return seconds

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=48, help="MiB of values (1 MiB flushes)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    add_endpoint_argument(parser)
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    report = Report()
    began = time.perf_counter()
    with embedded_endpoint(args.dynamodb) as endpoint:
        report.endpoint(endpoint.description)
        log = connect(endpoint)
        total = produce(log, args.mib)
        ranges = slice_ranges(log)
        console.print(
            f"client: Python {sys.version.split()[0]}, {os.cpu_count()} CPUs shared with the "
            f"server; topic {TOPIC!r}: {total:,} records of {VALUE_BYTES} B in one partition, "
            f"{len(ranges)} L0 slices of {median([r[2] for r in ranges]) / MIB:.2f} MiB"
        )
        sides = {
            "poll(), fetch-ahead": consumer_side(log, total, table=False, fetch_ahead=True),
            "poll_table(), fetch-ahead": consumer_side(log, total, table=True, fetch_ahead=True),
            "poll(), no fetch-ahead": consumer_side(log, total, table=False, fetch_ahead=False),
            "GET + decode, one at a time": floor_side(log, ranges, total, 1),
            "GET + decode, two in flight": floor_side(log, ranges, total, 2),
        }
        results = alternate(args.rounds, sides)
        log.close()
    mib = total * VALUE_BYTES / MIB
    floors = {name: median(results[name]) for name in sides if name.startswith("GET")}
    floor_name = min(floors, key=lambda name: floors[name])
    for name in [n for n in sides if not n.startswith("GET")]:
        ratio = floors[floor_name] / median(results[name])
        report.add(
            Row(
                f"single-partition Consumer on L0 data, {name}",
                mib / median(results[name]),
                "MiB/s",
                mib / floors[floor_name],
                f"raw ~1 MiB GETs + decode of the same slices ({floor_name})",
                target=f">= {TARGET}",
                passed=ratio >= TARGET,
            )
        )
    report.note(
        "rounds (s): "
        + "; ".join(f"{k} " + ", ".join(f"{s:.2f}" for s in v) for k, v in results.items())
    )
    report.print()
    console.print(f"total {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
