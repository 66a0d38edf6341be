"""The web console at scale (issue 39, item 3): a topic of 10^6 records and a topic of 1,000
partitions, each page's API calls timed, and the whole page in headless Chromium.

    .venv/bin/python -m bench.console          # about 6 minutes on moto, 3 on DynamoDB Local
    .venv/bin/python -m bench.console --records 100000 --partitions 100 --no-browser  # briefly

On the embedded endpoint (`objectlog dev` in its own process, bench.server), a fresh bucket and
table get:

- a one-partition topic of ``--records`` records (``--value-bytes`` values, keys over 10,000
  names, timestamps spread evenly over the last hour), produced with ``Producer.send_table`` in
  flushes of ``--flush-records`` records (about 1 MiB): one partition, so its index is as deep as
  10^6 records make it;
- a topic of ``--partitions`` partitions with ``--per-partition`` records each (one
  ``send_table``);
- a group with an offset committed on every partition of the wide topic (lag 1 each) and one
  live member subscribed to it.

How long building takes is reported, not judged. Then the HTTP API runs in this process as
`objectlog dev` serves it (tools.gateway.local_api on waitress), over a log of its own (a cold
container: no cache from building), and each console page's calls are made in the order the
page makes them (lib/objectlog/console/static/*.js): the topics list (GET /overview/topics),
the overview, each big topic's page (the topic, the L0/L1 details of each partition when it
has at most 32, the activity chart of 60 minutes, the Iceberg table's state), the record
browser (the topic, the partition's offsets, a page of 20 and of 100 records at the newest
offsets, the middle, offset 0, and from a timestamp in the middle of the hour), and the
group's page. ``--rounds`` rounds, each page in turn; per call and per page the first (cold)
time, the median and the worst, and the AWS requests the server's log sent for it
(bench.meter, botocore hooks: the first call's and the median). A page's time is its calls one
after the other: the browser runs a topic page's activity and table calls concurrently, so that
row is an upper bound. PASS: the page's median within 1 s.

Then, unless ``--no-browser``: Debian's Chromium driven by Playwright opens each page's URL,
timed from navigation until the console marks ``main[aria-busy='false']`` (its data shown).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

import numpy as np
import pyarrow as pa
import requests

from bench.meter import Requests
from bench.report import Report, console
from bench.server import add_endpoint_argument, embedded_endpoint, fresh_log
from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.stores.groups import TopicPartition
from objectlog.tools.chromium import HEADLESS_FLAGS
from objectlog.tools.gateway import local_api

PAGE_BUDGET_S = 1.0  # issue 39: a page of a big topic served in under a second
MAX_LEVEL_PARTITIONS = 32  # topics.js: the L0/L1 split is asked per partition up to this many
PAGE_SIZES = (20, 100)
RECORDS_TOPIC, PARTITIONS_TOPIC, GROUP = "console-records", "console-partitions", "console-bench"
HOUR_MS = 3_600_000
KEYS = 10_000
SESSION_TIMEOUT_MS = 3_600_000  # the group's member stays live through the bench


@dataclass(frozen=True)
class Scale:
    records: int = 1_000_000
    value_bytes: int = 256
    flush_records: int = 4_096
    partitions: int = 1_000
    per_partition: int = 3


@dataclass(frozen=True)
class Built:
    """What the bench built: the topics' names and shapes, and how long each took."""

    scale: Scale
    started_ms: int  # the first record's timestamp (an hour before building)
    seconds: dict[str, float]

    @property
    def middle_timestamp_ms(self) -> int:
        return self.started_ms + HOUR_MS // 2


