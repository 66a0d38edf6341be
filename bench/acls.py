"""The Kafka agent with ACLs enforced vs without, side by side on the same endpoint, same run
(issue 37: throughput with ACLs >= 0.95 of without, and no DynamoDB read per request).

    .venv/bin/python -m bench.acls                    # about 1 minute
    .venv/bin/python -m bench.acls --dynamodb local   # DynamoDB Local for DynamoDB

Two agents in this process, each over an ObjectLog of its own (so each one's AWS requests are
counted apart, by botocore hooks): one with `--authorizer acls` and the ACLs a producer and a
consumer group need (User:ANONYMOUS: WRITE and READ on the topics prefixed ``bench-``, READ on
the group), one with authorization off. confluent-kafka produces N records of 1 KiB to a fresh
4-partition topic through each (acks=all, linger 5 ms), then a group consumer reads them back;
the sides alternate in rounds and each reports its median round. Requests per MiB produced and
consumed are each side's AWS requests over the runs, by kind: the difference is the ACL
cache's (one GetItem of the version item per 5 s, a full reload only after a change), priced
at DynamoDB's on-demand list price per month per process.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable

from bench.kafka import produce_all
from bench.meter import Requests
from bench.report import Report, Row, console
from bench.run import MIB, median
from bench.server import add_endpoint_argument, bench_config, embedded_endpoint
from objectlog import ObjectLog
from objectlog.format.acls import ANONYMOUS, AclBinding, Operation, PatternType, Permission
from objectlog.format.acls import ResourceType as R
from objectlog.kafka.classic import DEV_INITIAL_REBALANCE_DELAY_MS
from objectlog.kafka.server import AgentConfig, AgentThread
from objectlog.services.access import AccessControl, AccessSettings
from objectlog.services.acl_cache import REFRESH_S

VALUE_BYTES = 1024
PARTITIONS = 4
GROUP = "bench-group"
READ_UNIT_USD = 0.125 / 1_000_000  # DynamoDB on-demand, per strongly consistent read (us-east-1)
SECONDS_PER_MONTH = 30 * 24 * 3600


def grants() -> list[AclBinding]:
    def allow(kind: R, name: str, op: Operation, pattern: PatternType) -> AclBinding:
        return AclBinding(kind, name, pattern, ANONYMOUS, "*", op, Permission.ALLOW)

    return [
        allow(R.TOPIC, "bench-", Operation.WRITE, PatternType.PREFIXED),
        allow(R.TOPIC, "bench-", Operation.READ, PatternType.PREFIXED),
        allow(R.GROUP, GROUP, Operation.READ, PatternType.LITERAL),
    ]


def produce(agent: AgentThread, topic: str, count: int) -> float:
    import confluent_kafka

    producer = confluent_kafka.Producer(
        {"bootstrap.servers": agent.address, "acks": "all", "linger.ms": 5}
    )
    return produce_all(producer, topic, os.urandom(VALUE_BYTES), count)


def consume(agent: AgentThread, topic: str, count: int) -> float:
    import confluent_kafka

    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": agent.address,
            "group.id": GROUP,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    seen, started = 0, time.perf_counter()
    while seen < count:
        for message in consumer.consume(num_messages=min(10_000, count - seen), timeout=1.0):
            if message.error() is not None:
                raise RuntimeError(f"consume failed: {message.error()}")
            seen += 1
    seconds = time.perf_counter() - started
    consumer.close()
    return seconds


class Side:
    """One agent and its log, its requests counted."""

    def __init__(self, log: ObjectLog, access: AccessSettings) -> None:
        self.log = log
        self.requests = Requests(log)
        config = AgentConfig(
            port=0, access=access, initial_rebalance_delay_ms=DEV_INITIAL_REBALANCE_DELAY_MS
        )
        self.agent = AgentThread(log, config).start()
        self.counts: Counter[str] = Counter()
        self.topics: list[str] = []

    def new_topic(self) -> str:
        name = f"bench-{uuid.uuid4().hex[:8]}"
        self.log.create_topic(name, partitions=PARTITIONS)
        self.topics.append(name)
        self.requests.take()  # the creation's requests are not the run's
        return name

    def producing(self, count: int) -> Callable[[], float]:
        def run() -> float:
            topic = self.new_topic()
            seconds = produce(self.agent, topic, count)
            self.counts.update(self.requests.take().counts)
            return seconds

        return run

    def consuming(self, count: int) -> Callable[[], float]:
        def run() -> float:
            self.requests.take()
            seconds = consume(self.agent, self.topics.pop(0), count)
            self.counts.update(self.requests.take().counts)
            return seconds

        return run

    def stop(self) -> None:
        self.agent.stop()
        self.log.close()


CHECKS_PER_REQUEST = 4  # a produce or fetch of 4 partitions of one topic: one per topic, a few


def check_cost_us(access: AccessControl, decisions: int = 20_000) -> float:
    """Microseconds per decision of the ACL side's AccessControl, as its guards ask it."""
    started = time.perf_counter()
    for _ in range(decisions):
        access.due()
        access.allows(ANONYMOUS, "127.0.0.1", Operation.WRITE, R.TOPIC, "bench-0000")
    return (time.perf_counter() - started) / decisions * 1e6


