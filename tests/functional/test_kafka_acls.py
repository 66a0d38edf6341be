"""The agent's ACL APIs over the wire (kafka/acls.py): kafka-python 3.0.12's KafkaAdminClient
(create_acls, describe_acls, delete_acls with ACLFilter) and confluent-kafka 2.16's AdminClient
(create_acls, describe_acls, delete_acls with AclBindingFilter) create literal and prefixed
ALLOW and DENY bindings for two principals, describe them with ANY, MATCH and principal filters,
delete with a filter and see exactly those gone; a second agent over the same table sees what
the first changed (the store is shared). Raw frames (kio) for what clients refuse to send: a
resource type objectlog lacks and a code Kafka does not define."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AclBinding, AclBindingFilter, AclOperation, AclPermissionType
from confluent_kafka.admin import AdminClient as ConfluentAdmin
from confluent_kafka.admin import ResourcePatternType as CPattern
from confluent_kafka.admin import ResourceType as CType
from kafka import KafkaAdminClient
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kio.schema.errors import ErrorCode

from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.kafka.server import AgentThread
from tests.kafka_agent_config import agent_config
from tests.kafka_frames import answer

Row = tuple[str, str, str, str, str, str]  # principal, permission, operation, type, pattern, name


@pytest.fixture
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    running = AgentThread(log, agent_config()).start()
    yield running
    running.stop()


@pytest.fixture
def second_agent(log_config: Config, agent: AgentThread) -> Iterator[AgentThread]:
    """Another agent, another process's state, over the same table."""
    with ObjectLog(log_config) as other:
        running = AgentThread(other, agent_config()).start()
        yield running
        running.stop()


# ---- kafka-python ------------------------------------------------------------------------


def kp_acl(
    principal: str,
    permission: ACLPermissionType,
    operation: ACLOperation,
    kind: ResourceType,
    pattern: ACLResourcePatternType,
    name: str,
) -> ACL:
    return ACL(principal, "*", operation, permission, ResourcePattern(kind, name, pattern))


def kp_filter(
    kind: ResourceType = ResourceType.ANY,
    name: str | None = None,
    pattern: ACLResourcePatternType = ACLResourcePatternType.ANY,
    principal: str | None = None,
    permission: ACLPermissionType = ACLPermissionType.ANY,
) -> ACLFilter:
    return ACLFilter(
        principal, None, ACLOperation.ANY, permission, ResourcePatternFilter(kind, name, pattern)
    )


def kp_rows(acls: list[ACL]) -> list[Row]:
    return sorted(
        (
            a.principal,
            a.permission_type.name,
            a.operation.name,
            a.resource_pattern.resource_type.name,
            a.resource_pattern.pattern_type.name,
            a.resource_pattern.resource_name,
        )
        for a in acls
    )


def kp_described(address: str, acl_filter: ACLFilter) -> list[Row]:
    admin = KafkaAdminClient(bootstrap_servers=address, request_timeout_ms=10_000)
    try:
        found, error = admin.describe_acls(acl_filter)
    finally:
        admin.close()
    assert error.errno == 0
    return kp_rows(found)


ALICE, BOB = "User:alice", "User:bob"
ALLOW, DENY = ACLPermissionType.ALLOW, ACLPermissionType.DENY
LIT, PRE = ACLResourcePatternType.LITERAL, ACLResourcePatternType.PREFIXED
KP_BINDINGS = [
    kp_acl(ALICE, ALLOW, ACLOperation.READ, ResourceType.TOPIC, LIT, "orders"),
    kp_acl(ALICE, ALLOW, ACLOperation.WRITE, ResourceType.TOPIC, PRE, "orders-"),
    kp_acl(BOB, DENY, ACLOperation.WRITE, ResourceType.TOPIC, LIT, "orders"),
    kp_acl(BOB, ALLOW, ACLOperation.READ, ResourceType.GROUP, PRE, "billing-"),
    kp_acl(BOB, ALLOW, ACLOperation.DESCRIBE, ResourceType.TOPIC, LIT, "*"),
]


