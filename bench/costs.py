"""Request cost of a low-rate workload, measured: 64 partitions, each getting one small flush a
second, read once by one Consumer at the tail; requests counted and priced at AWS list prices.

    .venv/bin/python -m bench.costs                          # 5 configurations x 20 s (~2 min)
    .venv/bin/python -m bench.costs --dynamodb local         # DynamoDB Local for DynamoDB
    .venv/bin/python -m bench.costs --only batched --seconds 5    # one configuration, briefly

bench.run prices a throughput workload (1 MiB flushes). Here a topic trickles: a flush's fixed
requests (a PUT, a commit per partition) and the consumer's head reads at the tail, not the
bytes, make the bill. Each configuration runs in real time, since the consumer's polling at the
tail depends on time, on one `objectlog dev` endpoint (bench.server), each on a fresh bucket and
table, with the producers and the consumer on ObjectLogs of their own so their requests are
counted apart (bench.meter: botocore hooks on the S3 and DynamoDB clients). The counted
window starts once the consumer is positioned (its start-up reads and a group's join are
one-offs, left out) and ends when it has read every record produced; rates are per second of
that window, and per GB produced and read once: the run checks every record was read, once.
Prices and the pricing itself are bench.run's (priced_requests), shared with its figure.

Every flush is timed against its slot, and a run whose flushes fell behind says so (THE ENDPOINT
DID NOT KEEP UP) rather than report a rate it did not hold. moto serializes requests: here 64
commits take 0.8-0.95 s and a BatchGetItem of 64 heads 150 ms, so it cannot take 64 commits a
second beside the consumer; `--partitions 16` is a rate it holds. DynamoDB Local holds the
batched configurations at 64; 64 producers of their own (64 PUTs and GETs a second on moto's
S3, on 2 shared CPUs) fell up to 3-4 s behind here.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.meter import Requests, Tally
from bench.report import Report, Row, console
from bench.run import (
    ITEM_WRITES,
    KEY_BYTES,
    MIB,
    RECORD_BYTES,
    Priced,
    connect,
    priced_requests,
)
from bench.server import Endpoint, add_endpoint_argument, embedded_endpoint
from objectlog import ObjectLog
from objectlog.clients.consumer import Consumer
from objectlog.clients.flushing import RECORD_OVERHEAD
from objectlog.clients.producer import Producer

TOPIC = "lowrate"
PARTITIONS = 64
RECORDS_PER_FLUSH = 16  # "small": 16 records of 1 KiB, 16 KiB per partition per second
SECONDS = 20
SECONDS_PER_MONTH = 730 * 3600  # AWS prices a month as 730 hours
LINGER_MS = 60_000  # flush() cuts every flush, so linger never does
MAX_POLL_RECORDS = 100_000
POSITIONED_TIMEOUT_S = 60.0
DRAIN_TIMEOUT_S = 30.0  # after the last flush, for the consumer to read it
# Commits are priced by the heads they write, read back after each commit of one partition in
# this many (bench.meter: Requests.sizing_heads); every head, 64 reads a second, slowed moto's
# flushes behind their slots.
HEADS_SIZED_ONE_IN = 8
SEPARATE, BATCHED = "separate", "batched"
MAX_LATENESS_S = 0.5  # a flush starting later than this after its slot: the rate slipped
MAX_DRAIN_S = 2.0  # the consumer reading the last flush later than this: it fell behind
# What priced_requests prices (reads through the items they return); any other operation
# counted is named in the report, so a request left unpriced cannot go unseen.
PRICED = {"PutObject:l0", "PutObject:index", "GetObject:l0", "GetObject:index"}
PRICED |= {"GetItem", "BatchGetItem", *ITEM_WRITES}


@dataclass(frozen=True)
class Workload:
    partitions: int
    records: int  # per partition per flush
    record_bytes: int  # key + value
    seconds: int  # flush rounds, one a second

    @property
    def total_records(self) -> int:
        return self.partitions * self.records * self.seconds

    @property
    def gb(self) -> float:
        """GB produced, and read once."""
        return self.total_records * self.record_bytes / 1e9

    @property
    def mib_per_s(self) -> float:
        return self.partitions * self.records * self.record_bytes / MIB


@dataclass(frozen=True)
class Setup:
    """One configuration: how the producers flush and how the consumer reads."""

    key: str
    producers: str  # SEPARATE or BATCHED
    poll_every_s: float | None  # None: poll(1.0) back to back, as a streaming loop does
    fetch_ahead: bool = True
    group: bool = False
    fetch_max_wait_ms: int | None = None  # None: the consumer's default

    def describe(self, workload: Workload) -> str:
        n = workload.partitions
        if self.producers == SEPARATE:
            produce = f"{n} producers, one per partition, each its own object a second"
        else:
            produce = f"one producer, one object a second holding all {n} partitions"
        if self.poll_every_s is None:
            read = "consumer: poll(1.0) back to back"
        else:
            read = f"consumer: poll(0) every {self.poll_every_s:g} s"
        if not self.fetch_ahead:
            read += ", fetch_ahead_bytes=0"
        if self.fetch_max_wait_ms is not None:
            read += f", fetch_max_wait_ms={self.fetch_max_wait_ms}"
        read += ", in a group (auto-commit 5 s)" if self.group else ", assign()"
        return f"{produce}; {read}"


SETUPS = (
    Setup("separate", SEPARATE, None),
    Setup("batched", BATCHED, None),
    Setup("batched-wait-1s", BATCHED, None, fetch_max_wait_ms=1000),
    Setup("batched-poll-1s", BATCHED, 1.0),
    Setup("batched-poll-1s-sync", BATCHED, 1.0, fetch_ahead=False),
    Setup("batched-poll-1s-group", BATCHED, 1.0, group=True),
)


def wait_until(deadline: float) -> float:
    """Sleep until the monotonic deadline; how late it is by then (0 when on time)."""
    time.sleep(max(0.0, deadline - time.monotonic()))
    return time.monotonic() - deadline


# ---- the producers --------------------------------------------------------------------------


class Flushes(ABC):
    """One flush per partition per second in real time; run() returns how late each flush
    started after its slot, so a run that could not keep the rate says so."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.value = os.urandom(workload.record_bytes - KEY_BYTES)
        self.keys = [b"%016d" % i for i in range(workload.records)]

    def send(self, producer: Producer, partition: int) -> None:
        for key in self.keys:
            producer.send(TOPIC, self.value, key, partition=partition)

    @abstractmethod
    def run(self, started: float) -> list[float]: ...

    @abstractmethod
    def close(self) -> None: ...


