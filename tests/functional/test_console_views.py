"""The console's views added for issue 39's missing pieces (http/console_api.py), through the
local API Gateway running the real handlers: a topic's Iceberg table, the overview's produce
rate, compactor and tables, the topics list in one request, and records decoded through the
schema registry."""

from __future__ import annotations

import base64
import io
import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import fastavro
import pytest
import requests

from objectlog import ObjectLog
from objectlog.clock import ManualClock
from objectlog.config import Config
from objectlog.schemas.parsing import SchemaInput
from objectlog.tools.gateway import local_api
from tests.functional import test_console_api
from tests.functional.test_console_api import produce
from tests.functional.test_tables import maintain
from tests.functional.test_tables import produce as produce_flushes

requests_made = test_console_api.requests_made  # the fixture that counts DynamoDB and S3 calls

ORDER = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
}
PAYMENT = {"type": "object", "properties": {"amount": {"type": "number"}}}


@pytest.fixture
def tabled_api(log_config: Config, tmp_path: Path) -> Iterator[tuple[ObjectLog, str]]:
    """A log with a table catalog (SQL, sqlite) and the local API over it."""
    config = replace(log_config, catalog=f"sqlite:///{tmp_path}/catalog.db", delete_grace_ms=1_000)
    with ObjectLog(config, clock=ManualClock()) as log:
        log.ensure_resources()
        gateway = local_api(lambda: log)
        url = gateway.start(port=0)
        try:
            yield log, url
        finally:
            gateway.stop()


def test_a_topics_table_shows_its_snapshot_and_how_far_it_trails(
    tabled_api: tuple[ObjectLog, str],
) -> None:
    log, api = tabled_api
    log.create_topic("orders")
    log.create_topic("plain", config={"objectlog.table.enabled": "false"})
    produce_flushes(log, "orders", flushes=2)
    assert requests.get(f"{api}/topics/orders/table").json() == {
        "table": None,  # not registered until the compactor's first run
        "table_enabled": True,
        "snapshot_id": None,
        "snapshot_ms": None,
        "files": None,
        "missing_files": None,
        "stale_files": None,
        "offsets_behind": None,
    }
    assert isinstance(log.clock, ManualClock)
    log.clock.advance(3_600_000)  # past the table's lag target
    maintain(log)
    answer = requests.get(f"{api}/topics/orders/table")
    assert answer.status_code == 200, answer.text
    table = answer.json()
    state = log.table_state("orders")
    assert state is not None and table["table"] == state.table
    assert table["snapshot_id"] == state.snapshot_id is not None
    assert (table["files"], table["offsets_behind"], table["missing_files"]) == (state.files, 0, 0)
    assert requests.get(f"{api}/topics/plain/table").json()["table_enabled"] is False
    assert requests.get(f"{api}/topics/nope/table").status_code == 404

    overview = requests.get(f"{api}/overview").json()
    assert overview["tables"] == {"catalog": True, "topics": 1}
    assert overview["compactor"] == {"l0_refs": 0, "oldest_l0_age_ms": None}  # all compacted


def test_the_overview_shows_the_produce_rate_and_the_compactors_backlog(
    api: str, log: ObjectLog, requests_made: Callable[[Callable[[], Any]], Counter[str]]
) -> None:
    log.create_topic("orders", partitions=2)
    produce(log, "orders", [[{"value": b"o", "partition": p} for p in (0, 0, 1)]] * 2)
    answers: list[requests.Response] = []
    made = requests_made(lambda: answers.append(requests.get(f"{api}/overview")))
    overview = answers[0].json()
    assert overview["produce_rate"] == {"last_minute": 6, "last_5_minutes": 6}
    assert overview["compactor"]["l0_refs"] == 4  # 2 flushes x 2 partitions
    assert 0 <= overview["compactor"]["oldest_l0_age_ms"] < 60_000
    assert overview["tables"] == {"catalog": False, "topics": 1}
    print(f"\n/overview, 1 topic, 2 partitions, no group: {dict(made)}")
    # the registry, the topics, the heads (1 BatchGetItem), the group registry: no more
    assert made["dynamodb.BatchGetItem"] + made["dynamodb.GetItem"] <= 4, made
    assert not {"dynamodb.Scan", "dynamodb.Query"} & set(made)


