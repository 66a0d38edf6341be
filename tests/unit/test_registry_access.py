"""The Schema Registry's ACL table (http.registry_access) over the in-memory stores, through the
Lambda handler as API Gateway calls it: for every route, a principal granted exactly the
operation the route needs gets through, one granted the operation just short of it gets 403
(Confluent's 40301) and changes nothing; lists are filtered; a schema by id is any
authenticated principal's; subjects map to topics by TopicNameStrategy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.format.acls import (
    ANONYMOUS,
    CLUSTER_NAME,
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from objectlog.http.app import lambda_handler
from objectlog.http.registry_access import ROUTES, Need, Scope, subject_topic
from objectlog.schemas.parsing import SchemaInput
from objectlog.services.access import ENV_AUTHORIZER
from objectlog.stores.items import ItemStores
from objectlog.stores.objects import MemoryObjectStore
from objectlog.tools.gateway import LambdaContext

Op = Operation
TOPIC, CLUSTER = ResourceType.TOPIC, ResourceType.CLUSTER
MEDIA = "application/vnd.schemaregistry.v1+json"
V1 = '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}'
V2 = V1.replace("}]}", '},{"name":"n","type":"int","default":0}]}')
SCHEMA = {"schema": V2}

# (method, route, body, the operation it needs): the lead's decision (issue 37 part 3) written
# out here rather than read from ROUTES; on the topic orders (the subject orders-value, version
# 1) for a route of a subject, on the cluster for the others
CASES: list[tuple[str, str, dict[str, Any] | None, Operation]] = [
    ("GET", "/subjects/<subject>/versions", None, Op.DESCRIBE),
    ("GET", "/subjects/<subject>/versions/<version>", None, Op.DESCRIBE),
    ("GET", "/subjects/<subject>/versions/<version>/schema", None, Op.DESCRIBE),
    ("GET", "/subjects/<subject>/versions/<version>/referencedby", None, Op.DESCRIBE),
    ("GET", "/subjects/<subject>/metadata", None, Op.DESCRIBE),
    ("POST", "/subjects/<subject>", {"schema": V1}, Op.DESCRIBE),
    ("POST", "/compatibility/subjects/<subject>/versions", SCHEMA, Op.DESCRIBE),
    ("POST", "/compatibility/subjects/<subject>/versions/<version>", SCHEMA, Op.DESCRIBE),
    ("POST", "/subjects/<subject>/versions", SCHEMA, Op.WRITE),
    ("DELETE", "/subjects/<subject>", None, Op.ALTER),
    ("DELETE", "/subjects/<subject>/versions/<version>", None, Op.ALTER),
    ("GET", "/config/<subject>", None, Op.DESCRIBE_CONFIGS),
    ("GET", "/mode/<subject>", None, Op.DESCRIBE_CONFIGS),
    ("PUT", "/config/<subject>", {"compatibility": "NONE"}, Op.ALTER_CONFIGS),
    ("DELETE", "/config/<subject>", None, Op.ALTER_CONFIGS),
    ("PUT", "/mode/<subject>", {"mode": "READONLY"}, Op.ALTER_CONFIGS),
    ("DELETE", "/mode/<subject>", None, Op.ALTER_CONFIGS),
    ("GET", "/config", None, Op.DESCRIBE_CONFIGS),
    ("GET", "/mode", None, Op.DESCRIBE_CONFIGS),
    ("PUT", "/config", {"compatibility": "FULL"}, Op.ALTER_CONFIGS),
    ("DELETE", "/config", None, Op.ALTER_CONFIGS),
    ("PUT", "/mode", {"mode": "READONLY"}, Op.ALTER_CONFIGS),
]
# the operation just short of each: granted it, the route refuses
SHORT_OF = {
    Op.DESCRIBE: Op.DESCRIBE_CONFIGS,
    Op.WRITE: Op.READ,
    Op.ALTER: Op.WRITE,
    Op.DESCRIBE_CONFIGS: Op.DESCRIBE,
    Op.ALTER_CONFIGS: Op.DESCRIBE_CONFIGS,
}
SCOPES = (None, "orders-value")  # the global settings and the subject's
OPEN = ["", "/schemas/types", "/associations/resources/topic/orders"]
BY_ID = ["/schemas/ids/1", "/schemas/ids/1/schema", "/schemas/guids/{guid}"]
LISTED = ["/subjects", "/schemas/ids/1/subjects", "/schemas/ids/1/versions"]


class Registry:
    """An in-memory log holding orders-value and payments-value (one schema, id 1), served by
    the handler of the whole API with authorization on."""

    def __init__(self, log: ObjectLog | None = None) -> None:
        """``log``: another container's log (a new container loads the ACLs afresh)."""
        if log is None:
            log = ObjectLog(Config(), store=MemoryObjectStore(), items=ItemStores.memory())
            log.schema_registry.register("orders-value", SchemaInput(V1))
            log.schema_registry.register("payments-value", SchemaInput(V1))
        self.log = log
        self.guid = log.schema_registry.schema_by_id(1).guid
        self.handler = lambda_handler("all", lambda: log)

    def grant(self, principal: str, operation: Operation, kind: ResourceType, name: str) -> None:
        self.log.items.acls.create(
            [
                AclBinding(
                    kind, name, PatternType.LITERAL, principal, "*", operation, Permission.ALLOW
                )
            ]
        )

    def call(
        self, method: str, path: str, principal: str | None, body: dict[str, Any] | None = None
    ) -> tuple[int, Any]:
        path, _, query = path.partition("?")
        raw_path = f"/schema-registry{path}"
        context: dict[str, Any] = {
            "http": {"method": method, "path": raw_path, "sourceIp": "192.0.2.1"},
            "requestId": "r-1",
            "routeKey": f"{method} /schema-registry/{{proxy+}}",
            "stage": "$default",
        }
        if principal is not None:
            context["authorizer"] = {"jwt": {"claims": {"sub": principal}, "scopes": None}}
        event = {
            "version": "2.0",
            "routeKey": context["routeKey"],
            "rawPath": raw_path,
            "rawQueryString": query,
            "queryStringParameters": dict(p.split("=") for p in query.split("&"))
            if query
            else None,
            "headers": {"content-type": MEDIA} if body is not None else {},
            "requestContext": context,
            "body": json.dumps(body) if body is not None else None,
            "isBase64Encoded": False,
        }
        result = self.handler(event, LambdaContext("registry"))
        return result["statusCode"], json.loads(result["body"])

    def state(self) -> Any:
        registry = self.log.schema_registry
        return (
            registry.subjects(deleted=True),
            registry.versions("orders-value", deleted=True),
            [registry.settings.compatibility(s, default_to_global=True) for s in SCOPES],
            [registry.settings.mode(s, default_to_global=True) for s in SCOPES],
        )


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[Registry]:
    monkeypatch.setenv(ENV_AUTHORIZER, "acls")
    yield Registry()


