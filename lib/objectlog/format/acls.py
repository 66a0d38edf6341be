"""Kafka's access-control model (issue 37, docs/security.md): the values an ACL binding holds,
with Kafka's names and wire codes (org.apache.kafka.common.acl and .resource), so the agent's
CreateAcls/DescribeAcls/DeleteAcls, the CLI and the HTTP API speak one vocabulary.

A binding: principal (``User:<name>``, or ``User:*``), host (``*`` or an address), resource
(type, name, pattern type), operation and permission. Filters (DescribeAcls, DeleteAcls) use
the same fields with ANY and MATCH where Kafka allows them. The rules that decide a request
live in services.authorization; the store in stores.acls.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from objectlog.errors import InvalidRequest

ANONYMOUS = "User:ANONYMOUS"  # an unauthenticated connection's principal, as Kafka's
WILDCARD = "*"  # every principal (User:*), every host, or (LITERAL) every resource name
CLUSTER_NAME = "kafka-cluster"  # the one CLUSTER resource's name, as Kafka's


class ResourceType(enum.IntEnum):
    """Kafka's resource types (the codes on the wire)."""

    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5


class PatternType(enum.IntEnum):
    """How a binding's resource name matches: exactly (LITERAL; ``*`` matches every name) or
    as a prefix (PREFIXED). ANY and MATCH only in filters."""

    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(enum.IntEnum):
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class Permission(enum.IntEnum):
    ANY = 1
    DENY = 2
    ALLOW = 3


@dataclass(frozen=True, order=True)
class AclBinding:
    """One ACL, as Kafka's AclBinding: who may (or may not) do what to which resources."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    def __post_init__(self) -> None:
        check_binding(self)


@dataclass(frozen=True)
class AclFilter:
    """DescribeAcls' and DeleteAcls' filter: None matches any principal, host or name; ANY
    any type, pattern, operation or permission; MATCH the bindings that would apply to the
    named resource (literal, the wildcard, and prefixes of it)."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: Operation = Operation.ANY
    permission: Permission = Permission.ANY


def check_principal(principal: str) -> str:
    """A principal Kafka takes: ``<type>:<name>``, here ``User:<name>`` (InvalidRequest)."""
    kind, colon, name = principal.partition(":")
    if not colon or kind != "User" or not name:
        raise InvalidRequest(
            f"principal {principal!r} is not User:<name> (or User:*)", field="principal"
        )
    return principal


def check_binding(binding: AclBinding) -> None:
    """InvalidRequest for a binding Kafka refuses to create: a filter-only value (ANY,
    MATCH), an empty name, a CLUSTER resource not named kafka-cluster, a prefixed wildcard."""
    for value, field in (
        (binding.resource_type, "resource_type"),
        (binding.pattern_type, "pattern_type"),
        (binding.operation, "operation"),
        (binding.permission, "permission"),
    ):
        if value.name in ("ANY", "MATCH"):
            raise InvalidRequest(f"{field} {value.name} is for filters, not ACLs", field=field)
    if not binding.resource_name:
        raise InvalidRequest("the resource name is empty", field="resource_name")
    if binding.resource_type is ResourceType.CLUSTER and binding.resource_name != CLUSTER_NAME:
        raise InvalidRequest(
            f"a CLUSTER resource is named {CLUSTER_NAME!r}, not {binding.resource_name!r}",
            field="resource_name",
        )
    if binding.pattern_type is PatternType.PREFIXED and binding.resource_name == WILDCARD:
        raise InvalidRequest("a PREFIXED pattern of '*' matches nothing", field="resource_name")
    check_principal(binding.principal)
    if not binding.host:
        raise InvalidRequest("the host is empty: '*' for any", field="host")