class PartitionProducers(Flushes):
    """SEPARATE: a producer per partition, each on a thread of its own flushing at its
    partition's phase of the second (partition p at p/64 s), as independent applications
    would: one object and one commit per partition per second, spread over the second."""

    def __init__(self, log: ObjectLog, workload: Workload) -> None:
        super().__init__(workload)
        self.producers = [log.producer(linger_ms=LINGER_MS) for _ in range(workload.partitions)]

    def run(self, started: float) -> list[float]:
        lateness: list[float] = []
        errors: list[BaseException] = []

        def partition_loop(partition: int) -> None:
            producer = self.producers[partition]
            phase = partition / self.workload.partitions
            try:
                for second in range(self.workload.seconds):
                    lateness.append(wait_until(started + second + phase))
                    self.send(producer, partition)
                    producer.flush()
            except BaseException as e:  # raised below, in the caller's thread
                errors.append(e)

        threads = [
            threading.Thread(target=partition_loop, args=(p,), name=f"bench-producer-{p}")
            for p in range(self.workload.partitions)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        return lateness

    def close(self) -> None:
        for producer in self.producers:
            producer.close()


class OneProducer(Flushes):
    """BATCHED: one producer for every partition, flushed on each second: one object a
    second, still one commit per partition (a commit is per partition head)."""

    def __init__(self, log: ObjectLog, workload: Workload) -> None:
        super().__init__(workload)
        # batch_bytes holds a whole round: at the default (1 MiB) 64 x 16 KiB of records, with
        # the producer's per-record overhead, would be cut into two objects.
        round_bytes = (
            workload.partitions * workload.records * (workload.record_bytes + RECORD_OVERHEAD)
        )
        self.producer = log.producer(linger_ms=LINGER_MS, batch_bytes=max(round_bytes, MIB))

    def run(self, started: float) -> list[float]:
        lateness = []
        for second in range(self.workload.seconds):
            lateness.append(wait_until(started + second))
            for partition in range(self.workload.partitions):
                self.send(self.producer, partition)
            self.producer.flush()
        return lateness

    def close(self) -> None:
        self.producer.close()


# ---- the consumer ---------------------------------------------------------------------------


def open_consumer(log: ObjectLog, setup: Setup, partitions: int) -> Consumer:
    """From offset 0: everything produced in the window is read by this consumer."""
    # max_poll_records: a poll takes all that landed. At the default (500) a consumer polling
    # once a second would fall behind 1,024 records a second, and a backlog changes what it reads.
    options: dict[str, Any] = {
        "auto_offset_reset": "earliest",
        "max_poll_records": MAX_POLL_RECORDS,
    }
    if not setup.fetch_ahead:
        options["fetch_ahead_bytes"] = 0
    if setup.fetch_max_wait_ms is not None:
        options["fetch_max_wait_ms"] = setup.fetch_max_wait_ms
    if setup.group:
        group = f"lowrate-{uuid.uuid4().hex[:8]}"
        return log.consumer(group=group, topics=[TOPIC], **options)
    consumer = log.consumer(**options)
    consumer.assign([(TOPIC, p) for p in range(partitions)])
    return consumer


class TailReader:
    """The application: one Consumer of every partition on a thread of its own, polling as
    the setup says and counting the rows it is handed (poll_table: no Python object per
    record, so the reader's CPU does not crowd the producers' threads)."""

    def __init__(self, log: ObjectLog, setup: Setup, partitions: int) -> None:
        self.consumer = open_consumer(log, setup, partitions)
        self.poll_every_s = setup.poll_every_s
        self.partitions = partitions
        self.rows = 0
        self.error: BaseException | None = None
        self._positioned = threading.Event()
        self._stop = threading.Event()
        self._progress = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="bench-tail-reader", daemon=True)

    def start(self) -> None:
        """Start polling; return once every partition is assigned and positioned."""
        self._thread.start()
        if not self._positioned.wait(POSITIONED_TIMEOUT_S):
            raise RuntimeError(f"the consumer was not positioned in {POSITIONED_TIMEOUT_S} s")
        self._raise()

    def _run(self) -> None:
        next_poll = time.monotonic()
        try:
            while not self._stop.is_set():
                timeout = 1.0 if self.poll_every_s is None else 0.0
                rows = self.consumer.poll_table(timeout=timeout).num_rows
                with self._progress:
                    self.rows += rows
                    self._progress.notify_all()
                # A poll that ends with every partition assigned has positioned them all.
                if len(self.consumer.assignment()) == self.partitions:
                    self._positioned.set()
                if self.poll_every_s is not None:
                    next_poll += self.poll_every_s
                    self._stop.wait(max(0.0, next_poll - time.monotonic()))
        except BaseException as e:  # raised in the caller's thread
            self.error = e
            self._positioned.set()
            with self._progress:
                self._progress.notify_all()

    def wait_for(self, rows: int, timeout_s: float) -> None:
        with self._progress:
            done = self._progress.wait_for(
                lambda: self.rows >= rows or self.error is not None, timeout_s
            )
        self._raise()
        if not done:
            raise RuntimeError(f"the consumer read {self.rows} of {rows} records in time")

    def stop(self) -> dict[int, int]:
        """Stop polling and close; the position of every partition it read."""
        self._stop.set()
        self._thread.join(timeout=30)
        positions = {tp.partition: self.consumer.position(tp) for tp in self.consumer.assignment()}
        self.consumer.close()  # a group member leaves: after the counted window
        self._raise()
        return positions

    def _raise(self) -> None:
        if self.error is not None:
            raise self.error


