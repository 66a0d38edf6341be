"""bench.capacity_model against sums worked out by hand for a small workload: requests per
second, limits and monthly dollars, no endpoint."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.capacity_model import (
    INKLESS,
    Workload,
    model,
    producers_until_head_binds,
    s3_storage_month,
)

MONTH = 730 * 3600  # seconds
PUT, GET = 0.005 / 1000, 0.0004 / 1000  # USD per request
WRU, RRU = 0.625 / 1e6, 0.125 / 1e6  # USD per request unit

# 1 MiB/s from one producer to a 4-partition topic, unkeyed (one partition a flush), linger
# 250 ms (before 4 MiB queue), read by one group of one consumer through the agent.
SMALL = Workload(
    name="small",
    mib_per_s=1,
    topics=1,
    partitions=4,
    producers=1,
    groups_per_topic=1,
    consumers_per_group=1,
    record_bytes=1024,
    linger_ms=250,
    flush_bytes=4 << 20,
    retention_hours=24,
)


def test_requests_of_a_small_workload() -> None:
    f = model(SMALL).facts
    assert f["flush_interval_s"] == 0.25  # the linger: 4 MiB would take 4 s
    assert f["flushes"] == 4  # 1 producer / 0.25 s: a PUT each
    assert f["partitions_per_flush"] == 1  # sticky
    assert f["commits"] == 4
    assert f["commits_per_partition"] == 1  # 4 commits over 4 partitions
    assert f["gets"] == 4  # 1 group, 1 member: a GET per object
    # agent CPU: 1 MiB/s x 12.5 ms + 1 MiB/s x 19.1 ms = 0.0316 vCPU -> 1 task at 60%, min 2
    assert f["agents"] == 2
    # the consumer's 4 partitions get 4 commits a second: 4 fetches of 4 heads each
    assert f["fetches"] == 4
    assert f["head_fetch"] == 16
    # 1 agent watches each of the 4 heads, one read every 50 ms + a 6 ms read
    assert f["head_watch"] == pytest.approx(4 / 0.056)
    # offsets of 4 partitions every 5 s, 1 heartbeat every 3 s
    assert f["group_writes"] == pytest.approx(4 / 5 + 1 / 3)
    # a run: 4 partitions x 6 round trips x 6 ms; LIST: (1 MiB x 86,400 s / 64 MiB + 4 x 300
    # L0 objects) / 1,000 a page -> 3, plus 1 per directory; every manifest list cached
    assert f["compact_idle_s"] == pytest.approx(4 * 6 * 0.006)
    assert f["compact_lists"] == 3 + 3
    assert f["compact_index_gets"] == 0


def test_limits_of_a_small_workload() -> None:
    cap = model(SMALL)
    assert cap.rate("DynamoDB: write units on one partition head").per_s == 1
    writes = 4 + (4 / 5 + 1 / 3) + 4 * 4 / 300  # commits, group, compactor (4 WRU a partition)
    reads = 4 / 0.056 + 16 + 4 * 4 / 300  # watch, fetches, compactor (4 RRU a partition)
    assert cap.rate("DynamoDB: table write units").per_s == pytest.approx(writes)
    assert cap.rate("DynamoDB: table read units").per_s == pytest.approx(reads)
    assert cap.rate("DynamoDB: table read units").use == pytest.approx(reads / 40_000)
    assert cap.rate("S3: PUTs per l0/ prefix").per_s == pytest.approx(4 / 1024)
    assert cap.rate("agent: Fargate tasks").use == pytest.approx(2 / 10)
    assert cap.binding(aws=True).resource.startswith("DynamoDB: table read units")
    assert cap.rate("compactor: MiB/s to merge").use == pytest.approx(1 / 4.09)  # one function
    # 0.25 MiB/s into each partition against 256 MiB a run every 300 s
    nearest = cap.binding(aws=False)
    assert nearest.resource.startswith("compactor: MiB/s into one partition")
    assert nearest.use == pytest.approx(0.25 / (256 / 300))


def test_monthly_bill_of_a_small_workload() -> None:
    cap = model(SMALL)

    def usd(what: str) -> float:
        return cap.line(what).usd_month

    assert usd("S3 PUT: L0 objects") == pytest.approx(4 * MONTH * PUT)  # $52.56
    assert usd("S3 GET: slices read") == pytest.approx(4 * MONTH * GET)  # $4.2048
    assert usd("S3 storage") == pytest.approx(24 * 3600 / 1024 * 0.023)  # 84.4 GiB: $1.94
    assert usd("DynamoDB WRU: commits") == pytest.approx(4 * MONTH * WRU)  # $6.57
    assert usd("DynamoDB RRU: heads watched") == pytest.approx(4 / 0.056 * MONTH * RRU)
    assert usd("DynamoDB RRU: heads read by fetches") == pytest.approx(16 * MONTH * RRU)
    assert usd("DynamoDB WRU: offset commits") == pytest.approx((4 / 5 + 1 / 3) * MONTH * WRU)
    compactor = 4 * 4 / 300 * MONTH * (WRU + RRU)  # $0.105
    assert usd("compactor: DynamoDB") == pytest.approx(compactor)
    assert usd("compactor: LIST") == pytest.approx(6 / 300 * MONTH * PUT)  # $0.263
    assert usd("compactor: reading L0 slices") == pytest.approx(4 * MONTH * GET)
    idle_gb_s = 4 * 6 * 0.006 * 3008 / 1024 / 300 * MONTH
    assert usd("compactor: Lambda GB-s, idle") == pytest.approx(idle_gb_s * 0.0000133334)
    task_month = (1 * 0.03238 + 2 * 0.00356) * 730  # 1 vCPU, 2 GB, ARM: $28.835
    assert usd("agents: Fargate, min_tasks") == pytest.approx(2 * task_month)  # $57.67
    assert usd("agents: Fargate, tasks for the load") == 0
    assert usd("NLB: hours") == pytest.approx(0.0225 * 730)  # $16.425
    # 2 MiB/s through the NLB: 7.03 GiB an hour, an NLCU per GB an hour: $30.80
    assert usd("NLB: NLCU") == pytest.approx(2 * 3600 / 1024 * 0.006 * 730)
    assert usd("CloudWatch alarms") == pytest.approx(9 * 0.10)
    # SnapStart: the live versions of produce and fetch (1769 MB) and authorize (512 MB)
    snapstart = (1769 + 1769 + 512) / 1024 * MONTH * 0.0000015046  # $15.64
    assert usd("Lambda SnapStart cache") == pytest.approx(snapstart)
    fixed = compactor + 6 / 300 * MONTH * PUT + idle_gb_s * 0.0000133334
    fixed += 2 * task_month + 0.0225 * 730 + 0.9 + snapstart
    assert cap.fixed == pytest.approx(fixed)
    without = model(replace(SMALL, snapstart_functions_gb=0))  # snap_start = false
    assert "Lambda SnapStart cache" not in {line.what for line in without.bill}
    assert without.fixed == pytest.approx(fixed - snapstart)


def test_keyed_records_spread_a_flush_over_the_partitions() -> None:
    # 256 records a flush over 4 partitions: 4 x (1 - (3/4)^256), all 4 for any purpose
    f = model(replace(SMALL, keyed=True)).facts
    assert f["partitions_per_flush"] == pytest.approx(4 * (1 - 0.75**256))
    assert f["commits"] == pytest.approx(16)


def test_a_flush_waits_for_a_round_trip_and_for_a_record() -> None:
    # linger 0: one flush per PUT + commit at p50 (26.975 + 6 ms) for objectlog's Producer
    library = model(replace(SMALL, linger_ms=0, path="library")).facts
    assert library["flush_interval_s"] == pytest.approx(0.032975)
    # Kafka clients keep 5 in flight, but a flush needs a record: 1 KiB at 1 MiB/s
    agent = model(replace(SMALL, linger_ms=0)).facts
    assert agent["flush_interval_s"] == pytest.approx(0.032975 / 5)
    slow = model(replace(SMALL, linger_ms=0, mib_per_s=0.01)).facts
    assert slow["flush_interval_s"] == pytest.approx(1024 / (0.01 * (1 << 20)))


def test_producers_until_a_head_binds() -> None:
    assert producers_until_head_binds(100) == pytest.approx(100)  # 10 commits/s each
    assert producers_until_head_binds(0) == pytest.approx(32.975)
    assert producers_until_head_binds(0, in_flight=5) == pytest.approx(32.975 / 5)


def test_many_partitions_miss_the_index_cache_and_outlast_the_schedule() -> None:
    cap = model(replace(SMALL, partitions=10_000, topics=100, idle_fraction=0.99))
    assert cap.facts["compact_index_gets"] == 2 * 10_000  # past the 256 cached lists
    assert cap.rate("compactor: its pass").use == pytest.approx(10_000 * 6 * 0.006 / 300)


def test_s3_storage_is_priced_by_tier() -> None:
    assert s3_storage_month(100 * 1024) == pytest.approx(50 * 1024 * 0.023 + 50 * 1024 * 0.022)
    assert s3_storage_month(600 * 1024) == pytest.approx(
        50 * 1024 * 0.023 + 450 * 1024 * 0.022 + 100 * 1024 * 0.021
    )


def test_inkless_workload_as_published() -> None:
    # w-1GiB-3xfanout: 4 x 144 partitions, 36 producers and 3 x 36 consumers a topic
    assert (INKLESS.partitions, INKLESS.producers, INKLESS.consumers) == (576, 144, 432)
    cap = model(INKLESS)
    assert cap.facts["flushes"] == pytest.approx(144 / 0.1)  # the 100 ms linger cuts first
    assert cap.binding(aws=True).resource.startswith("DynamoDB: table read units")
