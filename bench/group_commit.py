"""Many small Kafka writers through one agent: requests per GB against one batching producer
(issue 38, item 2; docs/kafka.md, "Group commit").

    .venv/bin/python -m bench.group_commit                 # about 3 minutes
    .venv/bin/python -m bench.group_commit --seconds 8     # briefly

On the embedded endpoint, one Kafka agent in this process, its ObjectLog's requests counted by
botocore hooks (bench.meter; head writes sized on a sample, so write units are the billed
ones). Per topic shape (1 partition, 64 partitions), side by side:

- **many**: 64 confluent-kafka producers, each its own connection, closed loop (send one 1 KiB
  record, wait for its acknowledgement, again), ``acks=all``, ``linger.ms=0``; producer i
  writes to partition i mod the topic's partitions;
- **one**: one confluent-kafka producer at its defaults (``linger.ms`` 5), ``acks=all``,
  moving the same bytes: 1 KiB records at the pace the 64 writers just reached on the same
  shape (so each round runs many, then one), spread over the same partitions.

Each runs for ``--seconds`` and reports MiB/s acknowledged, the agent's requests per GB by
kind and dollars per GB at list prices (bench.run's). Target: many <= 2x one in requests (and
dollars) per GB, on both shapes. Throughput "no lower than today's" is the same bench run on a
copy of the tree before group commit (PYTHONPATH at its lib/), as docs/benchmarks.md shows.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.meter import Requests, Tally
from bench.report import Report, Row
from bench.run import (
    DDB_RRU_PER_MILLION,
    DDB_WRU_PER_MILLION,
    ITEM_WRITES,
    MIB,
    S3_PUT_PER_1000,
    read_units,
    write_units,
)
from bench.server import add_endpoint_argument, embedded_endpoint, fresh_log
from objectlog import ObjectLog
from objectlog.kafka.server import AgentConfig, AgentThread

VALUE_BYTES = 1024
WRITERS = 64
GB = 1e9
TARGET_RATIO = 2.0
WRITERS_KINDS = {"plain": (False,), "idempotent": (True,), "both": (False, True)}


@dataclass
class Run:
    bytes: int
    seconds: float
    tally: Tally

    @property
    def mib_s(self) -> float:
        return self.bytes / MIB / self.seconds

    def per_gb(self, count: float) -> float:
        return count * GB / self.bytes

    @property
    def requests(self) -> dict[str, float]:
        counts = self.tally.counts
        writes = sum(counts[op] for op in ITEM_WRITES)
        reads = sum(counts[op] for op in ("GetItem", "BatchGetItem", "Query"))
        return {
            "S3 PUT (data)": self.per_gb(counts["PutObject:l0"]),
            "S3 PUT (index)": self.per_gb(counts["PutObject:index"]),
            "DynamoDB writes": self.per_gb(writes),
            "DynamoDB reads": self.per_gb(reads),
        }

    @property
    def total_requests(self) -> float:
        return sum(self.requests.values())

    @property
    def dollars_per_gb(self) -> float:
        counts = self.tally.counts
        puts = counts["PutObject:l0"] + counts["PutObject:index"]
        wru = sum(counts[op] for op in ITEM_WRITES) * write_units(self.tally)
        rru = read_units(self.tally.read)
        spent = (
            puts * S3_PUT_PER_1000 / 1000
            + wru * DDB_WRU_PER_MILLION / 1e6
            + rru * DDB_RRU_PER_MILLION / 1e6
        )
        return self.per_gb(spent)


def many_writers(idempotent: bool) -> Callable[[str, str, int, float], int]:
    """64 producers in closed loops (idempotent, as Java's and kafka-python's are by default,
    or not, as confluent-kafka's): the bytes acknowledged."""

    def run(address: str, topic: str, partitions: int, seconds: float) -> int:
        return closed_loops(address, topic, partitions, seconds, idempotent)

    return run


def closed_loops(
    address: str, topic: str, partitions: int, seconds: float, idempotent: bool
) -> int:
    import confluent_kafka

    value = os.urandom(VALUE_BYTES)
    acknowledged = [0] * WRITERS
    stop = threading.Event()
    ready = threading.Barrier(WRITERS + 1)

    def writer(i: int) -> None:
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": address,
                "acks": "all",
                "linger.ms": 0,
                "enable.idempotence": idempotent,
            }
        )
        producer.produce(topic, value, partition=i % partitions)  # connect before the clock
        producer.flush(30)
        ready.wait()
        errors: list[Any] = []
        while not stop.is_set():
            errors.clear()
            producer.produce(
                topic, value, partition=i % partitions, on_delivery=lambda e, _m: errors.append(e)
            )
            producer.flush(30)
            if errors == [None]:
                acknowledged[i] += VALUE_BYTES

    threads = [threading.Thread(target=writer, args=(i,), daemon=True) for i in range(WRITERS)]
    for thread in threads:
        thread.start()
    ready.wait()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join(60)
    return sum(acknowledged)


