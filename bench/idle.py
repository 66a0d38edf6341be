"""What a reader costs while nothing happens, and how soon it sees the first record after
(issue 38, item 1; docs/groups.md, "Waiting at the tail of a still topic").

    .venv/bin/python -m bench.idle                  # about 3.5 minutes
    .venv/bin/python -m bench.idle --seconds 20 --idle 20 --topics 5   # briefly

On the embedded endpoint (`objectlog dev` in its own process), requests counted by process:
every ObjectLog here has botocore hooks on its S3 and DynamoDB clients, so the library
consumer's requests and the in-process Kafka agent's are each counted apart from the
producer's, retries included.

1. **Cost at the tail of an idle topic** (64 partitions, nothing produced): side by side for
   ``--seconds``, a library ``Consumer`` in a group at its defaults (heartbeats, auto-commits),
   and a confluent-kafka consumer and a Java kafka-clients consumer (3.9, `make kafka-java`;
   left out, and said so, when its jars or Java are missing), each in a group at its defaults
   through an agent of its own in this process. Each one's reads and writes a second, in the
   whole window and in its steady part (after the first 15 s), and dollars a month at
   on-demand list prices (bench.run's), read units counted from the items returned: 1 per 4
   KiB strongly consistent, half eventually consistent; write units by the item put (1 per
   KiB started), 1 for an update (every item updated here is under 1 KiB).
2. **The first record after an idle spell**: ``--topics`` topics of 8 partitions, each read by
   every reader (one consumer of each kind subscribed to all), idle ``--idle`` seconds; then
   one record is produced to each, one every 1.5 s, and each reader's delay from the send to
   its poll() returning the record is taken (the Java consumer's: when the line it prints for
   the record arrives): p50 and worst per reader.

Runs on older trees too (no activity there): the "before" figures come from this file run
against a copy of the previous commit's lib/ with PYTHONPATH.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.report import Report, Row, console
from bench.run import DDB_RRU_PER_MILLION, DDB_WRU_PER_MILLION, S3_GET_PER_1000
from bench.server import add_endpoint_argument, embedded_endpoint, fresh_log
from objectlog import ObjectLog
from objectlog.adapters.dynamodb import item_from_dynamo, item_size
from objectlog.kafka.classic import DEV_INITIAL_REBALANCE_DELAY_MS
from objectlog.kafka.server import AgentConfig, AgentThread

SECONDS_PER_MONTH = 730 * 3600
PARTITIONS = 64
LATENCY_PARTITIONS = 8
STAGGER_S = 1.5
WARM_S = 15.0  # the steady part of a cost window starts this long after it opens
TARGET_USD = 2.0
WRITES = {"PutItem", "UpdateItem", "DeleteItem"}


class Counted:
    """One ObjectLog's requests, by second: DynamoDB read and write units by item kind, S3."""

    def __init__(self, log: ObjectLog) -> None:
        self._lock = threading.Lock()
        self.events: list[tuple[float, str, float, float]] = []  # (when, what, RRU, WRU)
        for client in (log.metadata.client, log.store.client):
            events = client.meta.events
            events.register("before-parameter-build.dynamodb", self._params)
            events.register("after-call.dynamodb", self._dynamodb)
            events.register("after-call.s3", self._s3)

    @staticmethod
    def _params(params: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
        tables = [t for t in params.get("RequestItems", {}).values() if isinstance(t, dict)]
        consistent = params.get("ConsistentRead") or any(t.get("ConsistentRead") for t in tables)
        context["idle-consistent"] = bool(consistent)  # BatchGetItem: per table
        keys = [params["Key"]] if "Key" in params else []
        for table in params.get("RequestItems", {}).values():
            keys += table.get("Keys", []) if isinstance(table, dict) else []
        context["idle-items"] = len(keys) or 1
        context["idle-kind"] = _kind(keys[0] if keys else {})
        if "Item" in params:  # a put: billed by the item's size
            size = item_size(item_from_dynamo(params["Item"]))
            context["idle-wru"] = float(max(1, math.ceil(size / 1024)))

    def _dynamodb(
        self, parsed: Mapping[str, Any], model: Any, context: Mapping[str, Any], **_: Any
    ) -> None:
        operation, rru, wru = model.name, 0.0, 0.0
        if operation in ("GetItem", "BatchGetItem"):
            items = [parsed["Item"]] if parsed.get("Item") else []
            for found in parsed.get("Responses", {}).values():
                items += found
            per_unit = 1.0 if context.get("idle-consistent") else 0.5
            # DynamoDB bills a read that finds nothing too: one unit for each missing item
            rru = sum(per_unit * math.ceil(item_size(item_from_dynamo(i)) / 4096) for i in items)
            rru += per_unit * max(0, context.get("idle-items", 1) - len(items))
        elif operation in WRITES:
            wru = context.get("idle-wru", 1.0)
        elif operation in ("BatchWriteItem", "TransactWriteItems"):
            wru = float(context.get("idle-items", 1)) * (2 if "Transact" in operation else 1)
        kind = f"{operation} {context.get('idle-kind', '')}".strip()
        with self._lock:
            self.events.append((time.monotonic(), kind, rru, wru))

    def _s3(self, model: Any, **_: Any) -> None:
        with self._lock:
            self.events.append((time.monotonic(), f"S3 {model.name}", 0.0, 0.0))

    def window(
        self, start: float, end: float
    ) -> tuple[Counter[str], dict[str, float], float, float, int]:
        """Requests by kind, units (read or write) by kind, read units, write units and S3
        GETs in [start, end)."""
        kinds: Counter[str] = Counter()
        units: dict[str, float] = {}
        rru = wru = 0.0
        gets = 0
        with self._lock:
            for at, kind, r, w in self.events:
                if start <= at < end:
                    kinds[kind] += 1
                    units[kind] = units.get(kind, 0.0) + r + w
                    rru, wru = rru + r, wru + w
                    gets += kind == "S3 GetObject"
        return kinds, units, rru, wru, gets


def _kind(key: Mapping[str, Any]) -> str:
    pk = str(key.get("pk", {}).get("S", "")) if key else ""
    for prefix, name in (("part#", "heads"), ("activity#", "activity"), ("group#", "group")):
        if pk.startswith(prefix):
            return name
    return pk.split("#", 1)[0] or ""


def dollars_a_month(rru: float, wru: float, gets: int, seconds: float) -> float:
    per_s = (
        rru * DDB_RRU_PER_MILLION / 1e6
        + wru * DDB_WRU_PER_MILLION / 1e6
        + gets * S3_GET_PER_1000 / 1000
    )
    return per_s / seconds * SECONDS_PER_MONTH


class LibraryReader:
    """A library Consumer in a group at its defaults, polling on a thread of its own."""

    def __init__(self, config: Any, topics: list[str], group: str) -> None:
        self.log = ObjectLog(config)
        self.counted = Counted(self.log)
        self.consumer = self.log.consumer(group=group, topics=topics)
        self.arrivals: dict[str, float] = {}
        self.assigned = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for record in self.consumer.poll(0.5):
                self.arrivals.setdefault(record.topic, time.monotonic())
            if self.consumer.assignment():
                self.assigned.set()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.consumer.close()
        self.log.close()


class KafkaReader:
    """A confluent-kafka consumer in a group at its defaults, through an agent of its own in
    this process (the agent's ObjectLog counted)."""

    def __init__(self, config: Any, topics: list[str], group: str, expected: int) -> None:
        self.log = ObjectLog(config)
        self.counted = Counted(self.log)
        agent_config = AgentConfig(
            port=0, initial_rebalance_delay_ms=DEV_INITIAL_REBALANCE_DELAY_MS
        )
        self.agent = AgentThread(self.log, agent_config).start()
        self.expected = expected
        self.arrivals: dict[str, float] = {}
        self.assigned = threading.Event()
        self._stop = threading.Event()
        self._start(topics, group)

    def _start(self, topics: list[str], group: str) -> None:
        import confluent_kafka

        self.consumer = confluent_kafka.Consumer(
            {"bootstrap.servers": self.agent.address, "group.id": group}
        )
        self.consumer.subscribe(topics)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            message = self.consumer.poll(0.5)
            if message is not None and message.error() is None:
                self.arrivals.setdefault(message.topic(), time.monotonic())
            if len(self.consumer.assignment()) >= self.expected:
                self.assigned.set()

    @property
    def watcher_reads(self) -> int:
        handlers = self.agent.agent.handlers
        return handlers.fetching.watcher.reads if handlers is not None else 0

    def _close_client(self) -> None:
        self._thread.join(timeout=30)
        self.consumer.close()

    def stop(self) -> None:
        self._stop.set()
        self._close_client()
        self.agent.stop()
        self.log.close()


JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "IdleConsumer.java"


def java_missing() -> str | None:
    """Why the Java consumer cannot run here, or None."""
    from tests.java_programs import JARS  # where `make kafka-java` puts the jars

    if shutil.which("java") is None or shutil.which("javac") is None:
        return "Java 17 is not installed"
    if not (JARS / "kafka-clients.jar").exists():
        return f"kafka-clients.jar is not in {JARS}: run `make kafka-java`"
    return None


class JavaReader(KafkaReader):
    """Kafka's Java consumer (bench/java/IdleConsumer.java) in a group at its defaults, through
    an agent of its own in this process, compiled and run as tests.java_programs does; the
    time each line it prints arrives is taken."""

    def _start(self, topics: list[str], group: str) -> None:
        from tests.java_programs import JARS

        self._classes = tempfile.mkdtemp(prefix="idle-java-")
        subprocess.run(
            ["javac", "-cp", f"{JARS}/*", "-d", self._classes, str(JAVA_SOURCE)],
            check=True,
            capture_output=True,
            timeout=120,
        )
        self._process = subprocess.Popen(
            [
                "java",
                "-cp",
                f"{self._classes}:{JARS}/*",
                "IdleConsumer",
                self.agent.address,
                group,
                *topics,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self._thread = threading.Thread(target=self._read_lines, daemon=True)
        self._thread.start()

    def _read_lines(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            kind, _, rest = line.strip().partition(" ")
            if kind == "record":
                self.arrivals.setdefault(rest, time.monotonic())
            elif kind == "assigned" and int(rest) >= self.expected:
                self.assigned.set()

    def _close_client(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()  # it leaves the group and exits
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
        self._thread.join(timeout=5)
        shutil.rmtree(self._classes, ignore_errors=True)


Reader = LibraryReader | KafkaReader


def readers(config: Any, topics: list[str], group: str, partitions: int) -> dict[str, Reader]:
    """One reader of each kind, each in a group of its own (the Java one when it can run)."""
    made: dict[str, Reader] = {
        "library Consumer, group, defaults": LibraryReader(config, topics, f"lib-{group}"),
        "confluent-kafka via the agent (the agent)": KafkaReader(
            config, topics, f"kafka-{group}", partitions
        ),
    }
    if java_missing() is None:
        made["Java kafka-clients via the agent (the agent)"] = JavaReader(
            config, topics, f"java-{group}", partitions
        )
    return made


def wait_assigned(*waiting: Reader, timeout: float = 120.0) -> None:
    for reader in waiting:
        if not reader.assigned.wait(timeout):
            raise RuntimeError(f"{type(reader).__name__} was not assigned within {timeout} s")


def cost(report: Report, config: Any, setup: ObjectLog, seconds: float) -> None:
    topic = f"idle-{uuid.uuid4().hex[:8]}"
    setup.create_topic(topic, partitions=PARTITIONS)
    sides = readers(config, [topic], topic, PARTITIONS)
    agents = {name: r for name, r in sides.items() if isinstance(r, KafkaReader)}
    try:
        wait_assigned(*sides.values())
        time.sleep(2.0)  # positions taken: the tail from here on
        opened = time.monotonic()
        watched = {name: r.watcher_reads for name, r in agents.items()}
        time.sleep(seconds)
        closed = time.monotonic()
        watched = {name: r.watcher_reads - watched[name] for name, r in agents.items()}
    finally:
        for reader in sides.values():
            reader.stop()
    section = report.section(
        f"cost at the tail of an idle {PARTITIONS}-partition topic, {seconds:.0f} s "
        f"(steady: after the first {WARM_S:.0f} s)",
        "reader (process counted)",
        "window",
        "reads/s",
        "read units/s",
        "writes/s",
        "USD a month",
        "requests by kind per s (their units per s)",
    )
    for name, counted in ((name, reader.counted) for name, reader in sides.items()):
        warm = min(WARM_S, seconds / 2)  # a brief run keeps half its window as steady
        for label, start in (("whole", opened), ("steady", opened + warm)):
            span = closed - start
            kinds, units, rru, wru, gets = counted.window(start, closed)
            reads = sum(v for k, v in kinds.items() if k.startswith(("GetItem", "BatchGetItem")))
            writes = sum(v for k, v in kinds.items() if k.split(" ")[0] in WRITES)
            usd = dollars_a_month(rru, wru, gets, span)
            by_kind = ", ".join(
                f"{k} {kinds[k] / span:.2f} ({u / span:.2f} u)"
                for k, u in sorted(units.items(), key=lambda i: -i[1])[:6]
            )
            section.rows.append(
                (
                    name,
                    label,
                    f"{reads / span:.2f}",
                    f"{rru / span:.2f}",
                    f"{writes / span:.2f}",
                    f"{usd:.2f}",
                    by_kind,
                )
            )
            if label == "steady":
                report.add(
                    Row(
                        f"idle cost: {name}",
                        usd,
                        "USD/month",
                        TARGET_USD,
                        "the target",
                        target=f"<= {TARGET_USD:.0f}",
                        passed=usd <= TARGET_USD,
                    )
                )
    for name, reads in watched.items():
        report.note(
            f"{name}: its head watcher made {reads} head reads (BatchGetItem) in the "
            f"{seconds:.0f} s window; the agent's other head reads are its fetches' own"
        )
    if (missing := java_missing()) is not None:
        report.note(f"the Java consumer was left out: {missing}")


def latency(report: Report, config: Any, setup: ObjectLog, topics: int, idle_s: float) -> None:
    names = [f"spell-{uuid.uuid4().hex[:8]}" for _ in range(topics)]
    for name in names:
        setup.create_topic(name, partitions=LATENCY_PARTITIONS)
    sides = readers(config, names, names[0], topics * LATENCY_PARTITIONS)
    producer = setup.producer()
    sent: dict[str, float] = {}
    produce_s: list[float] = []
    try:
        wait_assigned(*sides.values())
        console.print(f"  readers assigned; {idle_s:.0f} s idle, then {topics} records")
        time.sleep(idle_s)
        for name in names:
            started = time.monotonic()
            producer.send(name, value=b"after the idle spell")
            producer.flush()
            sent[name] = started
            produce_s.append(time.monotonic() - started)
            time.sleep(STAGGER_S)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(
            len(reader.arrivals) < topics for reader in sides.values()
        ):
            time.sleep(0.2)
    finally:
        for reader in sides.values():
            reader.stop()
    section = report.section(
        f"the first record after {idle_s:.0f} s idle, {topics} topics (send to poll())",
        "reader",
        "p50 s",
        "worst s",
        "records seen",
    )
    for name, reader in sides.items():
        name, target = name.split(",")[0].removesuffix(" (the agent)"), 1.0
        delays = sorted(reader.arrivals[t] - sent[t] for t in names if t in reader.arrivals)
        missing = topics - len(delays)
        worst = delays[-1] if delays and not missing else float("inf")
        p50 = statistics.median(delays) if delays else float("inf")
        section.rows.append((name, f"{p50:.2f}", f"{worst:.2f}", f"{len(delays)}/{topics}"))
        report.add(
            Row(
                f"first record after idle, p50: {name}",
                p50,
                "s",
                target,
                "the target",
                target=f"<= {target:.0f} s",
                passed=p50 <= target,
            )
        )
        report.add(
            Row(
                f"first record after idle, worst: {name}",
                worst,
                "s",
                2.0,
                "the target",
                target="<= 2 s",
                passed=worst <= 2.0,
            )
        )
    report.note(
        f"the produce itself (send + flush) took {statistics.median(produce_s):.2f} s "
        f"(median), part of each delay"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--seconds",
        type=float,
        default=75.0,
        help="the cost window (its steady part, after 15 s, holds one of the idle partitions' "
        "60 s fallback head reads)",
    )
    parser.add_argument("--idle", type=float, default=60.0, help="each spell's idle seconds")
    parser.add_argument("--topics", type=int, default=20, help="idle spells (one per topic)")
    add_endpoint_argument(parser)
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    report = Report()
    began = time.perf_counter()
    load = os.getloadavg()
    with embedded_endpoint(args.dynamodb) as endpoint:
        report.endpoint(endpoint.description)
        idle_module = "objectlog.services.activity"
        try:
            __import__(idle_module)
            report.header("tree: with the activity item (services.activity)")
        except ImportError:
            report.header("tree: without the activity item (before)")
        config, setup = fresh_log(endpoint)
        try:
            cost(report, config, setup, args.seconds)
            latency(report, config, setup, args.topics, args.idle)
        finally:
            setup.close()
    report.load_note(load)
    report.note(f"run took {time.perf_counter() - began:.0f} s")
    report.print()


if __name__ == "__main__":
    main()
