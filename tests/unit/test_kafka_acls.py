"""The agent's ACL APIs (kafka/acls.py) on a log with no AWS (memory stores, a manual clock):
CreateAcls, DescribeAcls and DeleteAcls v1-3, each answer encoded with kio at the version asked
and decoded by a second implementation (kafka-python's protocol classes); each refusal's code,
message and log line; who made a change in its log line; the agent's AclCache invalidated by a
change."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from kafka.protocol.admin.acl import CreateAclsResponse, DeleteAclsResponse, DescribeAclsResponse
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from objectlog import ObjectLog
from objectlog.clock import ManualClock
from objectlog.config import Config
from objectlog.errors import StorageUnavailable
from objectlog.format.acls import (
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from objectlog.kafka.acls import AclsApi
from objectlog.kafka.context import PRINCIPAL, ApiContext, Broker
from objectlog.kafka.handlers import SUPPORTED
from objectlog.kafka.wire import Request, build, request_schema, response_schema
from objectlog.stores.acls import Matcher
from objectlog.stores.items import ItemStores
from objectlog.stores.memory_acls import MemoryAclStore
from objectlog.stores.objects import MemoryObjectStore

DESCRIBE, CREATE, DELETE = 29, 30, 31
DECODERS: dict[int, Any] = {
    DESCRIBE: DescribeAclsResponse,
    CREATE: CreateAclsResponse,
    DELETE: DeleteAclsResponse,
}
VERSIONS = [1, 2, 3]
# Kafka's codes: resource TOPIC 2, GROUP 3, CLUSTER 4, DELEGATION_TOKEN 6, USER 7; pattern ANY
# 1, MATCH 2, LITERAL 3, PREFIXED 4; operation ANY 1, READ 3, WRITE 4, DESCRIBE 8, CREATE_TOKENS
# 13; permission ANY 1, DENY 2, ALLOW 3.
TOPIC, GROUP, CLUSTER, DELEGATION_TOKEN, USER = 2, 3, 4, 6, 7
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
READ, WRITE, DESCRIBE_OP, CREATE_TOKENS = 3, 4, 8, 13
DENY, ALLOW = 2, 3
INVALID, STORAGE = ErrorCode.invalid_request, ErrorCode.kafka_storage_error


def acl(
    resource_type: int = TOPIC,
    name: str = "orders",
    pattern: int = LITERAL,
    principal: str = "User:alice",
    operation: int = READ,
    permission: int = ALLOW,
    host: str = "*",
) -> dict[str, Any]:
    return {
        "resource_type": resource_type,
        "resource_name": name,
        "resource_pattern_type": pattern,
        "principal": principal,
        "host": host,
        "operation": operation,
        "permission_type": permission,
    }


def acl_filter(
    resource_type: int = ANY,
    name: str | None = None,
    pattern: int = ANY,
    principal: str | None = None,
    operation: int = ANY,
    permission: int = ANY,
) -> dict[str, Any]:
    return {
        "resource_type_filter": resource_type,
        "resource_name_filter": name,
        "pattern_type_filter": pattern,
        "principal_filter": principal,
        "host_filter": None,
        "operation": operation,
        "permission_type": permission,
    }


class FailingAclStore(MemoryAclStore):
    """The table unavailable: every call fails as DynamoDB's throttling or an outage does."""

    def create(self, bindings: Sequence[AclBinding]) -> Any:
        raise StorageUnavailable("DynamoDB is unavailable")

    def delete(self, filters: Sequence[AclFilter], matches: Matcher) -> Any:
        raise StorageUnavailable("DynamoDB is unavailable")

    def list(self, filter: AclFilter | None = None, matches: Matcher | None = None) -> Any:
        raise StorageUnavailable("DynamoDB is unavailable")


def memory_context(items: ItemStores | None = None) -> ApiContext:
    log = ObjectLog(
        Config(), store=MemoryObjectStore(), items=items or ItemStores.memory(), clock=ManualClock()
    )
    return ApiContext(log, Broker("localhost", 9092))


@pytest.fixture
def ctx() -> ApiContext:
    return memory_context()