def one_writer(rate: float) -> Callable[[str, str, int, float], int]:
    """One producer at its defaults carrying the 64 writers' bytes at their pace (``rate``
    bytes a second, measured on the same shape just before): the bytes acknowledged."""

    def run(address: str, topic: str, partitions: int, seconds: float) -> int:
        import confluent_kafka

        value = os.urandom(VALUE_BYTES)
        producer = confluent_kafka.Producer({"bootstrap.servers": address, "acks": "all"})
        producer.produce(topic, value, partition=0)
        producer.flush(30)
        acknowledged = 0

        def delivered(error: Any, _message: Any) -> None:
            nonlocal acknowledged
            if error is None:
                acknowledged += VALUE_BYTES

        started = time.monotonic()
        sent = 0
        while (elapsed := time.monotonic() - started) < seconds:
            due = int(elapsed * rate / VALUE_BYTES)
            while sent < due:
                producer.produce(topic, value, partition=sent % partitions, on_delivery=delivered)
                sent += 1
            producer.poll(0.001)
        producer.flush(60)
        return acknowledged

    return run


def measure(
    config: Any,
    setup: ObjectLog,
    partitions: int,
    seconds: float,
    side: Callable[[str, str, int, float], int],
) -> Run:
    log = ObjectLog(config)
    requests = Requests(log)
    agent = AgentThread(log, AgentConfig(port=0)).start()
    topic = f"gc-{uuid.uuid4().hex[:8]}"
    setup.create_topic(topic, partitions=partitions)
    try:
        with requests.sizing_heads(one_in=1 if partitions == 1 else 8):
            requests.take()
            started = time.perf_counter()
            moved = side(agent.address, topic, partitions, seconds)
            elapsed = time.perf_counter() - started
            tally = requests.take()
    finally:
        agent.stop()
        log.close()
    return Run(moved, elapsed, tally)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=20.0, help="each side's window")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per shape")
    parser.add_argument("--writers", choices=sorted(WRITERS_KINDS), default="both")
    add_endpoint_argument(parser)
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    report = Report()
    load = os.getloadavg()
    with embedded_endpoint(args.dynamodb) as endpoint:
        report.endpoint(endpoint.description)
        config, setup = fresh_log(endpoint)
        try:
            for idempotent in WRITERS_KINDS[args.writers]:
                for partitions in (1, 64):
                    shape(report, config, setup, partitions, idempotent, args)
        finally:
            setup.close()
    report.load_note(load)
    report.print()


def shape(
    report: Report,
    config: Any,
    setup: ObjectLog,
    partitions: int,
    idempotent: bool,
    args: Any,
) -> None:
    runs: dict[str, list[Run]] = {"many": [], "one": []}
    for _ in range(args.rounds):  # the one producer paced at the 64 writers' rate just measured
        writers = many_writers(idempotent)
        many = measure(config, setup, partitions, args.seconds, writers)
        runs["many"].append(many)
        one = one_writer(many.bytes / many.seconds)
        runs["one"].append(measure(config, setup, partitions, args.seconds, one))
    many, one = (_median(runs[name]) for name in ("many", "one"))
    kind = "idempotent" if idempotent else "plain"
    section = report.section(
        f"{partitions} partition(s): 64 {kind} closed-loop producers (linger.ms=0) vs one batching "
        f"producer through one agent ({args.rounds} rounds of {args.seconds:.0f} s, the median)",
        "per GB acknowledged",
        "64 writers",
        "one producer",
    )
    for request in many.requests:
        section.rows.append(
            (request, f"{many.requests[request]:,.0f}", f"{one.requests[request]:,.0f}")
        )
    section.rows.append(
        ("$ at list prices", f"{many.dollars_per_gb:.3f}", f"{one.dollars_per_gb:.3f}")
    )
    section.rows.append(("MiB/s acknowledged", f"{many.mib_s:.2f}", f"{one.mib_s:.2f}"))
    ratio = many.total_requests / one.total_requests
    report.add(
        Row(
            f"{partitions} partition(s), {kind}: 64 writers' requests per GB",
            many.total_requests,
            "",
            one.total_requests,
            "one batching producer",
            f"<= {TARGET_RATIO:.0f}x",
            ratio <= TARGET_RATIO,
        )
    )
    report.add(
        Row(
            f"{partitions} partition(s), {kind}: 64 writers' throughput",
            many.mib_s,
            "MiB/s",
            note=f"$ {many.dollars_per_gb:.3f} per GB vs {one.dollars_per_gb:.3f}",
        )
    )


def _median(runs: list[Run]) -> Run:
    ordered = sorted(runs, key=lambda run: run.total_requests)
    return ordered[len(ordered) // 2]


if __name__ == "__main__":
    main()
