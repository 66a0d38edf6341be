"""Consumer groups over the HTTP API (local API Gateway), and the groups CLI."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
import requests
from click.testing import CliRunner

from objectlog import ObjectLog
from objectlog.clients.http import HttpObjectLog
from objectlog.errors import CommitFailed, GroupNotEmpty, GroupNotFound, UnknownMemberId
from objectlog.groups import TopicPartition
from objectlog.tools.cli import main

TOPIC = "orders"


@pytest.fixture
def remote(api: str, log: ObjectLog) -> Iterator[HttpObjectLog]:
    log.create_topic(TOPIC, partitions=4)
    with log.producer() as producer:
        for p in range(4):
            for i in range(5):
                producer.send(TOPIC, value=f"{p}:{i}".encode(), partition=p)
    with ObjectLog.connect(api_url=api) as http_log:
        yield http_log


def test_group_protocol_over_http(remote: HttpObjectLog, log: ObjectLog) -> None:
    groups = remote.groups
    first = groups.join("g", [TOPIC], client_id="billing", strategies=["sticky"])
    assert len(first.owned) == 4 and first.generation == 1
    second = groups.join("g", [TOPIC], strategies=["sticky"])
    assert len(second.assigned) == 2 and second.owned == ()

    view = groups.heartbeat("g", first.member_id, owned=first.owned)
    moving = set(first.owned) - set(view.assigned)
    groups.heartbeat(
        "g",
        first.member_id,
        owned=view.assigned,
        release={tp: (3, "handed over") for tp in moving},
    )
    second = groups.heartbeat("g", second.member_id)
    assert set(second.owned) == set(second.claimed) == moving
    assert groups.committed("g", moving) == {tp: (3, "handed over") for tp in moving}

    with pytest.raises(CommitFailed, match="now owned by"):  # the zombie's commit
        groups.commit("g", {tp: 4 for tp in moving}, member_id=first.member_id, generation=1)
    groups.commit("g", {tp: 5 for tp in moving}, member_id=second.member_id, generation=2)
    assert log.groups.committed("g", moving) == {tp: (5, "") for tp in moving}

    described = groups.describe("g")
    assert described.state == "Stable" and described.generation == 2
    assert sorted(m.client_id for m in described.members) == ["billing", "objectlog"]
    assert {(p.partition, p.lag) for p in described.offsets if p.committed == 5} == {
        (tp.partition, 0) for tp in moving
    }
    assert groups.list_groups() == ["g"]

    with pytest.raises(GroupNotEmpty):
        groups.reset_offsets("g", [TOPIC], to="earliest")
    groups.leave("g", first.member_id)
    groups.leave("g", second.member_id)
    with pytest.raises(UnknownMemberId):
        groups.heartbeat("g", second.member_id)
    assert groups.reset_offsets("g", [TOPIC], to="offset", offsets={(TOPIC, 1): 2}) == {
        TopicPartition(TOPIC, 1): 2
    }
    groups.delete_group("g")
    with pytest.raises(GroupNotFound):
        groups.describe("g")


def test_consumer_over_http_reads_everything_and_resumes(remote: HttpObjectLog) -> None:
    options = {"group": "http", "topics": [TOPIC], "auto_offset_reset": "earliest"}
    with remote.consumer(enable_auto_commit=False, **options) as consumer:
        records = []
        deadline = time.monotonic() + 20
        while len(records) < 20 and time.monotonic() < deadline:
            records += consumer.poll(timeout=0.2)
        assert sorted((r.partition, r.offset) for r in records) == [
            (p, o) for p in range(4) for o in range(5)
        ]
        consumer.commit()
    with remote.consumer(**options) as again:
        assert again.poll(timeout=0.3) == []
        assert again.position(TopicPartition(TOPIC, 2)) == 5


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/groups/g/members", {"topics": []}, 422),
        ("POST", "/groups/g/members", {"topics": ["orders"], "surprise": 1}, 422),
        ("POST", "/groups/g/members", {"topics": ["missing"]}, 404),
        ("POST", f"/groups/{'g' * 250}/members", {"topics": ["orders"]}, 422),
        ("POST", "/groups/g/members", {"topics": ["orders"], "session_timeout_ms": 1}, 422),
        ("POST", "/groups/g/members/nobody/heartbeat", {}, 404),
        ("GET", "/groups/g/offsets?partitions=orders", None, 400),
        ("GET", "/groups/g/offsets?partitions=..%2F..:0", None, 400),
        ("POST", "/groups/g/offsets", {"offsets": [{"topic": "orders", "partition": 0}]}, 422),
        (
            "POST",
            "/groups/g/offsets",
            {"offsets": [{"topic": "orders", "partition": 99, "offset": 0}]},
            404,
        ),
        (
            "POST",
            "/groups/g/offsets",
            {"offsets": [{"topic": "orders", "partition": 0, "offset": -1}]},
            422,
        ),
        ("POST", "/groups/g/offsets/reset", {"topics": ["orders"], "to": "sideways"}, 400),
        ("GET", "/groups/missing", None, 404),
        ("DELETE", "/groups/missing", None, 404),
        ("PUT", "/groups/g", None, 405),
    ],
)
def test_bad_group_requests_get_4xx_and_store_nothing(
    remote: HttpObjectLog, log: ObjectLog, api: str, method: str, path: str, body, status: int
) -> None:
    response = requests.request(method, f"{api}{path}", json=body)
    assert response.status_code == status, response.text
    assert response.json()["message"]
    assert log.groups.list_groups() == []
    assert not log.groups.store.get_group("g").exists
    assert log.groups.committed("g", [TopicPartition(TOPIC, 0)]) == {TopicPartition(TOPIC, 0): None}


def test_group_routes_are_in_the_openapi_document(api: str) -> None:
    paths = requests.get(f"{api}/openapi.json").json()["paths"]
    assert {"post"} <= set(paths["/groups/{group}/members"])
    assert {"get", "post"} <= set(paths["/groups/{group}/offsets"])
    assert {"get", "delete"} <= set(paths["/groups/{group}"])


def test_groups_cli(log: ObjectLog, log_env: dict[str, str]) -> None:
    log.create_topic(TOPIC, partitions=2)
    with log.producer() as producer:
        for i in range(6):
            producer.send(TOPIC, value=b"v%d" % i, partition=i % 2)
    runner = CliRunner()

    def run(*args: str):
        result = runner.invoke(main, list(args), env=log_env, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result

    consumed = run("consume", TOPIC, "--group", "cli", "--from-beginning", "--max-records", "4")
    assert len(consumed.stdout.split()) == 4
    rest = run("consume", TOPIC, "--group", "cli", "--timeout", "0.5")
    assert len(rest.stdout.split()) == 2  # resumes from the group's commits: none twice
    assert run("groups", "list").stdout.split() == ["cli"]
    described = json.loads(run("groups", "describe", "cli", "--json").stdout)
    assert described["state"] == "Empty" and described["total_lag"] == 0
    assert [p["current_offset"] for p in described["partitions"]] == [3, 3]
    table = run("groups", "describe", "cli").stdout
    assert "CURRENT-OFFSET" in table and "LOG-END-OFFSET" in table

    dry = run("groups", "reset-offsets", "cli", "--topic", TOPIC, "--to-earliest")
    assert dry.stdout.split() == [TOPIC, "0", "0", TOPIC, "1", "0"]
    assert log.groups.committed("cli", [TopicPartition(TOPIC, 0)])[TopicPartition(TOPIC, 0)] == (
        3,
        "",
    )
    run("groups", "reset-offsets", "cli", "--topic", TOPIC, "--shift-by", "-1", "--execute")
    assert log.groups.committed("cli", [TopicPartition(TOPIC, 1)])[TopicPartition(TOPIC, 1)] == (
        2,
        "",
    )
    again = run("consume", TOPIC, "--group", "cli", "--timeout", "0.5")
    assert again.stdout.split() == ["v4", "v5"]
    run("groups", "delete", "cli")
    assert run("groups", "list").stdout.split() == []
