"""objectlog benchmarks: each figure beside its floor, measured in the same run, same endpoint.

    .venv/bin/python -m bench.run                     # the default run (a few minutes)
    .venv/bin/python -m bench.run --long              # adds 20,000 flushes of 4 KiB: do rates hold?
    .venv/bin/python -m bench.run --dynamodb local    # DynamoDB Local for DynamoDB, moto for S3

The endpoint is `objectlog dev` started in a separate process (bench.server). objectlog runs and
floor runs alternate in rounds and each side reports its median round, so a slow spell of the
(shared) machine hits both sides instead of one.
"""

from __future__ import annotations

import argparse
import inspect
import itertools
import os
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa

from bench.meter import Requests, Stopwatch, Tally
from bench.produce_floors import (
    KEY_BYTES,
    MIB,
    PARTITIONS,
    PRODUCER_DEPTH,
    RECORD_BYTES,
    RECORDS_PER_FLUSH,
    EncodingFloor,
    OwnRequests,
    ProduceFloor,
    flush_tables,
    one_flush,
)
from bench.report import Report, Row, console
from bench.server import (
    DEV_BUCKET,
    DEV_TABLE,
    Endpoint,
    add_endpoint_argument,
    bench_config,
    embedded_endpoint,
    free_port,
)
from objectlog import FetchRequest, ObjectLog
from objectlog.cache import LruCache
from objectlog.clients.flushing import RECORD_OVERHEAD
from objectlog.clients.producer import Producer
from objectlog.clock import new_ulid, ulid_time_ms
from objectlog.format.layout import object_key
from objectlog.format.segment import decode_parquet
from objectlog.services import fetch as fetch_module
from objectlog.services.fetch import slice_cache
from objectlog.stores.metadata import Commit

STAGES = ("encode_s", "put_s", "commit_s", "spill_s")  # Appender.stats timings

# AWS list prices, us-east-1: S3 Standard requests, DynamoDB on-demand request units.
S3_PUT_PER_1000 = 0.005
S3_GET_PER_1000 = 0.0004
DDB_WRU_PER_MILLION = 0.625  # 1 WRU per KiB of the whole item written
DDB_RRU_PER_MILLION = 0.125  # strongly consistent reads: 1 RRU per 4 KiB

Range = tuple[str, int, int]
MANIFESTS = "manifest lookups (GET + parse when not cached)"
GETS = "ranged GETs of the slices, concurrent, each decoded as it arrives"
DECODE = "  of which decoding (decode_parquet, absolute offsets), overlapping the GETs"


@dataclass
class Bench:
    endpoint: Endpoint
    log: ObjectLog
    requests: Requests
    report: Report
    facts: dict[str, Any] = field(default_factory=dict)


def connect(endpoint: Endpoint) -> ObjectLog:
    """A fresh bucket and table on endpoint, created."""
    suffix = uuid.uuid4().hex[:10]
    log = ObjectLog(bench_config(endpoint, f"bench-{suffix}", f"bench-{suffix}"))
    log.ensure_resources()
    return log


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def cold_caches(log: ObjectLog) -> None:
    """Forget decoded slices and cached manifests, as a consumer starting afresh."""
    log.reader._slices = slice_cache()
    log.index._lists = LruCache(256)
    log.index._manifests = LruCache(1024)
    log.index._placed = LruCache(256)


def alternate(
    rounds: int, sides: dict[str, Callable[[], float]], *, flip: bool = False
) -> dict[str, list[float]]:
    """Run every side once per round, in turn (flip: in reverse order every other round, so no
    side always follows the same one); seconds per run, by side."""
    results: dict[str, list[float]] = {name: [] for name in sides}
    for round_ in range(rounds):
        order = list(sides.items())
        for name, run in reversed(order) if flip and round_ % 2 else order:
            results[name].append(run())
    return results


def fastest(results: dict[str, list[float]], names: Sequence[str]) -> tuple[str, float]:
    """The side among names with the lowest median time."""
    return min(((name, median(results[name])) for name in names), key=lambda item: item[1])


# ---- produce vs its floor -------------------------------------------------------------------


