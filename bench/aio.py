"""The asyncio client against the threaded one (issue 40): producer and consumer throughput,
the event loop's lag under 1,000 concurrent sends, and requests per record.

    .venv/bin/python -m bench.aio --dynamodb local   # about 3 minutes (6 on moto)
    .venv/bin/python -m bench.aio --quick            # a smoke run, about a minute

On the embedded endpoint (bench.server), topics of 64 partitions, 1 KiB values (a pool of
random ones), keys over 10,000 names, each side with its client's defaults (linger_ms 5,
batch_bytes 1 MiB, idempotent), a log of its own per run (no warm caches):

- **producer**: the threaded ``log.producer()`` (``send()`` per record, then ``flush()``) vs
  ``AIOProducer`` (``await send()`` per record from one task, then the futures gathered):
  ``--records`` records a run into a fresh topic, timed from the first send to the last
  acknowledgement;
- **consumer**: the threaded ``log.consumer(topics=, group=, auto_offset_reset="earliest")``
  polling vs ``AIOConsumer.getmany()``, each a new group reading the first producer run's topic
  from the start to its end (the group's join included; its rate after the first records is
  shown too);
- **loop lag**: while waves of 1,000 tasks each ``await send_and_wait()`` on one loop, a
  sampler task sleeping 1 ms records how late it wakes; also through a ``getmany()`` loop and an
  ``await send()`` loop, and on an idle loop for reference. These runs are separate, untimed
  against the threaded side: the sampler's thousand wakes a second cost CPU.

Sides alternate, their order flipped every other round (an even number of rounds: each side
runs first in half of them); each figure is the median round. Client CPU (process time, every
thread) per record is shown beside the requests.
Requests are counted by botocore hooks (bench.meter) on each side's S3 and DynamoDB clients:
aiobotocore's clients emit botocore's events, so the asyncio side's are counted the same way.
Targets: async/threaded throughput >= 0.9 on both; loop lag p99 <= 20 ms under the sends.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from bench.meter import Requests, Tally
from bench.report import Report, Row, console
from bench.run import alternate
from bench.server import add_endpoint_argument, embedded_endpoint, fresh_log
from objectlog import ObjectLog
from objectlog.aio import AIOObjectLog
from objectlog.config import Config

VALUE_BYTES = 1024
PARTITIONS = 64
KEYS = [b"key-%d" % n for n in range(10_000)]
VALUES = [os.urandom(VALUE_BYTES) for _ in range(4_096)]
CONCURRENT = 1_000  # sends in flight at once in the lag measure (the figure)
SAMPLE_S = 0.001  # the sampler's sleep
TARGET_RATIO = 0.9
TARGET_LAG_P99_MS = 20.0
THREADED, ASYNC = "threaded", "asyncio"


@dataclass(frozen=True)
class Scale:
    records: int = 20_000  # per producer run
    partitions: int = PARTITIONS
    concurrent: int = CONCURRENT
    rounds: int = 4  # even: each side runs first in half the rounds and second in half
    waves: int = 10  # of `concurrent` send_and_wait() each
    idle_s: float = 1.0  # the idle loop's reference sample


QUICK = Scale(records=4_000, rounds=2, waves=2)


@dataclass
class Run:
    """One side's run: records moved, seconds, its requests."""

    records: int
    seconds: float
    tally: Tally
    first_s: float = 0.0  # a consumer's: until its first records (the group's join included)
    first_records: int = 0  # how many that first poll returned
    cpu_s: float = 0.0  # this process's CPU time (every thread's) during the run

    @property
    def rate(self) -> float:
        return self.records / self.seconds

    @property
    def rate_after_join(self) -> float:
        """A consumer's records/s after its first poll that returned records (its whole rate
        if that poll returned them all)."""
        if self.records == self.first_records:
            return self.rate
        return (self.records - self.first_records) / (self.seconds - self.first_s)

    @property
    def requests(self) -> int:
        return sum(self.tally.counts.values())


