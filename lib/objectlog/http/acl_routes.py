"""Kafka's ACLs over the HTTP API (issue 39's ACL page): list, add, remove, as kafka-acls.sh
and the agent's DescribeAcls/CreateAcls/DeleteAcls do, on the same store (stores.acls) with
the same rules (services.acl_admin, format.acls). Listing needs DESCRIBE on the cluster,
adding and removing ALTER on the cluster, as Kafka's broker checks. Listing is one read of the
store (1 GetItem + 1 BatchGetItem per 100 resources); agents and the API enforce a change
within their cache's staleness (services.acl_cache). Each change is logged with the
principal that made it."""

from __future__ import annotations

from typing import Annotated, Literal

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from objectlog.errors import InvalidRequest
from objectlog.format.acls import (
    CLUSTER_NAME,
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from objectlog.http.console_models import (
    AclIn,
    AclListOut,
    AclResourceOut,
    AddAclsOut,
    AddAclsRequest,
    AddedAclOut,
    RemovedAclsOut,
)
from objectlog.http.guards import CLUSTER
from objectlog.http.routes import Services, route_guard
from objectlog.services.acl_admin import (
    as_json,
    check_supported,
    operation_named,
    remove_exactly,
    selected,
)
from objectlog.services.authorization import describe_binding
from objectlog.stores.acls import check_sizes
from objectlog.telemetry import logger

TypeFilter = Literal["ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID"]
PatternFilter = Literal["ANY", "MATCH", "LITERAL", "PREFIXED"]
PermissionFilter = Literal["ANY", "ALLOW", "DENY"]
Name = Annotated[str | None, Query(min_length=1, max_length=1024)]
PatternQuery = Annotated[
    PatternFilter,
    Query(description="MATCH: the ACLs that apply to resource_name (literal, '*', prefixes)"),
]
OperationQuery = Annotated[
    str, Query(min_length=1, max_length=64, description="ANY, or Read, WRITE, ClusterAction...")
]


def acls_read_router(services: Services) -> Router:
    """GET /acls: the fetch function serves it."""
    router = Router()
    guard = route_guard(services, router)

    @router.get("/acls", summary="List ACLs by resource (Kafka's DescribeAcls)")
    def list_acls(
        resource_type: TypeFilter = "ANY",
        resource_name: Name = None,
        pattern_type: PatternQuery = "ANY",
        principal: Name = None,
        host: Name = None,
        operation: OperationQuery = "ANY",
        permission: PermissionFilter = "ANY",
    ) -> AclListOut:
        wanted = acl_filter(
            resource_type, resource_name, pattern_type, principal, host, operation, permission
        )
        guard.require(Operation.DESCRIBE, CLUSTER, CLUSTER_NAME)
        return AclListOut(resources=_resources(selected(services.log.items.acls, [wanted])))

    return router


def acls_write_router(services: Services) -> Router:
    """POST and DELETE /acls: the produce function serves them."""
    router = Router()
    guard = route_guard(services, router)

    @router.post("/acls", summary="Add ACLs (Kafka's CreateAcls); one there already is kept")
    def add_acls(request: Annotated[AddAclsRequest, Body()]) -> AddAclsOut:
        bindings = list(dict.fromkeys(_binding(i, a) for i, a in enumerate(request.acls)))
        principal = guard.require(Operation.ALTER, CLUSTER, CLUSTER_NAME)
        answers = services.log.items.acls.create(bindings)
        failed = next((a for a in answers if a.error is not None), None)
        for answer in answers:
            if answer.created:
                logger.info(
                    "ACL added",
                    extra={"by": principal, "acl": describe_binding(answer.binding)},
                )
        if failed is not None and failed.error is not None:
            raise failed.error  # a resource with no room left: the others were stored
        return AddAclsOut(acls=[_added(a.binding, a.created) for a in answers])

    @router.delete(
        "/acls",
        summary="Remove the ACLs a filter selects (Kafka's DeleteAcls); answers those removed",
        description="resource_type is required (ANY to match every type): a request with no "
        "filter at all removes nothing by accident.",
    )
    def remove_acls(
        resource_type: Annotated[TypeFilter, Query()],
        resource_name: Name = None,
        pattern_type: PatternQuery = "ANY",
        principal: Name = None,
        host: Name = None,
        operation: OperationQuery = "ANY",
        permission: PermissionFilter = "ANY",
    ) -> RemovedAclsOut:
        wanted = acl_filter(
            resource_type, resource_name, pattern_type, principal, host, operation, permission
        )
        by = guard.require(Operation.ALTER, CLUSTER, CLUSTER_NAME)
        acls = services.log.items.acls
        removed = remove_exactly(acls, selected(acls, [wanted]))
        for binding in removed:
            logger.info("ACL removed", extra={"by": by, "acl": describe_binding(binding)})
        return RemovedAclsOut(removed=_resources(removed), count=len(removed))

    return router


def acl_filter(
    resource_type: str,
    resource_name: str | None,
    pattern_type: str,
    principal: str | None,
    host: str | None,
    operation: str,
    permission: str,
) -> AclFilter:
    """A DescribeAcls / DeleteAcls filter from the query's names (InvalidRequest naming the
    parameter for an unknown operation)."""
    op = Operation.ANY if operation.strip().upper() == "ANY" else operation_named(operation)
    return AclFilter(
        ResourceType[resource_type],
        resource_name,
        PatternType[pattern_type],
        principal,
        host,
        op,
        Permission[permission],
    )


def _binding(i: int, acl: AclIn) -> AclBinding:
    """One binding to add, checked as kafka-acls.sh checks it (InvalidRequest naming it)."""
    field = f"acls[{i}]"
    try:
        kind = ResourceType[acl.resource_type]
        operation = operation_named(acl.operation, field="operation")
        check_supported(kind, [operation], "operation")
        binding = AclBinding(
            kind,
            acl.resource_name,
            PatternType[acl.pattern_type],
            acl.principal,
            acl.host,
            operation,
            Permission[acl.permission],
        )
        check_sizes(binding)
    except InvalidRequest as e:
        raise InvalidRequest(f"{field}: {e.message}", field=f"{field}.{e.field or ''}") from e
    return binding


def _resources(bindings: list[AclBinding]) -> list[AclResourceOut]:
    return [AclResourceOut.model_validate(r) for r in as_json(bindings)]


def _added(b: AclBinding, created: bool) -> AddedAclOut:
    return AddedAclOut(
        resource_type=b.resource_type.name,
        resource_name=b.resource_name,
        pattern_type=b.pattern_type.name,
        principal=b.principal,
        host=b.host,
        operation=b.operation.name,
        permission=b.permission.name,
        created=created,
    )
