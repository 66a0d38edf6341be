"""The web console (/console) in headless Chromium, driven by Playwright against the suite's
local API: a topic created, a record produced and found from the pages, a group's lag seen to
drop and reset, hostile record data shown as text only, every page free of browser errors and
of critical accessibility violations (axe-core, as axe-playwright-python bundles it).

Debian's Chromium only (executable_path): nothing here downloads a browser. Screenshots of each
page land in build/console-screenshots/ (looked at by hand when the pages change).
"""

from __future__ import annotations

import base64
import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect, sync_playwright

from objectlog import ObjectLog
from objectlog.clients.transactional import TransactionalProducer
from objectlog.errors import ObjectLogError
from objectlog.tools.chromium import HEADLESS_FLAGS
from tests.e2e.test_docs_ui import chromium

SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "console-screenshots"
FLAGS = list(HEADLESS_FLAGS)
XSS = ["<script>window.__xss=1</script>", '<img src=x onerror="window.__xss=1">']
# color-contrast is axe's slowest rule and never of critical impact (it is "serious"): left out
AXE_OPTIONS = {"resultTypes": ["violations"], "rules": {"color-contrast": {"enabled": False}}}
# Chromium logs every non-2xx answer a fetch gets ("Failed to load resource: ... status of
# 404"); the console shows those answers as messages, which the tests check on the page
NETWORK_STATUS = "Failed to load resource: the server responded with a status of"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=FLAGS, headless=True)
        yield browser
        browser.close()


