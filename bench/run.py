"""objectlog benchmarks: each figure side by side with its floor, measured in the same run.

    .venv/bin/python -m bench.run          # the default run (a few minutes)
    .venv/bin/python -m bench.run --long   # adds 20,000 flushes: do rates hold as data grows?

The AWS endpoint is `objectlog dev` in a separate process (so client and server do not share
one GIL), on loopback, reached over HTTP exactly as the library reaches AWS.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

from objectlog import FetchRequest, ObjectLog
from objectlog.config import Config
from objectlog.layout import object_key

MIB = 1 << 20
console = Console(width=170)

# AWS list prices, us-east-1 (S3 Standard, DynamoDB on-demand), as of 2026.
S3_PUT_PER_1000 = 0.005
S3_GET_PER_1000 = 0.0004
DDB_WRU_PER_MILLION = 0.625
DDB_RRU_PER_MILLION = 0.125


@dataclass
class Row:
    name: str
    ours: float
    floor: float | None
    unit: str
    target: str = ""
    passed: bool | None = None
    note: str = ""


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, row: Row) -> None:
        self.rows.append(row)
        ratio = f"{row.ours / row.floor:.2f}" if row.floor else "-"
        verdict = "" if row.passed is None else ("PASS" if row.passed else "MISS")
        console.print(
            f"  {row.name}: {row.ours:,.2f} {row.unit} "
            f"(floor {row.floor or '-'}; ratio {ratio}) {verdict} {row.note}"
        )

    def table(self) -> Table:
        table = Table(title="objectlog benchmarks")
        for column in ("measure", "objectlog", "floor / reference", "ratio", "target", "result"):
            table.add_column(column)
        for row in self.rows:
            table.add_row(
                row.name,
                f"{row.ours:,.2f} {row.unit}",
                f"{row.floor:,.2f} {row.unit}" if row.floor else "-",
                f"{row.ours / row.floor:.2f}" if row.floor else "-",
                row.target,
                "" if row.passed is None else ("PASS" if row.passed else "MISS"),
            )
        return table


# ---- the server ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def embedded_server() -> Iterator[tuple[str, str]]:
    port, api_port = free_port(), free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1", POWERTOOLS_METRICS_DISABLED="true")
    env.pop("AWS_ENDPOINT_URL", None)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "objectlog.cli",
            "dev",
            "--port",
            str(port),
            "--api-port",
            str(api_port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    process.stdout.readline()
    try:
        yield f"http://127.0.0.1:{port}", f"http://127.0.0.1:{api_port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def connect(endpoint: str) -> ObjectLog:
    suffix = uuid.uuid4().hex[:10]
    config = Config.from_env(
        bucket=f"bench-{suffix}",
        table=f"bench-{suffix}",
        s3_endpoint=endpoint,
        dynamodb_endpoint=endpoint,
    )
    log = ObjectLog(config)
    log.ensure_resources()
    return log


class Calls:
    """Counts AWS calls by operation through botocore's event hooks."""

    def __init__(self, log: ObjectLog) -> None:
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        for client in (log.store.client, log.metadata.client):  # type: ignore[attr-defined]
            client.meta.events.register("before-call", self._count)

    def _count(self, event_name: str, **_: object) -> None:
        with self._lock:
            self.counts[event_name.rsplit(".", 1)[1]] += 1

    def reset(self) -> Counter[str]:
        with self._lock:
            snapshot, self.counts = self.counts, Counter()
        return snapshot


