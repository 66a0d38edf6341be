"""The Kafka agent vs the objectlog library, side by side on the same endpoint, same run.

    .venv/bin/python -m bench.kafka                    # about 3 minutes
    .venv/bin/python -m bench.kafka --dynamodb local   # DynamoDB Local for DynamoDB

Produce: N records of 1 KiB to a 4-partition topic, by the objectlog library's producer
directly (its defaults) vs by confluent-kafka through `objectlog agent` (acks=all, linger 5 ms,
lz4 off: the same bytes on the wire as in the segment's values). Consume: the same records
read from offset 0 by the library (assign, no group) vs by confluent-kafka through the agent,
timed from the first record to the last (start-up, the time to the first record, apart).
The agent runs as `objectlog agent` in a process of its own, so its CPU time (from /proc) is
its alone: reported per MiB moved. Sides alternate in rounds; each reports its median round,
as bench.run does. Targets (issue 16): produce through the agent >= 0.7 of the library's
throughput at 1 KiB records, consuming likewise.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.report import Report, Row, console
from bench.run import MIB, alternate, connect, median
from bench.server import Endpoint, add_endpoint_argument, embedded_endpoint, objectlog_command
from objectlog import ObjectLog
from objectlog.groups import TopicPartition
from objectlog.tools.emulators.processes import free_port

VALUE_BYTES = 1024
PARTITIONS = 4
TICKS = os.sysconf("SC_CLK_TCK")


class AgentProcess:
    """`objectlog agent` on loopback, over the benchmark's bucket and table."""

    def __init__(self, endpoint: Endpoint, log: ObjectLog) -> None:
        self.port = free_port()
        env = {
            **os.environ,
            "AWS_ENDPOINT_URL_S3": endpoint.url,
            "AWS_ENDPOINT_URL_DYNAMODB": endpoint.dynamodb_url,
            "OBJECTLOG_BUCKET": log.config.bucket,
            "OBJECTLOG_TABLE": log.config.table,
        }
        self.process = subprocess.Popen(
            [*objectlog_command(), "agent", "--listen", f"127.0.0.1:{self.port}"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(3)  # it binds after importing the library

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


def library_produce(log: ObjectLog, count: int) -> Callable[[], float]:
    def run() -> float:
        topic = new_topic(log)
        value = os.urandom(VALUE_BYTES)
        started = time.perf_counter()
        with log.producer() as producer:
            for i in range(count):
                producer.send(topic, value, key=b"%d" % i)
        return time.perf_counter() - started

    return run


def kafka_produce(
    log: ObjectLog, agent: AgentProcess, count: int, cpu: list[float]
) -> Callable[[], float]:
    import confluent_kafka

    def run() -> float:
        topic = new_topic(log)
        value = os.urandom(VALUE_BYTES)
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": agent.address,
                "acks": "all",
                "linger.ms": 5,
                "partitioner": "murmur2_random",
            }
        )
        before = agent.cpu_s()
        seconds = produce_all(producer, topic, value, count)
        cpu.append(agent.cpu_s() - before)
        return seconds

    return run


def produce_all(producer: Any, topic: str, value: bytes, count: int) -> float:
    """Seconds for a confluent-kafka producer to send count records of value (keys 0, 1, ...)
    and flush them, waiting while its queue is full."""
    started = time.perf_counter()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value, key=b"%d" % i)
                break
            except BufferError:  # the client's queue is full: let it drain
                producer.poll(0.01)
    assert producer.flush(120) == 0, "records not delivered"
    return time.perf_counter() - started


class ConsumeClock:
    """Times a consume from its first record to its last, scaled to the whole count: the
    throughput once data flows. Start-up (a client's connections, metadata and offset lookups;
    librdkafka's first ListOffsets waits about 0.5 s for its group coordinator) is reported
    apart, as the time to the first record."""

    def __init__(self, count: int, first_record_s: list[float]) -> None:
        self.count = count
        self.first_record_s = first_record_s
        self.created = time.perf_counter()
        self.first: tuple[float, int] | None = None
        self.seen = 0

    def add(self, records: int) -> None:
        if records and self.first is None:
            self.first = (time.perf_counter(), records)
            self.first_record_s.append(self.first[0] - self.created)
        self.seen += records

    @property
    def done(self) -> bool:
        return self.seen >= self.count

    def seconds(self) -> float:
        assert self.first is not None
        started, untimed = self.first
        return (time.perf_counter() - started) * self.count / (self.count - untimed)


