"""Limits on AWS, modelled: a workload's request rates against their AWS limits, and its monthly
bill by line, each limit and price with its source (issue 38, item 4).

    .venv/bin/python -m bench.capacity_model                     # both workloads, instant
    .venv/bin/python -m bench.capacity_model --workload idle-10k

Nothing here is measured: the request counts per flush, per fetch and per maintenance run are
the ones bench/ measured (docs/benchmarks.md, cited where used), the latencies are
bench.latency_model's published inputs, and limits and list prices (us-east-1) are AWS's. A
month is 730 hours, as AWS prices one. How the requests scale (Workload below):

- Producers. A producer cuts a flush when its linger has passed (at least one PUT + commit round
  trip, the latency model's p50s), or sooner when flush_bytes are queued. A flush is one L0
  PutObject (carried spills cost no request: third increment of issue 18) and one conditional
  UpdateItem per partition it touches: one with Kafka's sticky partitioning of unkeyed records,
  the expected distinct partitions of its records when keyed. A commit writes the partition's
  head, 1 write unit (heads stay under 1 KiB: 637 B measured).
- Consumers. Each group reads every object once: a GET per member owning a slice of it. Waiting
  at the tail: through the agent, its HeadWatcher reads every watched head each
  WATCH_INTERVAL_S (kafka/watch.py), one agent per group reading the partition; and every fetch
  reads its partitions' heads, a fetch per data arrival or per fetch.max.wait. Library
  consumers read an idle partition's head 3.83 times a second (measured, issue 38). Groups
  write each partition's offset every 5 s (auto-commit) and a heartbeat every 3 s.
- The compactor (functions/compact, every 5 minutes, concurrency 1) costs per partition per run
  2 GetItem, 2 PutItem, 2 UpdateItem and 2 head reads in BatchGetItem even when the partition is
  idle (counted on moto: maintenance.run_maintenance, then GC raising and reading every head),
  ListObjectsV2 over the whole bucket, and two manifest-list GETs per partition once there are
  more partitions than its index cache holds.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from bench.costs import SECONDS_PER_MONTH
from bench.latency_model import DYNAMODB, S3_PUT, Source, print_report
from bench.meter import Tally
from bench.report import Report
from bench.run import (
    DDB_RRU_PER_MILLION,
    DDB_WRU_PER_MILLION,
    S3_GET_PER_1000,
    S3_PUT_PER_1000,
    read_units,
    write_units,
)
from objectlog.compaction.planning import CompactionSettings
from objectlog.kafka.watch import WATCH_INTERVAL_S

MIB, GIB = 1 << 20, 1 << 30
HOURS_PER_MONTH = SECONDS_PER_MONTH / 3600

# ---- sources --------------------------------------------------------------------------------

DDB_PARTITION = Source(
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html",
    "each individual partition is limited to 1,000 write units per second and 3,000 read units "
    "per second (an item lives in one partition: a head's writes share its 1,000)",
)
DDB_QUOTAS = Source(
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html",
    "On-Demand, Per table: 40,000 read request units and 40,000 write request units (default, "
    "can be raised)",
)
DDB_PRICE = Source(
    "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    "Write Request Units (WRU): $0.625 per million; Read Request Units (RRU): $0.125 per million "
    "(us-east-1, after the November 2024 cut; quoted by airbyte.com); a WRU per 1 KB written, "
    "an RRU per strongly consistent read up to 4 KB",
)
S3_PREFIX = Source(
    "https://repost.aws/knowledge-center/s3-object-key-naming-pattern",
    "Your application can achieve 3,500 PUT/COPY/POST/DELETE or 5,500 GET/HEAD requests per "
    "second per prefix in a bucket [...] If Amazon S3 is optimizing for a new request rate, you "
    "receive a temporary HTTP 503",
)
S3_PRICE = Source(
    "https://aws.amazon.com/s3/pricing/",
    "S3 Standard: PUT, COPY, POST, LIST $0.005 per 1,000; GET $0.0004 per 1,000; storage $0.023 "
    "per GB-month first 50 TB, $0.022 next 450 TB, $0.021 over 500 TB (us-east-1)",
)
LAMBDA_QUOTA = Source(
    "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html",
    "Concurrent executions | 1,000 | Tens of thousands (new accounts start lower)",
)
LAMBDA_PRICE = Source(
    "https://aws.amazon.com/lambda/pricing/",
    "Requests $0.20 / 1M; Duration arm64 $0.0000133334 / GB-s (first tier)",
)
SNAPSTART_PRICE = Source(
    "https://aws.amazon.com/lambda/pricing/ (SnapStart)",
    "SnapStart for Python: Cache $0.0000015046 for every GB-second, Restore $0.0001397998 for "
    "every GB restored (us-east-1, quoted by awsnegotiations.com); the cache is billed for each "
    "published version with SnapStart while it exists (at least 3 hours): Terraform's live "
    "version of produce, fetch and authorize (superseded ones deleted by the compact function)",
)
APIGW_QUOTA = Source(
    "https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html",
    "Throttle quota per account, per Region across HTTP APIs, REST APIs [...] 10,000 requests "
    "per second (RPS)",
)
APIGW_PRICE = Source(
    "https://aws.amazon.com/api-gateway/pricing/",
    "HTTP APIs: $1.00 per million (first 300M); HTTP APIs are metered in 512 KB increments",
)
FARGATE_PRICE = Source(
    "https://aws.amazon.com/fargate/pricing/",
    "Linux/ARM $0.03238 per vCPU per hour, $0.00356 per GB per hour (us-east-1, quoted by "
    "vantage.sh)",
)
NLB_PRICE = Source(
    "https://aws.amazon.com/elasticloadbalancing/pricing/",
    "NLB base: $0.0225/hour. LCU: $0.006/hour per LCU [...] 1 GB processed for TLS (per NLCU-"
    "hour; quoted by awsnegotiations.com)",
)
ALARM_PRICE = Source(
    "https://aws.amazon.com/cloudwatch/pricing/",
    "Standard resolution (60-second evaluation): $0.10/alarm-month (quoted by c3x.dev)",
)
AGENT_CPU = Source(
    "docs/benchmarks.md, 'The Kafka agent (make bench-kafka)', 2026-11-25",
    "agent CPU per MiB | produce 12.5 ms, consume 19.1 ms (this 2-CPU machine, moto)",
)
PROJECT_REQUESTS = Source(
    "docs/benchmarks.md, issue 18 third increment and item 4 (make bench-costs)",
    "S3 PUTs per flush 1.00 (data 1.00, index 0.00); DynamoDB write units per commit 1.00 "
    "(head 637 B on average); 'S3 GETs 1,001' for 954 flushes read once",
)
IDLE_HEADS = Source(
    "issue 38 / ../shared/FACTS.md, 'What a reader costs while it waits'",
    "a library Consumer read 245 heads a second at the tail of an idle 64-partition topic",
)
COMPACTION_RATE = Source(
    "docs/benchmarks.md, 'Compaction (make bench-compaction)', 2026-11-23",
    "102.7 MiB of L0 in 25.1 s: 4.09 MiB/s (moto, 8-record slices: a low figure)",
)
TERRAFORM = Source(
    "infra/terraform/modules/objectlog (variables.tf, main.tf, monitoring.tf, agent.tf)",
    "compact_schedule rate(5 minutes), compact concurrency 1, 3008 MB; API functions 1769 MB; "
    "authorize 512 MB; snap_start true (produce, fetch, authorize); agent min_tasks 2, "
    "max_tasks 10, cpu 1024, memory 2048, target 60%; 2 alarms per function",
)

# ---- AWS limits and prices (us-east-1) ------------------------------------------------------

HEAD_WRITE_UNITS_PER_S = 1_000  # per item
TABLE_UNITS_PER_S = 40_000  # on-demand table default, reads and writes each
PUTS_PER_PREFIX, GETS_PER_PREFIX = 3_500, 5_500
LAMBDA_CONCURRENCY = 1_000
APIGW_RPS = 10_000
# up to 50 TB, up to 500 TB, beyond: (ceiling in GB, $ per GB-month)
S3_STORAGE_TIERS = ((50 * 1024, 0.023), (500 * 1024, 0.022), (math.inf, 0.021))
LAMBDA_PER_REQUEST = 0.20 / 1e6
LAMBDA_ARM_GB_S = 0.0000133334
SNAPSTART_GB_S = 0.0000015046
APIGW_PER_REQUEST = 1.00 / 1e6
APIGW_METER_BYTES = 512 * 1024
FARGATE_ARM_VCPU_H, FARGATE_ARM_GB_H = 0.03238, 0.00356
NLB_HOUR, NLCU_HOUR, NLCU_GB_PER_H = 0.0225, 0.006, 1.0  # TLS listener: 1 GB an hour per NLCU
NLCU_ACTIVE_TLS_FLOWS = 3_000
ALARM_MONTH = 0.10

# ---- objectlog's own figures (code, Terraform, docs/benchmarks.md) -------------------------

HEAD_BYTES = 637  # mean head item written by a commit (third increment)
WRU_PER_COMMIT = write_units(Tally(written=[HEAD_BYTES]))  # DynamoDB's rounding, bench.run's
RRU_PER_HEAD = read_units([HEAD_BYTES])
L0_PREFIXES = 32**2  # layout.l0_key: l0/<last two ULID characters>/, base 32
ROUND_TRIP_S = (S3_PUT.p50_ms + DYNAMODB.p50_ms) / 1000  # a flush's PUT + commit, p50
AGENT_PRODUCE_MS_PER_MIB, AGENT_CONSUME_MS_PER_MIB = 12.5, 19.1
LIBRARY_IDLE_HEAD_READS_PER_S = 245 / 64
HEAD_READS_PER_ARRIVAL = 2  # bench.costs: the poll's fetch + the fetch-ahead's look past it
KAFKA_IN_FLIGHT = 5  # max.in.flight.requests.per.connection, the clients' default
OFFSET_COMMIT_S, HEARTBEAT_S = 5.0, 3.0  # Kafka's auto.commit.interval.ms, heartbeat.interval.ms
COMPACT_EVERY_S = 300
COMPACT_MEMORY_GB, API_MEMORY_GB, AUTHORIZE_MEMORY_GB = 3008 / 1024, 1769 / 1024, 512 / 1024
# SnapStart's cached versions when idle: one live version each of produce, fetch and authorize
SNAPSTART_MEMORY_GB = 2 * API_MEMORY_GB + AUTHORIZE_MEMORY_GB
COMPACT_MIB_PER_S = 4.09
INDEX_CACHE_LISTS = 256  # IndexStore's manifest-list cache (LruCache(256))
# One idle partition's share of a maintenance run, counted on moto (a 4- and a 16-partition
# topic, warm caches): GetItem lease + head, PutItem lease take + release, UpdateItem epoch stamp
# + GC horizon, two head reads in the GC's BatchGetItems.
COMPACT_RRU_PER_PARTITION = 2 + 2 * RRU_PER_HEAD
COMPACT_WRU_PER_PARTITION = 2 + 2 * WRU_PER_COMMIT
COMPACT_ROUND_TRIPS_PER_PARTITION = 6  # one after the other
FUNCTION_ALARMS = 4 * 2 + 1  # errors + throttles of 4 functions, the API's 5xx


# ---- the workload -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    name: str
    mib_per_s: float  # produced
    topics: int
    partitions: int  # in all topics
    producers: int
    groups_per_topic: int
    consumers_per_group: int
    record_bytes: int
    linger_ms: float
    flush_bytes: int  # the producer's batch cut (batch_bytes, Kafka's batch.size)
    retention_hours: float
    idle_fraction: float = 0.0  # partitions nobody writes to
    keyed: bool = False  # False: sticky, one partition per flush (Kafka's unkeyed default)
    path: str = "agent"  # "agent" (Kafka clients), "library" (direct), "http" (API Gateway)
    fetch_wait_ms: float = 500  # Kafka's fetch.max.wait.ms default
    agent_min_tasks: int = 2
    agent_max_tasks: int = 10
    agent_vcpu: float = 1.0
    agent_memory_gb: float = 2.0
    agent_target_cpu: float = 0.60
    # memory of the cached SnapStart versions (0: snap_start off)
    snapstart_functions_gb: float = SNAPSTART_MEMORY_GB

    @property
    def active_topics(self) -> int:
        return max(1, round(self.topics * (1 - self.idle_fraction)))

    @property
    def active(self) -> int:
        """Partitions written to: the active topics' partitions."""
        return self.active_topics * self.partitions // self.topics

    @property
    def partitions_per_member(self) -> float:
        return max(1.0, self.partitions / self.topics / self.consumers_per_group)

    @property
    def consumers(self) -> int:
        return self.topics * self.groups_per_topic * self.consumers_per_group