def timed(function: Callable[[], object]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


# ---- produce and fetch vs their floors ------------------------------------------------------


def produce_vs_floor(log: ObjectLog, report: Report, flushes: int) -> dict[str, float]:
    record_size, partitions = 1024, 4
    per_flush = MIB // record_size
    log.create_topic("produce", partitions=partitions)
    value = os.urandom(record_size - 16)
    calls = Calls(log)
    producer = log.producer(linger_ms=1000, batch_bytes=MIB + per_flush * 80)

    def produce() -> None:
        for _ in range(flushes):
            futures = [
                producer.send("produce", value, key=b"%015d" % i, partition=i % partitions)
                for i in range(per_flush)
            ]
            producer.flush()
            futures[-1].result()

    produce()  # warm up: clients, caches, first objects
    calls.reset()
    before = vars(producer.stats).copy()
    seconds = timed(produce)
    counts = calls.reset()
    stats = {
        k: getattr(producer.stats, k) - before[k]
        for k in before
        if isinstance(before[k], int | float)
    }
    producer.close()
    body = os.urandom(per_flush * record_size)
    client, metadata = log.store.client, log.metadata  # type: ignore[attr-defined]
    head_keys = [{"pk": {"S": f"floor#{p}"}, "sk": {"S": "head"}} for p in range(partitions)]

    def floor() -> None:
        for _ in range(flushes):
            client.put_object(Bucket=log.config.bucket, Key=f"floor/{uuid.uuid4().hex}", Body=body)
            for key in head_keys:
                metadata.client.update_item(
                    TableName=log.config.table,
                    Key=key,
                    UpdateExpression="ADD n :one",
                    ConditionExpression="attribute_not_exists(pk) OR n >= :zero",
                    ExpressionAttributeValues={":one": {"N": "1"}, ":zero": {"N": "0"}},
                )

    floor()
    floor_seconds = timed(floor)
    mib = flushes * per_flush * record_size / MIB
    ours, base = mib / seconds, mib / floor_seconds
    report.add(
        Row(
            "produce, 1 MiB flushes of 1 KiB records, 4 partitions",
            ours,
            base,
            "MiB/s",
            ">= 0.85 of floor",
            ours / base >= 0.85,
        )
    )
    puts = counts["PutObject"] / flushes
    report.add(
        Row(
            "S3 PUTs per flush (spills included)",
            puts,
            None,
            "",
            "1 data PUT",
            counts["PutObject"] - stats["spills"] * 2 == flushes,
        )
    )
    report.add(Row("DynamoDB writes per flush", counts["UpdateItem"] / flushes, None, "", "", None))
    report.notes.append(
        f"produce time split over {flushes} flushes: encode {stats['encode_s']:.2f}s, "
        f"PUT {stats['put_s']:.2f}s, "
        f"commit {stats['commit_s']:.2f}s, spill {stats['spill_s']:.2f}s of {seconds:.2f}s "
        f"(the rest is send() and the sender's batching); spills {stats['spills']}"
    )
    return {
        "puts": counts["PutObject"],
        "updates": counts["UpdateItem"],
        "flushes": flushes,
        "mib": mib,
    }


def fetch_vs_floor(log: ObjectLog, report: Report) -> dict[str, float]:
    topic = "produce"
    partitions = log.topic(topic).partitions
    heads = {p: log.metadata.get_head(topic, p) for p in range(partitions)}
    ranges = []
    for _p, head in heads.items():
        assert head is not None
        for placed in log.index.placed_refs(head, 0):
            ranges.append(
                object_key(log.config.prefix, placed.ref.level, placed.ref.object_id)
                + f"|{placed.ref.start}|{placed.ref.length}"
            )
    calls = Calls(log)

    def fetch_all() -> int:
        positions = dict.fromkeys(range(partitions), 0)
        total = 0
        while positions:
            results = log.fetch_many(
                [FetchRequest(topic, p, o, max_bytes=4 * MIB) for p, o in positions.items()]
            )
            for result in results:
                total += result.table.nbytes
                if result.next_offset >= result.high_watermark:
                    positions.pop(result.partition)
                else:
                    positions[result.partition] = result.next_offset
        return total

    def floor() -> None:
        client = log.store.client  # type: ignore[attr-defined]
        for item in ranges:
            key, start, length = item.rsplit("|", 2)
            data = client.get_object(
                Bucket=log.config.bucket,
                Key=key,
                Range=f"bytes={start}-{int(start) + int(length) - 1}",
            )["Body"].read()
            pq.read_table(pa.BufferReader(data))

    fetch_all()  # warm up the async client; the slice cache is cleared below
    log.reader._slices = type(log.reader._slices)(64)
    calls.reset()
    seconds = timed(fetch_all)
    counts = calls.reset()
    floor_seconds = timed(floor)
    mib = sum(int(r.rsplit("|", 1)[1]) for r in ranges) / MIB
    ours, base = mib / seconds, mib / floor_seconds
    report.add(
        Row(
            "catch-up fetch of the same data, 4 partitions",
            ours,
            base,
            "MiB/s",
            ">= 0.85 of floor",
            ours / base >= 0.85,
        )
    )
    return {"gets": len(ranges), "getitems": counts["GetItem"] + counts["BatchGetItem"], "mib": mib}


# ---- client cost per record -----------------------------------------------------------------


def send_cost(log: ObjectLog, report: Report, records: int) -> None:
    import gc

    from confluent_kafka import Producer as KafkaProducer

    log.create_topic("cost", partitions=4)
    value = b"v" * 100
    keys = [b"key-%012d" % i for i in range(records)]

    def ours(method: str) -> float:
        producer = log.producer(linger_ms=60_000, batch_bytes=1 << 30, buffer_memory=1 << 31)
        call = getattr(producer, method)
        gc.collect()
        started = time.perf_counter()
        for key in keys:
            call("cost", value, key)
        seconds = time.perf_counter() - started
        producer.flush()
        producer.close()
        return seconds / records * 1e6

    kafka = KafkaProducer(
        {
            "bootstrap.servers": f"127.0.0.1:{free_port()}",
            "queue.buffering.max.messages": 10_000_000,
            "queue.buffering.max.kbytes": 2_000_000,
            "linger.ms": 60_000,
            "log_level": 0,
        }
    )

    def theirs() -> float:
        produce = kafka.produce
        gc.collect()
        started = time.perf_counter()
        for key in keys:
            produce("cost", value, key)
        return (time.perf_counter() - started) / records * 1e6

    reference = theirs()
    kafka.purge()
    send_us, produce_us = ours("send"), ours("produce")
    report.add(
        Row(
            "send() per record (returns a future) vs confluent-kafka produce()",
            send_us,
            reference,
            "us",
            "<= 2x librdkafka",
            send_us <= 2 * reference,
        )
    )
    report.add(
        Row(
            "produce() per record (callback, no future) vs confluent-kafka produce()",
            produce_us,
            reference,
            "us",
            "<= 2x librdkafka",
            produce_us <= 2 * reference,
        )
    )


def batch_path(log: ObjectLog, report: Report, records: int) -> None:
    log.create_topic("columnar", partitions=4)
    table = pa.table(
        {
            "key": pa.array([b"key-%012d" % i for i in range(records)], pa.binary()),
            "value": pa.array([b"v" * 100] * records, pa.binary()),
        }
    )
    with log.producer() as producer:
        producer.send_table("columnar", table.slice(0, 1000))
        before = vars(producer.stats).copy()
        seconds = timed(lambda: producer.send_table("columnar", table))
        io = (producer.stats.put_s - before["put_s"]) + (
            producer.stats.commit_s - before["commit_s"]
        )
    client = records / (seconds - io)
    report.add(
        Row(
            "columnar send_table, client side (partition + encode; no I/O)",
            client,
            None,
            "records/s",
            ">= 1M records/s",
            client >= 1_000_000,
        )
    )
    report.add(
        Row(
            "columnar send_table, end to end (incl. PUT of ~150 MB to moto)",
            records / seconds,
            None,
            "records/s",
            "",
            None,
        )
    )


def http_vs_direct(log: ObjectLog, api_url: str, report: Report, requests_: int) -> None:
    """Produce and fetch through the local API Gateway + handlers vs the library directly."""
    from objectlog.http_client import HttpObjectLog

    log.create_topic("http", partitions=1)
    remote = HttpObjectLog(api_url)
    value = b"h" * 1024
    batch = 100  # records per request

    def produce(target: ObjectLog | HttpObjectLog) -> float:
        with target.producer(linger_ms=0) as producer:
            started = time.perf_counter()
            for _ in range(requests_):
                futures = [producer.send("http", value) for _ in range(batch)]
                producer.flush()
                futures[-1].result()
            return (time.perf_counter() - started) / requests_ * 1000

    def fetch(target: ObjectLog | HttpObjectLog) -> float:
        started = time.perf_counter()
        for i in range(requests_):
            target.fetch("http", 0, i * batch, max_records=batch)
        return (time.perf_counter() - started) / requests_ * 1000

    direct_produce, http_produce = produce(log), produce(remote)
    direct_fetch, http_fetch = fetch(log), fetch(remote)
    remote.close()
    report.add(
        Row(
            f"produce {batch} x 1 KiB per request, over HTTP vs direct",
            http_produce,
            direct_produce,
            "ms",
            "",
            None,
            f"HTTP layer +{http_produce - direct_produce:.1f} ms",
        )
    )
    report.add(
        Row(
            f"fetch {batch} records per request, over HTTP vs direct",
            http_fetch,
            direct_fetch,
            "ms",
            "",
            None,
            f"HTTP layer +{http_fetch - direct_fetch:.1f} ms",
        )
    )


# ---- contention and growth ------------------------------------------------------------------


def contention(log: ObjectLog, report: Report, flushes: int) -> None:
    log.create_topic("contended")
    value = b"x" * 1024
    per_flush = 64

    def run(producers: int) -> float:
        def work() -> None:
            with log.producer(linger_ms=0) as producer:
                for _ in range(flushes // producers):
                    futures = [producer.send("contended", value) for _ in range(per_flush)]
                    producer.flush()
                    futures[-1].result()

        threads = [threading.Thread(target=work) for _ in range(producers)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return (flushes // producers) * producers * per_flush / (time.perf_counter() - started)

    one = run(1)
    sixteen = run(16)
    report.add(
        Row(
            "16 producers on one partition vs 1 producer",
            sixteen,
            one,
            "records/s",
            ">= 0.5 of one",
            sixteen / one >= 0.5,
        )
    )


def growth(log: ObjectLog, report: Report, flushes: int) -> None:
    log.create_topic("growth")
    value = b"g" * 4096
    producer = log.producer(linger_ms=0)

    def produce(n: int) -> float:
        started = time.perf_counter()
        for _ in range(n):
            producer.send("growth", value).result()
        return n / (time.perf_counter() - started)

    def fetch(start: int, n: int) -> float:
        started = time.perf_counter()
        offset = start
        while offset < start + n:
            offset = log.fetch("growth", 0, offset, max_records=64).next_offset
        return n / (time.perf_counter() - started)

    early_produce = produce(1000)
    early_fetch = fetch(0, 1000)
    produce(flushes - 2000)
    late_produce = produce(1000)
    late_fetch = fetch(flushes - 1000, 1000)
    producer.close()
    report.add(
        Row(
            f"produce rate after {flushes:,} flushes of 4 KiB vs after 1,000",
            late_produce,
            early_produce,
            "flushes/s",
            ">= 0.8",
            late_produce / early_produce >= 0.8,
        )
    )
    report.add(
        Row(
            f"fetch rate after {flushes:,} flushes vs after 1,000",
            late_fetch,
            early_fetch,
            "records/s",
            ">= 0.8",
            late_fetch / early_fetch >= 0.8,
        )
    )


# ---- dollars ------------------------------------------------------------------------------


def costs(
    log: ObjectLog, report: Report, produced: dict[str, float], fetched: dict[str, float]
) -> None:
    head = log.metadata.client.get_item(  # type: ignore[attr-defined]
        TableName=log.config.table, Key={"pk": {"S": "part#produce#0"}, "sk": {"S": "head"}}
    )["Item"]
    head_bytes = len(str(head))  # attribute names + values: close to DynamoDB's item size
    wru_per_write = -(-head_bytes // 1024)
    gb = produced["mib"] / 1024
    put_cost = produced["puts"] * S3_PUT_PER_1000 / 1000
    write_cost = produced["updates"] * wru_per_write * DDB_WRU_PER_MILLION / 1e6
    get_cost = fetched["gets"] * S3_GET_PER_1000 / 1000
    read_cost = fetched["getitems"] * DDB_RRU_PER_MILLION / 1e6
    per_gb = (put_cost + write_cost + get_cost + read_cost) / gb
    report.add(Row("request cost per GB produced and read once", per_gb, None, "USD", "", None))
    report.notes.append(
        "cost workload: 1 MiB flushes of 1 KiB records over 4 partitions; "
        f"head item ~{head_bytes} B "
        f"({wru_per_write} WRU per commit); per GB: S3 PUT ${put_cost / gb:.4f}, DynamoDB writes "
        f"${write_cost / gb:.4f}, S3 GET ${get_cost / gb:.5f}, "
        f"DynamoDB reads ${read_cost / gb:.6f}. "
        f"Prices: S3 PUT ${S3_PUT_PER_1000}/1k, GET ${S3_GET_PER_1000}/1k, DynamoDB on-demand "
        f"${DDB_WRU_PER_MILLION}/M WRU, ${DDB_RRU_PER_MILLION}/M RRU (us-east-1). "
        "Storage not included."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--long", action="store_true", help="add the 20,000-flush growth run")
    parser.add_argument("--flushes", type=int, default=30, help="1 MiB flushes for produce/fetch")
    args = parser.parse_args()
    report = Report()
    with embedded_server() as (endpoint, api_url):
        console.print(
            f"embedded AWS endpoint {endpoint} (separate process), Python {sys.version.split()[0]}"
        )
        log = connect(endpoint)
        produced = produce_vs_floor(log, report, args.flushes)
        fetched = fetch_vs_floor(log, report)
        send_cost(log, report, 200_000)
        batch_path(log, report, 1_000_000)
        contention(log, report, 320)
        # the API serves objectlog dev's default bucket and table: use them directly too
        served = ObjectLog(Config.from_env(s3_endpoint=endpoint, dynamodb_endpoint=endpoint))
        http_vs_direct(served, api_url, report, 50)
        served.close()
        costs(log, report, produced, fetched)
        if args.long:
            growth(log, report, 20_000)
        log.close()
    console.print(report.table())
    for note in report.notes:
        console.print(f"- {note}")


if __name__ == "__main__":
    main()
