"""The console's API routes with ACLs on (issue 39; http/guards.py): ACLs need DESCRIBE on the
cluster to be listed and ALTER on it to be added or removed (Kafka's DescribeAcls, CreateAcls,
DeleteAcls); a topic's activity, details and key partition need DESCRIBE on the topic; the
overview and the transactions list count only what the caller may DESCRIBE; an abort needs
WRITE on the transactional id. A refusal is 403 naming the operation and resource, and
changes nothing.

bob: READ on the topic ``orders`` (which implies DESCRIBE), DESCRIBE on the transactional id
``bobs-tx``. admin: a super user."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.format.acls import Operation, ResourceType
from tests.functional.test_http_authorization import Caller, Handler, allow, handler_for


@pytest.fixture(scope="module")
def log(aws_endpoint: str) -> Iterator[ObjectLog]:
    suffix = uuid.uuid4().hex[:12]
    config = Config.from_env(bucket=f"objectlog-cacl-{suffix}", table=f"objectlog-cacl-{suffix}")
    with ObjectLog(config) as objectlog:
        objectlog.ensure_resources()
        objectlog.create_topic("orders", partitions=2)
        objectlog.create_topic("payments")
        objectlog.items.acls.create(
            [
                allow("bob", ResourceType.TOPIC, "orders", Operation.READ),
                allow("bob", ResourceType.TRANSACTIONAL_ID, "bobs-tx", Operation.DESCRIBE),
            ]
        )
        for transactional_id in ("bobs-tx", "other-tx"):
            objectlog.transactions.init_producer_id(transactional_id, 60_000)
        yield objectlog


@pytest.fixture(scope="module")
def handler(log: ObjectLog) -> Handler:
    return handler_for(log, "acls")


def test_acls_need_describe_to_list_and_alter_to_change_on_the_cluster(
    handler: Handler, log: ObjectLog
) -> None:
    bob, admin = Caller(handler, "bob"), Caller(handler, "admin")
    before = log.items.acls.list()
    assert "DESCRIBE CLUSTER kafka-cluster" in bob.refused("GET", "/acls")
    new = {"resource_type": "TOPIC", "resource_name": "payments", "principal": "User:bob"}
    added = {"acls": [new | {"operation": "READ"}]}
    assert "ALTER CLUSTER kafka-cluster" in bob.refused("POST", "/acls", added)
    assert "ALTER CLUSTER kafka-cluster" in bob.refused("DELETE", "/acls?resource_type=ANY")
    assert log.items.acls.list() == before  # nothing added, nothing removed
    status, listed = admin("GET", "/acls?principal=User:bob")
    assert status == 200 and len(listed["resources"]) == 2


def test_a_topics_console_reads_need_describe_on_it(handler: Handler) -> None:
    bob = Caller(handler, "bob")
    for path in (
        "/topics/{}/activity?minutes=5",
        "/topics/{}/partitions/0/details",
        "/topics/{}/key-partition?key=k",
    ):
        assert "DESCRIBE TOPIC payments" in bob.refused("GET", path.format("payments"))
        assert bob("GET", path.format("orders"))[0] == 200, path


def test_the_overview_counts_only_what_the_caller_may_describe(handler: Handler) -> None:
    status, seen = Caller(handler, "bob")("GET", "/overview")
    assert status == 200 and (seen["topics"], seen["partitions"]) == (1, 2)
    assert Caller(handler, "admin")("GET", "/overview")[1]["topics"] == 2


def test_transactions_list_what_may_be_described_and_abort_needs_write(
    handler: Handler, log: ObjectLog
) -> None:
    bob, admin = Caller(handler, "bob"), Caller(handler, "admin")
    status, listed = bob("GET", "/transactions")
    assert status == 200 and [t["transactional_id"] for t in listed["transactions"]] == ["bobs-tx"]
    epoch = log.transactions.describe("bobs-tx").producer_epoch
    refused = bob.refused("POST", "/transactions/bobs-tx/abort")
    assert refused == "User:bob is not authorized to WRITE TRANSACTIONAL_ID bobs-tx"
    assert log.transactions.describe("bobs-tx").producer_epoch == epoch  # not fenced
    status, aborted = admin("POST", "/transactions/bobs-tx/abort")
    assert status == 200 and aborted["after"]["producer_epoch"] == epoch + 1