# ---- one configuration ----------------------------------------------------------------------


@dataclass
class Measured:
    setup: Setup
    produced: Tally
    read: Tally
    window_s: float  # the counted window
    lateness_s: list[float]  # how late each flush started after its slot


def measure(endpoint: Endpoint, setup: Setup, workload: Workload) -> Measured:
    log = connect(endpoint)
    log.create_topic(TOPIC, partitions=workload.partitions)
    reading = ObjectLog(log.config)  # the consumer's own clients: its requests counted apart
    produce_requests, read_requests = Requests(log), Requests(reading)
    flushes = (PartitionProducers if setup.producers == SEPARATE else OneProducer)(log, workload)
    reader = TailReader(reading, setup, workload.partitions)
    try:
        reader.start()
        produce_requests.take()
        read_requests.take()
        started = time.monotonic()
        with produce_requests.sizing_heads(one_in=HEADS_SIZED_ONE_IN):
            lateness = flushes.run(started)
            wait_until(started + workload.seconds)  # the window holds whole seconds of flushes
        reader.wait_for(workload.total_records, DRAIN_TIMEOUT_S)
        window = time.monotonic() - started
        produced, read = produce_requests.take(), read_requests.take()
    finally:
        positions = reader.stop()
        flushes.close()
    check_read_once(log, workload, reader.rows, positions)
    reading.close()
    log.close()
    return Measured(setup, produced, read, window, lateness)