def distinct(slots: float, draws: float) -> float:
    """Expected distinct slots hit by draws uniform draws."""
    return slots * (1 - (1 - 1 / slots) ** draws) if slots > 1 else 1.0


@dataclass(frozen=True)
class Rate:
    resource: str
    per_s: float
    limit: float
    source: Source
    aws: bool = True  # False: a limit of objectlog's deployment or code, not AWS's

    @property
    def use(self) -> float:
        return self.per_s / self.limit


@dataclass(frozen=True)
class Line:
    what: str
    usd_month: float
    how: str
    source: Source
    fixed: bool = False  # paid when idle too


@dataclass
class Capacity:
    workload: Workload
    rates: list[Rate] = field(default_factory=list)
    bill: list[Line] = field(default_factory=list)
    facts: dict[str, float] = field(default_factory=dict)

    def line(self, what: str) -> Line:
        (found,) = [line for line in self.bill if line.what.startswith(what)]
        return found

    def rate(self, resource: str) -> Rate:
        (found,) = [rate for rate in self.rates if rate.resource.startswith(resource)]
        return found

    def binding(self, aws: bool) -> Rate:
        """The limit nearest to binding (or furthest past it): AWS's, or the deployment's."""
        return max((rate for rate in self.rates if rate.aws == aws), key=lambda rate: rate.use)

    @property
    def monthly(self) -> float:
        return sum(line.usd_month for line in self.bill)

    @property
    def fixed(self) -> float:
        return sum(line.usd_month for line in self.bill if line.fixed)


