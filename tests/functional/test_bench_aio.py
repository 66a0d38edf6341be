"""bench.aio (issue 40's asyncio-vs-threaded bench) at a tiny size, on the suite's moto
endpoint: every side moves what it says it moved, both clients' requests are counted (the
asyncio client's aiobotocore clients through the same botocore hooks), the loop's lag is
sampled, and the report prints its rows. Structure only: no timing is judged."""

from __future__ import annotations

import pytest

from bench.aio import (
    ASYNC,
    THREADED,
    Scale,
    measure,
    median_run,
    report,
)
from bench.report import Report
from objectlog import ObjectLog

TINY = Scale(records=200, rounds=1, waves=1, partitions=4, concurrent=100, idle_s=0.1)
LANDED = [TINY.records, TINY.records, TINY.concurrent * TINY.waves + TINY.records]


@pytest.mark.aio_full
def test_aio_bench_measures_both_clients_side_by_side(log: ObjectLog) -> None:
    results = measure(log.config, log, TINY)

    total = TINY.records  # the consumers read the first producer run's topic
    assert results.topic_records == total
    for runs, records in ((results.produced, TINY.records), (results.consumed, total)):
        assert [len(runs[side]) for side in (THREADED, ASYNC)] == [TINY.rounds] * 2
        for side in (THREADED, ASYNC):
            run = median_run(runs[side])
            assert run.records == records and run.seconds > 0 and run.cpu_s > 0
            if runs is results.consumed:
                assert run.first_s > 0 and 0 < run.first_records <= records
                assert run.rate_after_join > 0
            else:
                assert run.first_s == 0
            assert run.requests > 0, side  # counted on both clients
    threaded, aio = (median_run(results.produced[side]) for side in (THREADED, ASYNC))
    for produced in (threaded, aio):
        assert produced.tally.counts["PutObject:l0"] >= 1
        assert produced.tally.counts["UpdateItem"] >= 1  # the heads' commits
    for side in (THREADED, ASYNC):
        assert median_run(results.consumed[side]).tally.counts["GetObject:l0"] >= 1
    topics = sorted(log.list_topics())  # aio-<n>-...: one per producer run, then the lag's
    landed = [sum(log.offsets(t, p).latest for p in range(TINY.partitions)) for t in topics]
    assert landed == LANDED

    names = [name for name, _, _ in results.lags]
    assert len(names) == 4
    idle, sends, getmany, send_loop = (lag for _, lag, _ in results.lags)
    assert all(lag.samples for lag in (idle, sends, getmany, send_loop))
    waves = results.lags[1][2]
    assert waves is not None and waves.records == TINY.waves * TINY.concurrent
    assert waves.tally.counts["UpdateItem"] >= 1

    out = Report()
    report(results, TINY, out)
    assert [row.measure.split(":")[0] for row in out.rows[:2]] == ["producer", "consumer"]
    assert all(row.ratio is not None for row in out.rows[:2])
    assert out.rows[2].measure.startswith("consumer after") and out.rows[2].passed is None
    assert out.rows[3].unit == "ms" and out.rows[3].passed is not None
    requests, lags = out.sections
    assert [row[0] for row in requests.rows[-2:]] == ["all", "client CPU s per 1,000 records"]
    assert all(len(row) == 5 for row in requests.rows)
    assert len(lags.rows) == 4
