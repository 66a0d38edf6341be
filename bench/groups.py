"""Consumer-group catch-up: a group of 1, 2 and 4 members reads a topic from offset 0 to its
end, vs raw S3 GETs of the same segment slices on the same endpoint, same run.

    .venv/bin/python -m bench.groups                    # about 2 minutes
    .venv/bin/python -m bench.groups --dynamodb local   # DynamoDB Local for DynamoDB

Each member is a Consumer in a thread of this process with its own ObjectLog (its own clients,
as separate processes would have), committing after every poll, as a catching-up application
does. The clock starts before the first join and stops when every record has been returned
once; records returned again after a rebalance are counted as re-reads. The floor issues the
same ranged GETs (the slices the topic's index lists) from a bare loop, 32 in flight, and does
not decode them. Sides alternate in rounds; each reports its median round, as bench.run.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa

from bench.report import Report, Row, console
from bench.run import MIB, alternate, connect, median
from bench.server import add_endpoint_argument, embedded_endpoint
from objectlog import ObjectLog
from objectlog.format.layout import object_key

TOPIC = "catchup"
VALUE_BYTES = 1024
MEMBERS = (1, 2, 4)
ARROW = "1 member, poll_table()"


def produce(log: ObjectLog, partitions: int, total_mib: int) -> int:
    """total_mib of 1 KiB values over the partitions, 1 MiB L0 objects; returns the count."""
    log.create_topic(TOPIC, partitions=partitions)
    per_flush = MIB // VALUE_BYTES
    partition = pa.array(np.arange(per_flush, dtype=np.int32) % partitions)
    with log.producer() as producer:
        for _ in range(total_mib):
            values = pa.array([os.urandom(VALUE_BYTES) for _ in range(per_flush)], pa.binary())
            producer.send_table(TOPIC, pa.table({"value": values, "partition": partition}))
    return total_mib * per_flush


def slice_ranges(log: ObjectLog, partitions: int) -> list[tuple[str, int, int]]:
    """Every (key, start, length) the topic's index lists, in offset order per partition."""
    ranges = []
    for head in log.metadata.get_heads(TOPIC, range(partitions)).values():
        for placed in log.index.placed_refs(head, 0):
            ref = placed.ref
            ranges.append(
                (object_key(log.config.prefix, ref.level, ref.object_id), ref.start, ref.length)
            )
    return ranges


def catch_up(
    log: ObjectLog, members: int, total: int, stats: dict[str, int], *, arrow: bool = False
) -> Callable[[], float]:
    """One round: a fresh group of `members` consumers reads everything once, with poll()
    (a Python record per record) or, arrow=True, poll_table() (Arrow, no object per record)."""
    partitions = int(log.topic(TOPIC).partitions)

    def run() -> float:
        group = f"catchup-{members}-{uuid.uuid4().hex[:8]}"
        seen = np.zeros((partitions, total), dtype=bool)  # by partition and offset
        returned = 0
        lock = threading.Lock()
        done = threading.Event()
        errors: list[BaseException] = []

        def polled(consumer: Any) -> tuple[int, np.ndarray, np.ndarray]:
            if arrow:
                table = consumer.poll_table(timeout=0.1)
                return (
                    table.num_rows,
                    table.column("partition").to_numpy(),
                    table.column("offset").to_numpy(),
                )
            records = consumer.poll(timeout=0.1)
            return (
                len(records),
                np.fromiter((r.partition for r in records), np.int64, len(records)),
                np.fromiter((r.offset for r in records), np.int64, len(records)),
            )

        def member() -> None:
            nonlocal returned
            try:
                with (
                    ObjectLog(log.config) as own,
                    own.consumer(
                        group=group,
                        topics=[TOPIC],
                        auto_offset_reset="earliest",
                        enable_auto_commit=False,
                        heartbeat_interval_ms=200,
                        max_poll_records=100_000,
                    ) as consumer,
                ):
                    while not done.is_set():
                        count, partition, offset = polled(consumer)
                        if count:
                            consumer.commit()
                        with lock:
                            returned += count
                            seen[partition, offset] = True
                            if seen.sum() == total:
                                done.set()
            except BaseException as e:  # reported by the round
                errors.append(e)
                done.set()

        started = time.perf_counter()
        threads = [threading.Thread(target=member) for _ in range(members)]
        for thread in threads:
            thread.start()
        done.wait()
        seconds = time.perf_counter() - started
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        stats["rereads"] = stats.get("rereads", 0) + returned - total
        return seconds

    return run


def raw_gets(log: ObjectLog, ranges: list[tuple[str, int, int]]) -> Callable[[], float]:
    s3 = log.store.client
    bucket = log.config.bucket
    pool = ThreadPoolExecutor(32)

    def get(item: tuple[str, int, int]) -> int:
        key, start, length = item
        response = s3.get_object(
            Bucket=bucket, Key=key, Range=f"bytes={start}-{start + length - 1}"
        )
        return len(response["Body"].read())

    def run() -> float:
        started = time.perf_counter()
        read = sum(pool.map(get, ranges))
        seconds = time.perf_counter() - started
        assert read == sum(length for _, _, length in ranges)
        return seconds

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=64, help="MiB of values in the topic")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    add_endpoint_argument(parser)
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    report = Report()
    began = time.perf_counter()
    stats: dict[str, int] = {}
    with embedded_endpoint(args.dynamodb) as endpoint:
        report.endpoint(endpoint.description)
        log = connect(endpoint)
        total = produce(log, args.partitions, args.mib)
        ranges = slice_ranges(log, args.partitions)
        console.print(
            f"client: Python {sys.version.split()[0]}, {os.cpu_count()} CPUs shared with the "
            f"server; topic {TOPIC!r}: {total:,} records of {VALUE_BYTES} B in "
            f"{args.partitions} partitions, {len(ranges)} slices"
        )
        floor = "raw S3 GETs"
        sides = {f"{n} member(s)": catch_up(log, n, total, stats) for n in MEMBERS}
        sides[ARROW] = catch_up(log, 1, total, stats, arrow=True)
        sides[floor] = raw_gets(log, ranges)
        results = alternate(args.rounds, sides)
        log.close()
    mib = total * VALUE_BYTES / MIB
    floor_s = median(results[floor])
    for name in [f"{n} member(s)" for n in MEMBERS] + [ARROW]:
        seconds = median(results[name])
        report.add(
            Row(
                f"group catch-up, {name}, {args.partitions} partitions, commit per poll",
                mib / seconds,
                "MiB/s",
                mib / floor_s,
                "raw S3 GETs of the same slices, 32 in flight, no decoding",
            )
        )
    report.note(
        "rounds (s): "
        + "; ".join(f"{k} " + ", ".join(f"{s:.2f}" for s in v) for k, v in results.items())
    )
    report.note(f"records returned twice after rebalances, all rounds: {stats.get('rereads', 0)}")
    report.print()
    console.print(f"total {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