def monthly(per_s: float, price: float) -> float:
    return per_s * SECONDS_PER_MONTH * price


def s3_storage_month(gib: float) -> float:
    usd, floor = 0.0, 0.0
    for ceiling, price in S3_STORAGE_TIERS:
        usd += max(0.0, min(gib, ceiling) - floor) * price
        floor = ceiling
    return usd


# ---- the model --------------------------------------------------------------------------------


def model(w: Workload) -> Capacity:
    cap = Capacity(w)
    f = cap.facts
    f["flush_interval_s"] = flush_interval_s(w)
    f["flushes"] = w.producers / f["flush_interval_s"]
    records = w.mib_per_s * MIB / w.record_bytes / f["flushes"]
    per_topic = w.active / w.active_topics
    f["partitions_per_flush"] = distinct(per_topic, records) if w.keyed else 1.0
    f["commits"] = f["flushes"] * f["partitions_per_flush"]
    f["commits_per_partition"] = f["commits"] / w.active
    f["read_mib_per_s"] = w.mib_per_s * w.groups_per_topic
    members = w.consumers_per_group
    f["gets"] = f["flushes"] * w.groups_per_topic * distinct(members, f["partitions_per_flush"])
    f["agents"] = agent_tasks(w, f["read_mib_per_s"]) if w.path == "agent" else 0
    heads_and_fetches(w, f)
    f["group_writes"] = w.partitions * w.groups_per_topic / OFFSET_COMMIT_S
    f["group_writes"] += w.consumers / HEARTBEAT_S
    compactor(w, f)
    limits(w, cap)
    bill(w, cap)
    return cap


