"""isolation_level on the HTTP API's fetch (issue 36, docs/transactions.md), over real HTTP
through the local API Gateway: read_committed answers stop at the last stable offset and never
hold an aborted record, read_uncommitted (the default) answers every record, both report the
partition's last stable offset, a read_committed long poll waits for that offset to move (not
the high watermark), a bad value is refused with 400, and isolation costs no DynamoDB request.
Transactions are driven by the library's coordinator on the deployment behind the API, their
records written as test_read_committed writes them."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from objectlog import ObjectLog
from objectlog.errors import InvalidRequest
from objectlog.stores.metadata import kafka_producer
from objectlog.tools.gateway import LocalGateway
from tests.functional import test_read_committed as rc

TOPIC = rc.TOPIC
COMMITTED, UNCOMMITTED = "read_committed", "read_uncommitted"


@dataclass
class Transactions:
    """Partition 0 of TOPIC: a plain record, an aborted transaction's record, a committed
    one's, and the record of a transaction left open; at: each record's offset."""

    at: dict[str, int]
    commit_open: Callable[[], object]

    @property
    def lso(self) -> int:
        return self.at["open"]  # the open transaction's first offset


def transactions(log: ObjectLog) -> Transactions:
    log.create_topic(TOPIC, 1)
    coordinator = log.transactions  # the library's coordinator, on the API's deployment
    at = {"plain": rc.write(log, [b"plain"])}
    for tid, commit in (("aborted", False), ("committed", True), ("open", None)):
        txn = coordinator.init_producer_id(tid, 60_000)
        coordinator.add_partitions(tid, txn.producer_id, txn.producer_epoch, [(TOPIC, 0)])
        at[tid] = rc.write(log, [tid.encode()], kafka_producer(txn.producer_id))
        if commit is not None:
            coordinator.end_txn(tid, txn.producer_id, txn.producer_epoch, commit=commit)
    opened = txn

    def commit_open() -> object:
        return coordinator.end_txn("open", opened.producer_id, opened.producer_epoch, commit=True)

    return Transactions(at, commit_open)


def fetch(api: str, offset: int = 0, **params: Any) -> requests.Response:
    url = f"{api}/topics/{TOPIC}/partitions/0/records"
    return requests.get(url, params={"offset": offset, **params}, timeout=30)


def answer(api: str, offset: int = 0, **params: Any) -> dict[str, Any]:
    response = fetch(api, offset, **params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def values(body: dict[str, Any]) -> list[bytes]:
    return [base64.b64decode(r["value"]) for r in body["records"]]


def read_all(api: str, isolation: str) -> tuple[list[bytes], int]:
    """Every record from 0 as fetches of one record each answer them; where they stop."""
    out: list[bytes] = []
    offset = 0
    for _ in range(20):
        body = answer(api, offset, max_records=1, isolation_level=isolation)
        out += values(body)
        if body["next_offset"] == offset:
            break
        offset = body["next_offset"]
    return out, offset


def test_read_committed_stops_at_the_lso_and_never_answers_an_aborted_record(
    api: str, log: ObjectLog
) -> None:
    txns = transactions(log)
    hw = txns.at["open"] + 1
    committed = answer(api, isolation_level=COMMITTED)
    assert values(committed) == [b"plain", b"committed"]
    assert (committed["last_stable_offset"], committed["high_watermark"]) == (txns.lso, hw)
    assert read_all(api, COMMITTED) == ([b"plain", b"committed"], txns.lso)

    uncommitted = answer(api, isolation_level=UNCOMMITTED)
    assert values(uncommitted) == [b"plain", b"aborted", b"committed", b"open"]
    assert (uncommitted["last_stable_offset"], uncommitted["next_offset"]) == (txns.lso, hw)
    assert answer(api) == uncommitted  # read_uncommitted is the default, as Kafka's
    assert read_all(api, UNCOMMITTED) == ([b"plain", b"aborted", b"committed", b"open"], hw)

    txns.commit_open()
    after = answer(api, txns.lso, isolation_level=COMMITTED)
    assert values(after) == [b"open"] and after["last_stable_offset"] == after["high_watermark"]
    assert read_all(api, COMMITTED)[0] == [b"plain", b"committed", b"open"]


def test_a_read_committed_long_poll_waits_for_the_lso_not_the_high_watermark(
    api: str, log: ObjectLog
) -> None:
    txns = transactions(log)
    moved: dict[str, float] = {}

    def elsewhere() -> None:
        time.sleep(0.3)
        rc.write(log, [b"after"])  # the high watermark moves; the open transaction holds the LSO
        moved["hw"] = time.monotonic()
        time.sleep(0.5)
        txns.commit_open()
        moved["lso"] = time.monotonic()

    writer = threading.Thread(target=elsewhere)
    started = time.monotonic()
    writer.start()
    try:
        body = answer(api, txns.lso, isolation_level=COMMITTED, max_wait_ms=10_000)
    finally:
        writer.join()
    answered = time.monotonic()
    assert values(body) == [b"open", b"after"]
    assert answered >= moved["lso"] > moved["hw"]  # not woken by the high watermark
    assert answered - started < 5  # woken by the LSO, well before the wait's end


def test_a_bad_isolation_level_is_refused_naming_it(api: str, log: ObjectLog) -> None:
    log.create_topic(TOPIC, 1)
    for bad in ("serializable", "READ_COMMITTED", "read-committed", ""):
        response = fetch(api, isolation_level=bad)
        assert response.status_code == 400, (bad, response.text)
        body = response.json()
        assert (body["error"], body["field"]) == ("InvalidRequest", "isolation_level"), body
        assert "read_uncommitted, read_committed" in body["message"], body


def test_isolation_adds_no_dynamodb_request_to_a_fetch(api: str, log: ObjectLog) -> None:
    """Each fetch reads the partition's head (one GetItem) whatever its isolation level:
    read_committed finds the LSO on the head and the aborted ranges in the refs."""
    txns = transactions(log)
    calls: list[str] = []

    def count(event_name: str, **_: Any) -> None:
        calls.append(event_name.rsplit(".", 1)[-1])

    events = log.metadata.client.meta.events
    answer(api)  # the topic is cached from here on, as in a warm function
    events.register("before-call.dynamodb", count)
    try:
        made: dict[str, list[str]] = {}
        for isolation in (UNCOMMITTED, COMMITTED, UNCOMMITTED, COMMITTED):
            calls.clear()
            body = answer(api, isolation_level=isolation)
            assert body["last_stable_offset"] == txns.lso
            made.setdefault(isolation, []).extend(calls)
    finally:
        events.unregister("before-call.dynamodb", count)
    assert made[COMMITTED] == made[UNCOMMITTED] == ["GetItem", "GetItem"]


def test_the_openapi_document_describes_isolation_level(api: str) -> None:
    document = requests.get(f"{api}/openapi.json", timeout=30).json()
    fetch_route = document["paths"]["/topics/{topic}/partitions/{partition}/records"]["get"]
    [parameter] = [p for p in fetch_route["parameters"] if p["name"] == "isolation_level"]
    assert parameter["in"] == "query" and not parameter["required"]
    assert parameter["schema"]["enum"] == [UNCOMMITTED, COMMITTED]
    assert parameter["schema"]["default"] == UNCOMMITTED
    answered = document["components"]["schemas"]["FetchResponse"]
    assert "last_stable_offset" in answered["required"]


def test_the_http_client_refuses_read_committed_from_an_api_that_ignores_it(
    gateway: LocalGateway, api: str, log: ObjectLog
) -> None:
    """An older deployment ignores isolation_level and answers no last stable offset: its
    records may be uncommitted, so the client raises rather than return them."""
    log.create_topic(TOPIC, 1)
    rc.write(log, [b"plain"])
    real = gateway.targets["fetch"]

    def older(event: dict[str, Any], context: Any) -> Any:
        result = real(event, context)
        if event["rawPath"].endswith("/records"):
            body = json.loads(result["body"])
            body.pop("last_stable_offset")
            result = {**result, "body": json.dumps(body)}
        return result

    with ObjectLog.connect(api_url=api) as remote:
        assert remote.fetch(TOPIC, 0, 0, isolation_level=COMMITTED).last_stable_offset == 1
        gateway.targets["fetch"] = older
        assert len(remote.fetch(TOPIC, 0, 0).records) == 1  # read_uncommitted: what it asked
        with pytest.raises(InvalidRequest, match="does not offer isolation_level") as refused:
            remote.fetch(TOPIC, 0, 0, isolation_level=COMMITTED)
        assert refused.value.field == "isolation_level"


def test_the_http_client_refuses_a_transactional_producer_naming_why(
    api: str, log: ObjectLog
) -> None:
    """The coordinator lives on the table: over the API a transactional_id is refused, never
    taken for an ordinary producer's option."""
    client = ObjectLog.connect(api_url=api)
    with pytest.raises(InvalidRequest, match="not offered over the HTTP API") as refused:
        client.producer(transactional_id="t")
    assert refused.value.field == "transactional_id"