def test_the_topics_list_is_one_request_with_records_and_bytes(
    api: str, log: ObjectLog, requests_made: Callable[[Callable[[], Any]], Counter[str]]
) -> None:
    for name in ("a", "b", "c"):
        log.create_topic(name, partitions=2)
        produce(log, name, [[{"value": b"v", "partition": 0}]])
    answers: list[requests.Response] = []
    made = requests_made(lambda: answers.append(requests.get(f"{api}/overview/topics")))
    assert answers[0].status_code == 200, answers[0].text
    rows = answers[0].json()["topics"]
    described = log.describe_topic("a")
    assert rows[0] == {
        "topic": "a",
        "partitions": 2,
        "records": 1,
        "bytes": sum(p.bytes for p in described.partitions),
        "segments": 1,
    }
    assert [row["topic"] for row in rows] == ["a", "b", "c"]
    print(f"\n/overview/topics, 3 topics: {dict(made)}")
    # the registry, the topics (1 BatchGetItem), each topic's heads (1 BatchGetItem each)
    assert made["dynamodb.BatchGetItem"] + made["dynamodb.GetItem"] <= 5, made


def test_records_are_decoded_through_the_schema_registry(api: str, log: ObjectLog) -> None:
    registry = log.schema_registry
    avro_id = registry.register("mixed-value", SchemaInput(json.dumps(ORDER), "AVRO")).schema.id
    json_id = registry.register("pay-value", SchemaInput(json.dumps(PAYMENT), "JSON")).schema.id
    avro = io.BytesIO()
    fastavro.schemaless_writer(avro, fastavro.parse_schema(ORDER), {"id": 7, "item": "tea"})
    log.create_topic("mixed")
    values = [
        b"\x00" + avro_id.to_bytes(4, "big") + avro.getvalue(),
        b"\x00" + json_id.to_bytes(4, "big") + b'{"amount": 2.5}',
        b"plain text",
        b"\x00" + (99_999).to_bytes(4, "big") + b"{}",  # an id the registry does not hold
    ]
    produce(log, "mixed", [[{"value": v, "key": b"k"} for v in values]])
    answer = requests.get(
        f"{api}/topics/mixed/partitions/0/decoded", params={"offset": 0, "max_records": 10}
    )
    assert answer.status_code == 200, answer.text
    records = answer.json()["records"]
    assert [base64.b64decode(r["value"]) for r in records] == values  # as GET .../records
    decoded = [r["value_decoded"] for r in records]
    assert decoded[0] == {"decoded": {"id": 7, "item": "tea"}, "schema_id": avro_id, "note": None}
    assert decoded[1] == {"decoded": {"amount": 2.5}, "schema_id": json_id, "note": None}
    assert decoded[2]["decoded"] is None and "wire format" in decoded[2]["note"]
    assert decoded[3]["schema_id"] == 99_999 and "not in the registry" in decoded[3]["note"]
    assert records[0]["key_decoded"]["note"]  # the key b"k" is not framed
    refused = requests.get(f"{api}/topics/mixed/partitions/0/decoded", params={"offset": -1})
    assert refused.status_code in (400, 422) and refused.json()


def test_a_topic_without_its_heads_is_one_read_however_many_partitions(
    api: str, log: ObjectLog, requests_made: Callable[[Callable[[], Any]], Counter[str]]
) -> None:
    """The record browser and the produce form need a topic's partition count, not its heads:
    GET /topics/{t}?heads=false reads none of a 300-partition topic's."""
    log.create_topic("wide", partitions=300, config={"retention.ms": "3600000"})
    log.forget_topic("wide")  # its metadata read again, not from this process's cache
    answers: list[requests.Response] = []
    made = requests_made(lambda: answers.append(requests.get(f"{api}/topics/wide?heads=false")))
    assert answers[0].status_code == 200, answers[0].text
    body = answers[0].json()
    assert (body["partition_count"], body["partitions"]) == (300, [])
    assert body["config"]["retention.ms"] == "3600000"
    assert "dynamodb.BatchGetItem" not in made and made["dynamodb.GetItem"] <= 1, made
    described = requests_made(lambda: requests.get(f"{api}/topics/wide"))
    assert described["dynamodb.BatchGetItem"] == 3, described  # 100 heads a request