def library_consume(
    log: ObjectLog, topic: str, count: int, first_record_s: list[float]
) -> Callable[[], float]:
    def run() -> float:
        clock = ConsumeClock(count, first_record_s)
        with ObjectLog(log.config) as own, own.consumer() as consumer:
            consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
            for p in range(PARTITIONS):
                consumer.seek(TopicPartition(topic, p), 0)
            while not clock.done:
                clock.add(len(consumer.poll(timeout=1.0, max_records=100_000)))
        return clock.seconds()

    return run


def kafka_consume(
    agent: AgentProcess, topic: str, count: int, cpu: list[float], first_record_s: list[float]
) -> Callable[[], float]:
    import confluent_kafka

    def run() -> float:
        clock = ConsumeClock(count, first_record_s)
        consumer = confluent_kafka.Consumer(
            {"bootstrap.servers": agent.address, "group.id": "unused", "enable.auto.commit": False}
        )
        consumer.assign(
            [
                confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                for p in range(PARTITIONS)
            ]
        )
        before = agent.cpu_s()
        while not clock.done:
            # only what is left: consume() waits out its timeout for a full batch
            messages = consumer.consume(num_messages=min(10_000, count - clock.seen), timeout=1.0)
            clock.add(sum(1 for m in messages if m.error() is None))
        seconds = clock.seconds()
        cpu.append(agent.cpu_s() - before)
        consumer.close()
        return seconds

    return run


def new_topic(log: ObjectLog) -> str:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    log.create_topic(name, partitions=PARTITIONS)
    return name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=32, help="MiB of 1 KiB records per side")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    add_endpoint_argument(parser)
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    count = args.mib * MIB // VALUE_BYTES
    report = Report()
    began = time.perf_counter()
    produce_cpu: list[float] = []
    consume_cpu: list[float] = []
    first_record_s: dict[str, list[float]] = {"library": [], "agent": []}
    with embedded_endpoint(args.dynamodb) as endpoint:
        report.endpoint(endpoint.description)
        log = connect(endpoint)
        agent = AgentProcess(endpoint, log)
        try:
            console.print(
                f"client: Python {sys.version.split()[0]}, {os.cpu_count()} CPUs shared with "
                f"the server and the agent; {count:,} records of {VALUE_BYTES} B per side"
            )
            produced = alternate(
                args.rounds,
                {
                    "library": library_produce(log, count),
                    "agent": kafka_produce(log, agent, count, produce_cpu),
                },
            )
            topic = new_topic(log)
            with log.producer() as producer:
                for i in range(count):
                    producer.send(topic, os.urandom(VALUE_BYTES), key=b"%d" % i)
            consumed = alternate(
                args.rounds,
                {
                    "library": library_consume(log, topic, count, first_record_s["library"]),
                    "agent": kafka_consume(
                        agent, topic, count, consume_cpu, first_record_s["agent"]
                    ),
                },
            )
        finally:
            agent.stop()
            log.close()
    mib = count * VALUE_BYTES / MIB
    for what, results, cpu in (
        ("produce", produced, produce_cpu),
        ("consume", consumed, consume_cpu),
    ):
        report.add(
            Row(
                f"{what} through the agent (confluent-kafka), 1 KiB records",
                mib / median(results["agent"]),
                "MiB/s",
                mib / median(results["library"]),
                f"the objectlog library's {what} directly, same endpoint (target >= 0.7)",
            )
        )
        report.note(f"agent CPU per MiB, {what}: {median(cpu) / mib * 1000:.1f} ms")
    report.note(
        "consume start-up, median time to the first record: "
        + ", ".join(f"{side} {median(runs):.2f} s" for side, runs in first_record_s.items())
    )
    report.note(
        "rounds (s): "
        + "; ".join(
            f"{what} {side} " + ", ".join(f"{s:.2f}" for s in runs)
            for what, results in (("produce", produced), ("consume", consumed))
            for side, runs in results.items()
        )
    )
    report.print()
    console.print(f"total {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
