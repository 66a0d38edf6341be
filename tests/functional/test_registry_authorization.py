"""Kafka ACLs on the Schema Registry (issue 37, http.registry_access) over the embedded AWS
endpoint: alice may WRITE the topic orders, bob may READ it. Through the local gateway with the
registry's basic-auth authorizer (users made as `objectlog users add` makes them), by REST and
by confluent-kafka's SchemaRegistryClient: alice registers orders-value, bob reads it and its
id but may not register or delete it, neither may touch payments-value (403, 40301, nothing
stored), lists hold only what each may describe. And the check costs no DynamoDB request per
request once the container's ACL cache is loaded."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from objectlog import ObjectLog
from objectlog.format.acls import AclBinding, Operation, PatternType, Permission, ResourceType
from objectlog.http.app import lambda_handler
from objectlog.http.routes import FETCH
from objectlog.kafka.users import Users
from objectlog.schemas.parsing import SchemaInput
from objectlog.services.access import ENV_AUTHORIZER
from objectlog.tools.gateway import LambdaContext, local_api

MEDIA = "application/vnd.schemaregistry.v1+json"
PASSWORDS = {"alice": "alice-secret-1", "bob": "bob-secret-22"}
V1 = '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}'
V2 = V1.replace("}]}", '},{"name":"n","type":"int","default":0}]}')


def grant(log: ObjectLog, user: str, operation: Operation, topic: str) -> None:
    log.items.acls.create(
        [
            AclBinding(
                ResourceType.TOPIC,
                topic,
                PatternType.LITERAL,
                f"User:{user}",
                "*",
                operation,
                Permission.ALLOW,
            )
        ]
    )


@pytest.fixture
def registry(log: ObjectLog, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The registry's URL on a local gateway guarded as deployed, authorization by ACLs on."""
    monkeypatch.setenv(ENV_AUTHORIZER, "acls")
    grant(log, "alice", Operation.WRITE, "orders")
    grant(log, "bob", Operation.READ, "orders")
    users = Users(log.items.documents)
    for name, password in PASSWORDS.items():
        users.add(name, password)
    gateway = local_api(lambda: log, registry_auth=True)
    url = gateway.start(port=0)
    yield f"{url}/schema-registry"
    gateway.stop()


def call(method: str, url: str, user: str, body: object = None) -> requests.Response:
    return requests.request(
        method,
        url,
        data=None if body is None else json.dumps(body),
        headers={"Content-Type": MEDIA},
        auth=(user, PASSWORDS[user]),
        timeout=10,
    )


def refused(response: requests.Response, message: str) -> bool:
    body = response.json()
    return response.status_code == 403 and body == {"error_code": 40301, "message": message}


def test_each_user_may_do_what_its_topic_acls_grant_and_nothing_else(
    registry: str, log: ObjectLog
) -> None:
    versions = f"{registry}/subjects/orders-value/versions"
    registered = call("POST", versions, "alice", {"schema": V1})
    assert registered.status_code == 200, registered.text
    schema_id = registered.json()["id"]
    latest = call("GET", f"{versions}/latest", "bob").json()
    assert (latest["id"], latest["version"]) == (schema_id, 1)
    by_id = call("GET", f"{registry}/schemas/ids/{schema_id}", "bob").json()
    assert by_id["schema"] == latest["schema"]
    assert refused(
        call("POST", versions, "bob", {"schema": V2}),
        "User:bob is not authorized to WRITE TOPIC orders (subject orders-value)",
    )
    for user in ("alice", "bob"):  # WRITE does not imply ALTER, nor READ
        assert refused(
            call("DELETE", f"{registry}/subjects/orders-value", user),
            f"User:{user} is not authorized to ALTER TOPIC orders (subject orders-value)",
        )
        for method, body in (("POST", {"schema": V1}), ("GET", None)):
            assert refused(
                call(method, f"{registry}/subjects/payments-value/versions", user, body),
                f"User:{user} is not authorized to {'WRITE' if body else 'DESCRIBE'} TOPIC "
                "payments (subject payments-value)",
            )
        assert call("PUT", f"{registry}/config", user, {"compatibility": "NONE"}).status_code == 403
    registry_state = log.schema_registry
    assert registry_state.subjects(deleted=True) == ["orders-value"]  # nothing stored
    assert registry_state.versions("orders-value", deleted=True) == [1]
    assert registry_state.settings.compatibility(None) == "BACKWARD"
    # payments-value made by someone trusted (the library's direct access: IAM, not ACLs)
    registry_state.register("payments-value", SchemaInput(V1))
    for user in ("alice", "bob"):
        assert call("GET", f"{registry}/subjects", user).json() == ["orders-value"]
        ids = f"{registry}/schemas/ids/{schema_id}"
        assert call("GET", f"{ids}/subjects", user).json() == ["orders-value"]
        assert call("GET", f"{ids}/versions", user).json() == [
            {"subject": "orders-value", "version": 1}
        ]