def build_records_topic(log: ObjectLog, scale: Scale, started_ms: int) -> None:
    """One partition of scale.records records, their timestamps spread over an hour."""
    log.create_topic(RECORDS_TOPIC, 1)
    value = b"v" * scale.value_bytes
    with log.producer() as producer:
        for first in range(0, scale.records, scale.flush_records):
            numbers = np.arange(first, min(first + scale.flush_records, scale.records))
            keys = pa.array([b"key-%d" % (n % KEYS) for n in numbers], pa.binary())
            table = pa.table(
                {
                    "key": keys,
                    "value": pa.array([value] * len(numbers), pa.binary()),
                    "timestamp": pa.array(started_ms + numbers * HOUR_MS // scale.records),
                }
            )
            producer.send_table(RECORDS_TOPIC, table, partition=0)


def build_partitions_topic(log: ObjectLog, scale: Scale) -> None:
    """scale.partitions partitions of scale.per_partition records each, in one send_table."""
    log.create_topic(PARTITIONS_TOPIC, scale.partitions)
    partitions = np.repeat(np.arange(scale.partitions), scale.per_partition)
    table = pa.table(
        {
            "value": pa.array([b"v" * scale.value_bytes] * len(partitions), pa.binary()),
            "partition": pa.array(partitions, pa.int32()),
        }
    )
    with log.producer() as producer:
        producer.send_table(PARTITIONS_TOPIC, table)


def build_group(log: ObjectLog, scale: Scale) -> None:
    """The group: an offset one short of the end of each partition, and one live member."""
    offsets = {
        TopicPartition(PARTITIONS_TOPIC, p): scale.per_partition - 1
        for p in range(scale.partitions)
    }
    log.groups.commit(GROUP, offsets)
    log.groups.join(GROUP, [PARTITIONS_TOPIC], session_timeout_ms=SESSION_TIMEOUT_MS)


def build(log: ObjectLog, scale: Scale) -> Built:
    started_ms = int(time.time() * 1000) - HOUR_MS
    seconds = {}
    steps: dict[str, Callable[[], None]] = {
        f"{scale.records:,} records in 1 partition": lambda: build_records_topic(
            log, scale, started_ms
        ),
        f"{scale.partitions:,} partitions x {scale.per_partition}": lambda: build_partitions_topic(
            log, scale
        ),
        f"a group over {scale.partitions:,} partitions": lambda: build_group(log, scale),
    }
    for name, step in steps.items():
        began = time.perf_counter()
        step()
        seconds[name] = time.perf_counter() - began
        console.print(f"  built {name}: {seconds[name]:.1f} s")
    return Built(scale, started_ms, seconds)


# ---- the console's pages, as its JavaScript asks them --------------------------------------

Get = Callable[[str, str], Any]  # get(call label, path) -> the answer's JSON


def topic_path(topic: str, rest: str = "") -> str:
    return f"/topics/{quote(topic, safe='')}{rest}"


def with_query(path: str, **params: Any) -> str:
    return f"{path}?{urlencode(params)}"


def topics_list_page(get: Get) -> None:
    """topics.js topicsPage: every topic's partitions, records and bytes in one call."""
    get("GET /overview/topics", "/overview/topics")


def overview_page(get: Get) -> None:
    get("GET /overview", "/overview")


def topic_page(topic: str) -> Callable[[Get], None]:
    """topics.js topicPage: the topic, each partition's details (up to 32), then the activity
    and the Iceberg table's state."""

    def page(get: Get) -> None:
        described = get("GET /topics/{t}", topic_path(topic))
        partitions = described["partitions"]
        if len(partitions) <= MAX_LEVEL_PARTITIONS:
            for p in partitions:
                path = topic_path(topic, f"/partitions/{p['partition']}/details")
                get("GET .../partitions/{p}/details", path)
        get("GET .../activity?minutes=60", with_query(topic_path(topic, "/activity"), minutes=60))
        get("GET .../table", topic_path(topic, "/table"))  # with the activity, concurrently

    return page


def records_page(
    topic: str, partition: int, size: int, where: str, timestamp_ms: int = 0
) -> Callable[[Get], None]:
    """records.js recordsPage: the topic without its heads (its partition count), the
    partition's offsets (from a timestamp: its offset), then one page of size records; where is
    newest, middle, 0 or timestamp."""

    def page(get: Get) -> None:
        get("GET /topics/{t}?heads=false", with_query(topic_path(topic), heads="false"))
        offsets_path = topic_path(topic, f"/partitions/{partition}/offsets")
        if where == "timestamp":
            offsets = get(
                "GET .../offsets?timestamp=", with_query(offsets_path, timestamp=timestamp_ms)
            )
            offset = offsets["offset"] if offsets.get("offset") is not None else offsets["latest"]
        else:
            offsets = get("GET .../offsets", offsets_path)
            offset = {
                "newest": max(offsets["earliest"], offsets["latest"] - size),
                "middle": (offsets["earliest"] + offsets["latest"]) // 2,
                "0": 0,
            }[where]
        records_path = topic_path(topic, f"/partitions/{partition}/records")
        answer = get(
            f"GET .../records?max_records={size}",
            with_query(records_path, offset=offset, max_records=size),
        )
        if len(answer["records"]) != min(size, offsets["latest"] - offset):
            raise CallFailed(f"{topic}/{partition} at {offset}: {len(answer['records'])} records")

    return page


def group_page(get: Get) -> None:
    get("GET /groups/{g}", f"/groups/{quote(GROUP, safe='')}")


def pages(built: Built) -> dict[str, Callable[[Get], None]]:
    """Every page the bench times, by name."""
    last = built.scale.partitions - 1
    found: dict[str, Callable[[Get], None]] = {
        "topics list": topics_list_page,
        "overview": overview_page,
    }
    for topic, partition in ((RECORDS_TOPIC, 0), (PARTITIONS_TOPIC, last)):
        found[f"topic page: {topic}"] = topic_page(topic)
        for size in PAGE_SIZES:
            for where in ("newest", "middle", "0", "timestamp"):
                found[f"records {topic}/{partition}: {size} from {where}"] = records_page(
                    topic, partition, size, where, built.middle_timestamp_ms
                )
    found["group page: 1 member"] = group_page
    return found


# ---- timing ----------------------------------------------------------------------------------


class CallFailed(RuntimeError):
    """An API call that did not answer 200 (or a page of the wrong length)."""


@dataclass
class Timings:
    """Seconds and AWS requests by (page, call), and each page's total."""

    seconds: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    requests: dict[tuple[str, str], list[Counter[str]]] = field(
        default_factory=lambda: defaultdict(list)
    )

    failures: dict[str, str] = field(default_factory=dict)  # page: its first failed call

    def add(self, page: str, call: str, seconds: float, counts: Counter[str]) -> None:
        self.seconds[page, call].append(seconds)
        self.requests[page, call].append(counts)


@dataclass
class Calls:
    """GETs against the API, each timed and its AWS requests counted (by the server's meter)."""

    api_url: str
    meter: Requests
    timings: Timings = field(default_factory=Timings)
    session: requests.Session = field(default_factory=requests.Session)

    def run(self, name: str, page: Callable[[Get], None]) -> None:
        calls: list[tuple[str, float, Counter[str]]] = []

        def get(call: str, path: str) -> Any:
            self.meter.take()
            began = time.perf_counter()
            answer = self.session.get(self.api_url + path, timeout=60)
            seconds = time.perf_counter() - began
            calls.append((call, seconds, self.meter.take().counts))
            if answer.status_code != 200:
                raise CallFailed(f"{path}: {answer.status_code} {answer.text[:300]}")
            return answer.json()

        try:
            page(get)
        except CallFailed as failed:  # shown in the table; the other pages go on
            self.timings.failures.setdefault(name, str(failed))
        repeated: Counter[str] = Counter()
        for call, seconds, counts in calls:
            repeated[call] += 1
            label = call if repeated[call] == 1 else f"{call} #{repeated[call]}"
            self.timings.add(name, label, seconds, counts)
        total = sum((counts for _, _, counts in calls), Counter())
        self.timings.add(name, "(page)", sum(s for _, s, _ in calls), total)


@contextmanager
def served_api(config: Config) -> Iterator[tuple[str, Requests]]:
    """The HTTP API as `objectlog dev` serves it, over a log of its own: its URL and meter."""
    log = ObjectLog(config)
    gateway = local_api(lambda: log)
    url = gateway.start(port=0)
    meter = Requests(log)
    for client in (log.store.client, log.metadata.client):  # count requests, not item sizes
        for operation in ("GetItem", "BatchGetItem"):
            client.meta.events.unregister(f"after-call.dynamodb.{operation}", meter._read)
    try:
        yield url, meter
    finally:
        gateway.stop()
        log.close()


def time_pages(api_url: str, meter: Requests, built: Built, rounds: int) -> Timings:
    calls = Calls(api_url, meter)
    for _ in range(rounds):
        for name, page in pages(built).items():
            calls.run(name, page)
    return calls.timings


# what the page fetched, from the browser's Resource Timing: [path, start ms, end ms]
# the moment the page marks its data shown, in the page's own clock (ms from navigation start)
READY_JS = """new MutationObserver(() => {
  if (window.__readyAt === undefined && document.querySelector("main[aria-busy='false'] h1"))
    window.__readyAt = performance.now();
}).observe(document, { subtree: true, childList: true, attributes: true });"""
RESOURCES_JS = """() => performance.getEntriesByType('resource')
  .map((e) => [new URL(e.name).pathname, e.startTime, e.responseEnd])"""


@dataclass
class Loads:
    """By console page: seconds until its data showed, and from the browser's timings the ms
    its own files (/console/...) finished at and the span of its API calls."""

    seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    ready_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    files_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    api_ms: dict[str, list[tuple[int, float, float]]] = field(
        default_factory=lambda: defaultdict(list)
    )

    def add(self, name: str, seconds: float, ready_ms: float, resources: list[list[Any]]) -> None:
        self.seconds[name].append(seconds)
        self.ready_ms[name].append(ready_ms)
        files = [end for path, _, end in resources if path.startswith("/console")]
        calls = [(start, end) for path, start, end in resources if not path.startswith("/console")]
        self.files_ms[name].append(max(files, default=0.0))
        first = min((start for start, _ in calls), default=0.0)
        self.api_ms[name].append((len(calls), first, max((e for _, e in calls), default=0.0)))


def browser_loads(api_url: str, built: Built, rounds: int) -> Loads:
    """Each console page opened in Chromium rounds times, timed until its data shows."""
    from playwright.sync_api import sync_playwright

    last = built.scale.partitions - 1
    urls = {
        "topics list": "/console/topics",
        "overview": "/console",
        "group page": f"/console/groups/{GROUP}",
    }
    for topic, partition in ((RECORDS_TOPIC, 0), (PARTITIONS_TOPIC, last)):
        urls[f"topic page: {topic}"] = f"/console/topics/{topic}"
        urls[f"records {topic}/{partition}: 20 from newest"] = (
            f"/console/topics/{topic}/records?partition={partition}&newest=1"
        )
    loads = Loads()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=list(HEADLESS_FLAGS), headless=True
        )
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.add_init_script(READY_JS)
            page.goto(f"{api_url}/console")  # a first visit, not timed
            page.wait_for_selector("main[aria-busy='false']", timeout=60_000)
            for _ in range(rounds):
                for name, path in urls.items():
                    began = time.perf_counter()
                    page.goto(f"{api_url}{path}")
                    page.wait_for_selector("main[aria-busy='false'] h1", timeout=60_000)
                    seconds = time.perf_counter() - began
                    ready_ms = page.evaluate("window.__readyAt")
                    loads.add(name, seconds, ready_ms, page.evaluate(RESOURCES_JS))
                    errors = page.locator("main .error").all_inner_texts()
                    if errors:
                        raise RuntimeError(f"{path}: the page shows {errors}")
        finally:
            browser.close()
    return loads