@pytest.mark.parametrize(
    ("subject", "topic"),
    [
        ("orders-value", "orders"),
        ("orders-key", "orders"),
        ("orders.eu-value", "orders.eu"),
        ("com.acme.Order", "com.acme.Order"),  # RecordNameStrategy: the whole subject
        ("orders-com.acme.Order", "orders-com.acme.Order"),  # TopicRecordNameStrategy
        ("orders-value-value", "orders-value"),  # one suffix only
        ("-value", "-value"),  # no topic before the suffix
        ("orders-values", "orders-values"),
    ],
)
def test_a_subject_is_authorized_on_its_topic_by_topic_name_strategy(
    subject: str, topic: str
) -> None:
    assert subject_topic(subject) == topic


def resource(route: str) -> tuple[ResourceType, str]:
    return (TOPIC, "orders") if "<subject>" in route else (CLUSTER, CLUSTER_NAME)


def request_path(route: str) -> str:
    """A request to the route that succeeds (a subject holds no config or mode of its own)."""
    path = route.replace("<subject>", "orders-value").replace("<version>", "1")
    return (
        f"{path}?defaultToGlobal=true"
        if route in ("/config/<subject>", "/mode/<subject>")
        else path
    )


def test_the_table_names_every_route_and_the_cases_cover_it() -> None:
    covered = {(method, route) for method, route, _, _ in CASES}
    others = {k for k, need in ROUTES.items() if need.scope not in (Scope.SUBJECT, Scope.CLUSTER)}
    assert covered | others == set(ROUTES) and not covered & others
    for method, route, _, operation in CASES:
        scope = Scope.SUBJECT if resource(route)[0] is TOPIC else Scope.CLUSTER
        assert ROUTES[(method, route)] == Need(scope, operation), (method, route)