def test_confluent_clients_of_two_users_through_the_gateway(registry: str, log: ObjectLog) -> None:
    def client(user: str) -> SchemaRegistryClient:
        return SchemaRegistryClient(
            {"url": registry, "basic.auth.user.info": f"{user}:{PASSWORDS[user]}"}
        )

    alice, bob = client("alice"), client("bob")
    schema_id = alice.register_schema("orders-value", Schema(V1, "AVRO"))
    latest = bob.get_latest_version("orders-value")
    latest_text = latest.schema.schema_str
    assert latest.schema_id == schema_id
    assert bob.get_schema(schema_id, subject_name="orders-value").schema_str == latest_text
    for attempt in (
        lambda: bob.register_schema("orders-value", Schema(V2, "AVRO")),
        lambda: bob.delete_subject("orders-value"),
        lambda: alice.register_schema("payments-value", Schema(V1, "AVRO")),
        lambda: bob.get_latest_version("payments-value"),
    ):
        with pytest.raises(SchemaRegistryError) as error:
            attempt()
        assert (error.value.http_status_code, error.value.error_code) == (403, 40301)
    log.schema_registry.register("payments-value", SchemaInput(V1))
    assert bob.get_subjects() == ["orders-value"]
    assert log.schema_registry.versions("orders-value") == [1]


def event(path: str, user: str) -> dict[str, Any]:
    """A payload v2 GET of the registry, its principal a JWT authorizer's claim."""
    return {
        "version": "2.0",
        "routeKey": "GET /schema-registry/{proxy+}",
        "rawPath": f"/schema-registry{path}",
        "rawQueryString": "",
        "headers": {},
        "requestContext": {
            "http": {"method": "GET", "path": f"/schema-registry{path}", "sourceIp": "192.0.2.1"},
            "requestId": "r-1",
            "routeKey": "GET /schema-registry/{proxy+}",
            "stage": "$default",
            "authorizer": {"jwt": {"claims": {"sub": user}, "scopes": None}},
        },
        "isBase64Encoded": False,
    }


REQUESTS = 50
PATH = "/subjects/orders-value/versions/latest"
FIRST_LOAD = 3  # the ACL cache's version item, the bindings' registry and one batch of them


def test_a_steady_stream_of_requests_reads_no_acl(
    clocked_log: ObjectLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """50 reads of a subject by bob in a new container, authorization off and on: on costs the
    ACL cache's first load and nothing per request. (Then one GetItem per 5 s, services.
    acl_cache; the log's clock stands still here so a slow run counts the same.)"""
    log = clocked_log
    log.schema_registry.register("orders-value", SchemaInput(V1))
    grant(log, "bob", Operation.READ, "orders")
    calls: list[str] = []

    def count(event_name: str, **_: Any) -> None:
        calls.append(event_name.rsplit(".", 1)[-1])

    made: dict[str, list[str]] = {}
    events = log.metadata.client.meta.events
    events.register("before-call.dynamodb", count)
    try:
        for authorizer in ("none", "acls"):
            monkeypatch.setenv(ENV_AUTHORIZER, authorizer)
            handler = lambda_handler(FETCH, lambda: log)  # a new container
            calls.clear()
            for _ in range(REQUESTS):
                answer = handler(event(PATH, "bob"), LambdaContext("fetch"))
                assert answer["statusCode"] == 200, answer
            made[authorizer] = list(calls)
    finally:
        events.unregister("before-call.dynamodb", count)
    extra = len(made["acls"]) - len(made["none"])
    assert 0 < extra <= FIRST_LOAD, made