# ---- the report ------------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f}" if seconds >= 0.01 else f"{seconds * 1000:.1f}"


def _requests(counts: Counter[str]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())) or "none"


def _verdict(page: str, seconds: list[float], timings: Timings) -> tuple[bool, str]:
    if page in timings.failures:
        return False, f"ERROR: {timings.failures[page]}"
    passed = statistics.median(seconds) <= PAGE_BUDGET_S
    verdict = "PASS" if passed else "FAIL"
    return passed, verdict + (" (worst over)" if max(seconds) > PAGE_BUDGET_S else "")


def api_sections(report: Report, timings: Timings, rounds: int) -> list[str]:
    """The pages' table and their calls'; returns the pages over the budget."""
    pages = report.section(
        f"each console page's API calls one after another, {rounds} rounds",
        "page",
        "calls",
        "first ms",
        "median ms",
        "worst ms",
        "AWS requests (median)",
        "within 1 s",
    )
    calls = report.section(
        "the calls of each page",
        "page",
        "call",
        "first ms",
        "median ms",
        "worst ms",
        "AWS requests, first call",
    )
    over = []
    for (page, call), seconds in timings.seconds.items():
        counts = timings.requests[page, call]
        figures = (_ms(seconds[0]), _ms(statistics.median(seconds)), _ms(max(seconds)))
        if call != "(page)":
            calls.rows.append((page, call, *figures, _requests(counts[0])))
            continue
        passed, verdict = _verdict(page, seconds, timings)
        if not passed:
            over.append(page)
        made = sum(1 for p, c in timings.seconds if p == page and c != "(page)")
        median_requests = statistics.median(sum(c.values()) for c in counts)
        pages.rows.append((page, str(made), *figures, f"{median_requests:g}", verdict))
    return over


