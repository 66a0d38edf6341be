"""Kafka ACLs on the HTTP API and the REST Proxy (issue 37, http/guards.py): the Lambda handler
with authorization on, called with payload v2 events whose JWT claims name the caller as API
Gateway fills them. Each principal is allowed exactly what its ACLs grant and refused the rest
with 403 and the door's JSON body naming the operation and resource, and a refusal stores
nothing; lists leave out what a principal may not describe; a REST Proxy consumer instance
answers only its creator; a steady stream of produce requests reads no ACL.

alice: WRITE on topics prefixed ``orders``, CREATE on the topic ``orders-new``.
bob: READ on the topic ``orders`` and the group ``bob-group``.
carol: READ on the topic ``orders`` and the group ``bob-group`` too (shares bob's group).
admin: a super user.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qsl

import pytest

from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.format.acls import AclBinding, Operation, PatternType, Permission, ResourceType
from objectlog.groups import OffsetAndMetadata, TopicPartition
from objectlog.http.app import lambda_handler
from objectlog.services.acl_cache import REFRESH_S
from objectlog.tools.gateway import LambdaContext

ORDERS, PAYMENTS = "orders", "payments"
V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def allow(who: str, kind: ResourceType, name: str, op: Operation, prefixed: bool = False):  # type: ignore[no-untyped-def]
    pattern = PatternType.PREFIXED if prefixed else PatternType.LITERAL
    return AclBinding(kind, name, pattern, f"User:{who}", "*", op, Permission.ALLOW)


@pytest.fixture(scope="module")
def log(aws_endpoint: str) -> Iterator[ObjectLog]:
    suffix = uuid.uuid4().hex[:12]
    config = Config.from_env(
        bucket=f"objectlog-hacl-{suffix}", table=f"objectlog-hacl-{suffix}", auto_create_topics=True
    )
    with ObjectLog(config) as objectlog:
        objectlog.ensure_resources()
        objectlog.create_topic(ORDERS, partitions=2)
        objectlog.create_topic(PAYMENTS, partitions=1)
        objectlog.items.acls.create(
            [
                allow("alice", ResourceType.TOPIC, ORDERS, Operation.WRITE, prefixed=True),
                allow("alice", ResourceType.TOPIC, "orders-new", Operation.CREATE),
                *(
                    allow(who, kind, name, Operation.READ)
                    for who in ("bob", "carol")
                    for kind, name in (
                        (ResourceType.TOPIC, ORDERS),
                        (ResourceType.GROUP, "bob-group"),
                    )
                ),
            ]
        )
        yield objectlog


def handler_for(log: ObjectLog, authorizer: str) -> Handler:
    """A fresh container's handler of every route, its settings read from the environment
    once, as a deployed function reads them."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OBJECTLOG_AUTHORIZER", authorizer)
        env.setenv("OBJECTLOG_SUPER_USERS", "User:admin")
        handler = lambda_handler("all", lambda: log)
        assert handler.services.access.settings.enabled == (authorizer == "acls")  # type: ignore[attr-defined]
    return handler


@pytest.fixture(scope="module")
def handler(log: ObjectLog) -> Handler:
    return handler_for(log, "acls")


def event(
    who: str | None, method: str, path: str, body: Any = None, content_type: str | None = None
) -> dict[str, Any]:
    """A payload v2 event as API Gateway's JWT authorizer passes it (claim ``sub``)."""
    raw_path, _, query = path.partition("?")
    authorizer = {"jwt": {"claims": {"sub": who}, "scopes": None}} if who else None
    kind = content_type or (V2 if raw_path.startswith("/kafka") else "application/json")
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": raw_path,
        "rawQueryString": query,
        **({"queryStringParameters": dict(parse_qsl(query))} if query else {}),
        "headers": {"content-type": kind, "accept": V2 if "/kafka" in raw_path else "*/*"}
        | {"host": "api.example.com"},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "api",
            "domainName": "api.example.com",
            "http": {"method": method, "path": raw_path, "sourceIp": "192.0.2.1"},
            "requestId": uuid.uuid4().hex,
            "stage": "$default",
            **({"authorizer": authorizer} if authorizer else {}),
        },
        **({"body": json.dumps(body)} if body is not None else {}),
        "isBase64Encoded": False,
    }