def flush_interval_s(w: Workload) -> float:
    """The time to queue flush_bytes, or sooner the linger; never shorter than the gap between
    two records, nor than a PUT + commit round trip over the flushes a producer keeps in flight
    (Kafka clients: max.in.flight.requests.per.connection 5; objectlog's Producer: one commit
    at a time)."""
    per_producer = w.mib_per_s * MIB / w.producers
    in_flight = KAFKA_IN_FLIGHT if w.path == "agent" else 1
    floor = max(w.linger_ms / 1000, ROUND_TRIP_S / in_flight, w.record_bytes / per_producer)
    return min(floor, w.flush_bytes / per_producer)


def agent_tasks(w: Workload, read_mib_per_s: float) -> int:
    vcpu = (
        w.mib_per_s * AGENT_PRODUCE_MS_PER_MIB + read_mib_per_s * AGENT_CONSUME_MS_PER_MIB
    ) / 1e3
    return max(w.agent_min_tasks, math.ceil(vcpu / (w.agent_vcpu * w.agent_target_cpu)))


def heads_and_fetches(w: Workload, f: dict[str, float]) -> None:
    """Head reads per second (read units) by the waiting consumers, and their fetches."""
    arrivals = f["commits_per_partition"] * w.active / w.active_topics / w.consumers_per_group
    busy = w.active_topics * w.groups_per_topic * w.consumers_per_group  # on written topics
    waiting = 1000 / w.fetch_wait_ms
    fetches = busy * max(waiting, min(arrivals, 1 / ROUND_TRIP_S))
    fetches += (w.consumers - busy) * waiting
    f["fetches"] = fetches
    if w.path == "agent":
        watchers = min(f["agents"], w.groups_per_topic)  # agents waiting on one partition
        rounds = 1 / (WATCH_INTERVAL_S + DYNAMODB.p50_ms / 1e3)  # read, then sleep
        f["head_watch"] = w.partitions * watchers * rounds * RRU_PER_HEAD
        f["head_fetch"] = fetches * w.partitions_per_member * RRU_PER_HEAD
    else:  # the library's tail retries, measured: per partition and reading group
        idle = (w.partitions - w.active) * LIBRARY_IDLE_HEAD_READS_PER_S
        busy_heads = w.active * max(
            LIBRARY_IDLE_HEAD_READS_PER_S, HEAD_READS_PER_ARRIVAL * f["commits_per_partition"]
        )
        f["head_watch"] = (idle + busy_heads) * w.groups_per_topic * RRU_PER_HEAD
        f["head_fetch"] = 0.0