def ask(
    ctx: ApiContext, api_key: int, version: int, values: Mapping[str, Any], principal: str = ""
) -> Any:
    """The API's answer, built and encoded with kio at this version, decoded by kafka-python;
    asked on a connection of ``principal`` (unauthenticated when empty)."""
    api = AclsApi(ctx)
    handler = {
        DESCRIBE: api.describe_acls,
        CREATE: api.create_acls,
        DELETE: api.delete_acls,
    }[api_key]
    body = build(request_schema(api_key, version), values)

    async def answer() -> Any:
        if principal:
            PRINCIPAL.set(principal)  # as the server sets it, in the request's own task
        return await handler(Request(api_key, version, 7, "test", body))

    out = io.BytesIO()
    schema = response_schema(api_key, version)
    entity_writer(schema)(out, build(schema, asyncio.run(answer())))
    return DECODERS[api_key].decode(out.getvalue(), version=version)


def create(ctx: ApiContext, *creations: dict[str, Any], version: int = 3, **kw: Any) -> Any:
    return ask(ctx, CREATE, version, {"creations": list(creations)}, **kw)


def described(ctx: ApiContext, version: int = 3, **filter_fields: Any) -> list[tuple[Any, ...]]:
    answer = ask(ctx, DESCRIBE, version, acl_filter(**filter_fields))
    assert answer.error_code == 0, answer.error_message
    return [
        (
            r.resource_type,
            r.resource_name,
            r.pattern_type,
            a.principal,
            a.operation,
            a.permission_type,
        )
        for r in answer.resources
        for a in r.acls
    ]


SEVERAL = [
    acl(name="orders", principal="User:alice", operation=READ),
    acl(name="orders", principal="User:bob", operation=WRITE, permission=DENY),
    acl(name="ord", pattern=PREFIXED, principal="User:alice", operation=WRITE),
    acl(GROUP, "billing", principal="User:bob", operation=READ),
]


ALICE_READS = AclBinding(
    ResourceType.TOPIC,
    "orders",
    PatternType.LITERAL,
    "User:alice",
    "*",
    Operation.READ,
    Permission.ALLOW,
)


def test_the_three_apis_are_offered_at_kafka_versions_kio_has() -> None:
    assert (SUPPORTED[DESCRIBE], SUPPORTED[CREATE], SUPPORTED[DELETE]) == ((1, 3),) * 3


@pytest.mark.parametrize("version", VERSIONS)
def test_created_acls_are_described_by_resource_and_deleted_with_their_fields(
    ctx: ApiContext, version: int
) -> None:
    created = create(ctx, *SEVERAL, version=version)
    assert [(r.error_code, r.error_message) for r in created.results] == [(0, None)] * 4
    again = create(ctx, SEVERAL[0], version=version)  # kept: Kafka's create is idempotent
    assert [r.error_code for r in again.results] == [0]

    answer = ask(ctx, DESCRIBE, version, acl_filter())
    grouped = [
        (r.resource_type, r.resource_name, r.pattern_type, len(r.acls)) for r in answer.resources
    ]
    assert grouped == [
        (TOPIC, "ord", PREFIXED, 1),
        (TOPIC, "orders", LITERAL, 2),
        (GROUP, "billing", LITERAL, 1),
    ]
    assert sorted(
        (a.principal, a.host, a.operation, a.permission_type) for a in answer.resources[1].acls
    ) == [("User:alice", "*", READ, ALLOW), ("User:bob", "*", WRITE, DENY)]

    deleted = ask(
        ctx,
        DELETE,
        version,
        {"filters": [acl_filter(principal="User:bob"), acl_filter(TOPIC, "nothing", LITERAL)]},
    )
    bob, nothing = deleted.filter_results
    assert (bob.error_code, nothing.error_code, nothing.matching_acls) == (0, 0, [])
    assert sorted(
        (
            m.error_code,
            m.resource_type,
            m.resource_name,
            m.pattern_type,
            m.principal,
            m.host,
            m.operation,
            m.permission_type,
        )
        for m in bob.matching_acls
    ) == [
        (0, TOPIC, "orders", LITERAL, "User:bob", "*", WRITE, DENY),
        (0, GROUP, "billing", LITERAL, "User:bob", "*", READ, ALLOW),
    ]
    assert [row[3] for row in described(ctx, version)] == ["User:alice", "User:alice"]


