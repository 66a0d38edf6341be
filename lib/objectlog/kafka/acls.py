"""CreateAcls (30), DescribeAcls (29) and DeleteAcls (31): kafka-acls.sh, the Java
AdminClient's createAcls/describeAcls/deleteAcls, confluent-kafka's and kafka-python's
create_acls/describe_acls/delete_acls manage the ACLs in the table (stores.acls), shared by
every agent (issue 37, docs/security.md). Deciding requests by them is services.authorization's.

Answered as Kafka 3.9's broker (KRaft: AclApis, AclControlManager.validateNewAcl and
validateFilter) answers them, at versions 1-3 (v1 added pattern types, v2 is flexible, v3 the
USER resource type; kio has no v0, which Kafka 4.0 removed too):

- CreateAcls: per creation, NONE (created, or kept because it existed) or INVALID_REQUEST with
  a message, for a binding format.acls.check_binding refuses (ANY or MATCH values, an empty
  name, a CLUSTER not named kafka-cluster, a principal not ``User:<name>``, an empty host) or
  past a store bound, and for a code objectlog has no value for: one Kafka does not define (as
  validateNewAcl refuses its UNKNOWN) and the two it defines that objectlog has no use for,
  the DELEGATION_TOKEN and USER resource types and the CREATE_TOKENS and DESCRIBE_TOKENS
  operations (objectlog has neither delegation tokens nor user quotas).
- DescribeAcls: the matching bindings grouped by resource (type, name, pattern type), sorted.
  A filter naming a value Kafka defines but objectlog lacks (USER, DESCRIBE_TOKENS) matches
  nothing, as on a Kafka holding no such ACL; a code Kafka does not define is INVALID_REQUEST
  (Kafka's request refuses UNKNOWN; the agent answers with a message rather than closing).
- DeleteAcls: per filter, the bindings it removed with their fields; a filter with a code Kafka
  does not define is INVALID_REQUEST ("Unknown ...", validateFilter's answer), one naming a
  value objectlog lacks removes nothing. A store failure answers each creation or filter (or
  the describe) with its code (kafka.errors: KAFKA_STORAGE_ERROR, REQUEST_TIMED_OUT).

Every refusal is logged with its reason; every change at INFO with the connection's principal
(context.PRINCIPAL) and the binding. After a create or delete the agent's AclCache is
invalidated, so this agent enforces the change at its next check; the others within the
cache's staleness (services.acl_cache).
"""

from __future__ import annotations

import enum
import logging
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