def compactor(w: Workload, f: dict[str, float]) -> None:
    """One maintenance run's requests and time, every COMPACT_EVERY_S."""
    settings = CompactionSettings()
    retained = w.mib_per_s * MIB * w.retention_hours * 3600
    objects = retained / settings.target_file_bytes + f["flushes"] * COMPACT_EVERY_S
    f["compact_lists"] = 3 + math.ceil(objects / 1000)  # l0/, index/, topics/: 1,000 a page
    uncached = w.partitions if w.partitions > INDEX_CACHE_LISTS else 0
    f["compact_index_gets"] = 2 * uncached  # compaction's and GC's manifest-list reads
    f["compact_idle_s"] = w.partitions * COMPACT_ROUND_TRIPS_PER_PARTITION * DYNAMODB.p50_ms / 1e3
    f["compact_data_s"] = w.mib_per_s * COMPACT_EVERY_S / COMPACT_MIB_PER_S
    f["compact_per_partition_mib_s"] = settings.max_bytes_per_run / MIB / COMPACT_EVERY_S


def limits(w: Workload, cap: Capacity) -> None:
    f = cap.facts
    per_run = 1 / COMPACT_EVERY_S
    writes = f["commits"] * WRU_PER_COMMIT + f["group_writes"]
    writes += w.partitions * COMPACT_WRU_PER_PARTITION * per_run
    reads = f["head_watch"] + f["head_fetch"] + w.partitions * COMPACT_RRU_PER_PARTITION * per_run
    head = f["commits_per_partition"] * WRU_PER_COMMIT
    rates = [
        (
            "DynamoDB: write units on one partition head",
            head,
            HEAD_WRITE_UNITS_PER_S,
            DDB_PARTITION,
        ),
        ("DynamoDB: table write units (on-demand quota)", writes, TABLE_UNITS_PER_S, DDB_QUOTAS),
        ("DynamoDB: table read units (on-demand quota)", reads, TABLE_UNITS_PER_S, DDB_QUOTAS),
        ("S3: PUTs per l0/ prefix", f["flushes"] / L0_PREFIXES, PUTS_PER_PREFIX, S3_PREFIX),
        ("S3: GETs per l0/ prefix", f["gets"] / L0_PREFIXES, GETS_PER_PREFIX, S3_PREFIX),
    ]
    if w.path == "http":
        calls = f["flushes"] + f["fetches"]  # Little's law: each call lasts a round trip
        rates.append(("API Gateway: requests (account quota)", calls, APIGW_RPS, APIGW_QUOTA))
        busy = calls * ROUND_TRIP_S
        rates.append(("Lambda: concurrent executions", busy, LAMBDA_CONCURRENCY, LAMBDA_QUOTA))
    cap.rates += [Rate(*rate) for rate in rates]
    ours = [
        (
            "compactor: its pass over the partitions, per schedule",
            f["compact_idle_s"] * per_run,
            1.0,
            TERRAFORM,
        ),
        (
            "compactor: MiB/s to merge, one function",
            w.mib_per_s,
            COMPACT_MIB_PER_S,
            COMPACTION_RATE,
        ),
        (
            "compactor: MiB/s into one partition (max_bytes_per_run a run)",
            w.mib_per_s / w.active,
            f["compact_per_partition_mib_s"],
            TERRAFORM,
        ),
    ]
    if w.path == "agent":
        ours.append(("agent: Fargate tasks (max_tasks)", f["agents"], w.agent_max_tasks, TERRAFORM))
    cap.rates += [Rate(*rate, aws=False) for rate in ours]