def test_describe_filters_any_match_and_principal(ctx: ApiContext) -> None:
    create(
        ctx,
        *SEVERAL,
        acl(name="*", principal="User:carol", operation=DESCRIBE_OP),
        acl(name="other", principal="User:carol"),
    )
    # MATCH: the bindings that apply to the topic "orders": its literal ones, "*", prefix "ord"
    match = described(ctx, resource_type=TOPIC, name="orders", pattern=MATCH)
    assert sorted((row[1], row[2], row[3]) for row in match) == [
        ("*", LITERAL, "User:carol"),
        ("ord", PREFIXED, "User:alice"),
        ("orders", LITERAL, "User:alice"),
        ("orders", LITERAL, "User:bob"),
    ]
    # ANY pattern with a name: that exact name, whatever its pattern type
    assert [row[1] for row in described(ctx, resource_type=TOPIC, name="ord")] == ["ord"]
    assert {row[1] for row in described(ctx, principal="User:bob")} == {"orders", "billing"}
    assert described(ctx, permission=DENY) == [(TOPIC, "orders", LITERAL, "User:bob", WRITE, DENY)]
    assert [row[1] for row in described(ctx, resource_type=GROUP)] == ["billing"]


@pytest.mark.parametrize(
    ("creation", "message"),
    [
        pytest.param(acl(resource_type=ANY), "resource_type ANY is for filters", id="any-type"),
        pytest.param(acl(pattern=MATCH), "pattern_type MATCH is for filters", id="match"),
        pytest.param(acl(operation=ANY), "operation ANY is for filters", id="any-operation"),
        pytest.param(acl(permission=ANY), "permission ANY is for filters", id="any-permission"),
        pytest.param(acl(name=""), "the resource name is empty", id="empty-name"),
        pytest.param(
            acl(principal="alice"), "principal 'alice' is not User:<name>", id="principal"
        ),
        pytest.param(acl(principal="Group:x"), "is not User:<name>", id="principal-type"),
        pytest.param(acl(host=""), "the host is empty", id="host"),
        pytest.param(
            acl(CLUSTER, "c"), "a CLUSTER resource is named 'kafka-cluster'", id="cluster"
        ),
        pytest.param(acl(name="*", pattern=PREFIXED), "PREFIXED pattern of '*'", id="prefixed-*"),
        pytest.param(
            acl(resource_type=USER),
            "resource type USER (7) is not one objectlog has: TOPIC, GROUP, CLUSTER, "
            "TRANSACTIONAL_ID",
            id="user",
        ),
        pytest.param(acl(resource_type=DELEGATION_TOKEN), "DELEGATION_TOKEN (6)", id="token"),
        pytest.param(acl(operation=CREATE_TOKENS), "operation CREATE_TOKENS (13)", id="tokens-op"),
        pytest.param(acl(resource_type=99), "unknown resource type code 99", id="code-99"),
        pytest.param(acl(pattern=0), "unknown pattern type code 0", id="unknown-0"),
        pytest.param(acl(permission=9), "unknown permission type code 9", id="permission-9"),
    ],
)
def test_a_creation_kafka_or_objectlog_refuses_is_invalid_request_with_its_reason(
    ctx: ApiContext, caplog: pytest.LogCaptureFixture, creation: dict[str, Any], message: str
) -> None:
    with caplog.at_level(logging.INFO, "objectlog.kafka.acls"):
        answer = create(ctx, creation, SEVERAL[0])
    refused, fine = answer.results
    assert (refused.error_code, fine.error_code) == (INVALID, 0)
    assert message in refused.error_message
    assert f"CreateAcls from User:ANONYMOUS: creation 0 refused: {refused.error_message}" in (
        caplog.text
    )
    assert ctx.log.items.acls.list() == [ALICE_READS]  # the refused one stored nothing


