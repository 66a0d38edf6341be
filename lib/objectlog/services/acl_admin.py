"""Managing ACLs, shared by ``objectlog acls`` (tools.acls_cli) and the HTTP API's /acls
routes (http.acl_routes): the names operations are taken by, which operations a resource type
takes, the listing the store answers, and the JSON shape a listing is shown in (by resource,
kafka-acls.sh's grouping)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from objectlog.errors import InvalidRequest
from objectlog.format.acls import AclBinding, AclFilter, Operation, ResourceType
from objectlog.services.authorization import SUPPORTED_OPERATIONS, matches
from objectlog.stores.acls import AclResource, AclStore


def pascal(name: str) -> str:
    """CLUSTER_ACTION -> ClusterAction: Kafka's operation names on its command line."""
    return "".join(part.capitalize() for part in name.split("_"))


OPERATION_NAMES = [pascal(op.name) for op in Operation if op is not Operation.ANY]


def operation_named(text: str, field: str = "operation") -> Operation:
    """An operation by name, case-insensitive, with or without underscores (Read, READ,
    ClusterAction, CLUSTER_ACTION), as Kafka takes them; InvalidRequest naming field if none."""
    key = text.strip().replace("_", "").upper()
    for op in Operation:
        if op is not Operation.ANY and op.name.replace("_", "") == key:
            return op
    raise InvalidRequest(
        f"unknown operation {text!r}; one of {', '.join(OPERATION_NAMES)}", field=field
    )


def check_supported(kind: ResourceType, operations: Iterable[Operation], field: str) -> None:
    """InvalidRequest (naming field) for an operation the resource type does not take: each
    type takes its own (services.authorization.SUPPORTED_OPERATIONS) and All."""
    supported = SUPPORTED_OPERATIONS[kind] | {Operation.ALL}
    if any(op not in supported for op in operations):
        names = ", ".join(sorted(pascal(op.name) for op in supported))
        raise InvalidRequest(
            f"resource type {kind.name} only supports operations {names}", field=field
        )


def selected(store: AclStore, filters: Sequence[AclFilter]) -> list[AclBinding]:
    """The stored bindings some filter selects (one listing: 1 GetItem + 1 BatchGetItem per
    100 resources), all when there is no filter."""
    found = store.list()
    return [b for b in found if not filters or any(matches(f, b) for f in filters)]


def by_resource(bindings: Iterable[AclBinding]) -> dict[AclResource, list[AclBinding]]:
    grouped: dict[AclResource, list[AclBinding]] = {}
    for b in sorted(bindings):
        grouped.setdefault(AclResource.of(b), []).append(b)
    return dict(sorted(grouped.items()))


def as_json(bindings: Iterable[AclBinding]) -> list[dict[str, Any]]:
    """The bindings by resource: ``[{resource_type, name, pattern_type, acls: [{principal,
    host, operation, permission}]}]``, names as Kafka's enums spell them."""
    return [
        {
            "resource_type": r.resource_type.name,
            "name": r.name,
            "pattern_type": r.pattern_type.name,
            "acls": [
                {
                    "principal": b.principal,
                    "host": b.host,
                    "operation": b.operation.name,
                    "permission": b.permission.name,
                }
                for b in acls
            ],
        }
        for r, acls in by_resource(bindings).items()
    ]


def remove_exactly(store: AclStore, bindings: Iterable[AclBinding]) -> list[AclBinding]:
    """Remove exactly these bindings (what a listing showed: one added since is left alone);
    those this call removed, sorted (one removed meanwhile by someone else is not)."""
    exact = [
        AclFilter(
            b.resource_type,
            b.resource_name,
            b.pattern_type,
            b.principal,
            b.host,
            b.operation,
            b.permission,
        )
        for b in bindings
    ]
    if not exact:
        return []
    return sorted({b for found in store.delete(exact, matches) for b in found})
