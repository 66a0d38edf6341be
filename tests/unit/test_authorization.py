"""The rules of services.authorization, as tables: each row a readable case, the numbers of the
module docstring's rules it exercises (the decisive one among them), the bindings, the settings
and the request, and whether Kafka's authorizer would allow it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial

import pytest

from objectlog.errors import InvalidRequest
from objectlog.format.acls import (
    ANONYMOUS,
    CLUSTER_NAME,
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from objectlog.services import authorization
from objectlog.services.authorization import (
    SUPPORTED_OPERATIONS,
    Request,
    Settings,
    authorize,
    authorized_operations,
    matches,
    operations_bits,
)

TOPIC, GROUP, CLUSTER, TXN = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
)
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALICE, BOB, EVERYONE = "User:alice", "User:bob", "User:*"
HOST, OTHER_HOST = "10.0.0.1", "10.0.0.2"
OFF, ON = Settings(), Settings(allow_everyone_if_no_acl_found=True)
SUPER = Settings(super_users=frozenset({ALICE}))
Op = Operation


def acl(
    permission: Permission,
    operation: Operation,
    name: str = "orders",
    *,
    resource_type: ResourceType = TOPIC,
    pattern: PatternType = LITERAL,
    principal: str = ALICE,
    host: str = "*",
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


allow = partial(acl, Permission.ALLOW)
deny = partial(acl, Permission.DENY)


def req(
    operation: Operation,
    name: str = "orders",
    resource_type: ResourceType = TOPIC,
    principal: str = ALICE,
    host: str = HOST,
) -> Request:
    return Request(principal, host, operation, resource_type, name)


IDEMPOTENT = req(Op.IDEMPOTENT_WRITE, CLUSTER_NAME, CLUSTER)


@dataclass(frozen=True)
class Row:
    name: str
    rules: tuple[int, ...]
    bindings: tuple[AclBinding, ...]
    settings: Settings
    request: Request
    allowed: bool


def row(
    name: str,
    rules: tuple[int, ...],
    bindings: list[AclBinding],
    settings: Settings,
    request: Request,
    allowed: bool,
) -> Row:
    return Row(name, rules, tuple(bindings), settings, request, allowed)


# Columns: case, rules exercised (the decisive one among them), bindings, settings, request,
# allowed.
# fmt: off
ROWS = [
    # 1. super users
    row("super user with no ACL, switch off", (1,), [], SUPER, req(Op.READ), True),
    row("super user despite DENY ALL to User:*", (1,),
        [deny(Op.ALL, "*", principal=EVERYONE)], SUPER, req(Op.DELETE), True),
    row("super user may do cluster actions", (1,), [], SUPER,
        req(Op.CLUSTER_ACTION, CLUSTER_NAME, CLUSTER), True),
    row("another principal is no super user", (1, 8), [], SUPER,
        req(Op.READ, principal=BOB), False),
    # 2. which bindings concern the resource
    row("LITERAL same name allows", (2, 7), [allow(Op.READ)], OFF, req(Op.READ), True),
    row("LITERAL other name does not concern it", (2, 8), [allow(Op.READ, "payments")], OFF,
        req(Op.READ), False),
    row("LITERAL is not a prefix", (2, 8), [allow(Op.READ, "ord")], OFF, req(Op.READ), False),
    row("LITERAL names are case-sensitive", (2, 8), [allow(Op.READ, "Orders")], OFF,
        req(Op.READ), False),
    row("LITERAL * allows every name", (2, 7), [allow(Op.READ, "*")], OFF,
        req(Op.READ, "anything"), True),
    row("PREFIXED with a prefix allows", (2, 7), [allow(Op.READ, "ord", pattern=PREFIXED)],
        OFF, req(Op.READ), True),
    row("PREFIXED with the whole name allows", (2, 7),
        [allow(Op.READ, "orders", pattern=PREFIXED)], OFF, req(Op.READ), True),
    row("PREFIXED longer than the name does not concern it", (2, 8),
        [allow(Op.READ, "orders.", pattern=PREFIXED)], OFF, req(Op.READ), False),
    row("PREFIXED that is not a prefix does not concern it", (2, 8),
        [allow(Op.READ, "pay", pattern=PREFIXED)], OFF, req(Op.READ), False),
    row("PREFIXED *x is a prefix only of names starting with *x", (2, 8),
        [allow(Op.READ, "*x", pattern=PREFIXED)], OFF, req(Op.READ), False),
    row("another resource type does not concern it", (2, 8),
        [allow(Op.READ, resource_type=GROUP)], OFF, req(Op.READ), False),
    row("LITERAL * of another type does not concern it", (2, 8),
        [allow(Op.READ, "*", resource_type=GROUP)], OFF, req(Op.READ), False),
    row("group ACL allows its group", (2, 7), [allow(Op.READ, "app", resource_type=GROUP)],
        OFF, req(Op.READ, "app", GROUP), True),
    row("transactional id PREFIXED allows", (2, 7),
        [allow(Op.WRITE, "etl-", resource_type=TXN, pattern=PREFIXED)], OFF,
        req(Op.WRITE, "etl-1", TXN), True),
    # 3. principal and host
    row("another principal's ALLOW does not apply", (3, 7), [allow(Op.READ, principal=BOB)],
        OFF, req(Op.READ), False),
    row("User:* applies to every principal", (3, 7), [allow(Op.READ, principal=EVERYONE)],
        OFF, req(Op.READ), True),
    row("User:* applies to User:ANONYMOUS", (3, 7), [allow(Op.READ, principal=EVERYONE)],
        OFF, req(Op.READ, principal=ANONYMOUS), True),
    row("User:ANONYMOUS is subject to ACLs", (3, 7), [allow(Op.READ)], OFF,
        req(Op.READ, principal=ANONYMOUS), False),
    row("an ACL for User:ANONYMOUS applies to it", (3, 7),
        [allow(Op.READ, principal=ANONYMOUS)], OFF, req(Op.READ, principal=ANONYMOUS), True),
    row("host * applies from every host", (3, 7), [allow(Op.READ, host="*")], OFF,
        req(Op.READ), True),
    row("the request's host applies", (3, 7), [allow(Op.READ, host=HOST)], OFF, req(Op.READ),
        True),
    row("another host does not apply", (3, 7), [allow(Op.READ, host=OTHER_HOST)], OFF,
        req(Op.READ), False),
    # 4. the operation, and ALL
    row("ALLOW READ does not allow WRITE", (4, 7), [allow(Op.READ)], OFF, req(Op.WRITE), False),
    row("ALLOW ALL allows DELETE", (4, 7), [allow(Op.ALL)], OFF, req(Op.DELETE), True),
    row("ALLOW ALL allows DESCRIBE_CONFIGS", (4, 7), [allow(Op.ALL)], OFF,
        req(Op.DESCRIBE_CONFIGS), True),
    row("ALLOW ALL on the cluster allows CLUSTER_ACTION", (4, 7),
        [allow(Op.ALL, CLUSTER_NAME, resource_type=CLUSTER)], OFF,
        req(Op.CLUSTER_ACTION, CLUSTER_NAME, CLUSTER), True),
    row("DENY ALL denies READ despite ALLOW READ", (4, 6), [allow(Op.READ), deny(Op.ALL)], OFF,
        req(Op.READ), False),
    row("DENY ALL denies DESCRIBE", (4, 6), [allow(Op.ALL), deny(Op.ALL)], OFF,
        req(Op.DESCRIBE), False),
    # 5. implied operations
    row("ALLOW READ implies DESCRIBE", (5, 7), [allow(Op.READ)], OFF, req(Op.DESCRIBE), True),
    row("ALLOW WRITE implies DESCRIBE", (5, 7), [allow(Op.WRITE)], OFF, req(Op.DESCRIBE), True),
    row("ALLOW DELETE implies DESCRIBE", (5, 7), [allow(Op.DELETE)], OFF, req(Op.DESCRIBE),
        True),
    row("ALLOW ALTER implies DESCRIBE", (5, 7), [allow(Op.ALTER)], OFF, req(Op.DESCRIBE), True),
    row("ALLOW READ on a group implies DESCRIBE", (5, 7),
        [allow(Op.READ, "app", resource_type=GROUP)], OFF, req(Op.DESCRIBE, "app", GROUP),
        True),
    row("ALLOW ALTER_CONFIGS implies DESCRIBE_CONFIGS", (5, 7), [allow(Op.ALTER_CONFIGS)], OFF,
        req(Op.DESCRIBE_CONFIGS), True),
    row("ALLOW DESCRIBE does not imply READ", (5, 7), [allow(Op.DESCRIBE)], OFF, req(Op.READ),
        False),
    row("ALLOW WRITE does not imply READ", (5, 7), [allow(Op.WRITE)], OFF, req(Op.READ), False),
    row("ALLOW CREATE does not imply DESCRIBE", (5, 7), [allow(Op.CREATE)], OFF,
        req(Op.DESCRIBE), False),
    row("ALLOW ALTER_CONFIGS does not imply DESCRIBE", (5, 7), [allow(Op.ALTER_CONFIGS)], OFF,
        req(Op.DESCRIBE), False),
    row("ALLOW DESCRIBE_CONFIGS does not imply ALTER_CONFIGS", (5, 7),
        [allow(Op.DESCRIBE_CONFIGS)], OFF, req(Op.ALTER_CONFIGS), False),
    row("ALLOW ALTER does not imply DESCRIBE_CONFIGS", (5, 7), [allow(Op.ALTER)], OFF,
        req(Op.DESCRIBE_CONFIGS), False),
    row("DENY DESCRIBE denies DESCRIBE despite ALLOW READ", (5, 6),
        [allow(Op.READ), deny(Op.DESCRIBE)], OFF, req(Op.DESCRIBE), False),
    row("DENY DESCRIBE leaves READ allowed", (5, 7), [allow(Op.READ), deny(Op.DESCRIBE)], OFF,
        req(Op.READ), True),
    row("DENY READ does not deny the DESCRIBE WRITE implies", (5, 7),
        [allow(Op.WRITE), deny(Op.READ)], OFF, req(Op.DESCRIBE), True),
    row("DENY ALTER_CONFIGS leaves DESCRIBE_CONFIGS allowed", (5, 7),
        [allow(Op.DESCRIBE_CONFIGS), deny(Op.ALTER_CONFIGS)], OFF, req(Op.DESCRIBE_CONFIGS),
        True),
    # 6. DENY wins
    row("DENY LITERAL over ALLOW LITERAL", (6,), [allow(Op.WRITE), deny(Op.WRITE)], OFF,
        req(Op.WRITE), False),
    row("DENY PREFIXED over ALLOW LITERAL", (2, 6),
        [allow(Op.WRITE), deny(Op.WRITE, "ord", pattern=PREFIXED)], OFF, req(Op.WRITE), False),
    row("DENY LITERAL over ALLOW PREFIXED", (2, 6),
        [allow(Op.WRITE, "ord", pattern=PREFIXED), deny(Op.WRITE)], OFF, req(Op.WRITE), False),
    row("DENY LITERAL * over ALLOW LITERAL", (2, 6), [allow(Op.WRITE), deny(Op.WRITE, "*")],
        OFF, req(Op.WRITE), False),
    row("DENY to User:* over ALLOW to the principal", (3, 6),
        [allow(Op.WRITE), deny(Op.WRITE, principal=EVERYONE)], OFF, req(Op.WRITE), False),
    row("DENY from the request's host over ALLOW from *", (3, 6),
        [allow(Op.WRITE), deny(Op.WRITE, host=HOST)], OFF, req(Op.WRITE), False),
    row("DENY from another host does not apply", (3, 6, 7),
        [allow(Op.WRITE), deny(Op.WRITE, host=OTHER_HOST)], OFF, req(Op.WRITE), True),
    row("DENY to another principal does not apply", (3, 6, 7),
        [allow(Op.WRITE), deny(Op.WRITE, principal=BOB)], OFF, req(Op.WRITE), True),
    row("DENY of another name does not apply", (2, 6, 7),
        [allow(Op.WRITE, "ord", pattern=PREFIXED), deny(Op.WRITE, "orders-eu")], OFF,
        req(Op.WRITE), True),
    row("DENY WRITE does not deny READ", (4, 6, 7), [allow(Op.ALL), deny(Op.WRITE)], OFF,
        req(Op.READ), True),
    row("DENY with the switch on", (6, 8), [deny(Op.READ)], ON, req(Op.READ), False),
    # 7. an ALLOW is needed once bindings concern the resource
    row("bindings for others only: denied though the switch is on", (7, 8),
        [allow(Op.READ, principal=BOB)], ON, req(Op.READ), False),
    row("a binding of another operation only: denied though the switch is on", (4, 7, 8),
        [allow(Op.WRITE)], ON, req(Op.READ), False),
    # 8. no ACL found
    row("no ACL, switch off: denied", (8,), [], OFF, req(Op.READ), False),
    row("no ACL, switch on: allowed", (8,), [], ON, req(Op.READ), True),
    row("no ACL for this resource, switch on: allowed", (2, 8), [deny(Op.ALL, "payments")], ON,
        req(Op.READ), True),
    row("PREFIXED of a longer name is no ACL for it, switch on", (2, 8),
        [deny(Op.ALL, "orders.", pattern=PREFIXED)], ON, req(Op.READ), True),
    row("no ACL for the group, switch on: allowed", (8,), [allow(Op.READ)], ON,
        req(Op.READ, "orders", GROUP), True),
    # 9. KIP-679: WRITE on some topic allows IDEMPOTENT_WRITE on the cluster
    row("ALLOW WRITE on a topic allows IDEMPOTENT_WRITE", (9,), [allow(Op.WRITE)], OFF,
        IDEMPOTENT, True),
    row("ALLOW WRITE PREFIXED allows IDEMPOTENT_WRITE", (9,),
        [allow(Op.WRITE, "ord", pattern=PREFIXED)], OFF, IDEMPOTENT, True),
    row("ALLOW ALL on a topic allows IDEMPOTENT_WRITE", (9,), [allow(Op.ALL)], OFF,
        IDEMPOTENT, True),
    row("ALLOW WRITE to User:* allows IDEMPOTENT_WRITE", (3, 9),
        [allow(Op.WRITE, principal=EVERYONE)], OFF, IDEMPOTENT, True),
    row("ALLOW IDEMPOTENT_WRITE on the cluster allows it", (7,),
        [allow(Op.IDEMPOTENT_WRITE, CLUSTER_NAME, resource_type=CLUSTER)], OFF, IDEMPOTENT,
        True),
    row("ALLOW READ on a topic does not", (8, 9), [allow(Op.READ)], OFF, IDEMPOTENT, False),
    row("ALLOW WRITE on a transactional id does not", (8, 9),
        [allow(Op.WRITE, "etl", resource_type=TXN)], OFF, IDEMPOTENT, False),
    row("another principal's WRITE does not", (3, 8, 9), [allow(Op.WRITE, principal=BOB)],
        OFF, IDEMPOTENT, False),
    row("WRITE from another host does not", (3, 8, 9), [allow(Op.WRITE, host=OTHER_HOST)],
        OFF, IDEMPOTENT, False),
    row("WRITE on a topic allows no other cluster operation", (8, 9), [allow(Op.WRITE)], OFF,
        req(Op.CLUSTER_ACTION, CLUSTER_NAME, CLUSTER), False),
    row("a literal WRITE denied by the same literal DENY does not", (6, 8, 9),
        [allow(Op.WRITE), deny(Op.WRITE)], OFF, IDEMPOTENT, False),
    row("a literal WRITE denied by a DENY prefix does not", (8, 9),
        [allow(Op.WRITE), deny(Op.WRITE, "ord", pattern=PREFIXED)], OFF, IDEMPOTENT, False),
    row("a PREFIXED WRITE is not dominated by a literal DENY", (9,),
        [allow(Op.WRITE, "orders", pattern=PREFIXED), deny(Op.WRITE)], OFF, IDEMPOTENT, True),
    row("a PREFIXED WRITE dominated by a shorter DENY prefix does not", (8, 9),
        [allow(Op.WRITE, "orders.", pattern=PREFIXED),
         deny(Op.WRITE, "orders", pattern=PREFIXED)], OFF, IDEMPOTENT, False),
    row("one undominated WRITE among dominated ones does", (9,),
        [allow(Op.WRITE), deny(Op.WRITE), allow(Op.WRITE, "payments")], OFF, IDEMPOTENT, True),
    row("a WRITE on LITERAL * is never dominated by a prefix", (9,),
        [allow(Op.WRITE, "*"), deny(Op.WRITE, "o", pattern=PREFIXED)], OFF, IDEMPOTENT, True),
    row("a DENY WRITE on LITERAL * refuses", (8, 9), [allow(Op.WRITE), deny(Op.WRITE, "*")],
        OFF, IDEMPOTENT, False),
    row("a DENY ALL on LITERAL * refuses even with the switch on", (7, 9),
        [deny(Op.ALL, "*"), allow(Op.CLUSTER_ACTION, CLUSTER_NAME, resource_type=CLUSTER)], ON,
        IDEMPOTENT, False),
    row("with the switch on, cluster ACLs for others do not refuse", (9,),
        [allow(Op.CLUSTER_ACTION, CLUSTER_NAME, resource_type=CLUSTER, principal=BOB)], ON,
        IDEMPOTENT, True),
    row("a DENY IDEMPOTENT_WRITE on the cluster yields to topic WRITE, as Kafka's OR", (9,),
        [deny(Op.IDEMPOTENT_WRITE, CLUSTER_NAME, resource_type=CLUSTER), allow(Op.WRITE)], OFF,
        IDEMPOTENT, True),
]
# fmt: on


@pytest.mark.parametrize("r", ROWS, ids=lambda r: r.name)
def test_authorize(r: Row) -> None:
    decision = authorize(r.request, r.bindings, r.settings)
    assert decision.allowed is r.allowed, str(decision)
    assert decision.rule in r.rules, f"decided by rule {decision.rule}: {decision}"


def test_every_rule_in_the_docstring_has_a_row() -> None:
    doc = authorization.__doc__ or ""
    numbered = {int(n) for n in re.findall(r"^(\d+)\. ", doc, flags=re.MULTILINE)}
    assert numbered == set(range(1, 10))
    covered = {n for r in ROWS for n in r.rules}
    assert numbered <= covered, f"rules without a row: {sorted(numbered - covered)}"
    assert covered <= numbered, f"rows naming no rule: {sorted(covered - numbered)}"


def test_rows_have_unique_names() -> None:
    assert len({r.name for r in ROWS}) == len(ROWS)


def test_the_decision_names_what_decided() -> None:
    binding = deny(Op.WRITE, "ord", pattern=PREFIXED)
    denied = authorize(req(Op.WRITE), [allow(Op.WRITE), binding], OFF)
    assert denied.binding == binding
    assert str(denied) == "denied: DENY User:alice from * WRITE on TOPIC:PREFIXED:ord (rule 6)"
    assert authorize(req(Op.READ), [], SUPER).reason == "super user"
    assert req(Op.READ).describe() == "User:alice from 10.0.0.1 READ on TOPIC:orders"
    assert authorize(req(Op.READ), [], OFF).reason == "no ACL found"
    assert authorize(req(Op.READ), iter([allow(Op.READ)]), OFF).binding == allow(Op.READ)


@pytest.mark.parametrize(
    ("operation", "resource_type"),
    [(Op.ANY, TOPIC), (Op.ALL, TOPIC), (Op.READ, ResourceType.ANY)],
    ids=["operation ANY", "operation ALL", "resource type ANY"],
)
def test_a_request_names_one_operation_on_one_resource_type(
    operation: Operation, resource_type: ResourceType
) -> None:
    with pytest.raises(InvalidRequest):
        Request(ALICE, HOST, operation, resource_type, "orders")


# authorized_operations, over Kafka's table of the operations each resource type supports.


def test_every_resource_type_has_its_supported_operations() -> None:
    assert set(SUPPORTED_OPERATIONS) == set(ResourceType) - {ResourceType.ANY}
    assert SUPPORTED_OPERATIONS[GROUP] == {Op.READ, Op.DESCRIBE, Op.DELETE}
    assert SUPPORTED_OPERATIONS[TXN] == {Op.DESCRIBE, Op.WRITE}


# fmt: off
AUTHORIZED_OPERATION_ROWS = [
    pytest.param([allow(Op.READ)], OFF, TOPIC, "orders", {Op.READ, Op.DESCRIBE},
                 id="READ and the DESCRIBE it implies"),
    pytest.param([allow(Op.ALL), deny(Op.DELETE)], OFF, TOPIC, "orders",
                 SUPPORTED_OPERATIONS[TOPIC] - {Op.DELETE}, id="ALL but a DENY"),
    pytest.param([], SUPER, CLUSTER, CLUSTER_NAME, SUPPORTED_OPERATIONS[CLUSTER],
                 id="super user: everything"),
    pytest.param([], OFF, GROUP, "app", set(), id="no ACL, switch off"),
    pytest.param([], ON, GROUP, "app", SUPPORTED_OPERATIONS[GROUP], id="no ACL, switch on"),
    pytest.param([allow(Op.WRITE)], OFF, CLUSTER, CLUSTER_NAME, set(),
                 id="topic WRITE shows no IDEMPOTENT_WRITE, as on Kafka"),
    pytest.param([allow(Op.ALTER_CONFIGS, "app", resource_type=GROUP)], OFF, GROUP, "app",
                 set(), id="an operation the type does not support is not listed"),
]
# fmt: on


@pytest.mark.parametrize(
    ("bindings", "settings", "resource_type", "name", "expected"), AUTHORIZED_OPERATION_ROWS
)
def test_authorized_operations(
    bindings: list[AclBinding],
    settings: Settings,
    resource_type: ResourceType,
    name: str,
    expected: set[Operation],
) -> None:
    ops = authorized_operations(ALICE, HOST, resource_type, name, bindings, settings)
    assert ops == expected


def test_operations_bits_are_kafkas_bit_field() -> None:
    # Kafka's Utils.to32BitField: READ (3) and DESCRIBE (8).
    assert operations_bits({Op.READ, Op.DESCRIBE}) == (1 << 3) | (1 << 8) == 264
    assert operations_bits(()) == 0


# matches: DescribeAcls' and DeleteAcls' filters, as Kafka's AclBindingFilter.matches.

LIT = allow(Op.READ, "orders")
STAR = allow(Op.READ, "*")
PRE = allow(Op.READ, "ord", pattern=PREFIXED)
OTHER = allow(Op.READ, "payments")
WIDE = deny(Op.WRITE, "orders", pattern=PREFIXED, principal=EVERYONE, host=HOST)
ALL_OPS = allow(Op.ALL)
MATCH, ANY_PATTERN = PatternType.MATCH, PatternType.ANY

# Columns: case, filter, bindings, the bindings it selects.
# fmt: off
FILTER_ROWS = [
    ("the empty filter matches everything", AclFilter(), [LIT, STAR, PRE, OTHER, WIDE],
     [LIT, STAR, PRE, OTHER, WIDE]),
    ("MATCH: literal, literal * and prefixes of the name", AclFilter(TOPIC, "orders", MATCH),
     [LIT, STAR, PRE, OTHER, WIDE], [LIT, STAR, PRE, WIDE]),
    ("MATCH of a name no prefix covers", AclFilter(TOPIC, "pay", MATCH),
     [LIT, STAR, PRE, OTHER], [STAR]),
    ("MATCH without a name matches every pattern", AclFilter(TOPIC, None, MATCH), [LIT, PRE],
     [LIT, PRE]),
    ("MATCH keeps to its resource type", AclFilter(GROUP, "orders", MATCH), [LIT, STAR, PRE],
     []),
    ("ANY with a name: that exact name, any pattern type",
     AclFilter(TOPIC, "orders", ANY_PATTERN), [LIT, STAR, PRE, WIDE], [LIT, WIDE]),
    ("LITERAL with a name: that literal only", AclFilter(TOPIC, "orders", LITERAL),
     [LIT, STAR, PRE, WIDE], [LIT]),
    ("LITERAL * selects the wildcard binding only", AclFilter(TOPIC, "*", LITERAL),
     [LIT, STAR], [STAR]),
    ("PREFIXED with a name: that prefix only", AclFilter(TOPIC, "ord", PREFIXED),
     [LIT, PRE, WIDE], [PRE]),
    ("PREFIXED without a name: every prefixed binding", AclFilter(pattern_type=PREFIXED),
     [LIT, PRE, WIDE], [PRE, WIDE]),
    ("principal is exact: User:* selects only User:*", AclFilter(principal=EVERYONE),
     [LIT, WIDE], [WIDE]),
    ("principal selects its own bindings", AclFilter(principal=ALICE), [LIT, WIDE], [LIT]),
    ("host is exact", AclFilter(host=HOST), [LIT, WIDE], [WIDE]),
    ("host * selects only host * bindings", AclFilter(host="*"), [LIT, WIDE], [LIT]),
    ("operation is exact", AclFilter(operation=Op.WRITE), [LIT, WIDE], [WIDE]),
    ("operation ALL selects ALL bindings only", AclFilter(operation=Op.ALL), [LIT, ALL_OPS],
     [ALL_OPS]),
    ("permission", AclFilter(permission=Permission.DENY), [LIT, WIDE], [WIDE]),
    ("every field at once",
     AclFilter(TOPIC, "orders.eu", MATCH, EVERYONE, HOST, Op.WRITE, Permission.DENY),
     [LIT, STAR, PRE, WIDE], [WIDE]),
]
# fmt: on


@pytest.mark.parametrize(
    ("f", "bindings", "selected"),
    [pytest.param(*r[1:], id=r[0]) for r in FILTER_ROWS],
)
def test_filter_matches(
    f: AclFilter, bindings: list[AclBinding], selected: list[AclBinding]
) -> None:
    assert [b for b in bindings if matches(f, b)] == selected
