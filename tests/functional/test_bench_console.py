"""bench.console (issue 39's scale bench) at a tiny size, on the suite's moto endpoint: the
topics and the group it builds hold what the bench says they hold, and every console page it
times answers through the local API with the page the console would show (a record page of
the wrong length fails the page), its AWS requests counted."""

from __future__ import annotations

import requests

from bench.console import (
    GROUP,
    MAX_LEVEL_PARTITIONS,
    PARTITIONS_TOPIC,
    RECORDS_TOPIC,
    Scale,
    build,
    pages,
    served_api,
    time_pages,
)
from objectlog import ObjectLog

TINY = Scale(records=500, value_bytes=16, flush_records=100, partitions=33, per_partition=2)


def test_console_bench_builds_and_times_every_page(log: ObjectLog) -> None:
    assert TINY.partitions > MAX_LEVEL_PARTITIONS  # the wide topic's page asks no details
    built = build(log, TINY)
    assert log.offsets(RECORDS_TOPIC, 0).latest == TINY.records
    last = log.offsets(PARTITIONS_TOPIC, TINY.partitions - 1)
    assert last.latest == TINY.per_partition
    group = log.groups.describe(GROUP)
    assert group.total_lag == TINY.partitions  # one record short on every partition
    assert len(group.members) == 1

    with served_api(log.config) as (api_url, meter):
        timings = time_pages(api_url, meter, built, rounds=1)
        requests.get(f"{api_url}/topics/{RECORDS_TOPIC}", timeout=30).raise_for_status()
        tally = meter.take()  # requests counted; items not sized (no hook's cost in timings)
    assert tally.counts["BatchGetItem"] >= 1
    assert tally.read == []

    assert timings.failures == {}
    timed = {page for page, _ in timings.seconds}
    assert timed == set(pages(built))
    calls = {(page, call) for page, call in timings.seconds}
    records_page, wide_page = f"topic page: {RECORDS_TOPIC}", f"topic page: {PARTITIONS_TOPIC}"
    assert (records_page, "GET .../partitions/{p}/details") in calls
    assert not any(p == wide_page and "details" in c for p, c in calls)
    for (page, call), seconds in timings.seconds.items():
        assert len(seconds) == 1, (page, call)
        if call == "GET /topics/{t}":  # the topic's item and its heads, counted
            assert all(sum(c.values()) >= 2 for c in timings.requests[page, call]), page
        if call == "GET /topics/{t}?heads=false":  # no head: the record browser's first call
            assert all(c["BatchGetItem"] == 0 for c in timings.requests[page, call]), page