class CpuSplit:
    """CPU time of each side's runs, this process's and the endpoint processes', beside its
    wall time: when client and endpoint share the machine's CPUs, a side can go no faster
    than its CPU time over the CPUs allows, whatever it waits for."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.runs: dict[str, list[tuple[float, float, float]]] = {}

    def wrap(self, sides: dict[str, Callable[[], float]]) -> dict[str, Callable[[], float]]:
        return {name: self._measured(name, run) for name, run in sides.items()}

    def _measured(self, name: str, run: Callable[[], float]) -> Callable[[], float]:
        def measured() -> float:
            client, server = time.process_time(), self.endpoint.cpu_seconds()
            seconds = run()
            self.runs.setdefault(name, []).append(
                (
                    seconds,
                    time.process_time() - client,
                    self.endpoint.cpu_seconds() - server,
                )
            )
            return seconds

        return measured

    def report(self, report: Report, title: str, per_run: int, names: Sequence[str]) -> None:
        section = report.section(
            title, "side", "wall", "client CPU", "endpoint CPU", "CPU / CPUs", "note"
        )
        cpus = os.cpu_count() or 1
        for name in names:
            wall, client, server = (
                median([run[i] for run in self.runs[name]]) / per_run * 1000 for i in range(3)
            )
            section.rows.append(
                (
                    name,
                    f"{wall:.2f}",
                    f"{client:.2f}",
                    f"{server:.2f}",
                    f"{(client + server) / cpus:.2f}",
                    "the least wall time the CPU work allows",
                )
            )


# The cost's head sizes come from an untimed run of their own, into a topic of its own (the
# catch-up fetch reads "produce" as the timed runs left it): long enough for the heads to go
# through spills, as they do in a steady stream.
SIZED_TOPIC, SIZED_FLUSHES = "produce-sized", 30


def head_writes_sized(bench: Bench, run: Callable[[], float]) -> list[int]:
    """The billed sizes of the head items a run writes (Requests.sizing_heads reads back what
    pinned commits do not return): for an untimed run, as the reads slow its commits."""
    bench.requests.take()
    with bench.requests.sizing_heads():
        run()
    return bench.requests.take().written


FLOOR_SIDES = ["floor, one by one", "floor, concurrent", "floor, pipelined"]
ENCODING_FLOOR = f"floor: encode + PUT, {PRODUCER_DEPTH} deep"
SPLIT_FLOOR = f"encode | PUT | commit, {PRODUCER_DEPTH} deep"


def produce_vs_floor(bench: Bench, rounds: int, flushes: int) -> None:
    """1 MiB flushes of 1 KiB records over 4 partitions, sent as fast as send() takes them."""
    log, report = bench.log, bench.report
    topic = "produce"
    log.create_topic(topic, partitions=PARTITIONS)
    log.create_topic("produce-own", partitions=PARTITIONS)
    value = os.urandom(RECORD_BYTES - KEY_BYTES)
    keys = [b"%016d" % i for i in range(RECORDS_PER_FLUSH)]
    producer = log.producer(batch_bytes=RECORDS_PER_FLUSH * (RECORD_BYTES + RECORD_OVERHEAD))
    send = producer.send
    loop_seconds: list[float] = []

    def send_flushes(to: str, count: int, sent: list[float]) -> float:
        """count flushes to topic to, flushed: the seconds in all, and the send() loop's in sent."""
        started = time.perf_counter()
        for _ in range(count):
            for i, key in enumerate(keys):
                send(to, value, key, partition=i % PARTITIONS)
        sent.append(time.perf_counter() - started)
        producer.flush()
        return time.perf_counter() - started

    def ours() -> float:
        return send_flushes(topic, flushes, loop_seconds)

    ours()  # warm up: clients, connections, the topic cache
    floor = ProduceFloor(log, producer.stats.bytes_put // producer.stats.objects_put)
    own = OwnRequests(log, "produce-own", *one_flush("produce-own", value, keys))
    # The same slices the producer writes, as tables built before the clock starts.
    tables = flush_tables(topic, keys, value, log.clock.now_ms())
    encoding, split = EncodingFloor(log, tables), EncodingFloor(log, tables)
    sides = {
        "ours": ours,
        ENCODING_FLOOR: encoding.run_pipelined(flushes),
        SPLIT_FLOOR: split.run_pipelined(flushes, split=True),
        "floor, one by one": floor.run(flushes, concurrent=False),
        "floor, concurrent": floor.run(flushes, concurrent=True),
        "floor, pipelined": floor.run(flushes, concurrent=True, pipelined=True),
        "own requests": own.run(flushes),
    }
    for run in list(sides.values())[1:]:
        run()  # warm up
    bench.requests.take()
    for side in (floor, encoding):
        side.put_seconds.clear()
        side.update_seconds.clear()
    encoding.encode_seconds.clear()
    encoding.commit_seconds.clear()
    loop_seconds.clear()
    before = dict(vars(producer.stats))
    tally = Tally()

    def ours_counted() -> float:
        nonlocal tally
        bench.requests.take()
        seconds = ours()
        tally += bench.requests.take()
        return seconds

    cpu = CpuSplit(bench.endpoint)
    results = alternate(rounds, cpu.wrap({**sides, "ours": ours_counted}), flip=True)
    counts = tally.counts
    bench.facts["floor"], bench.facts["own"] = floor, own
    stats = {k: getattr(producer.stats, k) - v for k, v in before.items()}
    log.create_topic(SIZED_TOPIC, partitions=PARTITIONS)
    tally.written = head_writes_sized(bench, lambda: send_flushes(SIZED_TOPIC, SIZED_FLUSHES, []))
    producer.close()

    mib = flushes * RECORDS_PER_FLUSH * RECORD_BYTES / MIB
    ours_rate = mib / median(results["ours"])
    floor_name, floor_time = fastest(results, FLOOR_SIDES)
    floor_rate = mib / floor_time
    encoding_time = median(results[ENCODING_FLOOR])
    encoding_rate = mib / encoding_time
    split_rate = mib / median(results[SPLIT_FLOOR])
    own_rate = mib / median(results["own requests"])
    report.add(
        Row(
            "produce: 1 MiB flushes of 1 KiB records, 4 partitions",
            ours_rate,
            "MiB/s",
            encoding_rate,
            f"(the floor since issue 38: the same {PARTITIONS} Parquet slices encoded from "
            f"ready tables by the thread that PUTs them, {PRODUCER_DEPTH} flushes in flight as "
            f"the producer's; PUT + {PARTITIONS} minimal conditional UpdateItems)",
            ">= 0.85 x floor",
            ours_rate >= 0.85 * encoding_rate,
        )
    )
    report.add(
        Row(
            "produce vs the floor of issue 18 (no encoding)",
            ours_rate,
            "MiB/s",
            floor_rate,
            f"({floor_name}: PUT of a ready body of the same size + {PARTITIONS} minimal "
            "conditional UpdateItems)",
            ">= 0.70 (0.70-0.79 before)",
            ours_rate >= 0.70 * floor_rate,
        )
    )
    report.add(
        Row(
            "produce vs the same work on the producer's threads",
            ours_rate,
            "MiB/s",
            split_rate,
            "(the floor's encoding, PUT and UpdateItems, each flush encoded on a thread of its "
            "own, PUT on another, committed on a third, as the producer does; not the floor)",
            note="for reference",
        )
    )
    report.add(
        Row(
            "produce vs objectlog's own requests from a bare loop",
            ours_rate,
            "MiB/s",
            own_rate,
            "(same PUT, same 4 commit UpdateItems, same spills)",
            note="the library's own overhead",
        )
    )
    # Flushes as written: a flush cut short by linger_ms while send() was held up (the
    # committer thread shares the GIL) is a flush too, so count the objects.
    total_flushes = stats["objects_put"]
    data_puts, index_puts = counts["PutObject:l0"], counts["PutObject:index"]
    report.add(
        Row(
            "S3 PUTs per flush",
            (data_puts + index_puts) / total_flushes,
            "",
            reference_name=f"data {data_puts / total_flushes:.2f} + index objects "
            f"{index_puts / total_flushes:.2f} (spills carried in the data objects: "
            f"{stats['carried_spills'] / total_flushes:.2f} per flush)",
            target="1 data PUT",
            passed=data_puts == total_flushes,
        )
    )
    report.add(
        Row(
            "DynamoDB writes per flush",
            (counts["UpdateItem"] + counts["PutItem"]) / total_flushes,
            "",
            reference_name=f"commits {stats['commits'] / total_flushes:.2f} (of which "
            f"carrying a spill {stats['carried_spills'] / total_flushes:.2f}) + spills on "
            f"their own {(stats['spills'] - stats['carried_spills']) / total_flushes:.2f}",
            target="1 per touched partition",
            passed=stats["commits"] == total_flushes * PARTITIONS,  # every flush: 4 partitions
        )
    )
    per = 1000 / total_flushes
    own_spills = stats["spills"] - stats["carried_spills"]
    elapsed = sum(results["ours"])
    put_floor = median(floor.put_seconds) * 1000
    updates_floor = floor_time / flushes * 1000 - put_floor  # the floor's 4 UpdateItems

    def ms(seconds: list[float]) -> str:
        return f"{median(seconds) * 1000:.2f}"

    split = report.section(
        f"produce: where the time goes ({total_flushes} flushes of 1 MiB; ms per flush; the "
        "floors' stages are medians of their calls)",
        "stage",
        "objectlog",
        "floor (issue 38)",
        "floor (issue 18)",
        "note",
    )
    split.rows += [
        (
            "send() loop, application thread",
            f"{sum(loop_seconds) * per:.2f}",
            "",
            "",
            f"{sum(loop_seconds) / (total_flushes * RECORDS_PER_FLUSH) * 1e6:.2f} us per "
            "record while the sender works (overlaps the stages below)",
        ),
        (
            "encode: Parquet slices",
            f"{stats['encode_s'] * per:.2f}",
            ms(encoding.encode_seconds),
            "",
            "objectlog: the sender thread; the floor: the thread that then PUTs them",
        ),
        (
            "PutObject",
            f"{stats['put_s'] * per:.2f}",
            ms(encoding.put_seconds),
            f"{put_floor:.2f}",
            f"{stats['bytes_put'] / stats['objects_put'] / MIB:.3f} MiB per object "
            f"(carried spills included); the floor's {encoding.body_bytes / MIB:.3f} MiB",
        ),
        (
            "commit: 4 UpdateItems (concurrent)",
            f"{stats['commit_s'] * per:.2f}",
            ms(encoding.commit_seconds),
            f"{updates_floor:.2f}",
            f"floor of issue 18 ({floor_name}): its flush time less its PutObject",
        ),
        (
            "spills on their own: manifest-list PUT, UpdateItem",
            f"{stats['spill_s'] * per:.2f}",
            "",
            "",
            f"{own_spills} spills on their own, "
            f"{stats['spill_s'] / max(1, own_spills) * 1000:.1f} ms each; "
            f"{stats['carried_spills']} carried by commits (no request of their own)",
        ),
        (
            "rest, less the overlap of the stages above",
            f"{(elapsed - sum(stats[k] for k in STAGES)) * per:.2f}",
            "",
            "",
            "batching, partitioning, futures; negative when the sender's staging of a flush "
            "overlapped the previous flush's commit by more",
        ),
        (
            "total",
            f"{elapsed * per:.2f}",
            f"{encoding_time / flushes * 1000:.2f}",
            f"{floor_time / flushes * 1000:.2f}",
            f"own requests, bare loop: {median(results['own requests']) / flushes * 1000:.2f}",
        ),
    ]
    cpu.report(
        report,
        f"produce: CPU per flush (ms; medians of {rounds} rounds of {flushes} flushes), this "
        f"process and the endpoint's, on {os.cpu_count()} CPUs",
        flushes,
        ["ours", ENCODING_FLOOR, SPLIT_FLOOR, floor_name, "own requests"],
    )
    bench.facts["produce"] = {
        "flushes": total_flushes,
        "tally": tally,
        "commits": stats["commits"],
        "bytes": total_flushes * RECORDS_PER_FLUSH * RECORD_BYTES,
    }


# ---- catch-up fetch vs its floor ------------------------------------------------------------


def fetch_vs_floor(bench: Bench, rounds: int) -> None:
    """Read the produce topic from offset 0 to its end, 1 MiB per partition per fetch_many
    (Kafka's max.partition.fetch.bytes), as a consumer catching up from cold caches."""
    log, report = bench.log, bench.report
    topic = "produce"
    heads = log.metadata.get_heads(topic, range(PARTITIONS))
    payload = sum(head.next_offset for head in heads.values()) * RECORD_BYTES
    stopwatch = Stopwatch()
    reader = log.reader
    groups: list[list[Range]] = []  # the ranges each fetch_many read, in order
    read_many = reader.read_many

    def recording_read_many(ranges: Sequence[Range], then: Any = None) -> list[Any]:
        groups.append(list(ranges))
        return read_many(ranges, then)

    # The slices each GET holds: adjacent slices of one object share a GET (fetch.coalesce).
    slices_of: dict[Range, list[tuple[int, int]]] = {}
    real_coalesce = fetch_module.coalesce

    def recording_coalesce(ranges: Sequence[Range]) -> Any:
        runs = real_coalesce(ranges)
        for run in runs:
            slices_of[run.range] = [(ranges[m][1], ranges[m][2]) for m in run.members]
        return runs

    fetch_module.coalesce = recording_coalesce  # type: ignore[assignment]

    reader.read_many = stopwatch.wrap(GETS, recording_read_many)
    reader._decode = stopwatch.wrap(DECODE, reader._decode)
    log.metadata.get_heads = stopwatch.wrap("heads: BatchGetItem", log.metadata.get_heads)
    log.index.manifest = stopwatch.wrap(MANIFESTS, log.index.manifest)
    log.index.manifest_list = stopwatch.wrap(MANIFESTS, log.index.manifest_list)

    def ours() -> float:
        cold_caches(log)
        groups.clear()
        started = time.perf_counter()
        positions = dict.fromkeys(range(PARTITIONS), 0)
        read = 0
        while positions:
            results = log.fetch_many([FetchRequest(topic, p, o) for p, o in positions.items()])
            for result in results:
                read += result.table.num_rows
                if result.next_offset >= result.high_watermark:
                    del positions[result.partition]
                else:
                    positions[result.partition] = result.next_offset
        seconds = time.perf_counter() - started
        assert read * RECORD_BYTES == payload, (read, payload)
        return seconds

    s3 = log.store.client
    bucket = log.config.bucket
    pool = ThreadPoolExecutor(32)

    def get_and_decode(item: Range) -> int:
        key, start, length = item
        response = s3.get_object(
            Bucket=bucket, Key=key, Range=f"bytes={start}-{start + length - 1}"
        )
        body = memoryview(response["Body"].read())
        return sum(
            decode_parquet(body[at - start : at - start + size]).num_rows
            for at, size in slices_of[item]
        )

    def floor_grouped() -> float:
        started = time.perf_counter()
        rows = sum(sum(pool.map(get_and_decode, group)) for group in recorded)
        seconds = time.perf_counter() - started
        assert rows * RECORD_BYTES == payload
        return seconds

    def floor_streamed() -> float:
        started = time.perf_counter()
        rows = sum(pool.map(get_and_decode, [r for group in recorded for r in group]))
        seconds = time.perf_counter() - started
        assert rows * RECORD_BYTES == payload
        return seconds

    ours()  # warm up, and learn the ranges each fetch reads
    recorded = [list(group) for group in groups]
    floor_grouped()
    floor_streamed()
    bench.requests.take()
    stopwatch.take()
    tally = Tally()

    def ours_counted() -> float:
        nonlocal tally
        bench.requests.take()
        seconds = ours()
        tally += bench.requests.take()
        return seconds

    cpu = CpuSplit(bench.endpoint)
    results = alternate(
        rounds,
        cpu.wrap(
            {
                "ours": ours_counted,
                "floor: the same GETs, in the same groups": floor_grouped,
                "floor: the same GETs, 32 in flight throughout": floor_streamed,
            }
        ),
    )
    pool.shutdown()
    seconds, calls = stopwatch.take()
    mib = payload / MIB
    ours_rate = mib / median(results["ours"])
    grouped = "floor: the same GETs, in the same groups"
    floor_rate = mib / median(results[grouped])
    streamed_rate = mib / median(results["floor: the same GETs, 32 in flight throughout"])
    fetches = len(recorded)
    report.add(
        Row(
            f"catch-up fetch: {mib:.0f} MiB, 4 partitions, 1 MiB each per fetch_many",
            ours_rate,
            "MiB/s",
            floor_rate,
            f"(ranged GETs of the same slices, {fetches} groups as the fetches issue them, "
            "+ the same decode_parquet)",
            ">= 0.85 x floor",
            ours_rate >= 0.85 * floor_rate,
        )
    )
    report.add(
        Row(
            "catch-up fetch vs the same GETs without fetch boundaries",
            ours_rate,
            "MiB/s",
            streamed_rate,
            "(32 in flight throughout, as no fetch API can)",
        )
    )
    total = sum(results["ours"])
    split = report.section(
        f"fetch: where the time goes ({rounds} catch-ups of {mib:.0f} MiB in {fetches} "
        "fetch_many calls each; ms per MiB)",
        "stage",
        "objectlog",
        "floor",
        "note",
    )
    per = 1000 / (mib * rounds)
    accounted = 0.0
    for name, value in seconds.items():
        split.rows.append(
            (
                name,
                f"{value * per:.2f}",
                "",
                f"{calls[name] / rounds:.0f} calls per catch-up, "
                f"{value / calls[name] * 1000:.2f} ms each",
            )
        )
        accounted += 0 if name == DECODE else value
    split.rows.append(("rest: plan, concat, trim", f"{(total - accounted) * per:.2f}", "", ""))
    split.rows.append(
        (
            "total",
            f"{total * per:.2f}",
            f"{median(results[grouped]) / mib * 1000:.2f}",
            "floor: GETs + decode, same groups",
        )
    )
    cpu.report(
        report,
        f"fetch: CPU per MiB read (ms; medians of {rounds} catch-ups), this process and the "
        f"endpoint's, on {os.cpu_count()} CPUs",
        round(mib),
        ["ours", grouped],
    )
    bench.facts["fetch"] = {
        "rounds": rounds,
        "tally": tally,
        "bytes": payload,
        "heads_ms": seconds["heads: BatchGetItem"] / calls["heads: BatchGetItem"] * 1000,
    }
    report.note(
        f"requests per catch-up of {mib:.0f} MiB: "
        + ", ".join(f"{k} {v / rounds:.0f}" for k, v in sorted(tally.counts.items()))
    )


# ---- what each request costs on this endpoint ---------------------------------------------


def request_costs(bench: Bench, rounds: int, calls: int) -> None:
    """Each kind of request the benchmarks make, one at a time (no concurrency), median ms."""
    log, report = bench.log, bench.report
    floor: ProduceFloor = bench.facts["floor"]
    own: OwnRequests = bench.facts["own"]
    heads = log.metadata.get_heads("produce", range(PARTITIONS))
    placed = next(iter(log.index.placed_refs(heads[0], 0)))
    key = object_key(log.config.prefix, placed.ref.level, placed.ref.object_id)
    spills: list[float] = []
    info, ref = log.topic("produce-own"), own.appender.refs[0]

    def committer(partition: int, on_known_head: bool) -> Callable[[], None]:
        """Commits with no spill carried, then a spill on its own when one is due; with
        on_known_head, each on the head the previous one answered (the producer's way once it
        writes alone), else reading it back (its first commits, and after another writer's)."""
        sequences, known = itertools.count(), [log.metadata.get_head(info.name, partition)]

        def commit() -> None:
            object_id = new_ulid(log.clock)
            head = log.metadata.commit(
                Commit(
                    info.topic_id,
                    info.name,
                    partition,
                    replace(ref, object_id=object_id),
                    ulid_time_ms(object_id),
                    producer_id="bench-requests",
                    sequence=next(sequences),
                    now_s=int(time.time()),
                    known_head=known[0] if on_known_head else None,
                )
            ).head
            if head is not None and log.index.needs_spill(head):
                started = time.perf_counter()
                log.index.spill(head)
                head = log.metadata.get_head(info.name, partition)  # the spill's new head
                spills.append(time.perf_counter() - started)
            known[0] = head

        return commit

    kinds: dict[str, tuple[Callable[[], object], str]] = {
        "PutObject": (floor.put, f"{len(floor.body) / MIB:.2f} MiB, If-None-Match: *"),
        "UpdateItem, the floor's": (
            lambda: floor.update(0),
            "SET sq = :seq ADD nx :n, condition on sq, UPDATED_NEW",
        ),
        "UpdateItem, objectlog's commit": (
            committer(0, on_known_head=False),
            "list_append ref, 3 producer-state paths, next; 3-clause condition; "
            "ALL_NEW (carrying no spill; a spill on its own every 15 commits: its own row)",
        ),
        "UpdateItem, a commit on the head the writer knows": (
            committer(1, on_known_head=True),
            "the same, conditional on that head's next offset and index epoch instead of the "
            "producer's sequence; answers nothing (a solo writer's commits)",
        ),
        "GetObject, one slice": (
            lambda: log.store.get_range(key, placed.ref.start, placed.ref.length),
            f"{placed.ref.length / 1024:.0f} KiB ranged GET",
        ),
        "GetItem, one head": (lambda: log.metadata.get_head("produce", 0), "strongly consistent"),
        "BatchGetItem, 4 heads": (
            lambda: log.metadata.get_heads("produce", range(PARTITIONS)),
            "what each fetch_many reads first",
        ),
    }

    def timing(function: Callable[[], object]) -> Callable[[], float]:
        def run() -> float:
            spilled = sum(spills)
            started = time.perf_counter()
            for _ in range(calls):
                function()
            seconds = time.perf_counter() - started
            return (seconds - (sum(spills) - spilled)) / calls  # a spill is its own row

        return run

    results = alternate(rounds, {name: timing(f) for name, (f, _) in kinds.items()})
    section = report.section(
        "what each request costs on this endpoint (one at a time; median ms)",
        "request",
        "ms",
        "what it is",
    )
    for name, (_, what) in kinds.items():
        section.rows.append((name, f"{median(results[name]) * 1000:.2f}", what))
    if spills:
        section.rows.append(
            (
                "spill",
                f"{median(spills) * 1000:.2f}",
                "manifest-list PUT (newest manifest inline) + UpdateItem (REMOVE 14 refs, SET 3; "
                "condition on the index epoch)",
            )
        )
    floor.pool.shutdown()
    own.put_pool.shutdown()
    own.appender.close()


# ---- client cost per record -----------------------------------------------------------------


def send_cost(bench: Bench, rounds: int, records: int) -> None:
    """send() and produce() vs confluent-kafka's produce(), which only queues here (its
    bootstrap server is a closed port): the same 1 KiB records, alternating rounds."""
    from confluent_kafka import Producer as KafkaProducer

    log, report = bench.log, bench.report
    log.create_topic("cost", partitions=PARTITIONS)
    value = os.urandom(RECORD_BYTES - KEY_BYTES)
    keys = [b"%016d" % i for i in range(records)]
    producer = log.producer(
        linger_ms=600_000,
        delivery_timeout_ms=600_000,  # at least the linger (Producer refuses less)
        batch_bytes=1 << 30,
        buffer_memory=1 << 31,
    )
    kafka = KafkaProducer(
        {
            "bootstrap.servers": f"127.0.0.1:{free_port()}",
            "queue.buffering.max.messages": 10_000_000,
            "queue.buffering.max.kbytes": 2_000_000,
            "log_level": 0,
        }
    )

    def ours(method: str) -> Callable[[], float]:
        call = getattr(producer, method)

        def run() -> float:
            started = time.perf_counter()
            for key in keys:
                call("cost", value, key)
            seconds = time.perf_counter() - started
            producer.flush()  # not timed: one object of this round's records
            return seconds

        return run

    def theirs() -> float:
        produce = kafka.produce
        started = time.perf_counter()
        for key in keys:
            produce("cost", value, key)
        seconds = time.perf_counter() - started
        kafka.purge()
        return seconds

    sides = {"send": ours("send"), "produce": ours("produce"), "confluent": theirs}
    for run in sides.values():
        run()
    results = alternate(rounds, sides)
    producer.close()
    us = {name: median(values) / records * 1e6 for name, values in results.items()}
    reference = us["confluent"]
    for name, label in (
        ("send", "send() per record (returns a future)"),
        ("produce", "produce() per record (no future; optional on_delivery)"),
    ):
        report.add(
            Row(
                f"{label}, 1 KiB records",
                us[name],
                "us",
                reference,
                "confluent-kafka produce()",
                "<= 2 x confluent-kafka",
                us[name] <= 2 * reference,
            )
        )


def batch_path(bench: Bench, rounds: int, records: int) -> None:
    """Producer.send_table: one pyarrow Table per call, keyed over 4 partitions."""
    log, report = bench.log, bench.report
    log.create_topic("columnar", partitions=PARTITIONS)
    value_bytes = 100
    table = pa.table(
        {
            "key": pa.array([b"%016d" % i for i in range(records)], pa.binary()),
            "value": pa.array([os.urandom(value_bytes)] * records, pa.binary()),
        }
    )
    client: list[float] = []
    producer = log.producer()
    producer.send_table("columnar", table)  # warm up, and learn the object's size
    object_bytes = producer.stats.bytes_put // producer.stats.objects_put

    def ours() -> float:
        before = dict(vars(producer.stats))
        started = time.perf_counter()
        producer.send_table("columnar", table)
        seconds = time.perf_counter() - started
        client.append(
            seconds - sum(getattr(producer.stats, k) - before[k] for k in ("put_s", "commit_s"))
        )
        return seconds

    floor = ProduceFloor(log, object_bytes)
    results = alternate(rounds, {"ours": ours, "floor": floor.run(1, concurrent=True)})
    floor.pool.shutdown()
    producer.close()
    rate = records / median(client)
    report.add(
        Row(
            f"send_table: {records:,} records of {KEY_BYTES} B key + {value_bytes} B value, "
            "client side (partition, group, encode)",
            rate,
            "records/s",
            target=">= 1M records/s",
            passed=rate >= 1_000_000,
        )
    )
    report.add(
        Row(
            "send_table end to end, incl. its PutObject and 4 commits",
            records / median(results["ours"]),
            "records/s",
            records / median(results["floor"]),
            f"(PUT of the same {object_bytes / MIB:.0f} MiB + 4 UpdateItems)",
        )
    )


# ---- the HTTP API --------------------------------------------------------------------------


def http_vs_direct(bench: Bench, rounds: int, requests: int) -> None:
    """Produce and fetch through the local API Gateway and handlers vs the library directly,
    against the same bucket and table (the ones `objectlog dev` serves its API from)."""
    from objectlog.clients.http import HttpObjectLog

    report = bench.report
    direct = ObjectLog(bench_config(bench.endpoint, DEV_BUCKET, DEV_TABLE))
    direct.create_topic("http", partitions=1)
    remote = HttpObjectLog(bench.endpoint.api_url)
    value = os.urandom(RECORD_BYTES)
    batch = 100  # records per request
    offsets = {"direct": 0, "http": 0}

    def produce(target: ObjectLog | HttpObjectLog) -> Callable[[], float]:
        def run() -> float:
            with target.producer(linger_ms=10_000) as producer:  # flush() cuts each request
                started = time.perf_counter()
                for _ in range(requests):
                    for _ in range(batch):
                        producer.send("http", value)
                    producer.flush()
                return (time.perf_counter() - started) / requests

        return run

    def fetch(target: ObjectLog | HttpObjectLog, name: str) -> Callable[[], float]:
        def run() -> float:
            started = time.perf_counter()
            for _ in range(requests):
                result = target.fetch("http", 0, offsets[name], max_records=batch)
                offsets[name] = result.next_offset
            return (time.perf_counter() - started) / requests

        return run

    results = alternate(
        rounds,
        {
            "produce direct": produce(direct),
            "produce http": produce(remote),
            "fetch direct": fetch(direct, "direct"),
            "fetch http": fetch(remote, "http"),
        },
    )
    remote.close()
    direct.close()
    for kind, what in (("produce", f"{batch} x 1 KiB"), ("fetch", f"{batch} records")):
        http_ms = median(results[f"{kind} http"]) * 1000
        direct_ms = median(results[f"{kind} direct"]) * 1000
        report.add(
            Row(
                f"{kind} {what} per request, over the HTTP API vs the library directly",
                http_ms,
                "ms",
                direct_ms,
                "direct",
                note=f"the HTTP layer adds {http_ms - direct_ms:.1f} ms",
            )
        )


# ---- contention -----------------------------------------------------------------------------


def contention(bench: Bench, flushes: int) -> None:
    """16 producers (threads of this process) on one partition vs one producer, same work."""
    log, report = bench.log, bench.report
    log.create_topic("contended")
    value = os.urandom(RECORD_BYTES - KEY_BYTES)
    per_flush = 64

    def run(producers: int) -> float:
        def work() -> None:
            with log.producer(linger_ms=10_000) as producer:  # flush() cuts each batch
                for _ in range(flushes // producers):
                    for _ in range(per_flush):
                        producer.send("contended", value)
                    producer.flush()

        threads = [threading.Thread(target=work) for _ in range(producers)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return flushes * per_flush / (time.perf_counter() - started)

    run(1)
    results = alternate(2, {"1": lambda: run(1), "16": lambda: run(16)})
    one, sixteen = median(results["1"]), median(results["16"])
    head = log.metadata.get_head("contended", 0)
    assert head is not None and head.next_offset >= 5 * flushes * per_flush
    report.add(
        Row(
            f"16 producers on one partition ({per_flush} x 1 KiB per flush)",
            sixteen,
            "records/s",
            one,
            "1 producer, same flushes",
            ">= 0.5 x one producer",
            sixteen >= 0.5 * one,
        )
    )


# ---- dollars --------------------------------------------------------------------------------


PRODUCED, READ = "produced", "read"  # which bytes a priced line is counted against
ITEM_WRITES = ("UpdateItem", "PutItem", "DeleteItem", "BatchWriteItem")


@dataclass(frozen=True)
class Priced:
    """One kind of billed request: how many (requests, or DynamoDB request units) at what list
    price each; side says whether they are counted per GB produced or per GB read."""

    kind: str
    side: str
    count: float
    price: float

    @property
    def usd(self) -> float:
        return self.count * self.price


def write_units(tally: Tally) -> float:
    """Write units per DynamoDB write of the produce path: the mean over the head items it
    wrote (Requests.sizing_heads), 1 per KiB of the larger of the item before and after."""
    if not tally.written:
        raise ValueError("no head write was sized: count with Requests.sizing_heads")
    return float(np.mean([_units(size, 1024) for size in tally.written]))


def read_units(sizes: Sequence[int]) -> int:
    """Strongly consistent read units of the items read: 1 per 4 KiB of each (BatchGetItem
    rounds every item on its own)."""
    return sum(_units(size, 4096) for size in sizes)


def priced_requests(produced: Tally, read: Tally) -> list[Priced]:
    """The requests of producing (produced) and of reading (read), by kind, at list prices.

    The produce path's writes all write head items (commits, and spills on their own), so
    their measured mean (Requests.sizing_heads) prices each of them. The read path's writes (a
    group's heartbeats and offset commits) return no item: each is priced at 1 WRU, the least a
    write costs, which their items (keys and a few numbers, well under 1 KiB) do not exceed.
    """
    pc, rc = produced.counts, read.counts
    put, get = S3_PUT_PER_1000 / 1000, S3_GET_PER_1000 / 1000
    wru, rru = DDB_WRU_PER_MILLION / 1e6, DDB_RRU_PER_MILLION / 1e6
    per_write = write_units(produced)
    other_reads = read_units(read.read) - read_units(read.read_heads)
    return [
        Priced("S3 PUT: data objects", PRODUCED, pc["PutObject:l0"], put),
        Priced("S3 PUT: index objects (spills on their own)", PRODUCED, pc["PutObject:index"], put),
        Priced(
            f"DynamoDB write units: commits + spills, {per_write:.2f} WRU each",
            PRODUCED,
            sum(pc[op] for op in ITEM_WRITES) * per_write,
            wru,
        ),
        Priced(
            "DynamoDB read units: the producer's (topic metadata)",
            PRODUCED,
            read_units(produced.read),
            rru,
        ),
        Priced("S3 GET: slices", READ, rc["GetObject:l0"], get),
        Priced("S3 GET: index objects", READ, rc["GetObject:index"], get),
        Priced("DynamoDB read units: heads", READ, read_units(read.read_heads), rru),
        Priced("DynamoDB read units: topic metadata, group items", READ, other_reads, rru),
        Priced(
            "DynamoDB write units: group heartbeats, offset commits (1 WRU each)",
            READ,
            sum(rc[op] for op in ITEM_WRITES),
            wru,
        ),
    ]


def costs(bench: Bench) -> None:
    """Requests counted by kind, priced at AWS list prices, per GB produced and read once."""
    report = bench.report
    produced, fetched = bench.facts["produce"], bench.facts["fetch"]
    written: Tally = produced["tally"]
    head_bytes, per_write = float(np.mean(written.written)), write_units(written)
    gb = {PRODUCED: produced["bytes"] / 1e9, READ: fetched["bytes"] * fetched["rounds"] / 1e9}
    section = report.section(
        "request cost per GB produced and read once (AWS list prices, us-east-1)",
        "requests",
        "per GB",
        "price per million",
        "USD per GB",
    )
    total = 0.0
    for line in priced_requests(written, fetched["tally"]):
        if not line.count:
            continue
        per_gb = line.count / gb[line.side]
        section.rows.append(
            (line.kind, f"{per_gb:,.0f}", f"${line.price * 1e6:.3f}", f"{per_gb * line.price:.4f}")
        )
        total += per_gb * line.price
    section.rows.append(("total", "", "", f"{total:.4f}"))
    report.add(Row("request cost per GB produced and read once", total, "USD"))
    # The same requests per flush at the default batch_bytes, whose accounting (key + value +
    # RECORD_OVERHEAD per record) fits fewer 1 KiB records in a flush than the 1,024 above.
    default_batch = inspect.signature(Producer).parameters["batch_bytes"].default
    per_flush = default_batch // (RECORD_BYTES + RECORD_OVERHEAD)
    at_default = total * RECORDS_PER_FLUSH / per_flush
    report.add(
        Row(
            f"the same at the default batch_bytes ({per_flush} records of 1 KiB per flush)",
            at_default,
            "USD",
            note="each flush's requests spread over fewer bytes",
        )
    )
    report.note(
        "cost workload: 1 MiB flushes of 1 KiB records over 4 partitions (4 commits per flush), "
        "read once by a catch-up consumer (1 MiB per partition per fetch); head item "
        f"{head_bytes:.0f} B on average, the larger of each write's before and after, read back "
        f"({per_write:.2f} WRU per write). Prices: S3 PUT $0.005 and GET $0.0004 per 1,000; "
        "DynamoDB on-demand $0.625 per million WRU (1 per KiB of the whole item), $0.125 per "
        "million RRU (strongly consistent, 1 per 4 KiB). Storage and transfer not included."
    )


def _units(size: int, unit: int) -> int:
    return max(1, -(-size // unit))


# ---- growth (--long) ------------------------------------------------------------------------


def growth(bench: Bench, flushes: int, window: int) -> None:
    """Flushes of one 4 KiB record to one partition: are produce and fetch as fast after
    `flushes` as after the first `window`?"""
    log, report = bench.log, bench.report
    log.create_topic("growth")
    value = os.urandom(4096 - KEY_BYTES)
    producer = log.producer(linger_ms=0)

    def produce(n: int) -> float:
        started = time.perf_counter()
        for i in range(n):
            producer.send("growth", value, b"%016d" % i).result()
        return n / (time.perf_counter() - started)

    def fetch(start: int, n: int) -> float:
        cold_caches(log)
        started = time.perf_counter()
        offset = start
        while offset < start + n:
            offset = log.fetch("growth", 0, offset, max_records=64).next_offset
        return n / (time.perf_counter() - started)

    def fresh_topic_rates() -> tuple[float, float]:
        """A new topic's rates right now: the machine's speed at this moment, for reference."""
        name = f"control-{uuid.uuid4().hex[:6]}"
        log.create_topic(name)
        with log.producer(linger_ms=0) as fresh:
            started = time.perf_counter()
            for i in range(200):
                fresh.send(name, value, b"%016d" % i).result()
            produced = 200 / (time.perf_counter() - started)
        cold_caches(log)
        started = time.perf_counter()
        offset = 0
        while offset < 200:
            offset = log.fetch(name, 0, offset, max_records=64).next_offset
        return produced, 200 / (time.perf_counter() - started)

    console.print(f"  growth: {flushes:,} flushes of one 4 KiB record to one partition ...")
    early_produce = produce(window)
    early_fetch = median([fetch(0, window) for _ in range(3)])
    early_control = fresh_topic_rates()
    done = window
    step = max(window, (flushes - 2 * window) // 10)
    while done < flushes - window:
        n = min(step, flushes - window - done)
        rate = produce(n)
        done += n
        console.print(f"    {done:,} flushes, {rate:.0f} flushes/s")
    late_produce = produce(window)
    late_fetch = median([fetch(flushes - window, window) for _ in range(3)])
    deep_fetch = fetch(flushes // 2, window)
    late_control = fresh_topic_rates()
    producer.close()
    head = log.metadata.get_head("growth", 0)
    assert head is not None and head.next_offset == flushes
    manifests = (
        len(log.index.manifest_list(head.manifest_list).entries) if head.manifest_list else 0
    )
    report.add(
        Row(
            f"produce rate after {flushes:,} flushes of 4 KiB vs after the first {window:,}",
            late_produce,
            "flushes/s",
            early_produce,
            "",
            ">= 0.8",
            late_produce >= 0.8 * early_produce,
        )
    )
    report.add(
        Row(
            f"fetch rate (64 records per fetch) of the last {window:,} vs the first {window:,} "
            "(read right after them)",
            late_fetch,
            "records/s",
            early_fetch,
            "",
            ">= 0.8",
            late_fetch >= 0.8 * early_fetch,
        )
    )
    report.add(
        Row(
            f"fetch rate from the middle ({flushes // 2:,}), after {flushes:,}",
            deep_fetch,
            "records/s",
            early_fetch,
            "",
        )
    )
    report.note(
        f"growth: {manifests} manifests listed in the head's manifest list; a fresh topic's "
        f"rates, as a measure of the machine at each moment: produce {early_control[0]:.0f} "
        f"then {late_control[0]:.0f} flushes/s, fetch {early_control[1]:.0f} then "
        f"{late_control[1]:.0f} records/s"
    )


# ---- main -----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--long", action="store_true", help="add the 20,000-flush growth run")
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds per comparison")
    parser.add_argument("--flushes", type=int, default=10, help="1 MiB flushes per produce round")
    parser.add_argument(
        "--growth", type=int, default=20_000, metavar="FLUSHES", help="flushes in --long"
    )
    parser.add_argument(
        "--growth-only", action="store_true", help="run only the growth benchmark (with --long)"
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=["produce-fetch", "send", "batch", "contention", "http"],
        help="run only this section (repeatable; default: all)",
    )
    add_endpoint_argument(parser)
    args = parser.parse_args()
    report = Report()
    started = time.perf_counter()

    def produce_and_fetch(bench: Bench) -> None:
        produce_vs_floor(bench, args.rounds, args.flushes)
        fetch_vs_floor(bench, args.rounds)
        costs(bench)
        request_costs(bench, args.rounds, 10)

    named: dict[str, Callable[[Bench], None]] = {
        "produce-fetch": produce_and_fetch,
        "send": lambda bench: send_cost(bench, args.rounds, 30_000),
        "batch": lambda bench: batch_path(bench, 3, 1_000_000),
        "contention": lambda bench: contention(bench, 320),
        "http": lambda bench: http_vs_direct(bench, 3, 20),
    }
    sections: list[Callable[[Bench], None]] = []
    if not args.growth_only:
        sections += [named[name] for name in args.only or named]
    if args.long or args.growth_only:
        sections.append(lambda bench: growth(bench, args.growth, min(1_000, args.growth // 10)))
    console.print(
        f"client: Python {sys.version.split()[0]}, pyarrow {pa.__version__}, "
        f"{os.cpu_count()} CPUs shared with the server; each section below starts its own "
        "`objectlog dev` in a separate process"
    )
    for section in sections:
        # A fresh server per section: moto's memory and state do not carry from one to the next.
        with embedded_endpoint(args.dynamodb) as endpoint:
            report.endpoint(endpoint.description)
            log = connect(endpoint)
            section(Bench(endpoint, log, Requests(log), report))
            log.close()
    report.print()
    console.print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