def bill(w: Workload, cap: Capacity) -> None:
    f, add = cap.facts, cap.bill.append
    put, get = S3_PUT_PER_1000 / 1000, S3_GET_PER_1000 / 1000
    wru, rru = DDB_WRU_PER_MILLION / 1e6, DDB_RRU_PER_MILLION / 1e6
    runs = 1 / COMPACT_EVERY_S  # per second
    add(Line("S3 PUT: L0 objects", monthly(f["flushes"], put), "1 per flush", S3_PRICE))
    add(Line("S3 GET: slices read", monthly(f["gets"], get), "per object, group, member", S3_PRICE))
    add(Line("S3 storage", s3_storage_month(retained_gib(w)), "produced x retention", S3_PRICE))
    add(
        Line(
            "DynamoDB WRU: commits",
            monthly(f["commits"] * WRU_PER_COMMIT, wru),
            "1 per partition per flush",
            DDB_PRICE,
        )
    )
    add(
        Line(
            "DynamoDB RRU: heads watched at the tail",
            monthly(f["head_watch"], rru),
            "strongly consistent",
            DDB_PRICE,
        )
    )
    add(
        Line(
            "DynamoDB RRU: heads read by fetches",
            monthly(f["head_fetch"], rru),
            "a fetch reads its heads",
            DDB_PRICE,
        )
    )
    add(
        Line(
            "DynamoDB WRU: offset commits, heartbeats",
            monthly(f["group_writes"], wru),
            "every 5 s / 3 s",
            DDB_PRICE,
        )
    )
    idle_wru = w.partitions * COMPACT_WRU_PER_PARTITION * runs
    idle_rru = w.partitions * COMPACT_RRU_PER_PARTITION * runs
    add(
        Line(
            "compactor: DynamoDB per partition per run",
            monthly(idle_wru, wru) + monthly(idle_rru, rru),
            "4 WRU + 4 RRU",
            DDB_PRICE,
            fixed=True,
        )
    )
    s3_calls = (f["compact_lists"] + f["compact_index_gets"]) * runs
    add(
        Line(
            "compactor: LIST + manifest-list GETs",
            monthly(s3_calls, put),
            "priced as LIST",
            S3_PRICE,
            fixed=True,
        )
    )
    add(
        Line(
            "compactor: reading L0 slices", monthly(f["commits"], get), "a GET per slice", S3_PRICE
        )
    )
    idle_gb_s = f["compact_idle_s"] * COMPACT_MEMORY_GB * runs
    data_gb_s = f["compact_data_s"] * COMPACT_MEMORY_GB * runs
    add(
        Line(
            "compactor: Lambda GB-s, idle partitions",
            monthly(idle_gb_s, LAMBDA_ARM_GB_S),
            "6 round trips each",
            LAMBDA_PRICE,
            fixed=True,
        )
    )
    add(
        Line(
            "compactor: Lambda GB-s, merging",
            monthly(data_gb_s, LAMBDA_ARM_GB_S),
            f"at {COMPACT_MIB_PER_S} MiB/s, if run in parallel",
            LAMBDA_PRICE,
        )
    )
    add(
        Line(
            "CloudWatch alarms",
            FUNCTION_ALARMS * ALARM_MONTH,
            f"{FUNCTION_ALARMS} alarms",
            ALARM_PRICE,
            fixed=True,
        )
    )
    if w.snapstart_functions_gb:
        cached = monthly(w.snapstart_functions_gb, SNAPSTART_GB_S)
        add(
            Line(
                "Lambda SnapStart cache",
                cached,
                f"{w.snapstart_functions_gb:.2f} GB of live versions cached",
                SNAPSTART_PRICE,
                fixed=True,
            )
        )
    if w.path == "agent":
        agent_lines(w, cap)
    if w.path == "http":
        http_lines(w, cap)


def retained_gib(w: Workload) -> float:
    return w.mib_per_s * w.retention_hours * 3600 / 1024


def agent_lines(w: Workload, cap: Capacity) -> None:
    f, add = cap.facts, cap.bill.append
    task_h = w.agent_vcpu * FARGATE_ARM_VCPU_H + w.agent_memory_gb * FARGATE_ARM_GB_H
    floor = w.agent_min_tasks * task_h * HOURS_PER_MONTH
    add(
        Line(
            "agents: Fargate, min_tasks",
            floor,
            f"{w.agent_min_tasks} tasks",
            FARGATE_PRICE,
            fixed=True,
        )
    )
    extra = (f["agents"] - w.agent_min_tasks) * task_h * HOURS_PER_MONTH
    add(Line("agents: Fargate, tasks for the load", extra, "CPU per MiB measured", FARGATE_PRICE))
    add(Line("NLB: hours", NLB_HOUR * HOURS_PER_MONTH, "one NLB", NLB_PRICE, fixed=True))
    gib_h = (w.mib_per_s + f["read_mib_per_s"]) * 3600 / 1024
    nlcu = max(gib_h / NLCU_GB_PER_H, (w.producers + w.consumers) / NLCU_ACTIVE_TLS_FLOWS)
    add(
        Line(
            "NLB: NLCU (TLS bytes)",
            nlcu * NLCU_HOUR * HOURS_PER_MONTH,
            "1 NLCU per GB an hour",
            NLB_PRICE,
        )
    )


def http_lines(w: Workload, cap: Capacity) -> None:
    f, add = cap.facts, cap.bill.append
    calls = f["flushes"] + f["fetches"]
    flush_bytes = w.mib_per_s * MIB / f["flushes"]
    metered = f["flushes"] * math.ceil(flush_bytes / APIGW_METER_BYTES) + f["fetches"]
    add(
        Line(
            "API Gateway: HTTP API requests",
            monthly(metered, APIGW_PER_REQUEST),
            "per 512 KB",
            APIGW_PRICE,
        )
    )
    gb_s = calls * ROUND_TRIP_S * API_MEMORY_GB
    lambda_usd = monthly(calls, LAMBDA_PER_REQUEST) + monthly(gb_s, LAMBDA_ARM_GB_S)
    add(Line("Lambda: produce and fetch calls", lambda_usd, "requests + GB-s", LAMBDA_PRICE))


