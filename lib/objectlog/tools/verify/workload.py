"""The reliability workload (Jepsen's Kafka workload, on objectlog): run it, then check it.

Against one deployment's S3 and DynamoDB endpoints (the embedded moto server by default), for a
bounded number of produce operations or seconds, concurrently:

- producers, each with its own clients: direct with idempotence, direct without, one
  through the HTTP API (the local gateway running the produce function's handler), and an
  idempotent confluent-kafka producer through the Kafka agent (objectlog.kafka, whose own S3
  and DynamoDB calls get the faults), sending records with unique values to random partitions
  and recording what each send was told;
- a consumer group whose members poll, process (record) and commit, and now and then crash
  (abandoned, their lease lapses) or leave and rejoin; a second group of kafka-python
  members, classic protocol, through the Kafka agent, doing the same; and a third of REST Proxy
  consumer instances through the HTTP API (/kafka/consumers), which crash by going idle until
  the instance times out;
- asyncio members (tools.verify.aio_members), on an event loop of their own: an idempotent
  AIOProducer sending keyed records, and AIOConsumer members of the same group as the
  threaded members, which crash (their task cancelled) or stop and start again;
- two compactors with skewed clocks, compacting and collecting garbage in a loop;
- a consume-transform-produce member (txn_pipeline): a read_committed group member of the
  workload's topic and a transactional producer, through the Kafka agent, writing one output
  per input to a topic of its own in transactions that commit with the group's offsets, abort
  on purpose now and then, or crash mid-transaction;
- a monitor sampling the groups' committed offsets and the output topic's last stable offsets.

Faults, each switchable and counted (FAULT_KINDS), are botocore event hooks on the workers'
own clients and a wrapper on the gateway's produce function. After the run the producers and
compactors stop, the group drains to the high watermark, garbage is collected once more, and a
client with no faults reads every partition (the output topic read_committed and
read_uncommitted): ``checker.check`` finds the anomalies (txn_checker's among them).
"""

from __future__ import annotations

import base64
import contextlib
import json
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from objectlog.clients.consumer import Consumer
from objectlog.clients.contract import LogClient
from objectlog.clients.direct import ObjectLog
from objectlog.clock import SystemClock
from objectlog.compaction.compactor import CompactionSettings
from objectlog.compaction.maintenance import collector_for, run_maintenance
from objectlog.config import Config
from objectlog.errors import CommitFailed, ObjectLogError
from objectlog.groups import TopicPartition
from objectlog.tools.gateway import LocalGateway, local_api
from objectlog.tools.verify.aio_members import AIOMembers, Plan
from objectlog.tools.verify.kafka_trail import MEMBER_LOG, KafkaClientTrail
from objectlog.tools.verify.threads import guarded_thread
from objectlog.tools.verify.txn_pipeline import (
    TXN_GROUP,
    TXN_TOPIC,
    TxnMember,
    read_final,
    sample_stable,
)

if TYPE_CHECKING:
    from objectlog.kafka.server import AgentThread
from objectlog.tools.verify.checker import FinalState, Verdict, check, read_partition
from objectlog.tools.verify.faults import FaultInjector, InjectedCrash, commits, swaps
from objectlog.tools.verify.history import (
    OK,
    UNKNOWN,
    CommittedSample,
    History,
    Poll,
    Produce,
)

TOPIC = "verify"
GROUP = "verify-group"
FAULT_KINDS = (
    "s3-503",
    "s3-500",
    "dynamodb-throttle",
    "lost-answer",
    "sdk-lost-answer",
    "crash-before-commit",
    "lost-reply-retry",
    "slow-call",
    "paused-producer",
    "paused-lease-holder",
    "compactor-killed",
    "clock-skew",
)
CLIENTS = ("direct-idempotent", "direct-idempotent-2", "direct", "http", "kafka-idempotent")
KAFKA_DELIVERY_TIMEOUT_MS = 60_000
KAFKA_GROUP = "verify-kafka-group"  # classic-protocol members (kafka-python) through the agent
KAFKA_INITIAL_DELAY_MS = 500  # the agent's group.initial.rebalance.delay.ms: exercised, short
REST_GROUP = "verify-rest-group"  # REST Proxy consumer instances through the HTTP API
# "": GROUP, objectlog's own Consumer members; TXN_GROUP: the transactional pipeline's
GROUPS = ("", KAFKA_GROUP, REST_GROUP, TXN_GROUP)
REST_INSTANCE_TIMEOUT_MS = 3_000