class Caller:
    def __init__(self, handler: Handler, who: str | None) -> None:
        self.handler, self.who = handler, who

    def __call__(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> tuple[int, Any]:
        result = self.handler(
            event(self.who, method, path, body, content_type), LambdaContext("objectlog-all")
        )
        text = result.get("body") or "null"
        return result["statusCode"], json.loads(text)

    def refused(self, method: str, path: str, body: Any = None, **kw: Any) -> str:
        """The refusal's message, after checking the door's 403 body."""
        status, answer = self(method, path, body, **kw)
        assert status == 403, (method, path, status, answer)
        if path.startswith("/kafka"):
            assert answer["error_code"] == 40301 and set(answer) == {"error_code", "message"}
        else:
            assert answer["error"] == "NotAuthorized", answer
        message: str = answer["message"]
        return message


def records(*values: bytes) -> dict[str, Any]:
    return {"records": [{"value": base64.b64encode(v).decode(), "partition": 0} for v in values]}


def ends(log: ObjectLog, topic: str) -> list[int]:
    return [p.high_watermark for p in log.describe_topic(topic).partitions]


def test_a_writer_writes_its_topics_and_reads_none(handler: Handler, log: ObjectLog) -> None:
    alice, bob, anyone = Caller(handler, "alice"), Caller(handler, "bob"), Caller(handler, None)
    before = ends(log, ORDERS), ends(log, PAYMENTS)
    assert alice("POST", "/topics/orders/records", records(b"a"))[0] == 200
    assert alice("POST", "/kafka/topics/orders", records(b"b"), content_type=BINARY)[0] == 200
    refused = alice.refused("POST", "/topics/payments/records", records(b"x"))
    assert refused == "User:alice is not authorized to WRITE TOPIC payments"
    assert "WRITE TOPIC payments" in alice.refused(
        "POST", "/kafka/topics/payments/partitions/0", records(b"x"), content_type=BINARY
    )
    refused = bob.refused("POST", "/topics/orders", records(b"x"), content_type=BINARY)
    assert refused == "User:bob is not authorized to WRITE TOPIC orders"
    assert "User:ANONYMOUS" in anyone.refused("POST", "/topics/orders/records", records(b"x"))
    avro = {"value_schema": '"string"', "records": [{"value": "x"}]}
    assert "WRITE TOPIC payments" in alice.refused(
        "POST", "/kafka/topics/payments", avro, content_type="application/vnd.kafka.avro.v2+json"
    )
    assert log.schema_registry.subjects() == []  # no schema registered for a refused produce
    after = ends(log, ORDERS), ends(log, PAYMENTS)
    assert after == ([before[0][0] + 2, before[0][1]], before[1])  # alice's two, nothing else
    assert "READ TOPIC orders" in alice.refused(
        "GET", "/topics/orders/partitions/0/records?offset=0"
    )
    status, offsets = alice("GET", "/topics/orders/partitions/0/offsets")  # WRITE implies DESCRIBE
    assert status == 200 and offsets["latest"] == after[0][0]


def test_a_topic_made_by_a_produce_needs_create(handler: Handler, log: ObjectLog) -> None:
    alice, bob = Caller(handler, "alice"), Caller(handler, "bob")
    assert "CREATE TOPIC orders-other" in alice.refused(
        "POST", "/topics/orders-other/records", records(b"x")
    )
    assert "CREATE TOPIC orders-other" in alice.refused(
        "POST", "/kafka/topics/orders-other", records(b"x"), content_type=BINARY
    )
    assert "WRITE TOPIC bobs" in bob.refused("POST", "/topics/bobs/records", records(b"x"))
    assert "CREATE TOPIC orders-made" in alice.refused("POST", "/topics", {"name": "orders-made"})
    assert "CREATE TOPIC b" in bob.refused("POST", "/topics", {"name": "b"})
    assert not {"orders-other", "bobs", "orders-made", "b"} & set(log.list_topics())
    assert alice("POST", "/topics/orders-new/records", records(b"first"))[0] == 200
    assert ends(log, "orders-new") == [1]


def test_a_reader_reads_its_topic_and_lists_what_it_may_describe(
    handler: Handler, log: ObjectLog
) -> None:
    bob, alice = Caller(handler, "bob"), Caller(handler, "alice")
    status, fetched = bob("GET", "/topics/orders/partitions/0/records?offset=0")
    assert status == 200 and fetched["high_watermark"] == ends(log, ORDERS)[0]
    for path in (
        "/topics/payments/partitions/0/records?offset=0",
        "/topics/nothing/partitions/0/records?offset=0",
    ):
        assert "READ TOPIC" in bob.refused("GET", path)  # existing or not, alike
    for path in ("/topics/payments", "/topics/nothing", "/kafka/topics/payments/partitions"):
        assert "DESCRIBE TOPIC" in bob.refused("GET", path)
    status, described = bob("GET", "/topics/orders")
    assert status == 200 and described["partition_count"] == 2
    assert described["config"] == {}  # no DESCRIBE_CONFIGS
    assert Caller(handler, "admin")("GET", "/topics/orders")[1]["config"]
    assert bob("GET", "/topics")[1] == {"topics": [ORDERS]}
    assert bob("GET", "/kafka/topics") == (200, [ORDERS])
    listed = alice("GET", "/topics")[1]["topics"]
    assert ORDERS in listed and all(t.startswith(ORDERS) for t in listed)
    assert Caller(handler, "admin")("GET", "/kafka/topics")[1] == log.list_topics()


def test_topic_administration_needs_its_operation(handler: Handler, log: ObjectLog) -> None:
    alice, admin = Caller(handler, "alice"), Caller(handler, "admin")
    assert "DELETE TOPIC orders" in alice.refused("DELETE", "/topics/orders")
    assert "ALTER TOPIC orders" in alice.refused("PATCH", "/topics/orders", {"partitions": 3})
    assert "ALTER_CONFIGS TOPIC orders" in alice.refused(
        "PATCH", "/topics/orders", {"set": {"retention.ms": "1000"}}
    )
    assert "DELETE TOPIC orders" in alice.refused(
        "POST", "/topics/orders/delete-records", {"partitions": [{"partition": 0, "offset": 1}]}
    )
    topic = log.describe_topic(ORDERS)
    assert topic.topic.partitions == 2 and "retention.ms" not in topic.topic.config.overrides
    assert [p.log_start_offset for p in topic.partitions] == [0, 0]
    assert admin("POST", "/topics", {"name": "scratch"})[0] == 201
    assert admin("DELETE", "/topics/scratch")[0] == 204


def test_group_routes_need_the_group_and_its_topics(handler: Handler, log: ObjectLog) -> None:
    bob, alice = Caller(handler, "bob"), Caller(handler, "alice")
    log.groups.commit("payments-group", {TopicPartition(PAYMENTS, 0): OffsetAndMetadata(0)})
    groups = log.groups.list_groups()
    assert "DESCRIBE TOPIC payments" in bob.refused(
        "POST", "/groups/bob-group/members", {"topics": [PAYMENTS]}
    )
    assert "READ GROUP other" in bob.refused("POST", "/groups/other/members", {"topics": [ORDERS]})
    assert log.groups.list_groups() == groups  # no group was made or joined
    status, joined = bob("POST", "/groups/bob-group/members", {"topics": [ORDERS]})
    assert status == 201, joined
    member = joined["member_id"]
    beat = f"/groups/bob-group/members/{member}/heartbeat"
    assert bob("POST", beat, {})[0] == 200
    commit = {"member_id": member, "generation": joined["generation"]}
    wrong = {**commit, "offsets": [{"topic": PAYMENTS, "partition": 0, "offset": 1}]}
    assert "READ TOPIC payments" in bob.refused("POST", "/groups/bob-group/offsets", wrong)
    assert "READ GROUP bob-group" in alice.refused(
        "POST",
        "/groups/bob-group/offsets",
        {"offsets": [{"topic": ORDERS, "partition": 0, "offset": 1}]},
    )
    unread = TopicPartition(PAYMENTS, 0)
    assert log.groups.committed("bob-group", [unread]).get(unread) is None
    assert "DESCRIBE TOPIC payments" in bob.refused(
        "GET", "/groups/bob-group/offsets?partitions=payments:0"
    )
    assert bob("GET", "/groups/bob-group/offsets?partitions=orders:0")[0] == 200
    assert bob("GET", "/groups")[1] == {"groups": ["bob-group"]}
    assert "DESCRIBE GROUP payments-group" in bob.refused("GET", "/groups/payments-group")
    assert "DELETE GROUP bob-group" in bob.refused("DELETE", "/groups/bob-group")
    assert "READ GROUP payments-group" in bob.refused(
        "POST", "/groups/payments-group/offsets/reset", {"topics": [PAYMENTS], "to": "latest"}
    )
    assert (
        log.groups.committed("payments-group", [TopicPartition(PAYMENTS, 0)])[
            TopicPartition(PAYMENTS, 0)
        ].offset
        == 0
    )
    assert bob("POST", f"/groups/bob-group/members/{member}/leave", {})[0] == 204
    admin = Caller(handler, "admin")
    assert {"bob-group", "payments-group"} <= set(admin("GET", "/groups")[1]["groups"])
    assert admin("GET", "/groups/payments-group")[1]["offsets"]


def test_a_consumer_instance_answers_only_its_creator(handler: Handler, log: ObjectLog) -> None:
    bob, carol, alice = Caller(handler, "bob"), Caller(handler, "carol"), Caller(handler, "alice")
    status, created = bob(
        "POST", "/kafka/consumers/bob-group", {"name": "bobs", "format": "binary"}
    )
    assert status == 200, created
    base = "/kafka/consumers/bob-group/instances/bobs"
    assert "READ TOPIC payments" in bob.refused(
        "POST", f"{base}/subscription", {"topics": [PAYMENTS]}
    )
    assert bob("POST", f"{base}/subscription", {"topic_pattern": ".*"})[0] == 204
    assert bob("GET", f"{base}/subscription") == (200, {"topics": [ORDERS]})  # the readable
    status, read = bob("GET", f"{base}/records?timeout=0")
    assert status == 200, read
    for other in (carol, alice):  # carol may read the group; the instance is bob's all the same
        assert other.refused("GET", f"{base}/subscription")
        assert other.refused("DELETE", base)
        assert other.refused("GET", f"{base}/records?timeout=0")
    assert "may not use consumer instance 'bobs'" in carol.refused("GET", f"{base}/assignments")
    assert "READ GROUP bob-group" in alice.refused("GET", f"{base}/assignments")
    assert "READ GROUP alices" in alice.refused("POST", "/kafka/consumers/alices", {})
    assert bob("GET", f"{base}/subscription") == (200, {"topics": [ORDERS]})  # still bob's
    assert bob("DELETE", base)[0] == 204


def dynamodb_calls(log: ObjectLog, run: Callable[[], None]) -> list[str]:
    """The DynamoDB calls run made, but the topic activity touches: a writer touches at most
    once a second (services.activity), so their count follows the run's duration."""
    calls: list[str] = []

    def count(event_name: str, params: dict[str, Any], **_: Any) -> None:
        key = params.get("Key", {}).get("pk", {}).get("S", "")
        if not str(key).startswith("activity#"):
            calls.append(event_name.rsplit(".", 1)[-1])

    events = log.metadata.client.meta.events
    events.register("provide-client-params.dynamodb", count)
    try:
        run()
    finally:
        events.unregister("provide-client-params.dynamodb", count)
    return calls


def test_a_steady_stream_of_produce_requests_reads_no_acl(log: ObjectLog) -> None:
    """50 produce requests to a warm topic in a fresh container, with authorization off and on:
    with it on, the only extra DynamoDB requests are the ACL cache's first load (the version
    item, the registry, one BatchGetItem) and a version check per REFRESH_S."""
    made: dict[str, list[str]] = {}
    took: dict[str, float] = {}

    def stream(alice: Caller) -> Callable[[], None]:
        def run() -> None:
            for i in range(50):
                assert alice("POST", "/topics/orders/records", records(b"%d" % i))[0] == 200

        return run

    for authorizer in ("none", "acls"):
        stream_of = stream(Caller(handler_for(log, authorizer), "alice"))
        started = time.monotonic()
        made[authorizer] = dynamodb_calls(log, stream_of)
        took[authorizer] = time.monotonic() - started
    extra = Counter(made["acls"]) - Counter(made["none"])  # what authorization added
    checks = int(took["acls"] // REFRESH_S) + 1
    print(f"50 produces: off {Counter(made['none'])} in {took['none']:.2f} s")
    print(f"50 produces: on {Counter(made['acls'])} in {took['acls']:.2f} s")
    assert set(extra) <= {"GetItem", "BatchGetItem"}, extra
    assert sum(extra.values()) <= 3 + checks, extra
