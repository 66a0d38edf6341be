"""The HTTP API routes a console needs (issue 39, http/console_api.py, acl_routes.py,
transaction_routes.py), through the local API Gateway running the real handlers: what each
answers, the 4xx with a JSON body naming the problem for bad input (nothing stored), and the
DynamoDB and S3 requests /overview makes."""

from __future__ import annotations

import base64
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from objectlog import ObjectLog
from objectlog.compaction.compactor import CompactionSettings
from objectlog.compaction.maintenance import compactor_for
from objectlog.format.acls import AclFilter
from objectlog.services.overview import log_totals

MINUTE = 60_000


def produce(log: ObjectLog, topic: str, batches: list[list[dict[str, Any]]]) -> list[Any]:
    """Each batch flushed on its own (one ref per partition it touches)."""
    sent = []
    with log.producer(linger_ms=0) as producer:
        for batch in batches:
            futures = [producer.send(topic, **record) for record in batch]
            producer.flush()
            sent += [f.result() for f in futures]
    return sent


def problem(response: requests.Response, status: int, field: str | None = None) -> str:
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert body["message"], body
    if field is not None:
        assert field in (body.get("field") or ""), body
    return str(body["message"])


@pytest.fixture
def requests_made(log: ObjectLog) -> Iterator[Callable[[Callable[[], Any]], Counter[str]]]:
    """Counts the DynamoDB and S3 calls a run makes (the gateway runs the handlers in this
    process, on this log), but the topic activity items the produce path touches."""

    def run(action: Callable[[], Any]) -> Counter[str]:
        made: Counter[str] = Counter()

        def count(event_name: str, params: dict[str, Any], **_: Any) -> None:
            key = str(params.get("Key", {}).get("pk", {}).get("S", ""))
            if not key.startswith("activity#"):
                made[event_name.split(".", 1)[1]] += 1

        clients = (log.metadata.client, log.store.client)
        for client in clients:
            client.meta.events.register("provide-client-params", count)
        try:
            action()
        finally:
            for client in clients:
                client.meta.events.unregister("provide-client-params", count)
        return made

    yield run


def test_overview_sums_topics_records_bytes_and_groups_lag(
    api: str, log: ObjectLog, requests_made: Callable[[Callable[[], Any]], Counter[str]]
) -> None:
    log.create_topic("orders", partitions=2)
    log.create_topic("payments")
    produce(log, "orders", [[{"value": b"o", "partition": p} for p in (0, 0, 1)]])
    produce(log, "payments", [[{"value": b"p"}] * 2])
    membership = log.groups.join("billing", ["orders"])
    log.groups.commit(  # lag 1 on partition 0, 0 on 1
        "billing",
        {tp: 1 for tp in membership.owned},
        member_id=membership.member_id,
        generation=membership.generation,
    )

    answers: list[requests.Response] = []
    made = requests_made(lambda: answers.append(requests.get(f"{api}/overview")))
    assert answers[0].status_code == 200, answers[0].text
    described = [log.describe_topic(t) for t in ("orders", "payments")]
    overview = answers[0].json()
    compactor = overview.pop("compactor")  # tests/functional/test_console_views.py: these
    assert (overview.pop("produce_rate"), compactor["l0_refs"]) == (
        {"last_minute": 5, "last_5_minutes": 5},
        3,
    )
    assert overview.pop("tables") == {"catalog": False, "topics": 2}
    assert overview == {
        "topics": 2,
        "partitions": 3,
        "records": 5,
        "bytes": sum(p.bytes for d in described for p in d.partitions),
        "segments": sum(p.segments for d in described for p in d.partitions),
        "summed_partitions": 3,
        "groups": {"count": 1, "total_lag": 1, "lag_groups": 1},
    }
    print(f"\n/overview, 2 topics, 3 partitions, 1 group: {dict(made)}")
    assert not {"dynamodb.Scan", "dynamodb.Query"} & set(made)
    # topics: registry + topics + heads per topic; the group: its registry, items, heads
    assert made["dynamodb.BatchGetItem"] + made["dynamodb.GetItem"] <= 10, made