def flipping(rounds: int, sides: dict[str, Callable[[], float]]) -> dict[str, list[float]]:
    """bench.run.alternate, the order of the two sides flipped every round, so neither always
    runs first (after the other's writes, before the endpoint's next compaction of state)."""
    results: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for round_ in range(rounds):
        for name in names if round_ % 2 == 0 else reversed(names):
            results[name].append(sides[name]())
    return results


def warm(results: dict[str, list[float]]) -> dict[str, list[float]]:
    """The rounds after the first."""
    return {name: runs[1:] for name, runs in results.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=64, help="MiB of 1 KiB records per run")
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds, even")
    add_endpoint_argument(parser)
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    count = args.mib * MIB // VALUE_BYTES
    report = Report()
    began = time.perf_counter()
    with embedded_endpoint(args.dynamodb) as endpoint:
        report.endpoint(endpoint.description)
        suffix = uuid.uuid4().hex[:10]
        config = bench_config(endpoint, f"bench-{suffix}", f"bench-{suffix}")
        setup = ObjectLog(config)
        setup.ensure_resources()
        setup.items.acls.create(grants())
        sides = {
            "acls": Side(ObjectLog(config), AccessSettings(enabled=True)),
            "off": Side(ObjectLog(config), AccessSettings()),
        }
        try:
            console.print(
                f"client: Python {sys.version.split()[0]}, {os.cpu_count()} CPUs shared with "
                f"the endpoint and both agents; {count:,} records of {VALUE_BYTES} B per run"
            )
            # one round more than reported: the first warms each side (connections, caches)
            produced = warm(
                flipping(args.rounds + 1, {n: s.producing(count) for n, s in sides.items()})
            )
            consumed = warm(
                flipping(args.rounds + 1, {n: s.consuming(count) for n, s in sides.items()})
            )
            handlers = sides["acls"].agent.agent.handlers
            assert handlers is not None and handlers.ctx.access.refusals == 0
            answered = sides["acls"].agent.agent.metrics.snapshot()
            check_us = check_cost_us(handlers.ctx.access)
        finally:
            for side in sides.values():
                side.stop()
            setup.close()
    mib = count * VALUE_BYTES / MIB
    for what, results in (("produce", produced), ("consume (a group)", consumed)):
        report.add(
            Row(
                f"{what} through the agent with ACLs enforced, 1 KiB records",
                mib / median(results["acls"]),
                "MiB/s",
                mib / median(results["off"]),
                "the same agent without authorization, same endpoint (target >= 0.95)",
            )
        )
    moved = 2 * (args.rounds + 1) * mib  # produced and consumed, per side, warm-up included
    for name, side in sides.items():
        requests = sum(side.counts.values())
        kinds = ", ".join(f"{k} {v}" for k, v in side.counts.most_common(6))
        report.note(f"{name}: {requests / moved:.1f} AWS requests per MiB moved ({kinds})")
    extra = sum(sides["acls"].counts.values()) - sum(sides["off"].counts.values())
    report.note(
        f"requests the ACLs added over the runs: {extra} (the cache's version reads, one per "
        f"{REFRESH_S:.0f} s, and its first load); in steady state "
        f"${SECONDS_PER_MONTH / REFRESH_S * READ_UNIT_USD:.3f} a month per process, nothing per "
        "request"
    )
    requests = sum(c.requests for c in answered.values())
    timed_s = sum(produced["acls"] + consumed["acls"])  # warm-up not counted: an upper bound
    report.note(
        f"the ACL checks' own cost: {check_us:.1f} us per decision (timed in this process), "
        f"{requests:,} Kafka requests answered by the ACL side over all its runs: at most "
        f"{requests * CHECKS_PER_REQUEST * check_us / 1e6:.3f} s of its {timed_s:.1f} s timed "
        f"({requests * CHECKS_PER_REQUEST * check_us / 1e4 / timed_s:.2f}%); a ratio further "
        "from 1 than that is the shared machine's noise"
    )
    report.note(f"run took {time.perf_counter() - began:.0f} s")
    report.print()


if __name__ == "__main__":
    main()