class Console:
    """A page of the console with its browser log collected."""

    def __init__(self, browser: Any, api: str, width: int = 1280) -> None:
        self.api = api
        self.context = browser.new_context(viewport={"width": width, "height": 900})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.errors.append(f"pageerror: {error}"))
        self.confirmations: list[str] = []
        self.page.on("dialog", self._confirm)

    def _confirm(self, dialog: Any) -> None:
        """Every confirmation the console asks is accepted, and kept."""
        self.confirmations.append(dialog.message)
        dialog.accept()

    def _console(self, message: Any) -> None:
        if message.type == "error" and not message.text.startswith(NETWORK_STATUS):
            self.errors.append(f"console: {message.text}")

    def open(self, path: str) -> Any:
        self.page.goto(f"{self.api}{path}")
        self.ready()
        return self.page

    def ready(self) -> None:
        """Wait for the page's first data: the console marks main aria-busy until then."""
        self.page.wait_for_selector("main[aria-busy='false'] h1")

    def check(self, name: str) -> None:
        """Screenshot, no browser error, no critical accessibility violation."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.ready()
        self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
        results = Axe().run(self.page, options=AXE_OPTIONS)
        critical = [v for v in results.response["violations"] if v.get("impact") == "critical"]
        assert not critical, f"{name}: {[(v['id'], v['help']) for v in critical]}"
        assert not self.errors, f"{name}: {self.errors}"

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def console(browser: Any, api: str) -> Iterator[Console]:
    page = Console(browser, api)
    yield page
    page.close()


def test_create_produce_and_find_a_record_by_offset_and_by_time(console: Console) -> None:
    page = console.open("/console/topics")
    page.get_by_label("Name").fill("orders")
    page.get_by_label("Partitions").fill("2")
    page.get_by_role("button", name="Create topic").click()
    page.wait_for_selector("h1:has-text('Topic orders')")
    assert page.url.endswith("/console/topics/orders")
    partitions = page.locator("table:has(caption:text('Partitions')) tbody tr")
    partitions.nth(1).wait_for()
    assert partitions.count() == 2
    page.wait_for_selector("text=No table yet")  # the suite's log has no table catalog
    console.check("topic")

    before_ms = int(time.time() * 1000) - 1000
    page.get_by_role("link", name="Produce a record").click()
    page.wait_for_selector("h1:has-text('Produce to orders')")
    page.get_by_label("Key", exact=True).fill("customer-7")
    page.get_by_label("Value").fill('{"amount": 42, "currency": "EUR"}')
    page.get_by_role("button", name="Add a header").click()
    page.get_by_label("Header 1 key").fill("source")
    page.get_by_label("Header 1 value").fill("console")
    page.get_by_label("Partition", exact=True).select_option("1")
    page.get_by_role("button", name="Produce", exact=True).click()
    page.wait_for_selector("text=Produced to partition 1 at offset 0")
    console.check("produce")

    page.get_by_role("link", name="See it in the record browser").click()
    row = page.locator("table.records tbody tr[data-offset='0']")
    row.wait_for()
    assert "customer-7" in row.inner_text() and "source: console" in row.inner_text()
    page.get_by_label("Show as").select_option("json")
    expect(row).to_contain_text('"amount": 42')  # pretty-printed (redrawn: waited for)
    page.get_by_label("Show as").select_option("registry")  # asks the server: not framed
    page.wait_for_selector("table.records >> text=Not decoded: it does not carry")
    console.check("records")

    # by time: a moment before the produce finds offset 0 of partition 1 again
    page = console.open("/console/topics/orders/records?partition=0")
    page.get_by_label("Partition", exact=True).select_option("1")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(before_ms / 1000))
    page.get_by_label("From time (UTC)").fill(stamp)
    page.get_by_role("button", name="Show", exact=True).click()
    page.locator("table.records tbody tr[data-offset='0']").wait_for()
    assert "time=" in page.url  # the page's state is in its URL: bookmarkable
    assert "customer-7" in page.locator("table.records").inner_text()

    # find by key: the key's partition (murmur2), then that partition scanned
    page.get_by_label("Find by key").fill("customer-7")
    page.get_by_role("button", name="Find", exact=True).click()
    page.wait_for_selector("text=1 record(s) with that key")

    # alter a config, then delete the topic (each asks first: the dialogs are accepted)
    page = console.open("/console/topics/orders")
    page.get_by_label("Config key").fill("retention.ms")
    page.get_by_label("Value", exact=True).fill("3600000")
    page.get_by_role("button", name="Set config").click()
    page.wait_for_selector("text=Config changed.")
    page.get_by_text("config keys").click()
    expect(page.locator("table:has(caption:text-is('Config'))")).to_contain_text("3600000")
    page.get_by_role("button", name="Delete topic").click()
    page.wait_for_selector("h1:text-is('Topics')")
    page.wait_for_selector("text=No topics yet.")
    asked = "\n".join(console.confirmations)
    for question in ("Create topic orders", "Set retention.ms=3600000", "Delete topic orders"):
        assert question in asked, asked
    assert not console.errors


def test_a_groups_lag_drops_after_it_consumes_and_is_reset(
    console: Console, log: ObjectLog
) -> None:
    log.create_topic("payments", partitions=1)
    with log.producer() as producer:
        for i in range(5):
            producer.send("payments", key=b"k", value=f"payment {i}".encode())
    options = {"group": "billing", "topics": ["payments"], "enable_auto_commit": False}
    with log.consumer(auto_offset_reset="earliest", **options) as consumer:
        consumer.poll(timeout=5)
        consumer.commit({("payments", 0): 2})
    page = console.open("/console/groups/billing")
    lag = page.locator("[data-total-lag]")
    assert lag.get_attribute("data-total-lag") == "3"
    with log.consumer(**options) as consumer:
        consumed: list[Any] = []
        deadline = time.monotonic() + 10
        while len(consumed) < 3 and time.monotonic() < deadline:  # offsets 2, 3 and 4
            consumed += consumer.poll(timeout=1)
        consumer.commit()
    page.get_by_role("button", name="Refresh").click()
    page.wait_for_selector("[data-total-lag='0']")
    assert page.locator("svg.chart polyline").count() == 1  # one partition, sampled twice
    console.check("group")

    page.get_by_label("Reset to").select_option("earliest")
    page.get_by_role("button", name="Reset offsets…").click()
    page.wait_for_selector("text=Reset 1 offset(s)")
    page.wait_for_selector("[data-total-lag='5']")
    page = console.open("/console/groups")
    assert "billing" in page.locator("table").inner_text()
    console.check("groups")


def test_hostile_keys_values_and_headers_are_shown_as_text(
    console: Console, api: str, log: ObjectLog
) -> None:
    log.create_topic("evil")

    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    records = [
        {
            "key": b64(payload),
            "value": b64(payload),
            "headers": [{"key": payload, "value": b64(payload)}],
        }
        for payload in XSS
    ]
    answer = requests.post(f"{api}/topics/evil/records", json={"records": records}, timeout=30)
    assert answer.status_code == 200, answer.text
    page = console.open("/console/topics/evil/records?partition=0&offset=0")
    page.locator("table.records tbody tr").nth(1).wait_for()
    text = page.locator("table.records").inner_text()
    for payload in XSS:
        assert text.count(payload) >= 3, text  # key, value, header key and value: as text
    for show in ("json", "hex", "text"):
        page.get_by_label("Show as").select_option(show)
    page.get_by_label("Filter this page").fill("onerror")
    assert page.locator("table.records tbody tr").count() == 1
    assert page.locator("table.records img, table.records script").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"
    console.check("records-hostile")


def test_every_page_renders_its_data_or_the_apis_error(
    console: Console, log: ObjectLog, browser: Any, api: str
) -> None:
    log.create_topic("inventory", partitions=3)
    with log.producer() as producer:
        for i in range(30):
            producer.send(
                "inventory", key=f"item-{i}".encode(), value=b"x" * (1500 if i == 0 else 10)
            )
    transaction = log.producer(transactional_id="pipeline", linger_ms=0)
    assert isinstance(transaction, TransactionalProducer)
    transaction.init_transactions()
    transaction.begin_transaction()
    transaction.send("inventory", b"uncommitted", partition=0)
    transaction.flush()
    pages = {
        "overview": "/console",
        "topics": "/console/topics",
        "schemas": "/console/schemas",
        "transactions": "/console/transactions",
        "acls": "/console/acls",
    }
    for name, path in pages.items():
        page = console.open(path)
        assert page.locator("main p.message.error").count() == 0, name
        console.check(name)
        if name == "transactions":  # the open one, aborted after a confirmation
            page.get_by_role("button", name="Abort pipeline").click()
            page.wait_for_selector("text=Transaction pipeline aborted.")
            expect(page.locator("table")).to_contain_text("pipeline")  # now ended
        if name == "topics":  # sorted by a column heading's button, from the keyboard
            page.get_by_role("button", name="Records").focus()
            page.keyboard.press("Enter")
            expect(page.locator("th[aria-sort='ascending']")).to_contain_text("Records")
    # a wide topic's partitions, 100 a page from its one description
    log.create_topic("wide", partitions=150)
    page = console.open("/console/topics/wide")
    rows = page.locator("table:has(caption:text('Partitions 0 to 99')) tbody tr")
    rows.nth(99).wait_for()
    assert rows.count() == 100
    page.get_by_role("button", name="Next partitions").click()
    rest = page.locator("table:has(caption:text('Partitions 100 to 149')) tbody tr")
    rest.nth(49).wait_for()
    assert rest.count() == 50
    # a schema's two versions, compared
    registry = f"{api}/schema-registry/subjects/inventory-value/versions"
    id_field = {"name": "id", "type": "string"}
    count_field = {"name": "count", "type": "int", "default": 0}
    for fields in ([id_field], [id_field, count_field]):
        schema = {"type": "record", "name": "Item", "fields": fields}
        answer = requests.post(registry, json={"schema": json.dumps(schema)}, timeout=30)
        assert answer.status_code == 200, answer.text
    page = console.open("/console/schemas")
    page.get_by_role("link", name="inventory-value").click()
    page.wait_for_selector("pre.diff .diff-add")
    added = page.locator("pre.diff .diff-add").all_inner_texts()
    assert '+       "name": "count",' in added, added
    console.check("schema-diff")
    # an ACL added, then removed
    page = console.open("/console/acls")
    page.get_by_label("Resource name").fill("inventory")
    page.get_by_label("Principal").fill("User:alice")
    page.get_by_role("button", name="Add ACL").click()
    page.wait_for_selector("text=ACL added.")
    expect(page.locator("table")).to_contain_text("User:alice")
    page.get_by_role("button", name="Remove ALLOW User:alice READ on inventory").click()
    page.wait_for_selector("text=ACL removed.")
    page.wait_for_selector("text=No ACLs.")
    # a value over 1 KiB is cut, and shown whole on request
    page = console.open("/console/topics/inventory/records?partition=0&offset=0")
    show_all = page.get_by_role("button", name="Show all 1,500 bytes")
    if show_all.count() == 0:  # item-0 went to another partition: find it by key
        page.get_by_label("Find by key").fill("item-0")
        page.get_by_role("button", name="Find", exact=True).click()
    page.get_by_role("button", name="Show all 1,500 bytes").first.click()
    assert "x" * 1500 in page.locator("table.records").first.inner_text()
    # newest first, then older pages: each request asks for one page, never a partition
    latest = log.offsets("inventory", 2).latest
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/partitions/" in r.url else None)
    page = console.open("/console/topics/inventory/records?partition=2&newest=1&size=3")
    rows = page.locator("table.records tbody tr")
    assert rows.first.get_attribute("data-offset") == str(latest - 1)  # the newest on top
    page.get_by_role("button", name="Older").click()
    page.wait_for_selector(f"table.records tbody tr[data-offset='{latest - 6}']")
    assert rows.count() == 3 and "offset=" in page.url
    fetches = [url for url in asked if "/records?" in url]
    assert len(fetches) == 2 and all("max_records=3" in url for url in fetches), asked
    # an API error is a message, never a blank page
    page = console.open("/console/topics/missing")
    assert "missing" in page.locator("main p.message.error").first.inner_text()
    console.check("error")
    with contextlib.suppress(ObjectLogError):  # the console aborted its transaction
        transaction.close()
    # a narrow window: the page is no wider than the window
    narrow = Console(browser, api, width=400)
    try:
        page = narrow.open("/console/topics/inventory")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 400, f"the page is {width} px wide in a 400 px window"
        narrow.check("topic-narrow")
    finally:
        narrow.close()
