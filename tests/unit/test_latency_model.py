"""bench.latency_model: the simulated request sequence against sums worked out by hand."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from bench.latency_model import (
    POLL_WAKE_MS,
    PUBLISHED,
    RECORDS_PER_BATCH,
    TAIL_RETRY_MS,
    AwsLatencies,
    ClientCpu,
    Lognormal,
    Outcome,
    Workload,
    records_per_partition,
    simulate,
    slice_order,
)
from objectlog.clients.topic_cache import TOPIC_CACHE_TTL_S
from objectlog.services.index import TAIL_KEEP, TAIL_MAX

PUT_MS, GET_MS, DYNAMODB_MS = 30.0, 20.0, 8.0


def constant(
    put: float = PUT_MS, get: float = GET_MS, dynamodb: float = DYNAMODB_MS
) -> AwsLatencies:
    """Every request takes a fixed time, and transfers take none."""
    return AwsLatencies(
        "constant",
        Lognormal(put, put),
        Lognormal(get, get),
        Lognormal(dynamodb, dynamodb),
        s3_mib_per_s=math.inf,
    )


def spills(commit: int) -> bool:
    """Whether a partition's commit-th commit (from 1) spills its head: first when the tail
    passes TAIL_MAX, then each time it has grown back from TAIL_KEEP."""
    return commit > TAIL_MAX and (commit - TAIL_MAX - 1) % (TAIL_MAX + 1 - TAIL_KEEP) == 0


def one_record_flushes(linger_ms: float) -> Outcome:
    """Two records a second, evenly spaced: each flush holds one record, and no flush waits
    for the one before."""
    workload = Workload(rate_per_s=2, records=240, arrivals="even")
    return simulate(workload, linger_ms, constant(), seed=0, cpu=ClientCpu.none())


@pytest.mark.parametrize("linger_ms", [0, 50, 250])
def test_fixed_latencies_give_the_sum_of_the_requests_for_each_linger(linger_ms: float) -> None:
    # A record waits linger_ms, then one PUT, one commit, and when that commit passes the
    # tail's bound, one spill (PUT of the manifest list + UpdateItem) before its ack. Every
    # TOPIC_CACHE_TTL_S (every 20th record, sent 500 ms apart) the sender reads the topic first.
    outcome = one_record_flushes(linger_ms)
    every = TOPIC_CACHE_TTL_S * 1000 / 500
    expected = [
        linger_ms
        + (DYNAMODB_MS if record % every == 0 else 0.0)
        + PUT_MS
        + DYNAMODB_MS
        + (PUT_MS + DYNAMODB_MS if spills(record // 4 + 1) else 0.0)  # record i: partition i % 4
        for record in range(240)
    ]
    np.testing.assert_allclose(outcome.produce_ms, expected)
    assert sum(spills(record // 4 + 1) for record in range(240)) == 12  # 3 per partition


def test_end_to_end_lies_between_a_first_fetch_and_the_slowest_retry() -> None:
    outcome = one_record_flushes(50)
    # Visible half-way through its commit; the first head read that sees it starts no earlier
    # than the commit did, then a BatchGetItem and a GET: the least a record can take.
    least = 50 + PUT_MS + DYNAMODB_MS + GET_MS
    # A caught-up partition is fetched again at most TAIL_RETRY_MS[1] after its last fetch,
    # at the poll thread's next wake-up (at most POLL_WAKE_MS[1] later), and a fetch that finds
    # nothing takes one BatchGetItem.
    most = least + TAIL_RETRY_MS[1] + POLL_WAKE_MS[1] + DYNAMODB_MS
    assert not np.isnan(outcome.end_to_end_ms).any()
    assert outcome.end_to_end_ms.min() >= least - 1e-9
    assert outcome.end_to_end_ms.max() <= most


def test_linger_adds_half_of_itself_on_average_under_poisson_arrivals() -> None:
    # 1,000 records/s: linger cuts every flush (100-250 records, far below batch_bytes), and
    # with 10 ms PUTs and 2 ms commits no flush ever waits for the one before it.
    workload = Workload(rate_per_s=1000, records=20_000)
    means = {}
    for linger in (100, 250):
        outcome = simulate(workload, linger, constant(10, 5, 2), seed=2, cpu=ClientCpu.none())
        assert outcome.stages_ms["waiting for the committer"] == 0
        assert outcome.stages_ms["waiting for the sender (linger, or staging)"] == pytest.approx(
            linger / 2, rel=0.02
        )
        means[linger] = float(np.mean(outcome.produce_ms))
    assert means[250] - means[100] == pytest.approx(75, abs=2)


def test_four_partitions_in_step_spill_together_every_fifteen_flushes() -> None:
    outcome = simulate(Workload(records=30_000), 50, constant(), seed=1, cpu=ClientCpu.none())
    assert outcome.spills_per_flush == pytest.approx(4 / (TAIL_MAX + 1 - TAIL_KEEP), rel=0.02)


def test_a_slow_committer_paces_the_flushes_through_the_queue_of_one() -> None:
    # Commits of 100 ms, PUTs of 10 ms: the sender stages one flush ahead and then waits, so
    # records gather while the committer works and a flush holds a committer's turn of them
    # (100 ms, plus a spill of 4 x (PUT + UpdateItem) every 15 flushes), not a PUT's worth.
    latencies = constant(put=10, get=5, dynamodb=100)
    outcome = simulate(Workload(records=50_000), 0, latencies, seed=1, cpu=ClientCpu.none())
    committer_turn_ms = 100 + 4 * (10 + 100) / (TAIL_MAX + 1 - TAIL_KEEP)
    assert outcome.records_per_flush == pytest.approx(committer_turn_ms, rel=0.03)  # 1/ms
    # Taken when the committer takes the flush two ahead of it, a flush waits for that one's
    # turn and the next one's, less its own PUT.
    waited = outcome.stages_ms["waiting for the committer"]
    assert waited == pytest.approx(2 * committer_turn_ms - 10, rel=0.05)


def test_batch_bytes_cut_the_flushes_when_linger_would_wait_longer() -> None:
    workload = Workload(rate_per_s=20_000, records=40 * RECORDS_PER_BATCH)  # 40 batches
    outcome = simulate(workload, 250, constant(), seed=1, cpu=ClientCpu.none())
    assert outcome.full_flushes > 0.95
    assert outcome.records_per_flush == pytest.approx(RECORDS_PER_BATCH, rel=0.02)


def test_doubled_tails_keep_each_p50_and_double_each_p99_over_p50() -> None:
    doubled = PUBLISHED.with_doubled_tails()
    for base, heavier in (
        (PUBLISHED.s3_put, doubled.s3_put),
        (PUBLISHED.s3_get, doubled.s3_get),
        (PUBLISHED.dynamodb, doubled.dynamodb),
    ):
        assert heavier.p50_ms == base.p50_ms
        assert heavier.p99_ms / heavier.p50_ms == pytest.approx(2 * base.p99_ms / base.p50_ms)
        draws = np.array([heavier.at(z) for z in np.random.default_rng(0).standard_normal(20_000)])
        assert np.percentile(draws, 50) == pytest.approx(heavier.p50_ms, rel=0.03)
        assert np.percentile(draws, 99) == pytest.approx(heavier.p99_ms, rel=0.1)


@functools.cache
def published_and_doubled(linger_ms: float) -> tuple[Outcome, Outcome]:
    """The published inputs and the same with doubled tails, same seed: 60 s of records, so
    that even at linger 250 ms p99 rests on a few flushes."""
    workload = Workload(records=60_000)
    return (
        simulate(workload, linger_ms, PUBLISHED, seed=3),
        simulate(workload, linger_ms, PUBLISHED.with_doubled_tails(), seed=3),
    )


@pytest.mark.parametrize(("linger_ms", "least_rise"), [(0, 1.15), (250, 1.03)])
@pytest.mark.parametrize("latency", ["produce_ms", "end_to_end_ms"])
def test_doubled_tails_raise_p99(linger_ms: float, least_rise: float, latency: str) -> None:
    base, heavier = published_and_doubled(linger_ms)
    p99 = base.percentiles(getattr(base, latency))[1]
    assert heavier.percentiles(getattr(heavier, latency))[1] > least_rise * p99


@pytest.mark.parametrize("latency", ["produce_ms", "end_to_end_ms"])
def test_p50_barely_moves_with_doubled_tails_when_linger_cuts_the_flushes(latency: str) -> None:
    # At linger 250 ms most of a median record's time is its wait in the batch, which the
    # tails do not touch.
    base, heavier = published_and_doubled(250)
    p50 = base.percentiles(getattr(base, latency))[0]
    assert heavier.percentiles(getattr(heavier, latency))[0] == pytest.approx(p50, rel=0.1)


def test_p50_moves_with_doubled_tails_when_staging_cuts_the_flushes() -> None:
    # At linger 0 a flush holds the records sent while the previous one was staged, so more
    # records wait through a slow PUT than through a fast one: heavier tails reach the median.
    base, heavier = published_and_doubled(0)
    p50 = base.percentiles(base.produce_ms)[0]
    assert heavier.percentiles(heavier.produce_ms)[0] > 1.2 * p50


def test_a_seed_gives_the_same_outcome_and_another_seed_another() -> None:
    workload = Workload(records=5_000)
    first, again = (simulate(workload, 50, PUBLISHED, seed=5) for _ in range(2))
    other = simulate(workload, 50, PUBLISHED, seed=6)
    np.testing.assert_array_equal(first.produce_ms, again.produce_ms)
    np.testing.assert_array_equal(first.end_to_end_ms, again.end_to_end_ms)
    assert not np.array_equal(first.produce_ms, other.produce_ms)


def test_round_robin_slices_of_a_flush() -> None:
    assert records_per_partition(0, 10, 4) == [3, 3, 2, 2]
    assert records_per_partition(6, 9, 4) == [1, 0, 1, 1]
    assert slice_order(6, 4) == [2, 3, 0, 1]