from objectlog.errors import InvalidRequest, ObjectLogError
from objectlog.format.acls import (
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from objectlog.kafka.context import ApiContext, request_principal
from objectlog.kafka.errors import error_code
from objectlog.kafka.wire import Request
from objectlog.services.authorization import describe_binding, matches

log = logging.getLogger(__name__)

E = TypeVar("E", bound=enum.IntEnum)

# Codes Kafka defines for which objectlog has no value (org.apache.kafka.common.resource and
# .acl): no delegation tokens, no user resources.
KAFKA_ONLY: dict[type[enum.IntEnum], dict[int, str]] = {
    ResourceType: {6: "DELEGATION_TOKEN", 7: "USER"},
    Operation: {13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS"},
}
FIELDS = {
    ResourceType: "resource type",
    PatternType: "pattern type",
    Operation: "operation",
    Permission: "permission type",
}


class UnknownCode(InvalidRequest):
    """A code on the wire that names no value objectlog has (``kafka_defines``: one Kafka has)."""

    def __init__(self, message: str, *, kafka_defines: bool) -> None:
        super().__init__(message)
        self.kafka_defines = kafka_defines


def decode(kind: type[E], code: int) -> E:
    """The value of a wire code, or UnknownCode naming the field and the code."""
    try:
        return kind(code)
    except ValueError:
        pass
    what = FIELDS[kind]
    kafka_name = KAFKA_ONLY.get(kind, {}).get(code)
    if kafka_name is not None:
        raise UnknownCode(
            f"{what} {kafka_name} ({code}) is not one objectlog has: "
            f"{', '.join(v.name for v in kind if v.name not in ('ANY', 'MATCH'))}",
            kafka_defines=True,
        )
    raise UnknownCode(f"unknown {what} code {code}", kafka_defines=False)


def binding_of(creation: Any) -> AclBinding:
    """A CreateAcls creation as a binding (InvalidRequest as check_binding refuses it)."""
    return AclBinding(
        decode(ResourceType, creation.resource_type),
        creation.resource_name,
        decode(PatternType, creation.resource_pattern_type),
        creation.principal,
        creation.host,
        decode(Operation, creation.operation),
        decode(Permission, creation.permission_type),
    )


def filter_of(wire: Any) -> AclFilter:
    """A DescribeAcls request's or a DeleteAcls filter's fields as an AclFilter; UnknownCode
    for a code objectlog has no value for (``kafka_defines``: the filter matches nothing)."""
    return AclFilter(
        resource_type=decode(ResourceType, wire.resource_type_filter),
        resource_name=wire.resource_name_filter,
        pattern_type=decode(PatternType, wire.pattern_type_filter),
        principal=wire.principal_filter,
        host=wire.host_filter,
        operation=decode(Operation, wire.operation),
        permission=decode(Permission, wire.permission_type),
    )


def description(b: AclBinding) -> dict[str, Any]:
    """A binding's entry fields, as DescribeAcls' and DeleteAcls' answers carry them."""
    return {
        "principal": b.principal,
        "host": b.host,
        "operation": int(b.operation),
        "permission_type": int(b.permission),
    }


def resource_fields(b: AclBinding) -> dict[str, Any]:
    return {
        "resource_type": int(b.resource_type),
        "resource_name": b.resource_name,
        "pattern_type": int(b.pattern_type),
    }


def by_resource(bindings: list[AclBinding]) -> list[dict[str, Any]]:
    """DescribeAcls' resources: the bindings (sorted) grouped by resource pattern."""
    grouped: dict[tuple[ResourceType, str, PatternType], list[AclBinding]] = {}
    for b in sorted(bindings):
        grouped.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(b)
    return [
        {**resource_fields(bs[0]), "acls": [description(b) for b in bs]} for bs in grouped.values()
    ]


def _result(code: ErrorCode = ErrorCode.none, message: str | None = None) -> dict[str, Any]:
    return {"error_code": code, "error_message": message}


class AclsApi:
    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx

    async def create_acls(self, request: Request) -> dict[str, Any]:
        who = request_principal()
        results: list[dict[str, Any]] = []
        valid: list[tuple[int, AclBinding]] = []
        for i, creation in enumerate(request.body.creations):
            try:
                valid.append((i, binding_of(creation)))
                results.append(_result())
            except InvalidRequest as e:
                log.info("CreateAcls from %s: creation %d refused: %s", who, i, e)
                results.append(_result(ErrorCode.invalid_request, str(e)))
        if valid:
            answers = await self.ctx.call(self._create, who, [b for _, b in valid])
            for (i, _), answer in zip(valid, answers, strict=True):
                results[i] = answer
        return {"throttle_time": 0, "results": results}

    def _create(self, who: str, bindings: list[AclBinding]) -> list[dict[str, Any]]:
        """The store's answer per binding, in order, logged."""
        try:
            creations = self.ctx.log.items.acls.create(bindings)
        except ObjectLogError as e:
            log.warning("CreateAcls from %s: %d bindings not stored: %s", who, len(bindings), e)
            return [_result(error_code(e), str(e)) for _ in bindings]
        finally:
            self.ctx.access.cache.invalidate()  # even a failed call may have written some
        answers = []
        for done in creations:
            if done.error is not None:
                refused = describe_binding(done.binding)
                log.info("CreateAcls from %s: %s refused: %s", who, refused, done.error)
                answers.append(_result(error_code(done.error), str(done.error)))
                continue
            if done.created:
                log.info("ACL created by %s: %s", who, describe_binding(done.binding))
            answers.append(_result())
        return answers

    async def describe_acls(self, request: Request) -> dict[str, Any]:
        try:
            wanted = filter_of(request.body)
        except UnknownCode as e:
            if e.kafka_defines:  # as a Kafka holding no such ACL answers
                log.info("DescribeAcls from %s matches nothing: %s", request_principal(), e)
                return {**_result(), "throttle_time": 0, "resources": []}
            log.info("DescribeAcls from %s refused: %s", request_principal(), e)
            return {**_result(ErrorCode.invalid_request, str(e)), "resources": []}
        try:
            found = await self.ctx.call(self.ctx.log.items.acls.list, wanted, matches)
        except ObjectLogError as e:
            log.warning("DescribeAcls from %s failed: %s", request_principal(), e)
            return {**_result(error_code(e), str(e)), "throttle_time": 0, "resources": []}
        return {**_result(), "throttle_time": 0, "resources": by_resource(found)}

    async def delete_acls(self, request: Request) -> dict[str, Any]:
        who = request_principal()
        results: list[dict[str, Any]] = []
        asked: list[tuple[int, AclFilter]] = []
        for i, wire in enumerate(request.body.filters):
            results.append({**_result(), "matching_acls": []})
            try:
                asked.append((i, filter_of(wire)))
            except UnknownCode as e:
                if e.kafka_defines:
                    log.info("DeleteAcls from %s: filter %d matches nothing: %s", who, i, e)
                    continue
                log.info("DeleteAcls from %s: filter %d refused: %s", who, i, e)
                results[i] = {**_result(ErrorCode.invalid_request, str(e)), "matching_acls": []}
        if asked:
            answers = await self.ctx.call(self._delete, who, [f for _, f in asked])
            for (i, _), answer in zip(asked, answers, strict=True):
                results[i] = answer
        return {"throttle_time": 0, "filter_results": results}

    def _delete(self, who: str, filters: list[AclFilter]) -> list[dict[str, Any]]:
        try:
            removed = self.ctx.log.items.acls.delete(filters, matches)
        except ObjectLogError as e:
            log.warning("DeleteAcls from %s: %d filters not applied: %s", who, len(filters), e)
            return [{**_result(error_code(e), str(e)), "matching_acls": []} for _ in filters]
        finally:
            self.ctx.access.cache.invalidate()
        for b in sorted({b for bindings in removed for b in bindings}):
            log.info("ACL deleted by %s: %s", who, describe_binding(b))
        return [
            {
                **_result(),
                "matching_acls": [
                    {**_result(), **resource_fields(b), **description(b)} for b in bindings
                ],
            }
            for bindings in removed
        ]