def check_read_once(
    log: ObjectLog, workload: Workload, rows: int, positions: dict[int, int]
) -> None:
    """Every record produced was handed to the consumer, and none twice: rows returned equal
    the records produced, and every partition's position is its high watermark."""
    heads = log.metadata.get_heads(TOPIC, range(workload.partitions))
    ends = {p: head.next_offset for p, head in heads.items()}
    wanted = dict.fromkeys(range(workload.partitions), workload.records * workload.seconds)
    if rows != workload.total_records or not positions == ends == wanted:
        raise RuntimeError(
            f"not read once: {rows} rows returned of {workload.total_records} produced; "
            f"positions {positions}, high watermarks {ends}"
        )


# ---- the dollars ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Spend:
    """One kind of billed request at the workload's rate."""

    kind: str
    per_second: float  # requests, or DynamoDB request units
    per_gb: float
    price: float  # USD each
    usd_per_gb: float
    usd_per_month: float
    share: float  # of the configuration's total


def spending(lines: Sequence[Priced], seconds: float, gb: float) -> list[Spend]:
    """Priced lines counted over `seconds` in which `gb` were produced and read once (so one
    GB for both sides), per second, per GB and per month; largest first, none that is zero."""
    usd = sum(line.usd for line in lines)
    spends = [
        Spend(
            line.kind,
            line.count / seconds,
            line.count / gb,
            line.price,
            line.usd / gb,
            line.usd / seconds * SECONDS_PER_MONTH,
            line.usd / usd,
        )
        for line in lines
        if line.count
    ]
    return sorted(spends, key=lambda spend: spend.usd_per_gb, reverse=True)


def where_the_dollars_go(report: Report, measured: Measured, workload: Workload) -> list[Spend]:
    setup = measured.setup
    spends = spending(
        priced_requests(measured.produced, measured.read), measured.window_s, workload.gb
    )
    section = report.section(
        f"{setup.key}: where the dollars go ({setup.describe(workload)})",
        "requests",
        "per second",
        "per GB",
        "price per million",
        "USD per GB",
        "USD per month",
        "share",
    )
    for spend in spends:
        section.rows.append(
            (
                spend.kind,
                f"{spend.per_second:,.1f}",
                f"{spend.per_gb:,.0f}",
                f"${spend.price * 1e6:.3f}",
                f"{spend.usd_per_gb:.4f}",
                f"{spend.usd_per_month:,.2f}",
                f"{spend.share:.0%}",
            )
        )
    usd_per_gb, usd_per_month = total(spends)
    section.rows.append(("total", "", "", "", f"{usd_per_gb:.4f}", f"{usd_per_month:,.2f}", ""))
    return spends


def total(spends: Sequence[Spend]) -> tuple[float, float]:
    """USD per GB and USD per month."""
    return sum(s.usd_per_gb for s in spends), sum(s.usd_per_month for s in spends)


def requests_sent(report: Report, runs: Sequence[Measured], workload: Workload) -> None:
    """Every request counted, by side and operation, and the items behind the request units:
    what the priced lines are made of, per second / per GB."""
    section = report.section(
        "requests sent, by operation and side: per second / per GB",
        "side",
        "operation",
        *(run.setup.key for run in runs),
    )

    def counts(tally: Tally) -> dict[str, int]:
        return {
            **tally.counts,
            "head items sized (a sample, read back)": len(tally.written),
            "items read: partition heads": len(tally.read_heads),
            "items read: others (topic, group)": len(tally.read) - len(tally.read_heads),
        }

    sides = [("producer", [counts(run.produced) for run in runs])]
    sides.append(("consumer", [counts(run.read) for run in runs]))
    for side, by_run in sides:
        for operation in sorted(set().union(*by_run)):
            if not any(c.get(operation) for c in by_run):
                continue
            cells = [
                f"{c.get(operation, 0) / run.window_s:,.1f} / "
                f"{c.get(operation, 0) / workload.gb:,.0f}"
                for c, run in zip(by_run, runs, strict=True)
            ]
            section.rows.append((side, operation, *cells))


def kept_up(measured: Measured, workload: Workload) -> bool:
    """Every flush started within half a second of its slot and the consumer had read the last
    one soon after: no backlog built up on either side, so the rate was the workload's."""
    drained_s = measured.window_s - workload.seconds
    return max(measured.lateness_s) <= MAX_LATENESS_S and drained_s <= MAX_DRAIN_S


def unpriced(runs: Sequence[Measured]) -> set[str]:
    """Operations counted in the windows that no priced line covers."""
    counted = {op for run in runs for tally in (run.produced, run.read) for op in tally.counts}
    return counted - PRICED


