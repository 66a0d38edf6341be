"""What a waiting group member's own group requests cost: heartbeats and auto-commits of
unchanged offsets, before and after groups.unchanged, side by side in one run (issue 38).

    .venv/bin/python -m bench.group_idle                  # about 90 s
    .venv/bin/python -m bench.group_idle --seconds 120 --dynamodb local

One idle 64-partition topic; each client at its defaults in a group of its own, tailing it:
the library Consumer (heartbeat every session_timeout / 3 = 3.3 s, auto-commit 5 s), and
through an agent in this process confluent-kafka (classic protocol: Heartbeat 3 s;
``group.protocol=consumer``: KIP-848's ConsumerGroupHeartbeat at the agent's 2 s) and
kafka-python (Heartbeat 3 s), both auto-committing every 5 s. Each client runs twice at once,
over an ObjectLog (and agent) of its own: "before" with the memory of unchanged commits off
(every commit written, as before this change), "after" with it on. After a warm-up (joins,
first commits), every DynamoDB request each side's log sends in ``--seconds`` is counted
(bench.meter.Requests) and classified by the item it names: the group's (member, offset and
group items, a classic group's document) or the rest (partition heads and topics: the fetch
path, waiting for records). Priced at on-demand list prices: a write unit per KiB written, a
strongly consistent read unit per 4 KiB item read.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

from bench.meter import Requests
from bench.report import Report, Section, console
from bench.server import add_endpoint_argument, bench_config, embedded_endpoint
from objectlog import ObjectLog
from objectlog.kafka.classic import DEV_INITIAL_REBALANCE_DELAY_MS
from objectlog.kafka.server import AgentConfig, AgentThread

PARTITIONS = 64
WRITE_UNIT_USD = 0.625 / 1_000_000  # DynamoDB on-demand write request unit (us-east-1)
READ_UNIT_USD = 0.125 / 1_000_000  # strongly consistent read request unit, up to 4 KiB
SECONDS_PER_MONTH = 30 * 24 * 3600
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem")
CLIENTS = ("library", "confluent-kafka classic", "confluent-kafka KIP-848", "kafka-python")


class ItemCounter:
    """Each DynamoDB request and item it names, by group item or not (botocore hooks)."""

    def __init__(self, log: ObjectLog) -> None:
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        events = log.metadata.client.meta.events
        events.register("before-parameter-build.dynamodb", self._count)

    def _count(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        keys = [params[k] for k in ("Key", "Item") if k in params]
        for table in params.get("RequestItems", {}).values():
            if isinstance(table, dict):  # BatchGetItem
                keys += table.get("Keys", [])
                continue
            for request in table:  # BatchWriteItem
                keys += [r.get("Key", r.get("Item", {})) for r in request.values()]
        kinds = Counter(_kind(key) for key in keys)
        with self._lock:
            for kind, items in kinds.items():
                self.counts[f"{model.name} {kind}"] += items

    def take(self) -> Counter[str]:
        with self._lock:
            counts, self.counts = self.counts, Counter()
        return counts


def _kind(key: dict[str, Any]) -> str:
    """group:offset, group:member, group:meta (the group item), group:doc (a classic group's
    document), or other (heads, topics)."""
    pk, sk = key.get("pk", {}).get("S", ""), key.get("sk", {}).get("S", "")
    if not pk.startswith(("group#", "doc#")):
        return "other"
    return "group:" + sk.split("#", 1)[0]


class Side:
    """One client kind, before or after: its log (and agent), requests counted."""

    def __init__(self, config: Any, topic: str, client: str, remember: bool) -> None:
        self.log = ObjectLog(config)
        if not remember:
            self.log.groups.unchanged.rewrite_after_ms = 0  # every commit written
        self.meter = Requests(self.log)
        self.items = ItemCounter(self.log)
        self.agent = None
        if client != "library":
            agent_config = AgentConfig(
                port=0, initial_rebalance_delay_ms=DEV_INITIAL_REBALANCE_DELAY_MS
            )
            self.agent = AgentThread(self.log, agent_config).start()
        self.stop = threading.Event()
        group = f"idle-{uuid.uuid4().hex[:8]}"
        self.thread = threading.Thread(target=self._run(client, topic, group), daemon=True)
        self.thread.start()

    def _run(self, client: str, topic: str, group: str) -> Callable[[], None]:
        address = self.agent.address if self.agent is not None else ""

        def library() -> None:
            with self.log.consumer(group=group, topics=[topic]) as consumer:
                while not self.stop.is_set():
                    consumer.poll(0.5)

        def confluent(protocol: str) -> Callable[[], None]:
            def run() -> None:
                from confluent_kafka import Consumer

                settings = {"bootstrap.servers": address, "group.id": group}
                if protocol == "consumer":
                    settings["group.protocol"] = "consumer"
                consumer = Consumer(settings)
                consumer.subscribe([topic])
                while not self.stop.is_set():
                    consumer.poll(0.5)
                consumer.close()

            return run

        def kafka_python() -> None:
            from kafka import KafkaConsumer

            consumer = KafkaConsumer(topic, bootstrap_servers=address, group_id=group)
            while not self.stop.is_set():
                consumer.poll(timeout_ms=500)
            consumer.close()

        return {
            "library": library,
            "confluent-kafka classic": confluent("classic"),
            "confluent-kafka KIP-848": confluent("consumer"),
            "kafka-python": kafka_python,
        }[client]

    def take(self) -> tuple[Counter[str], Counter[str]]:
        return self.meter.take().counts, self.items.take()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=15)
        if self.agent is not None:
            self.agent.stop()
        self.log.close()


def monthly_usd(items: Counter[str], kind: str, seconds: float) -> float:
    """Items written and read (each within a unit: small group items) at list prices."""
    writes = sum(n for k, n in items.items() if kind in k and k.split()[0] in WRITES)
    reads = sum(n for k, n in items.items() if kind in k and k.split()[0] not in WRITES)
    per_second = (writes * WRITE_UNIT_USD + reads * READ_UNIT_USD) / seconds
    return per_second * SECONDS_PER_MONTH


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60, help="counted, after the warm-up")
    parser.add_argument("--warm-up", type=float, default=20, help="joins and first commits")
    parser.add_argument(
        "--clients", nargs="+", choices=CLIENTS, default=list(CLIENTS), help="which to run"
    )
    add_endpoint_argument(parser)
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    report = Report()
    with embedded_endpoint(args.dynamodb) as endpoint:
        report.endpoint(endpoint.description)
        suffix = uuid.uuid4().hex[:10]
        config = bench_config(endpoint, f"bench-{suffix}", f"bench-{suffix}")
        with ObjectLog(config) as setup:
            setup.ensure_resources()
            topic = f"idle-{suffix}"
            setup.create_topic(topic, partitions=PARTITIONS)
        console.print(
            f"client: Python {sys.version.split()[0]}, {os.cpu_count()} CPUs shared with the "
            f"endpoint, {len(args.clients) * 2} logs and agents; load "
            f"average {os.getloadavg()[0]:.1f} at the start"
        )
        sides: dict[tuple[str, str], Side] = {}
        for client in args.clients:  # before and after started together, the order flipped
            for when in ("before", "after") if len(sides) % 4 == 0 else ("after", "before"):
                sides[(client, when)] = Side(config, topic, client, remember=when == "after")
        try:
            time.sleep(args.warm_up)
            for side in sides.values():
                side.take()
            started = time.monotonic()
            time.sleep(args.seconds)
            counted = {key: side.take() for key, side in sides.items()}
            seconds = time.monotonic() - started
            load = os.getloadavg()[0]
            skipped = {key: side.log.groups.unchanged.skipped for key, side in sides.items()}
        finally:
            for side in sides.values():
                side.close()
    section = Section(
        f"a waiting member's group requests at client defaults, 64 partitions, "
        f"{seconds:.0f} s (load average {load:.1f} at the end)",
        (
            "client",
            "before/after",
            "group writes/s",
            "group item reads/s",
            "$ a month (group)",
            "all AWS requests/s (fetch too)",
            "commits skipped",
        ),
    )
    for (client, when), (requests, items) in sorted(counted.items()):
        group: Counter[str] = Counter()
        for k, n in items.items():
            if "group" in k:
                group[k.split()[0]] += n
        group_writes = sum(n for k, n in group.items() if k in WRITES)
        section.rows.append(
            (
                client,
                when,
                f"{group_writes / seconds:.2f}",
                f"{(sum(group.values()) - group_writes) / seconds:.2f}",
                f"{monthly_usd(items, 'group', seconds):.2f}",
                f"{sum(requests.values()) / seconds:.1f}",
                str(skipped[(client, when)]),
            )
        )
    report.sections.append(section)
    for (client, when), (_, items) in sorted(counted.items()):
        kinds = ", ".join(f"{k} {n / seconds:.2f}/s" for k, n in sorted(items.items()))
        report.note(f"{client} {when}: items by request and kind: {kinds}")
    report.note(
        "group items: member, offset and group items, a classic group's document; a write "
        "counted as one unit and a read as one strongly consistent unit (all under 1 KiB)"
    )
    report.print()


if __name__ == "__main__":
    main()
