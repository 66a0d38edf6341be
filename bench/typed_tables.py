"""Typed tables: what decoding values into typed columns costs the compactor, what the columns
take on S3, and that reading a typed topic costs what reading any topic does, measured side by
side in one run on the same endpoint.

    .venv/bin/python -m bench.typed_tables                    # about a minute
    .venv/bin/python -m bench.typed_tables --dynamodb local

Each round makes two fresh topics of the same partitions and gives both the same framed Avro
values (a record of an id, a ~0.9 KiB string, a decimal, a timestamp and a list of tags:
about 1 KiB each) through ``Producer.send_table``: one with
``objectlog.table.mode=value_schema_id_prefix`` (typed), one with the default ``key_value``
(the floor). Then, per side: one compaction run of the topic (its Iceberg table in a SQL
catalog beside it), timed; the L1 bytes it wrote; a catch-up fetch of the whole topic from
cold caches (``ObjectLog.fetch``, as a consumer starting afresh), timed; and the executor side
of a Spark data source read (``objectlog.spark.reading.read_task`` over the planned tasks),
timed. Requests are counted by kind (botocore hook, bench.meter) and priced at list prices.
Sides alternate in rounds; each reports its median round. Beside: the decoding's own CPU per
MiB (``TypedValues.columns`` on the same values, no I/O).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal

import fastavro
import pyarrow as pa

from bench.meter import Requests
from bench.report import Report, Row, console
from bench.run import MIB, S3_GET_PER_1000, S3_PUT_PER_1000, alternate, cold_caches, median
from bench.server import add_endpoint_argument, bench_config, embedded_endpoint
from objectlog import ObjectLog
from objectlog.compaction.maintenance import run_maintenance
from objectlog.format.schema_ids import framed_ids
from objectlog.schemas.parsing import SchemaInput
from objectlog.schemas.typed_values import TypedValues
from objectlog.spark.options import ReadOptions
from objectlog.spark.planning import plan_batch
from objectlog.spark.reading import read_task

ORDER = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "item", "type": "string"},
        {
            "name": "price",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2},
        },
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
WORDS = [
    "tea",
    "coffee",
    "cocoa",
    "milk",
    "sugar",
    "honey",
    "lemon",
    "mint",
    "ginger",
    "oat",
    "rice",
    "soy",
]


def framed_values(schema_id: int, count: int) -> pa.Array:
    """count framed Avro orders of about 1 KiB, varied as real records are."""
    parsed = fastavro.parse_schema(ORDER)
    rng = random.Random(7)
    prefix = b"\x00" + schema_id.to_bytes(4, "big")
    out = []
    for n in range(count):
        datum = {
            "id": n,
            "item": " ".join(rng.choice(WORDS) for _ in range(150))[:900],
            "price": Decimal(rng.randrange(100, 10_000_00)) / 100,
            "at": 1_700_000_000_000 + n,
            "tags": rng.sample(WORDS, 3),
        }
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, datum)
        out.append(prefix + buffer.getvalue())
    return pa.array(out, pa.binary())


class Side:
    """One topic mode: each round a fresh topic, produced, compacted and read back."""

    def __init__(
        self, log: ObjectLog, name: str, config: dict[str, str], table: pa.Table, partitions: int
    ) -> None:
        self.log, self.name, self.config = log, name, config
        self.table, self.partitions = table, partitions
        self.rounds = 0
        self.l1_bytes: list[int] = []
        self.fetch_s: list[float] = []
        self.spark_s: list[float] = []
        self.requests = Requests(log)
        self.compaction = Counter[str]()
        self.reading = Counter[str]()

    def run(self) -> float:
        """One round; the compaction's seconds (the other measures are kept on the side)."""
        self.rounds += 1
        topic = f"{self.name}-{self.rounds}"
        log = self.log
        log.create_topic(topic, self.partitions, {**self.config, "objectlog.table.lag.ms": "0"})
        with log.producer() as producer:
            producer.send_table(topic, self.table)
        self.requests.take()
        started = time.perf_counter()
        report = run_maintenance(log, [topic], collect=False)
        compaction_s = time.perf_counter() - started
        self.compaction.update(self.requests.take().counts)
        self.l1_bytes.append(sum(p.bytes_out for p in report.partitions))
        cold_caches(log)
        started = time.perf_counter()
        fetched = fetch_all(log, topic, self.partitions)
        self.fetch_s.append(time.perf_counter() - started)
        assert fetched == self.table.num_rows, (topic, fetched)
        cold_caches(log)
        started = time.perf_counter()
        read = spark_read(log, topic)
        self.spark_s.append(time.perf_counter() - started)
        assert read == self.table.num_rows, (topic, read)
        self.reading.update(self.requests.take().counts)
        return compaction_s