def test_overview_sums_whole_topics_within_its_budget_of_heads(log: ObjectLog) -> None:
    for name, partitions in (("a-wide", 3), ("b-narrow", 1), ("c-narrow", 1)):
        log.create_topic(name, partitions=partitions)
        produce(log, name, [[{"value": b"v", "partition": p} for p in range(partitions)]])
    totals = log_totals(log.metadata, log.index, max_summed=2)  # a-wide does not fit
    assert (totals.topics, totals.partitions) == (3, 5)
    assert (totals.summed_partitions, totals.records) == (2, 2)
    assert log_totals(log.metadata, log.index).records == 5


def test_activity_spreads_each_refs_records_over_its_minutes(api: str, log: ObjectLog) -> None:
    log.create_topic("clicks", partitions=2)
    now = int(time.time() * 1000)
    old, spanning = now - 3 * MINUTE, now - 2 * MINUTE
    produce(
        log,
        "clicks",
        [
            [{"value": b"a", "partition": 0, "timestamp_ms": old}] * 3,
            # one ref whose records span two minutes: its 4 records split 2 and 2
            [
                {"value": b"b", "partition": 1, "timestamp_ms": spanning - spanning % MINUTE},
                *[{"value": b"b", "partition": 1, "timestamp_ms": spanning}] * 2,
                {
                    "value": b"b",
                    "partition": 1,
                    "timestamp_ms": spanning - spanning % MINUTE + MINUTE,
                },
            ],
            [{"value": b"c", "partition": 0}] * 5,  # now
        ],
    )
    answer = requests.get(f"{api}/topics/clicks/activity", params={"minutes": 10})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["resolution_seconds"] == 60 and len(body["minutes"]) == 10
    starts = [m["start_ms"] for m in body["minutes"]]
    assert starts == [starts[0] + i * MINUTE for i in range(10)] and starts[0] % MINUTE == 0

    def at(ts: int) -> float:
        return float(
            next(
                m["records"]
                for m in body["minutes"]
                if m["start_ms"] <= ts < m["start_ms"] + MINUTE
            )
        )

    assert at(old) == 3.0
    assert at(spanning) == 2.0 and at(spanning - spanning % MINUTE + MINUTE) == 2.0
    assert at(starts[-1]) >= 5.0  # the records produced now (in the last minute, or just before)
    assert sum(m["records"] for m in body["minutes"]) == 12
    narrow = requests.get(f"{api}/topics/clicks/activity", params={"minutes": 1}).json()
    assert len(narrow["minutes"]) == 1


def test_activity_refuses_a_window_out_of_bounds_and_an_unknown_topic(
    api: str, log: ObjectLog
) -> None:
    log.create_topic("clicks")
    for minutes in (0, 1441, "x"):
        problem(
            requests.get(f"{api}/topics/clicks/activity", params={"minutes": minutes}),
            422,
            "minutes",
        )
    problem(requests.get(f"{api}/topics/nope/activity"), 404, "topic")


def test_partition_details_split_the_index_between_l0_and_l1(api: str, log: ObjectLog) -> None:
    log.create_topic("events", partitions=2)
    produce(log, "events", [[{"value": b"x" * 100, "partition": 0}] * 10 for _ in range(4)])
    before = requests.get(f"{api}/topics/events/partitions/0/details").json()
    assert before["records"] == before["high_watermark"] == 40 and before["log_start_offset"] == 0
    assert before["l0"]["refs"] == 4 and before["l1"]["refs"] == 0 and before["markers"] == 0
    assert before["bytes"] == log.describe_topic("events").partitions[0].bytes

    compactor = compactor_for(
        log, CompactionSettings(target_file_bytes=16 << 10, row_group_bytes=2 << 10)
    )
    compactor.compact_partition(log.topic("events"), 0)
    after = requests.get(f"{api}/topics/events/partitions/0/details").json()
    assert after["l1"]["refs"] >= 1 and after["l1"]["objects"] >= 1  # the compactor keeps a tail
    assert after["l1"]["records"] + after["l0"]["records"] == 40
    assert after["l0"]["refs"] < before["l0"]["refs"]
    assert after["bytes"] == log.describe_topic("events").partitions[0].bytes
    empty = requests.get(f"{api}/topics/events/partitions/1/details").json()
    assert empty["records"] == 0 and empty["l0"] == empty["l1"] == {
        "refs": 0,
        "objects": 0,
        "bytes": 0,
        "records": 0,
    }
    problem(requests.get(f"{api}/topics/events/partitions/2/details"), 404, "partition")
    problem(requests.get(f"{api}/topics/nope/partitions/0/details"), 404, "topic")