def test_kafka_python_creates_describes_and_deletes_acls_a_second_agent_sees_them(
    agent: AgentThread, second_agent: AgentThread, caplog: pytest.LogCaptureFixture
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=agent.address, request_timeout_ms=10_000)
    try:
        with caplog.at_level(logging.INFO, "objectlog.kafka.acls"):
            created = admin.create_acls(KP_BINDINGS)
            assert (len(created["succeeded"]), created["failed"]) == (5, [])
            assert kp_described(agent.address, kp_filter()) == kp_rows(KP_BINDINGS)
            # MATCH: what applies to the topic orders-eu: the prefix orders- and the * literal
            assert kp_described(
                agent.address,
                kp_filter(ResourceType.TOPIC, "orders-eu", ACLResourcePatternType.MATCH),
            ) == [
                (ALICE, "ALLOW", "WRITE", "TOPIC", "PREFIXED", "orders-"),
                (BOB, "ALLOW", "DESCRIBE", "TOPIC", "LITERAL", "*"),
            ]
            assert kp_described(agent.address, kp_filter(principal=BOB)) == kp_rows(KP_BINDINGS[2:])

            [(_, removed, error)] = admin.delete_acls([kp_filter(principal=BOB, permission=DENY)])
        assert (error.errno, kp_rows(removed)) == (0, kp_rows(KP_BINDINGS[2:3]))
        left = kp_rows([*KP_BINDINGS[:2], *KP_BINDINGS[3:]])
        assert kp_described(agent.address, kp_filter()) == left
        assert kp_described(second_agent.address, kp_filter()) == left  # the table is shared
    finally:
        admin.close()
    assert (
        "ACL created by User:ANONYMOUS: ALLOW User:alice from * READ on TOPIC:LITERAL:orders"
        in caplog.text
    )
    assert (
        "ACL deleted by User:ANONYMOUS: DENY User:bob from * WRITE on TOPIC:LITERAL:orders"
        in caplog.text
    )


# ---- confluent-kafka ---------------------------------------------------------------------


def ck_rows(bindings: list[AclBinding]) -> list[Row]:
    return sorted(
        (
            b.principal,
            b.permission_type.name,
            b.operation.name,
            b.restype.name,
            b.resource_pattern_type.name,
            b.name,
        )
        for b in bindings
    )


def ck_filter(
    kind: CType = CType.ANY,
    name: str | None = None,
    pattern: CPattern = CPattern.ANY,
    principal: str | None = None,
    permission: AclPermissionType = AclPermissionType.ANY,
) -> AclBindingFilter:
    return AclBindingFilter(kind, name, pattern, principal, None, AclOperation.ANY, permission)


def ck_described(admin: ConfluentAdmin, acl_filter: AclBindingFilter) -> list[Row]:
    return ck_rows(admin.describe_acls(acl_filter, request_timeout=10).result())


CK_ALLOW, CK_DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
CK_BINDINGS = [
    AclBinding(CType.TOPIC, "payments", CPattern.LITERAL, ALICE, "*", AclOperation.READ, CK_ALLOW),
    AclBinding(CType.TOPIC, "pay", CPattern.PREFIXED, BOB, "*", AclOperation.WRITE, CK_DENY),
    AclBinding(CType.GROUP, "ledger", CPattern.LITERAL, BOB, "*", AclOperation.READ, CK_ALLOW),
    AclBinding(
        CType.TRANSACTIONAL_ID, "tx-", CPattern.PREFIXED, ALICE, "*", AclOperation.WRITE, CK_ALLOW
    ),
]


def test_confluent_kafka_creates_describes_and_deletes_acls_a_second_agent_sees_them(
    agent: AgentThread, second_agent: AgentThread
) -> None:
    admin = ConfluentAdmin({"bootstrap.servers": agent.address})
    for future in admin.create_acls(CK_BINDINGS, request_timeout=10).values():
        assert future.result() is None
    assert ck_described(admin, ck_filter()) == ck_rows(CK_BINDINGS)
    assert ck_described(admin, ck_filter(CType.TOPIC, "payments", CPattern.MATCH)) == ck_rows(
        CK_BINDINGS[:2]
    )
    assert ck_described(admin, ck_filter(principal=BOB)) == ck_rows(CK_BINDINGS[1:3])

    deleted = admin.delete_acls([ck_filter(principal=BOB)], request_timeout=10)
    [removed] = [future.result() for future in deleted.values()]
    assert ck_rows(removed) == ck_rows(CK_BINDINGS[1:3])
    left = ck_rows([CK_BINDINGS[0], CK_BINDINGS[3]])
    assert ck_described(admin, ck_filter()) == left
    other = ConfluentAdmin({"bootstrap.servers": second_agent.address})
    assert ck_described(other, ck_filter()) == left


# ---- raw frames: what clients refuse to send -------------------------------------------


def test_a_resource_type_objectlog_lacks_and_an_undefined_code_are_refused_over_the_wire(
    agent: AgentThread,
) -> None:
    creation = {
        "resource_name": "alice",
        "resource_pattern_type": 3,
        "principal": ALICE,
        "host": "*",
        "operation": 7,  # ALTER
        "permission_type": 3,  # ALLOW
    }
    created = answer(agent.address, 30, 3, {"creations": [{**creation, "resource_type": 7}]})
    [user] = created.results
    assert user.error_code == ErrorCode.invalid_request
    assert user.error_message.startswith("resource type USER (7) is not one objectlog has")

    wanted = {"pattern_type_filter": 1, "operation": 1, "permission_type": 1}
    refused = answer(agent.address, 29, 2, {**wanted, "resource_type_filter": 99})
    assert (refused.error_code, refused.error_message) == (
        ErrorCode.invalid_request,
        "unknown resource type code 99",
    )
    empty = answer(agent.address, 29, 3, {**wanted, "resource_type_filter": 7})  # USER
    assert (empty.error_code, empty.resources) == (ErrorCode.none, ())