@dataclass(frozen=True)
class WorkloadConfig:
    ops: int = 2_000  # produce operations (records sent), at least
    seconds: float = 120.0  # at most (the run stops at whichever comes first)
    partitions: int = 4
    # threaded members of objectlog's group; with the asyncio members, 3 in all: a fourth
    # member polling at the tail cost the short run 40% more time on two cores
    members: int = 2
    kafka_members: int = 2
    rest_members: int = 1
    txn_members: int = 1  # consume-transform-produce members (txn_pipeline)
    txn_partitions: int = 3  # of their output topic
    aio_producers: int = 1  # asyncio producers (aio_members), idempotent
    aio_members: int = 1  # asyncio members of the group, beside the threaded ones
    seed: int = 0
    faults: frozenset[str] = frozenset(FAULT_KINDS)
    share: float = 0.05  # of matching calls, per fault kind
    session_timeout_ms: int = 1_500
    gc_min_age_ms: int = 1_000
    delete_grace_ms: int = 500
    lease_ttl_ms: int = 1_000
    skew_ms: int = 300
    read_timeout_s: float = 2.0


@dataclass
class WorkloadResult:
    config: WorkloadConfig
    history: History
    verdict: Verdict
    faults: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    kafka_trail: list[str] = field(default_factory=list)  # tools.verify.kafka_trail

    @property
    def outcomes(self) -> Counter[tuple[str, str]]:
        return Counter((op.client, op.outcome) for op in self.history.produces)


class SkewedClock:
    """The system clock, off by a fixed number of milliseconds (a lease holder's bad clock)."""

    def __init__(self, skew_ms: int) -> None:
        self.skew_ms = skew_ms

    def now_ms(self) -> int:
        return SystemClock().now_ms() + self.skew_ms


# While the groups drain, the library's and REST Proxy members read this many times more per
# poll, as a client catching up would: a poll costs the same few requests whatever it returns.
DRAIN_READ_SCALE = 8


def l1_or_index_puts(params: Any) -> bool:
    key = str(params.get("Key", ""))
    return "/partition=" in key or "/m-" in key or "/l-" in key


def run_workload(config: WorkloadConfig, aws: Config | None = None) -> WorkloadResult:
    """Run the workload against aws's S3 and DynamoDB endpoints (an embedded moto server when
    None; the bucket and table are the workload's own); check it."""
    with contextlib.ExitStack() as stack:
        if aws is None:
            from objectlog.tools.embedded import EmbeddedAWS

            endpoint = stack.enter_context(EmbeddedAWS(port=0)).endpoint_url
            aws = Config.from_env(s3_endpoint=endpoint, dynamodb_endpoint=endpoint)
        return Workload(config, aws).run()