def test_key_partition_is_where_the_producer_sends_the_key(api: str, log: ObjectLog) -> None:
    log.create_topic("users", partitions=7)
    keys = [b"user-42", b"\x00\xff binary", "ключ".encode()]
    sent = produce(log, "users", [[{"key": k, "value": b"v"} for k in keys]])
    for key, metadata in zip(keys, sent, strict=True):
        by_b64 = requests.get(
            f"{api}/topics/users/key-partition", params={"key_b64": base64.b64encode(key).decode()}
        ).json()
        assert by_b64 == {"topic": "users", "partitions": 7, "partition": metadata.partition}
    by_text = requests.get(f"{api}/topics/users/key-partition", params={"key": "user-42"}).json()
    assert by_text["partition"] == sent[0].partition
    problem(requests.get(f"{api}/topics/users/key-partition"), 400, "key")
    both = {"key": "a", "key_b64": "YQ=="}
    problem(requests.get(f"{api}/topics/users/key-partition", params=both), 400, "key")
    problem(
        requests.get(f"{api}/topics/users/key-partition", params={"key_b64": "@@"}), 400, "key_b64"
    )
    problem(requests.get(f"{api}/topics/nope/key-partition", params={"key": "a"}), 404, "topic")


def acl(**fields: str) -> dict[str, str]:
    return {"resource_type": "TOPIC", "resource_name": "orders", "principal": "User:bob"} | fields


def test_acls_are_added_listed_and_removed_by_filter(api: str, log: ObjectLog) -> None:
    added = requests.post(
        f"{api}/acls",
        json={
            "acls": [
                acl(operation="Read"),
                acl(operation="DESCRIBE"),
                acl(
                    resource_type="GROUP",
                    resource_name="bob-",
                    pattern_type="PREFIXED",
                    operation="read",
                ),
                acl(principal="User:eve", operation="write", permission="DENY"),
            ]
        },
    )
    assert added.status_code == 200, added.text
    assert [a["created"] for a in added.json()["acls"]] == [True] * 4
    again = requests.post(f"{api}/acls", json={"acls": [acl(operation="READ")]}).json()
    assert again["acls"][0]["created"] is False and again["acls"][0]["operation"] == "READ"

    listed = requests.get(f"{api}/acls").json()["resources"]
    assert [(r["resource_type"], r["name"], r["pattern_type"]) for r in listed] == [
        ("TOPIC", "orders", "LITERAL"),
        ("GROUP", "bob-", "PREFIXED"),
    ]
    bobs = requests.get(
        f"{api}/acls", params={"principal": "User:bob", "resource_type": "TOPIC"}
    ).json()
    assert sorted(a["operation"] for a in bobs["resources"][0]["acls"]) == ["DESCRIBE", "READ"]
    matching = requests.get(
        f"{api}/acls",
        params={"resource_type": "GROUP", "resource_name": "bob-group", "pattern_type": "MATCH"},
    ).json()
    assert [r["name"] for r in matching["resources"]] == ["bob-"]

    removed = requests.delete(
        f"{api}/acls",
        params={"resource_type": "TOPIC", "resource_name": "orders", "principal": "User:bob"},
    )
    assert removed.status_code == 200, removed.text
    assert removed.json()["count"] == 2
    left = log.items.acls.list()
    assert sorted((b.principal, b.resource_name) for b in left) == [
        ("User:bob", "bob-"),
        ("User:eve", "orders"),
    ]
    everything = requests.delete(f"{api}/acls", params={"resource_type": "ANY"}).json()
    assert everything["count"] == 2 and log.items.acls.list() == []