def test_a_filter_naming_what_objectlog_lacks_matches_nothing_an_unknown_code_is_refused(
    ctx: ApiContext, caplog: pytest.LogCaptureFixture
) -> None:
    create(ctx, *SEVERAL)
    assert described(ctx, resource_type=USER) == []  # as a Kafka holding no USER ACLs answers
    assert described(ctx, operation=CREATE_TOKENS) == []
    with caplog.at_level(logging.INFO, "objectlog.kafka.acls"):
        refused = ask(ctx, DESCRIBE, 3, acl_filter(resource_type=99))
        deleted = ask(
            ctx,
            DELETE,
            3,
            {
                "filters": [
                    acl_filter(USER),
                    acl_filter(pattern=0),
                    acl_filter(principal="User:bob"),
                ]
            },
        )
    assert (refused.error_code, refused.error_message, refused.resources) == (
        INVALID,
        "unknown resource type code 99",
        [],
    )
    assert "DescribeAcls from User:ANONYMOUS refused: unknown resource type code 99" in caplog.text
    assert "DeleteAcls from User:ANONYMOUS: filter 0 matches nothing: resource type USER" in (
        caplog.text
    )
    user, unknown, bob = deleted.filter_results
    assert (user.error_code, user.matching_acls) == (0, [])
    assert (unknown.error_code, unknown.error_message) == (INVALID, "unknown pattern type code 0")
    assert "DeleteAcls from User:ANONYMOUS: filter 1 refused: unknown pattern type code 0" in (
        caplog.text
    )
    assert len(bob.matching_acls) == 2
    assert len(ctx.log.items.acls.list()) == 2  # alice's two


def test_every_change_is_logged_with_the_connections_principal(
    ctx: ApiContext, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, "objectlog.kafka.acls"):
        create(ctx, SEVERAL[1], principal="User:admin")
        create(ctx, SEVERAL[1], principal="User:admin")  # kept: no change, no line
        create(ctx, SEVERAL[0])
        ask(ctx, DELETE, 3, {"filters": [acl_filter(principal="User:bob")]}, principal="User:ops")
    changes = [r.getMessage() for r in caplog.records if r.getMessage().startswith("ACL ")]
    assert changes == [
        "ACL created by User:admin: DENY User:bob from * WRITE on TOPIC:LITERAL:orders",
        "ACL created by User:ANONYMOUS: ALLOW User:alice from * READ on TOPIC:LITERAL:orders",
        "ACL deleted by User:ops: DENY User:bob from * WRITE on TOPIC:LITERAL:orders",
    ]
    assert all(r.levelno == logging.INFO for r in caplog.records if r.getMessage() in changes)


def test_a_change_invalidates_the_agents_acl_cache(ctx: ApiContext) -> None:
    """The agent sees its own change at its next lookup, not after the cache's refresh
    interval (the clock never moves here)."""
    assert ctx.access.cache.bindings_for(ResourceType.TOPIC, "orders") == ()  # loaded, empty
    create(ctx, SEVERAL[0])
    assert [b.principal for b in ctx.access.cache.bindings_for(ResourceType.TOPIC, "orders")] == [
        "User:alice"
    ]
    ask(ctx, DELETE, 3, {"filters": [acl_filter()]})
    assert ctx.access.cache.bindings_for(ResourceType.TOPIC, "orders") == ()
    assert ctx.access.cache.reloads == 3


def test_the_table_unavailable_answers_each_creation_filter_and_describe_with_its_code(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ctx = memory_context(dataclasses.replace(ItemStores.memory(), acls=FailingAclStore()))
    with caplog.at_level(logging.WARNING, "objectlog.kafka.acls"):
        created = create(ctx, SEVERAL[0], acl(name=""))
        described_ = ask(ctx, DESCRIBE, 3, acl_filter())
        deleted = ask(ctx, DELETE, 3, {"filters": [acl_filter()]})
    assert [r.error_code for r in created.results] == [STORAGE, INVALID]
    assert (described_.error_code, deleted.filter_results[0].error_code) == (STORAGE, STORAGE)
    assert "CreateAcls from User:ANONYMOUS: 1 bindings not stored" in caplog.text