# ---- the workloads of the report ------------------------------------------------------------

# Aiven's Inkless benchmark (https://aiven.io/blog/benchmarking-diskless-inkless-topics-part-1:
# "1 GiB/s in, 3 GiB/s out workload across three AZs"), its published OMB files
# (github.com/aiven/openmessaging-benchmark, deployment/cloud-vm/workloads/w-1GiB-3xfanout.yaml:
# topics 4, partitionsPerTopic 144, producerRate 1048576, messageSize 1024, producersPerTopic
# 36, subscriptionsPerTopic 3, consumerPerSubscription 36; drivers/diskless-high-throughput.yaml:
# retention.ms 604800000, linger.ms 100, batch.size 1000000, fetch.max.wait.ms 500).
INKLESS = Workload(
    name="Aiven Inkless 1 GiB/s (OMB w-1GiB-3xfanout)",
    mib_per_s=1024,
    topics=4,
    partitions=576,
    producers=144,
    groups_per_topic=3,
    consumers_per_group=36,
    record_bytes=1024,
    linger_ms=100,
    flush_bytes=1_000_000,
    retention_hours=7 * 24,
    agent_max_tasks=10,
)
# 10,000 partitions (100 topics of 100), 1% written at 1 MiB/s in all by 10 Kafka producers at
# librdkafka's defaults (linger 5 ms, batch.size 1,000,000, keyed records), one group per topic
# with one consumer tailing every partition through the agent, 7 days' retention.
IDLE_10K = Workload(
    name="10,000 partitions, 1% active at 1 MiB/s",
    mib_per_s=1,
    topics=100,
    partitions=10_000,
    producers=10,
    groups_per_topic=1,
    consumers_per_group=1,
    record_bytes=1024,
    linger_ms=5,
    flush_bytes=1_000_000,
    retention_hours=7 * 24,
    idle_fraction=0.99,
    keyed=True,
)
# The same through the library: objectlog Producers (one commit in flight) and Consumers.
IDLE_10K_LIBRARY = replace(
    IDLE_10K, name="10,000 partitions, 1% active, library clients", path="library"
)
# HTTP clients sending one 1 KiB record per request (issue 38's many small writers): 1,000
# requests a second to 64 partitions, read by one HTTP consumer polling every 500 ms.
HTTP_SMALL = Workload(
    name="HTTP API, 1,000 one-record requests a second",
    mib_per_s=1000 * 1024 / MIB,
    topics=1,
    partitions=64,
    producers=100,
    groups_per_topic=1,
    consumers_per_group=1,
    record_bytes=1024,
    linger_ms=0,
    flush_bytes=1024,
    retention_hours=24,
    keyed=True,
    path="http",
)
WORKLOADS = {
    "inkless": INKLESS,
    "idle-10k": IDLE_10K,
    "idle-10k-library": IDLE_10K_LIBRARY,
    "http-small": HTTP_SMALL,
}
LINGERS_MS = (0, 5, 100, 1000)


def producers_until_head_binds(linger_ms: float, in_flight: int = 1) -> float:
    """Producers committing to one partition on every flush before its head's write units
    bind: a producer flushes at most once a linger, and in_flight times a round trip."""
    interval = max(linger_ms / 1000, ROUND_TRIP_S / in_flight)
    return HEAD_WRITE_UNITS_PER_S * interval / WRU_PER_COMMIT


# ---- the report -----------------------------------------------------------------------------


def _usd(value: float) -> str:
    return f"${value:,.0f}" if value >= 10 else f"${value:,.2f}"


def _rate(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:,.3g}"