def browser_section(report: Report, loads: Loads) -> list[str]:
    """The pages' table; returns those over the budget."""
    section = report.section(
        "the whole page in headless Chromium: from navigation until main's aria-busy is false, "
        "in the page's clock (wall: as Playwright saw it)",
        "page",
        "first ms",
        "median ms",
        "worst ms",
        "wall median ms",
        "its files done at",
        "API calls: n, first start - last end",
        "within 1 s",
    )
    over = []
    for name, ready in loads.ready_ms.items():
        passed = statistics.median(ready) <= PAGE_BUDGET_S * 1000
        if not passed:
            over.append(f"{name} (browser)")
        calls = loads.api_ms[name]
        first = statistics.median(c[1] for c in calls)
        last = statistics.median(c[2] for c in calls)
        section.rows.append(
            (
                name,
                f"{ready[0]:,.0f}",
                f"{statistics.median(ready):,.0f}",
                f"{max(ready):,.0f}",
                _ms(statistics.median(loads.seconds[name])),
                f"{statistics.median(loads.files_ms[name]):,.0f}",
                f"{calls[0][0]}, {first:,.0f} - {last:,.0f}",
                "PASS" if passed else "FAIL",
            )
        )
    return over


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_endpoint_argument(parser)
    defaults = Scale()
    parser.add_argument("--records", type=int, default=defaults.records)
    parser.add_argument("--value-bytes", type=int, default=defaults.value_bytes)
    parser.add_argument("--flush-records", type=int, default=defaults.flush_records)
    parser.add_argument("--partitions", type=int, default=defaults.partitions)
    parser.add_argument("--per-partition", type=int, default=defaults.per_partition)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--browser-rounds", type=int, default=5)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")  # no EMF line per request
    scale = Scale(
        args.records, args.value_bytes, args.flush_records, args.partitions, args.per_partition
    )
    report = Report()
    load_at_start = os.getloadavg()
    with embedded_endpoint(args.dynamodb) as endpoint:
        report.endpoint(endpoint.description)
        config, log = fresh_log(endpoint)
        built = build(log, scale)
        log.close()
        with served_api(config) as (api_url, meter):
            timings = time_pages(api_url, meter, built, args.rounds)
            loads = None if args.no_browser else browser_loads(api_url, built, args.browser_rounds)
    section = report.section("building (reported, not judged)", "what", "seconds")
    section.rows += [(name, f"{s:.1f}") for name, s in built.seconds.items()]
    over = api_sections(report, timings, args.rounds)
    if loads is not None:
        over += browser_section(report, loads)
    report.note(f"pages over {PAGE_BUDGET_S:g} s (median): {', '.join(over) or 'none'}")
    report.load_note(load_at_start)
    report.print()


if __name__ == "__main__":
    main()