class Workload:
    def __init__(self, config: WorkloadConfig, aws: Config) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        suffix = uuid.uuid4().hex[:10]
        self.log_config = replace(
            aws,
            bucket=f"verify-{suffix}",
            table=f"verify-{suffix}",
            read_timeout_s=config.read_timeout_s,
            delete_grace_ms=config.delete_grace_ms,
        )
        self.history = History()
        self.faults = FaultInjector(config.seed)
        self.stop_producing = threading.Event()
        self.stop_compacting = threading.Event()
        self.stop_consuming = threading.Event()
        self.logs: list[ObjectLog] = []
        self.errors: list[BaseException] = []
        self.sent = 0
        self._sent_lock = threading.Lock()
        sizes = (
            config.members + config.aio_members,
            config.kafka_members,
            config.rest_members,
            config.txn_members,
        )
        self.groups = tuple(g for g, size in zip(GROUPS, sizes, strict=True) if size)

    # ---- the run -----------------------------------------------------------------------

    def run(self) -> WorkloadResult:
        started = time.monotonic()
        admin = self._log(faults=False)
        admin.ensure_resources()
        admin.create_topic(TOPIC, partitions=self.config.partitions)
        if self.config.txn_members:
            admin.create_topic(TXN_TOPIC, partitions=self.config.txn_partitions)
        gateway = self._gateway()
        agent = self._agent()
        trail = KafkaClientTrail()
        try:
            with trail:
                self._run_threads(gateway, agent.address, started)
        finally:
            agent.stop()
            gateway.stop()
            self.faults.remove()
        self.history.count("compaction swaps", self.faults.counts["call:UpdateItem"])
        final = self._final_state(admin)
        result = WorkloadResult(
            self.config,
            self.history,
            check(self.history, final),
            Counter({kind: n for kind, n in self._fault_counts().items()}),
            time.monotonic() - started,
            list(trail.lines),
        )
        for log in self.logs:
            log.close()
        if self.errors:
            raise self.errors[0]
        return result

    def _run_threads(self, gateway: LocalGateway, kafka: str, started: float) -> None:
        self.kafka_address = kafka
        producers = [
            self._thread(self._produce_kafka, client, kafka)
            if client.startswith("kafka")
            else self._thread(self._produce, client, gateway)
            for client in CLIENTS
        ]
        compactors = [self._thread(self._compact, skew) for skew in (0, self.config.skew_ms)]
        members = [self._thread(self._consume, i) for i in range(self.config.members)]
        members += [
            self._thread(self._consume_kafka, i, kafka) for i in range(self.config.kafka_members)
        ]
        members += [
            self._thread(self._consume_rest, i, gateway.url)  # type: ignore[attr-defined]
            for i in range(self.config.rest_members)
        ]
        members += [self._thread(self._transform, i, kafka) for i in range(self.config.txn_members)]
        aio = self._aio_members()
        if aio is not None:
            members.append(self._thread(aio.run))
        monitor = self._thread(self._monitor)
        deadline = started + self.config.seconds
        while self.sent < self.config.ops and time.monotonic() < deadline and not self.errors:
            time.sleep(0.1)
        self.stop_producing.set()
        for thread in producers:
            thread.join()
        if aio is not None:
            aio.produced.wait()
        # The compactors end their last round (up to 8 s: a paused swap holds twice the lease)
        # while the groups drain; both are done before the final read.
        self.stop_compacting.set()
        self._drain()
        self.stop_consuming.set()
        for thread in [*compactors, *members, monitor]:
            thread.join()

    def _thread(self, target: Callable[..., None], *args: Any) -> threading.Thread:
        return guarded_thread(self.errors, f"verify-{target.__name__}", target, *args)

    def _aio_members(self) -> AIOMembers | None:
        config = self.config
        if not config.aio_producers and not config.aio_members:
            return None
        plan = Plan(
            TOPIC,
            GROUP,
            config.partitions,
            config.aio_producers,
            config.aio_members,
            config.seed,
            config.session_timeout_ms,
            DRAIN_READ_SCALE,
        )
        return AIOMembers(self, plan)

    def add_sent(self, n: int) -> None:
        with self._sent_lock:
            self.sent += n

    # ---- logs and faults ---------------------------------------------------------------

    def _log(self, *, faults: bool, clock: Any = None, role: str = "") -> ObjectLog:
        log = ObjectLog(self.log_config, clock=clock)
        self.logs.append(log)
        if faults:
            self.inject(log, role)
        return log

    def _on(self, kind: str) -> bool:
        return kind in self.config.faults

    def inject(self, log: ObjectLog, role: str) -> None:
        """The faults of the run's kinds for a worker's role, on its log's S3 and DynamoDB
        clients (botocore's, or an asyncio member's aiobotocore ones)."""
        s3, dynamodb, share = log.store.client, log.metadata.client, self.config.share  # type: ignore[attr-defined]
        f = self.faults
        if self._on("s3-503"):
            for op in ("PutObject", "GetObject"):
                f.throttle(s3, op, share=share)
        if self._on("s3-500"):
            for op in ("PutObject", "GetObject"):
                f.server_error(s3, op, share=share)
        if self._on("dynamodb-throttle"):
            for op in ("UpdateItem", "GetItem", "BatchGetItem", "PutItem"):
                f.throttle(dynamodb, op, share=share)
        if self._on("lost-answer"):
            f.lose_answer(s3, "PutObject", share=share)
            f.lose_answer(dynamodb, "UpdateItem", share=share)
        if self._on("sdk-lost-answer"):
            f.lose_answer_in_sdk(s3, "PutObject", share=share)
            f.lose_answer_in_sdk(dynamodb, "UpdateItem", share=share)
        if self._on("slow-call"):
            f.slow_answer(dynamodb, "UpdateItem", self.config.read_timeout_s + 0.2, share=share / 5)
        if role == "producer" and self._on("crash-before-commit"):
            f.crash_before(dynamodb, "UpdateItem", share=share, when=commits)
        if role == "paused-producer" and self._on("paused-producer"):
            pause_s = (self.config.gc_min_age_ms + 800) / 1000
            f.delay(dynamodb, "UpdateItem", pause_s, share=0.1, when=commits)
        if role == "compactor" and self._on("compactor-killed"):
            # Three times the share: a compactor makes few PUTs (a spill writes one object since
            # issue 18), and a run must see this fault at least once.
            f.crash_before(s3, "PutObject", share=3 * share, when=l1_or_index_puts)
        if role == "compactor":
            f.watch(dynamodb, "UpdateItem", when=swaps)
        if role == "compactor" and self._on("paused-lease-holder"):
            # A compactor's first swap always pauses, later ones at a share: killed compactors
            # make few swaps, and a run must see this fault at least once.
            hold_s = self.config.lease_ttl_ms * 2 / 1000
            first = f.pause(dynamodb, "UpdateItem", when=swaps, hold_s=hold_s)
            f.pause(
                dynamodb,
                "UpdateItem",
                share=0.2,
                times=None,
                when=lambda params: first.injected > 0 and swaps(params),
                hold_s=hold_s,
            )

    def _fault_counts(self) -> Counter[str]:
        by_kind: Counter[str] = Counter()
        prefixes = {
            "throttle:PutObject": "s3-503",
            "throttle:GetObject": "s3-503",
            "5xx:": "s3-500",
            "throttle:": "dynamodb-throttle",
            "lost-answer:": "lost-answer",
            "sdk-lost-answer:": "sdk-lost-answer",
            "slow:": "slow-call",
            "crash:UpdateItem": "crash-before-commit",
            "crash:PutObject": "compactor-killed",
            "delay:": "paused-producer",
            "pause:": "paused-lease-holder",
        }
        for name, n in self.faults.counts.items():
            if name.startswith("call:"):  # watched, not injected
                continue
            kind = next(k for prefix, k in prefixes.items() if name.startswith(prefix))
            by_kind[kind] += n
        by_kind["lost-reply-retry"] += self.history.events["lost reply"]
        by_kind["clock-skew"] += self.history.events["skewed compactor runs"]
        return by_kind

    def _gateway(self) -> LocalGateway:
        from objectlog.http.routes import PRODUCE

        served = self._log(faults=True, role="producer")
        gateway = local_api(lambda: served)
        if self._on("lost-reply-retry"):
            handler = gateway.targets[PRODUCE]
            rng = random.Random(self.config.seed + 1)

            def reply_lost(event: dict[str, Any], context: Any) -> dict[str, Any]:
                result = handler(event, context)  # committed; the reply never reaches the client
                if result.get("statusCode") == 200 and rng.random() < self.config.share * 2:
                    self.history.count("lost reply")
                    return {"statusCode": 502, "body": '{"message": "Internal Server Error"}'}
                return result

            gateway.targets[PRODUCE] = reply_lost
        gateway.url = gateway.start(port=0)  # type: ignore[attr-defined]
        return gateway

    def _agent(self) -> AgentThread:
        """A Kafka agent whose own S3 and DynamoDB calls get the producers' faults; a group
        that empties waits a short initial delay (its members' rebalance timeout is short)."""
        from objectlog.kafka.server import AgentConfig, AgentThread

        config = AgentConfig(port=0, initial_rebalance_delay_ms=KAFKA_INITIAL_DELAY_MS)
        return AgentThread(self._log(faults=True, role="producer"), config).start()

    # ---- workers -----------------------------------------------------------------------

    def _produce(self, client: str, gateway: LocalGateway) -> None:
        rng = random.Random(f"{self.config.seed}-{client}")
        log: LogClient
        if client == "http":
            log = ObjectLog.connect(api_url=gateway.url)  # type: ignore[attr-defined]
        else:
            role = "paused-producer" if client == "direct-idempotent-2" else "producer"
            log = self._log(faults=True, role=role)
        producer = log.producer(linger_ms=0, enable_idempotence=client != "direct")
        n = 0
        try:
            while not self.stop_producing.is_set():
                batch = []
                for _ in range(rng.randint(4, 24)):
                    value = f"{client}-{n}".encode()
                    partition = rng.randrange(self.config.partitions)
                    batch.append(
                        (partition, value, producer.send(TOPIC, value, partition=partition))
                    )
                    n += 1
                producer.flush()
                for partition, value, future in batch:
                    self.history.add_produce(Produce.of(client, partition, value, future))
                self.add_sent(len(batch))
        finally:
            producer.close()
            if client == "http":
                log.close()

    def _produce_kafka(self, client: str, address: str) -> None:
        """An idempotent confluent-kafka producer through the agent: it retries what the
        agent answers with a retriable error, and must neither lose nor duplicate."""
        import confluent_kafka

        rng = random.Random(f"{self.config.seed}-{client}")
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": address,
                "enable.idempotence": True,
                "linger.ms": 1,
                "message.timeout.ms": KAFKA_DELIVERY_TIMEOUT_MS,
                "retry.backoff.ms": 20,
            }
        )
        told: dict[bytes | None, Any] = {}  # value -> (error, offset), from delivery reports

        def report(error: Any, message: Any) -> None:
            told[message.value()] = (error, message.offset())

        n = 0
        while not self.stop_producing.is_set():
            sent: list[tuple[int, bytes]] = []
            for _ in range(rng.randint(4, 24)):
                value = f"{client}-{n}".encode()
                partition = rng.randrange(self.config.partitions)
                producer.produce(
                    TOPIC,
                    value,
                    partition=partition,
                    on_delivery=report,
                )
                sent.append((partition, value))
                n += 1
            producer.flush(KAFKA_DELIVERY_TIMEOUT_MS / 1000 + 10)
            for partition, value in sent:
                outcome = _kafka_outcome(client, partition, value, told.pop(value, None))
                self.history.add_produce(outcome)
            self.add_sent(len(sent))
        producer.flush(30)

    @property
    def _topics(self) -> list[str]:
        return [TOPIC, TXN_TOPIC] if self.config.txn_members else [TOPIC]

    def _compact(self, skew_ms: int) -> None:
        clock = SkewedClock(skew_ms) if skew_ms and self._on("clock-skew") else None
        log = self._log(faults=True, clock=clock, role="compactor")
        settings = CompactionSettings(
            target_file_bytes=64 << 10,
            row_group_bytes=8 << 10,
            lease_ttl_ms=self.config.lease_ttl_ms,
        )
        while not self.stop_compacting.is_set():
            try:
                report = run_maintenance(
                    log, self._topics, settings=settings, gc_min_age_ms=self.config.gc_min_age_ms
                )
                self.history.count(
                    "compaction swaps refused (fenced or raced)",
                    sum(p.refused_swaps for p in report.partitions),
                )
                self.history.count(
                    "compactions fenced at the start",
                    sum(p.skipped == "fenced" for p in report.partitions),
                )
            except ObjectLogError as e:
                if isinstance(e.__cause__, InjectedCrash):
                    self.history.count("compactor killed")
                elif e.kind.retriable:
                    self.history.count("compactor retried")
                else:
                    raise
            if clock is not None:
                self.history.count("skewed compactor runs")
            time.sleep(0.1)

    def _transform(self, index: int, address: str) -> None:
        n = self.config.txn_partitions
        stopping, draining = self.stop_consuming, self.stop_producing
        TxnMember(
            index, address, TOPIC, n, self.history, draining, stopping, self.config.seed
        ).run()

    def _consume(self, index: int) -> None:
        rng = random.Random(f"{self.config.seed}-member-{index}")
        log = self._log(faults=True, role="member")
        while not self.stop_consuming.is_set():
            left = self._member_life(log, rng)
            self.history.count("member left" if left else "member crashed")

    def _member_life(self, log: ObjectLog, rng: random.Random) -> bool:
        """One member's life: poll, process, commit; ends in a crash (False: abandoned, its
        session lapses) or a clean leave (True)."""
        ownership = [0]
        this: list[Consumer] = []

        def moved(how: str) -> Callable[[set[TopicPartition]], None]:
            def note(partitions: set[TopicPartition]) -> None:
                ownership[0] += 1
                member = this[0].member_id if this else None
                numbers = sorted(tp.partition for tp in partitions)
                MEMBER_LOG.debug("objectlog member %s %s %s", member, how, numbers)

            return note

        consumer = log.consumer(
            group=GROUP,
            topics=[TOPIC],
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=self.config.session_timeout_ms,
            heartbeat_interval_ms=300,
            max_poll_records=rng.randint(5, 200),
            on_assign=moved("assigned"),
            on_revoke=moved("revoked"),
            on_lost=moved("lost"),
        )
        this.append(consumer)
        crash = rng.random() < 0.5 and not self.stop_producing.is_set()  # none while draining
        life = rng.randint(5, 40)  # polls before it crashes or leaves
        polls = 0
        # While the group drains, a member lives on, as the Kafka and REST Proxy members do.
        max_records = consumer.max_poll_records
        while not self.stop_consuming.is_set() and (polls < life or self.stop_producing.is_set()):
            draining = self.stop_producing.is_set()
            try:
                records = consumer.poll(
                    timeout=0.2, max_records=max_records * (DRAIN_READ_SCALE if draining else 1)
                )
            except ObjectLogError as e:
                if not e.kind.retriable:
                    raise
                continue
            polls += 1
            member = consumer.member_id or "?"
            if records:
                self.history.add_poll(
                    Poll(
                        member,
                        ownership[0],
                        tuple((r.partition, r.offset, r.value) for r in records),
                    )
                )
                with contextlib.suppress(CommitFailed, ObjectLogError):
                    consumer.commit()
        if crash and not self.stop_consuming.is_set():
            return False
        with contextlib.suppress(ObjectLogError):
            consumer.close()
        return True

    def _consume_kafka(self, index: int, address: str) -> None:
        rng = random.Random(f"{self.config.seed}-kafka-member-{index}")
        abandoned: list[Any] = []
        life = 0
        while not self.stop_consuming.is_set():
            life += 1
            left = self._kafka_member_life(address, rng, f"kafka-{index}-{life}", abandoned)
            self.history.count("kafka member left" if left else "kafka member crashed")
        for consumer in abandoned:
            with contextlib.suppress(Exception):
                consumer.close(autocommit=False)

    def _kafka_member_life(
        self, address: str, rng: random.Random, name: str, abandoned: list[Any]
    ) -> bool:
        """A kafka-python member's life: poll, process, commit; it crashes (stops polling:
        past max.poll.interval.ms its heartbeat thread leaves the group) or leaves cleanly."""
        from kafka import ConsumerRebalanceListener, KafkaConsumer
        from kafka.errors import KafkaError

        ownership = [0]
        consumers: list[Any] = []

        class Moved(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                ownership[0] += 1
                MEMBER_LOG.debug("%s revoked %s", name, sorted(tp.partition for tp in revoked))
                forget_positions(consumers[0])

            def on_partitions_assigned(self, assigned: Any) -> None:
                ownership[0] += 1
                MEMBER_LOG.debug("%s assigned %s", name, sorted(tp.partition for tp in assigned))
                forget_stale_offset_fetches(consumers[0])

        consumer = KafkaConsumer(
            bootstrap_servers=address,
            group_id=KAFKA_GROUP,
            client_id=name,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=3_000,
            heartbeat_interval_ms=300,
            max_poll_interval_ms=1_500,  # the rebalance timeout, and how soon a crash shows
            max_poll_records=rng.randint(5, 200),
        )
        consumers.append(consumer)
        consumer.subscribe([TOPIC], listener=Moved())
        learn_partitions_before_joining(consumer, TOPIC)
        crash = rng.random() < 0.5 and not self.stop_producing.is_set()  # none while draining
        life = rng.randint(5, 40)  # polls before it crashes or leaves
        polls = 0
        # While the group drains, a member lives on: a kafka-python rebalance takes seconds,
        # and members coming and going would make the drain, not the faults, the run's length.
        # It reads DRAIN_READ_SCALE times more per poll then, as objectlog's members do: this
        # group, through the agent, had the most left to read (most of the topic: 20 of a
        # run's 27 s of drain, reading 5-200 records a poll).
        max_records = consumer.config["max_poll_records"]
        while not self.stop_consuming.is_set() and (polls < life or self.stop_producing.is_set()):
            polls += 1
            scale = DRAIN_READ_SCALE if self.stop_producing.is_set() else 1
            try:
                polled = consumer.poll(timeout_ms=200, max_records=max_records * scale)
            except KafkaError:
                continue
            records = [r for batch in polled.values() for r in batch]
            if records:
                self.history.add_poll(
                    Poll(
                        name,
                        ownership[0],
                        tuple((r.partition, r.offset, r.value) for r in records),
                        group=KAFKA_GROUP,
                    )
                )
                with contextlib.suppress(KafkaError):
                    consumer.commit()
        if crash and not self.stop_consuming.is_set():
            abandoned.append(consumer)
            return False
        with contextlib.suppress(KafkaError):
            consumer.close()
        return True

    def _consume_rest(self, index: int, api: str) -> None:
        import requests

        rng = random.Random(f"{self.config.seed}-rest-member-{index}")
        documents = self._log(faults=False).items.documents
        with requests.Session() as session:
            life = 0
            while not self.stop_consuming.is_set():
                life += 1
                name = f"rest-{index}-{life}"
                # max_bytes as the other members' max_poll_records: reads of 5-200 records
                member = RestMember(session, api, name, documents, rng.randint(4_000, 64_000))
                left = self._rest_member_life(member, rng)
                self.history.count("rest member left" if left else "rest member crashed")

    def _rest_member_life(self, member: RestMember, rng: random.Random) -> bool:
        """A REST Proxy consumer instance's life: read, process, commit the offsets read; it
        crashes (goes idle: the instance times out and its session lapses) or is deleted."""
        try:
            member.start()
        except RestError:
            return False  # a fault in the create or subscribe: try again as a new instance
        crash = rng.random() < 0.5 and not self.stop_producing.is_set()
        life = rng.randint(5, 40)
        reads = 0
        while not self.stop_consuming.is_set() and (reads < life or self.stop_producing.is_set()):
            reads += 1
            try:
                records = member.read(DRAIN_READ_SCALE if self.stop_producing.is_set() else 1)
            except RestError:
                # The read may have moved the instance's positions past records it never
                # showed: start again from the group's committed offsets, as a careful
                # REST Proxy client does.
                self.history.count("rest member restarted after a failed read")
                with contextlib.suppress(RestError):
                    member.delete()
                return True
            if records:
                self.history.add_poll(
                    Poll(member.name, member.ownership, tuple(records), group=REST_GROUP)
                )
                with contextlib.suppress(RestError):  # fenced after a rebalance, or a fault
                    member.commit(records)
        if crash and not self.stop_consuming.is_set():
            return False
        with contextlib.suppress(RestError):
            member.delete()
        return True

    def _monitor(self) -> None:
        log = self._log(faults=False)
        partitions = [TopicPartition(TOPIC, p) for p in range(self.config.partitions)]
        while not self.stop_consuming.is_set():
            if self.config.txn_members:
                sample_stable(log, self.history, self.config.txn_partitions)
            for group in self.groups:
                found = log.groups.committed(group or GROUP, partitions)
                for tp, value in found.items():
                    if value is not None:
                        sample = CommittedSample(tp.partition, value.offset, group=group)
                        self.history.add_committed(sample)
            time.sleep(0.2)

    def _drain(self, timeout_s: float = 60.0) -> None:
        """Wait for both groups to commit up to every high watermark."""
        log = self._log(faults=False)
        deadline = time.monotonic() + timeout_s
        partitions = [TopicPartition(TOPIC, p) for p in range(self.config.partitions)]
        while time.monotonic() < deadline and not self.errors:
            ends = {tp: log.offsets(TOPIC, tp.partition).latest for tp in partitions}
            committed = [log.groups.committed(group or GROUP, partitions) for group in self.groups]
            if all(
                (value := found[tp]) is not None and value.offset >= ends[tp]
                for found in committed
                for tp in partitions
            ):
                return
            time.sleep(0.2)

    # ---- the end -----------------------------------------------------------------------

    def _final_state(self, admin: ObjectLog) -> FinalState:
        collector = collector_for(admin, self.config.gc_min_age_ms)
        gc = collector.run()
        partitions, log_start, high_watermark = {}, {}, {}
        for p in range(self.config.partitions):
            bounds = admin.offsets(TOPIC, p)
            log_start[p], high_watermark[p] = bounds.earliest, bounds.latest
            partitions[p], _ = read_partition(admin, TOPIC, p, bounds.earliest, max_bytes=1 << 20)
        tps = [TopicPartition(TOPIC, p) for p in range(self.config.partitions)]
        committed = {
            group: {
                tp.partition: v.offset
                for tp, v in admin.groups.committed(group or GROUP, tps).items()
                if v is not None
            }
            for group in self.groups
        }
        stale = collector.stale_objects(gc.horizon_ms)
        other_groups = {g: offsets for g, offsets in committed.items() if g}
        transactions = None
        if self.config.txn_members:
            transactions = read_final(
                admin, self.config.txn_partitions, dict(committed.get(TXN_GROUP, {}))
            )
        return FinalState(
            partitions,
            log_start,
            high_watermark,
            committed.get("", {}),
            stale,
            other_groups,
            transactions,
        )


class RestError(Exception):
    """A REST Proxy request the member could not complete (an answer of 4xx or 5xx)."""


class RestMember:
    """A REST Proxy consumer instance in REST_GROUP, driven over HTTP as a REST Proxy client
    would. ``ownership`` moves whenever the instance's group membership (member id and
    generation, read from its document: the harness's view, as the Kafka members' rebalance
    callbacks are) changed across a read, so the checker's non-monotonic rule applies to the
    reads of one membership."""

    def __init__(self, session: Any, api: str, name: str, documents: Any, max_bytes: int) -> None:
        self.session = session
        self.max_bytes = max_bytes
        self.base = f"{api}/kafka/consumers/{REST_GROUP}"
        self.name = name
        self.documents = documents
        self.ownership = 0
        self._membership: tuple[str, int] | None = None

    def start(self) -> None:
        settings = {
            "name": self.name,
            "format": "binary",
            "auto.offset.reset": "earliest",
            "auto.commit.enable": "false",
            "consumer.instance.timeout.ms": str(REST_INSTANCE_TIMEOUT_MS),
        }
        self.base = self._call("POST", self.base, settings).json()["base_uri"]
        self._call("POST", f"{self.base}/subscription", {"topics": [TOPIC]})

    def read(self, scale: int = 1) -> list[tuple[int, int, bytes | None]]:
        accept = "application/vnd.kafka.binary.v2+json"
        query = f"timeout=200&max_bytes={self.max_bytes * scale}"
        answer = self._call("GET", f"{self.base}/records?{query}", accept=accept).json()
        self._observe_membership()
        return [
            (r["partition"], r["offset"], None if r["value"] is None else _b64(r["value"]))
            for r in answer
        ]

    def commit(self, records: list[tuple[int, int, bytes | None]]) -> None:
        last = {partition: offset for partition, offset, _ in sorted(records)}
        offsets = [{"topic": TOPIC, "partition": p, "offset": o} for p, o in last.items()]
        self._call("POST", f"{self.base}/offsets", {"offsets": offsets})

    def delete(self) -> None:
        self._call("DELETE", self.base)

    def _observe_membership(self) -> None:
        from objectlog.clients.instances import KIND, Instance

        body, _ = self.documents.read(KIND, f"{REST_GROUP}/{self.name}")
        stored = None if body is None else Instance.from_json(body).consumer.membership
        now = None if stored is None else (stored.member_id, stored.generation)
        if now != self._membership:
            self.ownership += 1
            self._membership = now

    def _call(self, method: str, url: str, body: Any = None, *, accept: str = "") -> Any:
        headers = {"Content-Type": "application/vnd.kafka.v2+json"}
        if accept:
            headers["Accept"] = accept
        data = None if body is None else json.dumps(body)
        try:
            response = self.session.request(method, url, data=data, headers=headers, timeout=30)
        except OSError as e:
            raise RestError(str(e)) from e
        if response.status_code >= 400:
            raise RestError(f"{method} {url}: {response.status_code} {response.text}")
        return response


def _b64(text: str) -> bytes:
    return base64.b64decode(text)


def forget_stale_offset_fetches(consumer: Any) -> None:
    """Work around a kafka-python 3.0.12 bug: its coordinator caches an OffsetFetch by the set
    of partitions it asked for, and a request left unread when a rebalance interrupted the
    poll stays cached; when a later assignment has the same partitions, the consumer takes its
    positions from that old answer without asking again, and commits them, backwards (seen in
    the short verify: "Setting newly assigned partitions" then "Setting offset ... to the
    committed offset 69", 11 s old, while 230 was committed). Java's consumer reuses a pending
    OffsetFetch only within the same generation. Called at each assignment, before the consumer
    looks for its positions."""
    coordinator = getattr(consumer, "_coordinator", None)
    stale = getattr(coordinator, "_offset_fetch_futures", None)
    if isinstance(stale, dict):
        stale.clear()


def forget_positions(consumer: Any) -> None:
    """Work around a kafka-python 3.0.12 bug: under the eager protocol it keeps the revoked
    partitions in its assignment until the next one replaces it, and keeps the position and
    the buffered fetches of every partition that comes back to the same member, so the member
    reads on from where it was, not from the group's committed offset, and commits that
    position, backwards (seen in the short verify, kafka_trail: revoked {0..3}, another member
    read partition 1 from 0 to 77 and committed 77; the same partitions came back, no offset
    fetch followed, and the member committed 0). Java's consumer drops the whole assignment
    once it is revoked (ConsumerCoordinator.onJoinPrepare), as kafka-python itself does when
    its membership is lost. Called from on_partitions_revoked."""
    subscription = getattr(consumer, "_subscription", None)
    if subscription is not None and hasattr(subscription, "assign_from_subscribed"):
        subscription.assign_from_subscribed([])


def learn_partitions_before_joining(consumer: Any, topic: str, timeout_s: float = 10) -> None:
    """Work around a kafka-python 3.0.12 bug that can leave a group's leader stuck mid-join
    for good: block until the consumer's metadata has the topic's partitions, before its first
    poll() joins the group.

    The first poll() sends JoinGroup and Metadata together. When the join answers first, the
    leader assigns without partitions ("No partition metadata for topic"), and rejoins once the
    metadata arrives, because the partitions it assigned from changed. Only that difference
    asks for the rejoin; the client's rejoin flag stays down. If poll()'s timeout ends while
    the JoinGroup or SyncGroup is in flight, the join's own assignment makes the two agree
    again, so every later poll() finds no rejoin needed and never completes the join it left in
    flight. The member keeps no partitions and, heartbeats being off during a join, never
    learns of the next rebalance: the group waits for it for the whole rebalance timeout, then
    drops it. Java's client asks rejoinNeededOrPending(), and kafka-python 2.x checked its
    pending join (dpkp/kafka-python#1695); 3.0's asynchronous join checks only need_rejoin().
    Seen twice in 60 runs of the two-agent group test, with kafka-python's DEBUG log."""
    deadline = time.monotonic() + timeout_s
    while not consumer.partitions_for_topic(topic):
        if time.monotonic() > deadline:
            raise TimeoutError(f"kafka-python never learned the partitions of {topic!r}")
        time.sleep(0.05)


def _kafka_outcome(client: str, partition: int, value: bytes, told: Any) -> Produce:
    """What a confluent-kafka delivery report said: the offset, or an error (which, for an
    idempotent producer that gave up retrying, leaves the outcome unknown)."""
    if told is None:
        return Produce(client, partition, value, UNKNOWN, None, "no delivery report", partition)
    error, offset = told
    if error is None:
        return Produce(client, partition, value, OK, offset, None, partition)
    return Produce(client, partition, value, UNKNOWN, None, error.name(), partition)


def with_faults(config: WorkloadConfig, names: str) -> WorkloadConfig:
    """config with the faults named ("all", "none", or a comma-separated list of kinds)."""
    if names == "all":
        return replace(config, faults=frozenset(FAULT_KINDS))
    if names == "none":
        return replace(config, faults=frozenset())
    chosen = frozenset(n.strip() for n in names.split(",") if n.strip())
    unknown = sorted(chosen - set(FAULT_KINDS))
    if unknown:
        raise ValueError(f"unknown fault kinds {unknown}; choose from {list(FAULT_KINDS)}")
    return replace(config, faults=chosen)
