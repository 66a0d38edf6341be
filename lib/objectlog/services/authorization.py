"""The one function that decides Kafka ACLs (issue 37, DESIGN.md section 17): may this
principal, from this host, do this operation on this resource, given the bindings and the
settings? Every door (the agent, the HTTP API, the REST Proxy, the Schema Registry) asks
``authorize``; DescribeAcls and DeleteAcls select bindings with ``matches``; Metadata's and
DescribeGroups' authorized-operations bits come from ``authorized_operations``.

The rules are Kafka's, read from its source (apache/kafka): ``StandardAuthorizerData.authorize``,
``findAclRule``, ``findResult`` and ``MatchingRuleBuilder`` (metadata/.../authorizer, KRaft's
StandardAuthorizer) and ``AclAuthorizer.authorizeAction`` and ``authorizeByResourceType``
(core/.../security/authorizer/AclAuthorizer.scala, the ZooKeeper-era authorizer); the two
agree on rules 1 to 8. Rule 9 is KIP-679's change to InitProducerId (KAFKA-10619, apache/kafka
PR 9485: the broker allows it on ``authorize(IDEMPOTENT_WRITE, CLUSTER) ||
authorizeByResourceType(WRITE, TOPIC)``), with AclAuthorizer's ``authorizeByResourceType``.
Filters follow ``AclBindingFilter.matches`` (``ResourcePatternFilter`` and
``AccessControlEntryFilter``); the operations each resource type supports, ``AclEntry.
supportedOperations``.

A request is decided by the first of these rules that decides it (each is a function below):

1. A super user (``Settings.super_users`` holds the request's principal) may do everything,
   whatever the bindings say, DENY included.
2. A binding concerns the request's resource when its resource type is the request's and its
   pattern is LITERAL with the resource's name, LITERAL ``*``, or PREFIXED with a prefix of the
   name (the whole name counts; names compare case-sensitively).
3. A binding applies to the requester when its principal is the request's or ``User:*`` and
   its host is the request's address or ``*``.
4. A binding covers the request's operation when its operation is that operation or ALL (an
   ALLOW of ALL allows every operation, a DENY of ALL denies every one).
5. Implied operations, for ALLOW bindings only: an ALLOW of READ, WRITE, DELETE or ALTER
   covers DESCRIBE, and an ALLOW of ALTER_CONFIGS covers DESCRIBE_CONFIGS. Nothing else is
   implied (DESCRIBE does not imply READ, WRITE does not imply READ), and a DENY covers only
   its own operation: a DENY of READ leaves DESCRIBE alone, while a DENY of DESCRIBE denies
   DESCRIBE even to a principal allowed READ (Kafka's findResult).
6. DENY wins: a DENY binding that rules 2 to 4 make apply denies, whatever ALLOWs apply.
7. Otherwise an ALLOW binding that rules 2 to 5 make apply allows; without one, the request is
   denied when any binding concerns the resource.
8. No ACL found: when no binding at all concerns the resource (rule 2 alone: any principal,
   host, operation or permission), ``allow.everyone.if.no.acl.found`` decides: allowed when
   it is on, denied when off (the default).
9. KIP-679: IDEMPOTENT_WRITE on the CLUSTER, when rules 1 to 8 refuse it, is allowed to a
   principal that may WRITE some topic, as AclAuthorizer's ``authorizeByResourceType`` decides:
   a DENY of WRITE (or ALL) on the LITERAL topic ``*`` that applies to the requester refuses;
   else the switch (rule 8) on allows; else an applying ALLOW of WRITE (or ALL) on a topic
   allows when no applying DENY dominates it (LITERAL ``*`` is never dominated; another
   LITERAL name is dominated by a DENY of the same literal name or a PREFIXED DENY of a prefix
   of it; a PREFIXED allow by a PREFIXED DENY of a prefix of it). Being an OR after rule 8, it
   allows even when a DENY of IDEMPOTENT_WRITE on the cluster applies, as Kafka does. WRITE on
   a TRANSACTIONAL_ID does not count: a transactional InitProducerId asks for WRITE on its
   transactional id instead, which is the API table's business, not this rule's.

``authorized_operations`` applies rules 1 to 8 to each operation the resource type supports,
as Kafka's ``AuthHelper.authorizedOperations`` does; it does not apply rule 9, so a topic
writer's cluster bits do not show IDEMPOTENT_WRITE, as on Kafka.

StandardAuthorizer has no ``authorizeByResourceType`` of its own; Kafka's default one first
authorizes the topic literally named ``hardcode``, so there the switch counts only when no
binding concerns that name. Rule 9 takes AclAuthorizer's plainer reading of the switch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from objectlog.errors import InvalidRequest
from objectlog.format.acls import (
    CLUSTER_NAME,
    WILDCARD,
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

WILDCARD_PRINCIPAL = "User:*"

# Kafka's AclEntry.supportedOperations: what authorized_operations asks about per type.
SUPPORTED_OPERATIONS: Mapping[ResourceType, frozenset[Operation]] = {
    ResourceType.TOPIC: frozenset(
        {
            Operation.READ,
            Operation.WRITE,
            Operation.CREATE,
            Operation.DESCRIBE,
            Operation.DELETE,
            Operation.ALTER,
            Operation.DESCRIBE_CONFIGS,
            Operation.ALTER_CONFIGS,
        }
    ),
    ResourceType.GROUP: frozenset({Operation.READ, Operation.DESCRIBE, Operation.DELETE}),
    ResourceType.CLUSTER: frozenset(
        {
            Operation.CREATE,
            Operation.CLUSTER_ACTION,
            Operation.DESCRIBE_CONFIGS,
            Operation.ALTER_CONFIGS,
            Operation.IDEMPOTENT_WRITE,
            Operation.ALTER,
            Operation.DESCRIBE,
        }
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset({Operation.DESCRIBE, Operation.WRITE}),
}

# Rule 5: the ALLOWed operations that cover an operation besides itself (and ALL).
IMPLIED_BY: Mapping[Operation, frozenset[Operation]] = {
    Operation.DESCRIBE: frozenset(
        {Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}
    ),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.ALTER_CONFIGS}),
}


@dataclass(frozen=True)
class Request:
    """Who asks to do what to which resource. ``host`` is the client's address as the door
    sees it (behind a load balancer, the balancer's)."""

    principal: str
    host: str
    operation: Operation
    resource_type: ResourceType
    resource_name: str

    def __post_init__(self) -> None:
        if self.operation in (Operation.ANY, Operation.ALL):
            raise InvalidRequest(
                f"a request names one operation, not {self.operation.name}", field="operation"
            )
        if self.resource_type is ResourceType.ANY:
            raise InvalidRequest(
                "a request names one resource type, not ANY", field="resource_type"
            )

    def describe(self) -> str:
        return (
            f"{self.principal} from {self.host} {self.operation.name} on "
            f"{self.resource_type.name}:{self.resource_name}"
        )


@dataclass(frozen=True)
class Settings:
    """Kafka's ``super.users`` (principals) and ``allow.everyone.if.no.acl.found``."""

    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False


@dataclass(frozen=True)
class Decision:
    """Allowed or not, the rule (of the module docstring) that decided, and why: the binding
    that decided, or "super user", "no ACL found", "no ACL allows it"."""

    allowed: bool
    rule: int
    reason: str
    binding: AclBinding | None = None

    def __str__(self) -> str:
        return f"{'allowed' if self.allowed else 'denied'}: {self.reason} (rule {self.rule})"


def describe_binding(b: AclBinding) -> str:
    """One binding for a log line, in kafka-acls.sh's order."""
    return (
        f"{b.permission.name} {b.principal} from {b.host} {b.operation.name} on "
        f"{b.resource_type.name}:{b.pattern_type.name}:{b.resource_name}"
    )


def authorize(request: Request, acls: Iterable[AclBinding], settings: Settings) -> Decision:
    """Decide ``request`` by rules 1 to 9 of the module docstring. ``acls`` may hold every
    binding (those not concerning the resource are passed over); rule 9 reads the topic ones."""
    bindings = acls if isinstance(acls, Sequence) else tuple(acls)
    decision = decide_by_acls(request, bindings, settings)
    if decision.allowed or not _is_idempotent_write(request):
        return decision
    return topic_write_decision(request, bindings, settings) or decision


def decide_by_acls(request: Request, acls: Iterable[AclBinding], settings: Settings) -> Decision:
    """Rules 1 to 8: what Kafka's ``authorize`` answers for one action."""
    if is_super_user(request.principal, settings):
        return Decision(True, 1, "super user")
    concerning = [
        b for b in acls if concerns_resource(b, request.resource_type, request.resource_name)
    ]
    if not concerning:
        return no_acl_found(settings)
    applying = [b for b in concerning if applies_to(b, request.principal, request.host)]
    deny = denying_binding(applying, request.operation)
    if deny is not None:
        return Decision(False, 6, describe_binding(deny), deny)
    allow = allowing_binding(applying, request.operation)
    if allow is not None:
        return Decision(True, 7, describe_binding(allow), allow)
    return Decision(False, 7, "no ACL allows it")


def is_super_user(principal: str, settings: Settings) -> bool:
    """Rule 1."""
    return principal in settings.super_users


def concerns_resource(b: AclBinding, resource_type: ResourceType, name: str) -> bool:
    """Rule 2: the binding's resource pattern covers (type, name)."""
    if b.resource_type is not resource_type:
        return False
    if b.pattern_type is PatternType.LITERAL:
        return b.resource_name == name or b.resource_name == WILDCARD
    if b.pattern_type is PatternType.PREFIXED:
        return name.startswith(b.resource_name)
    return False


def applies_to(b: AclBinding, principal: str, host: str) -> bool:
    """Rule 3: the binding names the principal (or every one) and the host (or every one)."""
    return b.principal in (principal, WILDCARD_PRINCIPAL) and b.host in (host, WILDCARD)


def covers(b: AclBinding, operation: Operation) -> bool:
    """Rules 4 and 5: the binding's operation is the one asked for, ALL, or (ALLOW only)
    one that implies it."""
    if b.operation is operation or b.operation is Operation.ALL:
        return True
    return b.permission is Permission.ALLOW and b.operation in IMPLIED_BY.get(
        operation, frozenset()
    )


def denying_binding(applying: Iterable[AclBinding], operation: Operation) -> AclBinding | None:
    """Rule 6: the first applying DENY that covers the operation."""
    return next(
        (b for b in applying if b.permission is Permission.DENY and covers(b, operation)), None
    )


def allowing_binding(applying: Iterable[AclBinding], operation: Operation) -> AclBinding | None:
    """Rule 7: the first applying ALLOW that covers the operation."""
    return next(
        (b for b in applying if b.permission is Permission.ALLOW and covers(b, operation)),
        None,
    )


def no_acl_found(settings: Settings) -> Decision:
    """Rule 8: nothing concerns the resource, so the switch decides."""
    if settings.allow_everyone_if_no_acl_found:
        return Decision(True, 8, "no ACL found; allow.everyone.if.no.acl.found")
    return Decision(False, 8, "no ACL found")


def _is_idempotent_write(request: Request) -> bool:
    return (
        request.operation is Operation.IDEMPOTENT_WRITE
        and request.resource_type is ResourceType.CLUSTER
        and request.resource_name == CLUSTER_NAME
    )


def topic_write_decision(
    request: Request, acls: Iterable[AclBinding], settings: Settings
) -> Decision | None:
    """Rule 9 (KIP-679): whether the principal may WRITE some topic, as AclAuthorizer's
    ``authorizeByResourceType(WRITE, TOPIC)``; None where it may not (the caller keeps the
    refusal rules 1 to 8 gave)."""
    writes = [
        b
        for b in acls
        if b.resource_type is ResourceType.TOPIC
        and applies_to(b, request.principal, request.host)
        and b.operation in (Operation.WRITE, Operation.ALL)
    ]
    denies = [b for b in writes if b.permission is Permission.DENY]
    deny_literals = {b.resource_name for b in denies if b.pattern_type is PatternType.LITERAL}
    deny_prefixes = {b.resource_name for b in denies if b.pattern_type is PatternType.PREFIXED}
    if WILDCARD in deny_literals:
        return None
    if settings.allow_everyone_if_no_acl_found:
        return Decision(True, 9, "WRITE on some topic (KIP-679); allow.everyone.if.no.acl.found")
    for b in writes:
        if b.permission is Permission.ALLOW and not _dominated(b, deny_literals, deny_prefixes):
            return Decision(True, 9, f"WRITE on some topic (KIP-679): {describe_binding(b)}", b)
    return None


def _dominated(allow: AclBinding, deny_literals: set[str], deny_prefixes: set[str]) -> bool:
    """Rule 9's test: an applying DENY covers every topic the ALLOW names."""
    name = allow.resource_name
    if allow.pattern_type is PatternType.LITERAL:
        if name == WILDCARD:
            return False
        if name in deny_literals:
            return True
    return any(name.startswith(prefix) for prefix in deny_prefixes)


def authorized_operations(
    principal: str,
    host: str,
    resource_type: ResourceType,
    resource_name: str,
    acls: Iterable[AclBinding],
    settings: Settings,
) -> frozenset[Operation]:
    """The operations of ``SUPPORTED_OPERATIONS[resource_type]`` that rules 1 to 8 allow, as
    Kafka's ``authorizedOperations`` (Metadata's and DescribeGroups' authorized operations)."""
    bindings = acls if isinstance(acls, Sequence) else tuple(acls)
    return frozenset(
        op
        for op in SUPPORTED_OPERATIONS[resource_type]
        if decide_by_acls(
            Request(principal, host, op, resource_type, resource_name), bindings, settings
        ).allowed
    )


def operations_bits(operations: Iterable[Operation]) -> int:
    """The wire's authorized-operations field: bit ``code`` set per operation (Kafka's
    ``Utils.to32BitField``)."""
    bits = 0
    for op in operations:
        bits |= 1 << int(op)
    return bits


def matches(f: AclFilter, b: AclBinding) -> bool:
    """Whether a DescribeAcls / DeleteAcls filter selects the binding, as Kafka's
    ``AclBindingFilter.matches``: the resource part and the entry part both match."""
    return resource_filter_matches(f, b) and entry_filter_matches(f, b)


def resource_filter_matches(f: AclFilter, b: AclBinding) -> bool:
    """Kafka's ``ResourcePatternFilter.matches``. ANY type or pattern and a None name match
    anything; a name with ANY or the binding's own pattern type matches that exact name (any
    pattern type for ANY); MATCH selects the bindings rule 2 lets concern the named resource:
    LITERAL of the name, LITERAL ``*``, PREFIXED of a prefix of it."""
    if f.resource_type is not ResourceType.ANY and f.resource_type is not b.resource_type:
        return False
    if f.pattern_type not in (PatternType.ANY, PatternType.MATCH, b.pattern_type):
        return False
    if f.resource_name is None:
        return True
    if f.pattern_type is PatternType.ANY or f.pattern_type is b.pattern_type:
        return f.resource_name == b.resource_name
    if b.pattern_type is PatternType.LITERAL:
        return f.resource_name == b.resource_name or b.resource_name == WILDCARD
    return f.resource_name.startswith(b.resource_name)


def entry_filter_matches(f: AclFilter, b: AclBinding) -> bool:
    """Kafka's ``AccessControlEntryFilter.matches``: None principal or host and ANY operation or
    permission match anything; otherwise equality (a ``User:*`` filter selects only ``User:*``
    bindings, an ALL filter only ALL bindings)."""
    return (
        (f.principal is None or f.principal == b.principal)
        and (f.host is None or f.host == b.host)
        and (f.operation is Operation.ANY or f.operation is b.operation)
        and (f.permission is Permission.ANY or f.permission is b.permission)
    )