@dataclass
class Lag:
    """How late a task sleeping SAMPLE_S wakes, in ms, one sample per wake."""

    samples: list[float] = field(default_factory=list)

    def quantiles(self) -> tuple[float, float, float]:
        """p50, p99 and the worst (0s when nothing was sampled)."""
        if not self.samples:
            return 0.0, 0.0, 0.0
        ordered = sorted(self.samples)
        return (
            ordered[len(ordered) // 2],
            ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
            ordered[-1],
        )


@contextmanager
def sampling(lag: Lag | None) -> Iterator[None]:
    """Sample the running loop's lag into lag while the block runs (an async caller's
    ``with``: the sampler is a task of its loop); nothing when lag is None (a timed run: the
    sampler's thousand wakes a second would cost the asyncio side a few percent)."""
    if lag is None:
        yield
        return
    stop = False

    async def sample() -> None:
        while not stop:
            started = time.perf_counter()
            await asyncio.sleep(SAMPLE_S)
            lag.samples.append(max(0.0, time.perf_counter() - started - SAMPLE_S) * 1000)

    task = asyncio.get_running_loop().create_task(sample(), name="bench-loop-lag")
    try:
        yield
    finally:
        stop = True
        task.cancel()


def record(i: int) -> tuple[bytes, bytes]:
    """The i-th record's key and value."""
    return KEYS[i % len(KEYS)], VALUES[i % len(VALUES)]


def run_async(main: Callable[[AIOObjectLog], Coroutine[Any, Any, Run]], config: Config) -> Run:
    """main with an AIOObjectLog of its own on config, on a fresh event loop."""

    async def connected() -> Run:
        async with await AIOObjectLog.from_config(config) as aio:
            return await main(aio)

    return asyncio.run(connected())


# ---- the sides ---------------------------------------------------------------------------------


def threaded_produce(config: Config, topic: str, records: int) -> Run:
    with ObjectLog(config) as log:
        meter = Requests(log)
        with log.producer() as producer:
            meter.take()
            started, cpu = time.perf_counter(), time.process_time()
            for i in range(records):
                key, value = record(i)
                producer.send(topic, value, key=key)
            producer.flush()
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            tally = meter.take()
    return Run(records, seconds, tally, cpu_s=cpu)


def aio_produce(config: Config, topic: str, records: int, lag: Lag | None = None) -> Run:
    async def main(aio: AIOObjectLog) -> Run:
        meter = Requests(aio.direct())
        async with aio.producer() as producer:
            meter.take()
            with sampling(lag):
                started, cpu = time.perf_counter(), time.process_time()
                futures = []
                for i in range(records):
                    key, value = record(i)
                    futures.append(await producer.send(topic, value, key=key))
                await asyncio.gather(*futures)
                seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            tally = meter.take()
        return Run(records, seconds, tally, cpu_s=cpu)

    return run_async(main, config)


def threaded_consume(config: Config, topic: str, total: int) -> Run:
    with ObjectLog(config) as log:
        meter = Requests(log)
        consumer = log.consumer(
            topics=[topic], group=f"bench-{uuid.uuid4().hex[:8]}", auto_offset_reset="earliest"
        )
        started, cpu = time.perf_counter(), time.process_time()
        read, first_s, first_records = 0, 0.0, 0
        while read < total:
            read += len(consumer.poll(timeout=1))
            if read and not first_s:
                first_s, first_records = time.perf_counter() - started, read
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        tally = meter.take()
        consumer.close()
    assert read == total, (read, total)
    return Run(read, seconds, tally, first_s, first_records, cpu)


def aio_consume(config: Config, topic: str, total: int, lag: Lag | None = None) -> Run:
    async def main(aio: AIOObjectLog) -> Run:
        meter = Requests(aio.direct())
        group = f"bench-{uuid.uuid4().hex[:8]}"
        async with aio.consumer(topic, group_id=group, auto_offset_reset="earliest") as consumer:
            with sampling(lag):
                started, cpu = time.perf_counter(), time.process_time()
                read, first_s, first_records = 0, 0.0, 0
                while read < total:
                    batches = await consumer.getmany(timeout_ms=1000)
                    read += sum(len(records) for records in batches.values())
                    if read and not first_s:
                        first_s, first_records = time.perf_counter() - started, read
                seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            tally = meter.take()
        assert read == total, (read, total)
        return Run(read, seconds, tally, first_s, first_records, cpu)

    return run_async(main, config)


def concurrent_sends(config: Config, topic: str, scale: Scale, lag: Lag, idle: Lag) -> Run:
    """waves of ``concurrent`` tasks each awaiting send_and_wait(), the loop's lag sampled into
    lag throughout; and into idle, the same loop's lag idle for a while, for reference."""
    waves, concurrent = scale.waves, scale.concurrent

    async def main(aio: AIOObjectLog) -> Run:
        meter = Requests(aio.direct())
        with sampling(idle):
            await asyncio.sleep(scale.idle_s)
        async with aio.producer() as producer:
            meter.take()
            with sampling(lag):
                started = time.perf_counter()
                for wave in range(waves):
                    first = wave * concurrent
                    await asyncio.gather(
                        *(
                            producer.send_and_wait(topic, value, key=key)
                            for key, value in map(record, range(first, first + concurrent))
                        )
                    )
                seconds = time.perf_counter() - started
            tally = meter.take()
        return Run(waves * concurrent, seconds, tally)

    return run_async(main, config)


# ---- the bench ---------------------------------------------------------------------------------


@dataclass
class Results:
    produced: dict[str, list[Run]]
    consumed: dict[str, list[Run]]
    lags: list[tuple[str, Lag, Run | None]]  # what ran while sampling, the lag, that run
    topic_records: int


def measure(config: Config, setup: ObjectLog, scale: Scale) -> Results:
    """Every side of the bench on config's bucket and table (setup creates the topics)."""
    topics: list[str] = []

    def new_topic() -> str:
        """A fresh topic for each producer run: every run starts from the same heads."""
        topics.append(f"aio-{len(topics)}-{uuid.uuid4().hex[:8]}")
        setup.create_topic(topics[-1], partitions=scale.partitions)
        return topics[-1]

    produced: dict[str, list[Run]] = {THREADED: [], ASYNC: []}
    sides = {
        THREADED: lambda: _timed(
            produced[THREADED], threaded_produce(config, new_topic(), scale.records)
        ),
        ASYNC: lambda: _timed(produced[ASYNC], aio_produce(config, new_topic(), scale.records)),
    }
    alternate(scale.rounds, sides, flip=True)
    topic, total = topics[0], scale.records  # the consumers read the first run's topic
    consumed: dict[str, list[Run]] = {THREADED: [], ASYNC: []}
    sides = {
        THREADED: lambda: _timed(consumed[THREADED], threaded_consume(config, topic, total)),
        ASYNC: lambda: _timed(consumed[ASYNC], aio_consume(config, topic, total)),
    }
    alternate(scale.rounds, sides, flip=True)

    # The loop's lag, in runs of their own (not timed against the threaded side).
    idle, sends, getmany, send_loop = Lag(), Lag(), Lag(), Lag()
    consuming = aio_consume(config, topic, total, getmany)
    lag_topic = new_topic()
    waves = concurrent_sends(config, lag_topic, scale, sends, idle)
    producing = aio_produce(config, lag_topic, scale.records, send_loop)
    lags: list[tuple[str, Lag, Run | None]] = [
        (f"the loop idle, {scale.idle_s:g} s (reference)", idle, None),
        (
            f"{scale.waves} waves of {scale.concurrent:,} concurrent send_and_wait() "
            f"(the target's measure)",
            sends,
            waves,
        ),
        ("a getmany() loop reading the topic from the start", getmany, consuming),
        ("a loop of `await send()`, then the futures gathered", send_loop, producing),
    ]
    return Results(produced, consumed, lags, total)


def _timed(runs: list[Run], run: Run) -> float:
    runs.append(run)
    console.print(
        f"  [dim]{run.records:,} records in {run.seconds:.2f} s ({run.rate:,.0f}/s), "
        f"{run.requests:,} requests[/]"
    )
    return run.seconds


def _count(run: Run, kind: str) -> int:
    return run.requests if kind == "all" else run.tally.counts[kind]


def median_rate(runs: list[Run]) -> float:
    return statistics.median(run.rate for run in runs)


def median_run(runs: list[Run]) -> Run:
    """The run of median rate (the lower of the middle two of an even count): its requests."""
    ordered = sorted(runs, key=lambda run: run.rate)
    return ordered[(len(ordered) - 1) // 2]


def report(results: Results, scale: Scale, report: Report) -> None:
    shape = f"{scale.partitions} partitions, {VALUE_BYTES} B values, keyed, default linger/batch"
    for what, runs in (("producer", results.produced), ("consumer", results.consumed)):
        threaded, aio = median_rate(runs[THREADED]), median_rate(runs[ASYNC])
        ratio = aio / threaded
        report.add(
            Row(
                f"{what}: AIO{what.capitalize()} vs the threaded one ({shape})",
                aio,
                "records/s",
                threaded,
                f"threaded {what}",
                f">= {TARGET_RATIO}",
                ratio >= TARGET_RATIO,
            )
        )
    threaded, aio = (
        statistics.median(run.rate_after_join for run in results.consumed[side])
        for side in (THREADED, ASYNC)
    )
    report.add(
        Row(
            "consumer after its first records (the group's join left out)",
            aio,
            "records/s",
            threaded,
            "threaded consumer",
            note="(not the target's measure: the join is part of a read from the start)",
        )
    )
    requests = report.section(
        f"requests per 1,000 records (median runs; producer runs of {scale.records:,} records, "
        f"consumer runs of a topic of {results.topic_records:,})",
        "request",
        "producer, threaded",
        "producer, asyncio",
        "consumer, threaded",
        "consumer, asyncio",
    )
    columns = [
        median_run(results.produced[THREADED]),
        median_run(results.produced[ASYNC]),
        median_run(results.consumed[THREADED]),
        median_run(results.consumed[ASYNC]),
    ]
    kinds = sorted(set().union(*(run.tally.counts for run in columns)))
    for kind in [*kinds, "all"]:
        per_1000 = [_count(run, kind) * 1000 / run.records for run in columns]
        requests.rows.append((kind, *(f"{value:.2f}" for value in per_1000)))
    requests.rows.append(
        (
            "client CPU s per 1,000 records",
            *(f"{run.cpu_s * 1000 / run.records:.3f}" for run in columns),
        )
    )
    lags = report.section(
        "event loop lag: how late a task sleeping 1 ms wakes (ms), each in a run of its own",
        "while",
        "records/s",
        "samples",
        "p50",
        "p99",
        "max",
    )
    for name, lag, run in results.lags:
        p50, p99, worst = lag.quantiles()
        rate = f"{run.rate:,.0f}" if run else ""
        lags.rows.append(
            (name, rate, f"{len(lag.samples):,}", f"{p50:.2f}", f"{p99:.2f}", f"{worst:.1f}")
        )
    sends = results.lags[1][1]
    p50, p99, worst = sends.quantiles()
    report.add(
        Row(
            f"loop lag p99 under {scale.concurrent:,} concurrent sends",
            p99,
            "ms",
            target=f"<= {TARGET_LAG_P99_MS:.0f} ms",
            passed=p99 <= TARGET_LAG_P99_MS,
            note=f"p50 {p50:.2f}, max {worst:.1f}",
        )
    )
    report.note(
        "consumer: seconds to the first records (the group's join), median: "
        + ", ".join(
            f"{side} {statistics.median(run.first_s for run in results.consumed[side]):.2f}"
            for side in (THREADED, ASYNC)
        )
    )
    for what, runs in (("producer", results.produced), ("consumer", results.consumed)):
        report.note(
            f"{what} rounds (records/s): "
            + "; ".join(
                f"{side} " + ", ".join(f"{run.rate:,.0f}" for run in runs[side])
                for side in (THREADED, ASYNC)
            )
            + " (threaded first in odd rounds, asyncio first in even ones)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run (CI-sized)")
    parser.add_argument("--records", type=int, help="records per producer run")
    parser.add_argument("--rounds", type=int, help="alternating rounds")
    add_endpoint_argument(parser)
    args = parser.parse_args()
    scale = QUICK if args.quick else Scale()
    scale = replace(
        scale, records=args.records or scale.records, rounds=args.rounds or scale.rounds
    )
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    out = Report()
    load = os.getloadavg()
    began = time.perf_counter()
    with embedded_endpoint(args.dynamodb) as endpoint:
        out.endpoint(endpoint.description)
        config, setup = fresh_log(endpoint)
        try:
            results = measure(config, setup, scale)
        finally:
            setup.close()
    report(results, scale, out)
    out.load_note(load)
    out.print()
    console.print(f"total {time.perf_counter() - began:.0f} s, median of {scale.rounds} rounds")


if __name__ == "__main__":
    main()