def report_workload(report: Report, cap: Capacity) -> None:
    w, f = cap.workload, cap.facts
    report.headers.append(
        f"{w.name}: {w.mib_per_s:,.4g} MiB/s in, {f['read_mib_per_s']:,.4g} MiB/s out; {w.topics} "
        f"topics, {w.partitions:,} partitions ({w.active:,} written), {w.producers} producers "
        f"(linger {w.linger_ms:g} ms, {w.flush_bytes:,} B flushes, "
        f"{'keyed' if w.keyed else 'sticky'}), {w.consumers} consumers in "
        f"{w.topics * w.groups_per_topic} groups, {w.record_bytes} B records, "
        f"{w.retention_hours / 24:g} days' retention, through the {w.path}"
    )
    limits_table = report.section(
        f"{w.name}: request rates against AWS and deployment limits, the nearest first",
        "resource",
        "per second",
        "limit",
        "use",
        "whose",
        "limit's source",
    )
    for rate in sorted(cap.rates, key=lambda r: -r.use):
        limits_table.rows.append(
            (
                rate.resource,
                _rate(rate.per_s),
                _rate(rate.limit),
                f"{rate.use:.0%}",
                "AWS" if rate.aws else "objectlog",
                rate.source.url,
            )
        )
    bill_table = report.section(
        f"{w.name}: monthly bill by line (list prices, us-east-1, 730 h)",
        "line",
        "USD a month",
        "share",
        "how",
        "price's source",
    )
    for line in sorted(cap.bill, key=lambda item: -item.usd_month):
        share = line.usd_month / cap.monthly if cap.monthly else 0.0
        what = line.what + (" (fixed)" if line.fixed else "")
        bill_table.rows.append(
            (what, _usd(line.usd_month), f"{share:.1%}", line.how, line.source.url)
        )
    fixed = f"of which fixed (paid idle too) {_usd(cap.fixed)}"
    bill_table.rows.append(("total", _usd(cap.monthly), "", fixed, ""))
    aws, ours = cap.binding(aws=True), cap.binding(aws=False)
    report.notes.append(
        f"{w.name}: AWS's limit nearest: {aws.resource} at {aws.use:.0%} "
        f"({_rate(aws.per_s)} against {_rate(aws.limit)}); objectlog's: {ours.resource} at "
        f"{ours.use:.0%} ({_rate(ours.per_s)} against {_rate(ours.limit)}). "
        f"Flushes {f['flushes']:,.0f}/s "
        f"({f['partitions_per_flush']:.2f} partitions each), "
        f"{f['commits_per_partition']:.2f} commits/s per written partition, "
        f"{f['agents']:.0f} agents, {f['fetches']:,.0f} fetches/s."
    )


FIGURES = (
    ("PUTs per flush; write units per commit", f"1; {WRU_PER_COMMIT:g}", PROJECT_REQUESTS),
    (
        "agent CPU per MiB produced / consumed",
        f"{AGENT_PRODUCE_MS_PER_MIB} / {AGENT_CONSUME_MS_PER_MIB} ms",
        AGENT_CPU,
    ),
    ("library head reads per idle partition", f"{LIBRARY_IDLE_HEAD_READS_PER_S:.2f}/s", IDLE_HEADS),
    ("compaction rate, one function", f"{COMPACT_MIB_PER_S} MiB/s", COMPACTION_RATE),
    (
        "agent head watch (kafka/watch.py); a flush's PUT + commit (latency model p50s)",
        f"every {WATCH_INTERVAL_S * 1000:g} ms + a read; {ROUND_TRIP_S * 1000:.1f} ms",
        TERRAFORM,
    ),
)


def sources_section(report: Report, caps: Sequence[Capacity]) -> None:
    figures = report.section(
        "objectlog's figures the model takes", "figure", "value", "source", "quoted"
    )
    for what, value, source in FIGURES:
        figures.rows.append((what, value, source.url, source.quote))
    cited = report.section("AWS limits and prices: sources", "source", "quoted")
    seen: set[str] = set()
    for cap in caps:
        for source in [rate.source for rate in cap.rates] + [line.source for line in cap.bill]:
            if source.url not in seen and source.url.startswith("https://"):
                seen.add(source.url)
                cited.rows.append((source.url, source.quote))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workload", choices=(*WORKLOADS, "all"), default="all")
    parser.add_argument("--path", choices=("agent", "library", "http"), help="override the path")
    args = parser.parse_args(argv)
    report = Report()
    chosen = WORKLOADS.values() if args.workload == "all" else (WORKLOADS[args.workload],)
    caps = [model(replace(w, path=args.path or w.path)) for w in chosen]
    sources_section(report, caps)
    for cap in caps:
        report_workload(report, cap)
    bound = {
        kind: ", ".join(f"{ms:g} ms: {producers_until_head_binds(ms, n):,.0f}" for ms in LINGERS_MS)
        for kind, n in (
            ("objectlog Producers", 1),
            ("Kafka clients (5 in flight)", KAFKA_IN_FLIGHT),
        )
    }
    report.notes.append(
        "Producers committing to one partition on every flush before its head's 1,000 write "
        "units a second bind, by linger: "
        + "; ".join(f"{kind}: {text}" for kind, text in bound.items())
        + f" (a flush waits for a PUT + commit round trip, {ROUND_TRIP_S * 1000:.0f} ms at p50)."
    )
    print_report(report)


if __name__ == "__main__":
    main()