def test_bad_acls_are_refused_naming_the_problem_and_nothing_is_stored(
    api: str, log: ObjectLog
) -> None:
    def add(*acls: dict[str, str]) -> requests.Response:
        return requests.post(f"{api}/acls", json={"acls": list(acls)})

    good = acl(operation="READ")
    assert "unknown operation" in problem(add(good, acl(operation="Fly")), 400, "acls[1].operation")
    assert "only supports" in problem(
        add(good, acl(resource_type="GROUP", operation="WRITE")), 400, "acls[1]"
    )
    problem(add(good, acl(principal="bob", operation="READ")), 400, "acls[1].principal")
    problem(
        add(acl(resource_type="CLUSTER", resource_name="other", operation="ALTER")), 400, "acls[0]"
    )
    problem(add(acl(resource_name="*", pattern_type="PREFIXED", operation="READ")), 400, "acls[0]")
    problem(add(acl(resource_type="ANY", operation="READ")), 422, "resource_type")
    problem(requests.post(f"{api}/acls", json={"acls": []}), 422, "acls")
    assert log.items.acls.list() == []
    problem(requests.delete(f"{api}/acls"), 422, "resource_type")  # no filter: removes nothing
    problem(requests.get(f"{api}/acls", params={"operation": "Fly"}), 400, "operation")
    problem(requests.get(f"{api}/acls", params={"pattern_type": "REGEX"}), 422, "pattern_type")
    assert log.items.acls.list(AclFilter(), lambda f, b: True) == []


def test_transactions_are_listed_with_the_stuck_ones_marked_and_aborted(
    api: str, log: ObjectLog
) -> None:
    log.create_topic("ledger", partitions=2)
    coordinator = log.transactions
    stuck = coordinator.init_producer_id("stuck", 1)  # times out 1 ms after it begins
    coordinator.add_partitions("stuck", stuck.producer_id, stuck.producer_epoch, [("ledger", 0)])
    live = coordinator.init_producer_id("live", 60_000)
    coordinator.add_partitions("live", live.producer_id, live.producer_epoch, [("ledger", 1)])
    coordinator.init_producer_id("idle", 60_000)
    time.sleep(0.01)

    listed = requests.get(f"{api}/transactions").json()["transactions"]
    by_id = {t["transactional_id"]: t for t in listed}
    assert sorted(by_id) == ["idle", "live", "stuck"]
    assert by_id["stuck"]["stuck"] is True and by_id["stuck"]["partitions"] == ["ledger/0"]
    assert by_id["live"]["stuck"] is False and by_id["live"]["state"] == "Ongoing"
    assert by_id["idle"]["state"] == "Empty" and by_id["idle"]["started_ms"] is None
    ongoing = requests.get(f"{api}/transactions", params={"state": "Ongoing"}).json()
    assert sorted(t["transactional_id"] for t in ongoing["transactions"]) == ["live", "stuck"]
    assert "Bogus" in problem(
        requests.get(f"{api}/transactions", params={"state": "Ongoing,Bogus"}), 400, "state"
    )

    aborted = requests.post(f"{api}/transactions/stuck/abort")
    assert aborted.status_code == 200, aborted.text
    body = aborted.json()
    assert body["before"]["state"] == "Ongoing" and body["before"]["stuck"] is True
    assert body["after"]["producer_epoch"] > stuck.producer_epoch  # fenced
    assert body["after"]["state"] == "Empty" and not body["after"]["stuck"]
    assert coordinator.describe("stuck").producer_epoch == body["after"]["producer_epoch"]
    problem(requests.post(f"{api}/transactions/nobody/abort"), 404)