@pytest.mark.parametrize(
    ("method", "route", "body", "operation"),
    [pytest.param(*case, id=f"{case[0]} {case[1]}") for case in CASES],
)
def test_each_route_needs_its_operation_and_refuses_the_one_short_of_it(
    registry: Registry,
    method: str,
    route: str,
    body: dict[str, Any] | None,
    operation: Operation,
) -> None:
    (kind, name), path = resource(route), request_path(route)
    registry.grant("User:short", SHORT_OF[operation], kind, name)
    registry.grant("User:granted", operation, kind, name)
    before = registry.state()
    status, answer = registry.call(method, path, "short", body)
    assert status == 403, answer
    assert answer["error_code"] == 40301
    assert (
        f"User:short is not authorized to {operation.name} {kind.name} {name}" in answer["message"]
    )
    assert registry.state() == before  # nothing changed
    status, answer = registry.call(method, path, "granted", body)
    assert status == 200, answer


@pytest.mark.parametrize("operation", [Op.READ, Op.WRITE, Op.ALTER, Op.ALL])
def test_reading_a_subject_takes_describe_or_an_operation_implying_it(
    registry: Registry, operation: Operation
) -> None:
    registry.grant("User:bob", operation, TOPIC, "orders")
    assert registry.call("GET", "/subjects/orders-value/versions/latest", "bob")[0] == 200
    assert registry.call("GET", "/subjects/payments-value/versions/latest", "bob")[0] == 403


def test_a_refusal_names_the_subject_and_reveals_nothing_of_an_absent_one(
    registry: Registry,
) -> None:
    for subject in ("payments-value", "absent-value"):
        status, answer = registry.call("GET", f"/subjects/{subject}/versions", "bob")
        topic = subject.removesuffix("-value")
        assert (status, answer["error_code"]) == (403, 40301)
        assert answer["message"] == (
            f"User:bob is not authorized to DESCRIBE TOPIC {topic} (subject {subject})"
        )


def test_lists_hold_only_the_subjects_the_principal_may_describe(registry: Registry) -> None:
    registry.grant("User:bob", Op.READ, TOPIC, "orders")
    answers = [registry.call("GET", path, "bob") for path in LISTED]
    assert answers == [
        (200, ["orders-value"]),
        (200, ["orders-value"]),
        (200, [{"subject": "orders-value", "version": 1}]),
    ]
    assert [registry.call("GET", path, "nobody")[1] for path in LISTED] == [[], [], []]


def test_a_schema_by_id_is_any_authenticated_principals(registry: Registry) -> None:
    paths = [p.format(guid=registry.guid) for p in BY_ID]
    assert [registry.call("GET", p, "nobody")[0] for p in paths] == [200, 200, 200]
    # naming a subject asks DESCRIBE on it first: a 404 would tell the schema is not under it
    assert registry.call("GET", "/schemas/ids/1?subject=payments-value", "nobody")[0] == 403
    # User:ANONYMOUS (a route without an authorizer) needs DESCRIBE on one of its subjects
    assert [registry.call("GET", p, None)[0] for p in paths] == [403, 403, 403]
    registry.grant(ANONYMOUS, Op.DESCRIBE, TOPIC, "payments")
    anonymous = Registry(registry.log)  # a new container: it loads the ACLs afresh
    assert [anonymous.call("GET", p, None)[0] for p in paths] == [200, 200, 200]


def test_open_routes_answer_anyone(registry: Registry) -> None:
    assert [registry.call("GET", path, None)[0] for path in OPEN] == [200, 200, 200]


def test_a_schemas_references_take_describe_on_their_subjects(registry: Registry) -> None:
    registry.grant("User:alice", Op.WRITE, TOPIC, "orders")
    referring = {
        "schema": '{"type":"record","name":"Box","fields":[{"name":"o","type":"Order"}]}',
        "references": [{"name": "Order", "subject": "payments-value", "version": 1}],
    }
    before = registry.state()
    status, answer = registry.call("POST", "/subjects/orders-key/versions", "alice", referring)
    assert status == 403 and "DESCRIBE TOPIC payments (subject payments-value)" in answer["message"]
    assert registry.state() == before
    registry.grant("User:alice", Op.DESCRIBE, TOPIC, "payments")
    fresh = Registry(registry.log)  # a new container: it loads the ACLs afresh
    assert fresh.call("POST", "/subjects/orders-key/versions", "alice", referring)[0] == 200


def test_authorization_off_refuses_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_AUTHORIZER, raising=False)
    registry = Registry()
    assert registry.call("POST", "/subjects/orders-value/versions", None, SCHEMA)[0] == 200
    assert registry.call("GET", "/subjects", None)[1] == ["orders-value", "payments-value"]
    assert registry.call("PUT", "/config", None, {"compatibility": "NONE"})[0] == 200