def fetch_all(log: ObjectLog, topic: str, partitions: int) -> int:
    records = 0
    for partition in range(partitions):
        offset = 0
        while True:
            result = log.fetch(topic, partition, offset, max_bytes=8 * MIB)
            if not result.records:
                break
            records += len(result.records)
            offset = result.next_offset
    return records


def spark_read(log: ObjectLog, topic: str) -> int:
    options = ReadOptions.parse({"subscribe": topic}, streaming=False)
    return sum(
        batch.num_rows
        for task in plan_batch(log, options)
        for batch in read_task(log, task, include_headers=False)
    )


def decode_cpu(log: ObjectLog, values: pa.Array, rounds: int) -> float:
    """CPU seconds of decoding values into the typed columns (the median of rounds)."""
    typed = TypedValues(log.schema_registry)
    ids, framed, _ = framed_ids(values)
    target = typed.target(None, ids[framed])
    times = []
    for _ in range(rounds + 1):
        started = time.process_time()
        typed.columns(values, ids, framed, target)
        times.append(time.process_time() - started)
    return median(times[1:])  # the first also read the schema


def dollars(counts: Counter[str]) -> float:
    """S3 requests at list prices (the compaction's and reads' DynamoDB requests are a few per
    partition, on both sides alike: their counts are printed, not priced)."""
    puts = sum(n for kind, n in counts.items() if kind.startswith("PutObject"))
    gets = sum(n for kind, n in counts.items() if kind.startswith("GetObject"))
    return puts * S3_PUT_PER_1000 / 1000 + gets * S3_GET_PER_1000 / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=16, help="MiB of values per round")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    add_endpoint_argument(parser)
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    report = Report()
    with embedded_endpoint(args.dynamodb) as endpoint, tempfile.TemporaryDirectory() as tmp:
        report.endpoint(endpoint.description)
        suffix = f"bench-typed-{os.getpid()}"
        config = bench_config(endpoint, suffix, suffix)
        log = ObjectLog(replace(config, catalog=f"sqlite:///{tmp}/catalog.db"))
        log.ensure_resources()
        given = SchemaInput(json.dumps(ORDER))
        schema_id = log.schema_registry.register("orders-value", given).schema.id
        sample = framed_values(schema_id, 64)
        count = args.mib * MIB // (sample.nbytes // len(sample))
        values = framed_values(schema_id, count)
        table = pa.table({"key": pa.nulls(count, pa.binary()), "value": values})
        console.print(f"{count:,} records of ~1 KiB per round, {args.partitions} partitions")
        typed_mode = {"objectlog.table.mode": "value_schema_id_prefix"}
        sides = {
            "typed": Side(log, "typed", typed_mode, table, args.partitions),
            "plain": Side(log, "plain", {}, table, args.partitions),
        }
        runs: dict[str, Callable[[], float]] = {name: side.run for name, side in sides.items()}
        results = alternate(args.rounds, runs)
        cpu_s = decode_cpu(log, values, args.rounds)
        log.close()
    mib = values.nbytes / MIB
    typed, plain = sides["typed"], sides["plain"]
    report.add(
        Row(
            f"compaction of {mib:.0f} MiB into a typed table",
            mib / median(results["typed"]),
            "MiB/s",
            mib / median(results["plain"]),
            "the same records, key_value",
        )
    )
    report.add(Row("decoding's own CPU (TypedValues.columns)", cpu_s * 1000 / mib, "ms/MiB"))
    report.add(
        Row(
            "L1 bytes written",
            median(typed.l1_bytes) / MIB,
            "MiB",
            median(plain.l1_bytes) / MIB,
            "key_value",
        )
    )
    report.add(
        Row(
            "catch-up fetch from cold caches",
            mib / median(typed.fetch_s),
            "MiB/s",
            mib / median(plain.fetch_s),
            "key_value",
        )
    )
    report.add(
        Row(
            "Spark data source's executor read (read_task)",
            mib / median(typed.spark_s),
            "MiB/s",
            mib / median(plain.spark_s),
            "key_value",
        )
    )
    gb = mib * args.rounds / 1024
    for what, attr in (("compaction", "compaction"), ("reads", "reading")):
        ours, floor = getattr(typed, attr), getattr(plain, attr)
        report.add(
            Row(
                f"S3 requests of the {what}, $ per GB",
                dollars(ours) / gb,
                "$/GB",
                dollars(floor) / gb,
                "key_value",
            )
        )
        console.print(f"{what} requests: typed {dict(ours)}; key_value {dict(floor)}")
    report.print()


if __name__ == "__main__":
    main()