def flushes_on_time(measured: Measured, workload: Workload) -> str:
    lateness = measured.lateness_s
    said = (
        f"{len(lateness)} flushes, started {statistics.median(lateness) * 1000:.0f} ms (median) "
        f"and at most {max(lateness) * 1000:.0f} ms after their slot; the consumer had read "
        f"them all {measured.window_s - workload.seconds:.1f} s after the last second's slot "
        f"(window {measured.window_s:.1f} s)"
    )
    if not kept_up(measured, workload):
        said += (
            ": THE ENDPOINT DID NOT KEEP UP: the flushes fell behind their slots or the consumer "
            "behind the flushes, so the figures are at the rate it held, not the workload's "
            "(and the consumer's time-driven head reads are counted over more seconds per GB)"
        )
    return said


# ---- main -----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=SECONDS, help="flush rounds, one a second")
    parser.add_argument("--partitions", type=int, default=PARTITIONS)
    parser.add_argument(
        "--records", type=int, default=RECORDS_PER_FLUSH, help="per partition per flush"
    )
    parser.add_argument("--record-bytes", type=int, default=RECORD_BYTES, help="key + value")
    parser.add_argument(
        "--only",
        action="append",
        choices=[setup.key for setup in SETUPS],
        help="run only this configuration (repeatable; default: all)",
    )
    add_endpoint_argument(parser)
    args = parser.parse_args()
    workload = Workload(args.partitions, args.records, args.record_bytes, args.seconds)
    setups = [setup for setup in SETUPS if not args.only or setup.key in args.only]
    report = Report()
    began = time.perf_counter()
    console.print(
        f"client: Python {sys.version.split()[0]}, {os.cpu_count()} CPUs shared with the server; "
        f"workload: {workload.partitions} partitions x {workload.records} records of "
        f"{workload.record_bytes} B a second ({workload.mib_per_s:.2f} MiB/s, "
        f"{1e9 / (workload.mib_per_s * MIB):,.0f} s per GB), {workload.seconds} s per "
        "configuration"
    )
    runs: list[Measured] = []
    cheapest: tuple[float, Setup, list[Spend]] | None = None
    with embedded_endpoint(args.dynamodb) as endpoint:
        report.endpoint(endpoint.description)
        for setup in setups:
            console.print(f"  {setup.key}: {setup.describe(workload)} ...")
            measured = measure(endpoint, setup, workload)
            runs.append(measured)
            spends = where_the_dollars_go(report, measured, workload)
            usd_per_gb, usd_per_month = total(spends)
            largest = spends[0]
            report.add(
                Row(
                    f"low-rate, {setup.key}: request cost per GB produced and read once",
                    usd_per_gb,
                    "USD",
                    reference_name=f"${usd_per_month:,.0f} a month",
                    note=f"largest: {largest.kind} ({largest.share:.0%})",
                )
            )
            report.note(f"{setup.key}: {flushes_on_time(measured, workload)}")
            if cheapest is None or usd_per_gb < cheapest[0]:
                cheapest = (usd_per_gb, setup, spends)
    requests_sent(report, runs, workload)
    left_out = unpriced(runs)
    report.note(f"counted but not priced: {', '.join(sorted(left_out)) or 'nothing'}")
    if cheapest is not None:
        recommend(report, workload, *cheapest)
    report.note(
        "prices (bench.run): S3 PUT $0.005 and GET $0.0004 per 1,000; DynamoDB on-demand $0.625 "
        "per million WRU (1 per KiB of the whole item, the larger of before and after: commits "
        f"priced by the heads of one partition in {HEADS_SIZED_ONE_IN}, read back), $0.125 "
        "per million RRU (strongly consistent, 1 per 4 KiB of each item read). "
        "A month is 730 hours at the window's rate. Not counted: storage, transfer, the "
        "consumer's start-up reads and a group's join and leave (one-offs)."
    )
    report.print()
    console.print(f"total {time.perf_counter() - began:.0f} s")


def recommend(
    report: Report, workload: Workload, usd_per_gb: float, setup: Setup, spends: list[Spend]
) -> None:
    usd_per_month = total(spends)[1]
    top = ", ".join(f"{s.kind} {s.share:.0%}" for s in spends[:2])
    report.note(
        f"cheapest here: {setup.key} ({setup.describe(workload)}): ${usd_per_gb:.4f} per GB, "
        f"${usd_per_month:,.0f} a month at {workload.mib_per_s:.2f} MiB/s; most of it: {top}"
    )


if __name__ == "__main__":
    main()
