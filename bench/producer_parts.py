"""The producer's own CPU work per flush, piece by piece, on an in-memory log (no endpoint):
what the client spends beyond the floor's requests in bench.run's produce benchmark.

    .venv/bin/python -m bench.producer_parts            # a few seconds

The produce benchmark's workload (1 MiB flushes of 1,024 records of 1 KiB, 4 partitions);
each piece is timed by wrapping the method that does it; medians per flush.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.report import console
from bench.run import KEY_BYTES, PARTITIONS, RECORD_BYTES, RECORDS_PER_FLUSH
from objectlog import ObjectLog
from objectlog.clients import producer as producer_module
from objectlog.clients.flushing import RECORD_OVERHEAD
from objectlog.config import Config
from objectlog.stores.items import ItemStores
from objectlog.stores.objects import MemoryObjectStore

PIECES = {  # (object, method) -> what it does
    ("producer", "_prepare"): "group by partition, check sizes, build slices, stage (all)",
    ("module", "delivery_columns"): "  the delivery's records as Arrow columns",
    ("module", "table_batches"): "  one slice table per partition (services.columnar)",
    ("appender", "_encode_slices"): "  Parquet encoding of the slices",
    ("appender", "_encode"): "  the object's body: the slices and any carried spill",
    ("appender", "commit_staged"): "commit (in memory) and settle the outcomes",
}


def timed(target: Any, name: str, seconds: list[float]) -> None:
    method: Callable[..., Any] = getattr(target, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            seconds.append(time.perf_counter() - started)

    setattr(target, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--flushes", type=int, default=60)
    args = parser.parse_args()
    log = ObjectLog(
        Config(bucket="b", table="t"), store=MemoryObjectStore(), items=ItemStores.memory()
    )
    log.create_topic("parts", partitions=PARTITIONS)
    value = os.urandom(RECORD_BYTES - KEY_BYTES)
    keys = [b"%016d" % i for i in range(RECORDS_PER_FLUSH)]
    producer = log.producer(batch_bytes=RECORDS_PER_FLUSH * (RECORD_BYTES + RECORD_OVERHEAD))
    owners = {"producer": producer, "appender": producer.appender, "module": producer_module}
    seconds: dict[tuple[str, str], list[float]] = {piece: [] for piece in PIECES}
    for owner, name in PIECES:
        timed(owners[owner], name, seconds[(owner, name)])
    sends: list[float] = []
    for _ in range(args.flushes + 1):  # the first flush imports and warms up: not counted
        started = time.perf_counter()
        for i, key in enumerate(keys):
            producer.send("parts", value, key, partition=i % PARTITIONS)
        sends.append(time.perf_counter() - started)
        producer.flush()
    producer.close()
    console.print(f"per 1 MiB flush, medians of {args.flushes} flushes (ms):")
    console.print(
        f"  send() of {RECORDS_PER_FLUSH} records: {statistics.median(sends[1:]) * 1000:.2f}"
    )
    for piece, what in PIECES.items():
        ms = statistics.median(seconds[piece][1:]) * 1000
        console.print(f"  {what}: {ms:.2f}")


if __name__ == "__main__":
    main()
