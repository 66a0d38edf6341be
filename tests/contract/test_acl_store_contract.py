"""The AclStore contract, held by the DynamoDB store (on the embedded endpoint) and the
in-memory one alike, down to the DynamoDB requests each call sends."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any

import pytest

from objectlog.errors import InvalidRequest
from objectlog.format.acls import (
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from objectlog.stores.acls import (
    MAX_BINDING_BYTES,
    MAX_NAME_BYTES,
    MAX_SET_BYTES,
    AclResource,
    AclStore,
    SetItemsAclStore,
    encode_binding,
    member_bytes,
)
from objectlog.stores.dynamo_acls import DynamoAclStore, resource_key
from objectlog.stores.memory_acls import MemoryAclStore
from tests.aio_stores import OnLoop, dynamodb_items

T, G = ResourceType.TOPIC, ResourceType.GROUP
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY
R, W = Operation.READ, Operation.WRITE


@dataclass
class Subject:
    store: SetItemsAclStore
    requests: Counter[str]  # the DynamoDB requests sent (or, in memory, that would be)
    drop_item: Callable[[AclResource], None]  # a resource's item gone, its name registered


@pytest.fixture(params=["memory", "dynamodb", "dynamodb-aio"])
def subject(request: pytest.FixtureRequest) -> Iterator[Subject]:
    if request.param == "memory":
        memory = MemoryAclStore()
        yield Subject(memory, memory.requests, memory.remove_item)
        return
    bridged, items = dynamodb_items(request, "acls")
    store = items.acls
    assert isinstance(store, DynamoAclStore)
    sent: Counter[str] = Counter()
    store.table.client.meta.events.register(
        "before-call.dynamodb", lambda model, **_: sent.update((model.name,))
    )
    drop = lambda r: store.table.delete(resource_key(r))  # noqa: E731
    if isinstance(bridged.acls, OnLoop):
        drop = bridged.acls.bridged(drop)
    yield Subject(bridged.acls, sent, drop)  # type: ignore[arg-type]


def acl(
    name: str = "orders",
    principal: str = "User:alice",
    operation: Operation = R,
    permission: Permission = ALLOW,
    resource_type: ResourceType = T,
    pattern: PatternType = LIT,
    host: str = "*",
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


def exactly(filter: AclFilter, binding: AclBinding) -> bool:
    """A stand-in for services.authorization.matches (the store only calls it): None and ANY
    match anything, other values must be equal (no MATCH here)."""
    for field in fields(AclFilter):
        wanted: Any = getattr(filter, field.name)
        if wanted is None or getattr(wanted, "name", "") == "ANY":
            continue
        if getattr(binding, field.name) != wanted:
            return False
    return True


def created(store: AclStore, bindings: Sequence[AclBinding]) -> list[bool]:
    answers = store.create(bindings)
    assert [a.binding for a in answers] == list(bindings)
    assert all(a.error is None for a in answers), [a.error for a in answers]
    return [a.created for a in answers]


SEVEN = [
    acl(),
    acl(operation=W),
    acl(principal="User:bob", permission=DENY),
    acl("orders.", pattern=PRE, principal="User:bob"),
    acl("*", principal="User:*", host="10.0.0.1"),
    acl("billing", resource_type=G, principal="User:bøb ü"),
    acl('we"ird:na\nme', principal="User:a:b", host="fe80::1"),
]


def test_bindings_are_stored_once_and_listed_back_whole(subject: Subject) -> None:
    store = subject.store
    assert store.list() == [] and store.version() == 0
    assert created(store, SEVEN) == [True] * 7
    assert store.list() == sorted(SEVEN)
    # Kafka keeps an existing binding: created again, it answers without error, changes nothing
    assert created(store, [SEVEN[0], acl(operation=Operation.DESCRIBE), SEVEN[0]]) == [
        False,
        True,
        False,
    ]
    assert store.list() == sorted([*SEVEN, acl(operation=Operation.DESCRIBE)])


def test_a_listing_keeps_what_the_filter_matches(subject: Subject) -> None:
    store = subject.store
    created(store, SEVEN)
    bob = AclFilter(principal="User:bob")
    assert store.list(bob, exactly) == sorted(SEVEN[2:4])
    assert store.list(AclFilter(resource_type=G), exactly) == [SEVEN[5]]
    assert store.list(AclFilter(resource_name="orders", operation=W), exactly) == [SEVEN[1]]
    assert store.list(AclFilter(permission=DENY, resource_type=G), exactly) == []
    assert store.list(AclFilter(), exactly) == sorted(SEVEN)
    with pytest.raises(ValueError, match="matches"):
        store.list(bob)


def test_a_delete_removes_what_its_filters_match_and_answers_per_filter(subject: Subject) -> None:
    store = subject.store
    created(store, SEVEN)
    bob, writes, nothing = (
        AclFilter(principal="User:bob"),
        AclFilter(operation=W),
        AclFilter(principal="User:carol"),
    )
    deleted = store.delete(
        [bob, nothing, AclFilter(principal="User:bob", pattern_type=PRE)], exactly
    )
    assert deleted == [sorted(SEVEN[2:4]), [], [SEVEN[3]]]  # a binding under each filter matching
    assert store.list() == sorted(SEVEN[:2] + SEVEN[4:])
    assert store.delete([bob, writes], exactly) == [[], [SEVEN[1]]]  # only what this call removed
    assert store.delete([AclFilter()], exactly) == [sorted([SEVEN[0], *SEVEN[4:]])]
    assert store.list() == []
    assert store.delete([], exactly) == []
    created(store, SEVEN[:1])  # a resource emptied and pruned takes bindings again
    assert store.list() == SEVEN[:1]


def test_every_create_and_delete_call_bumps_the_version(subject: Subject) -> None:
    store = subject.store
    created(store, SEVEN[:2])
    assert store.version() == 1
    created(store, SEVEN[:2])  # nothing new: bumped all the same (module docstring says why)
    assert store.version() == 2
    store.delete([AclFilter(operation=W)], exactly)
    assert store.version() == 3
    store.list()
    store.create([])
    store.delete([], exactly)
    assert store.version() == 3


def test_each_call_sends_the_requests_the_protocol_states(subject: Subject) -> None:
    store, sent = subject.store, subject.requests
    sent.clear()
    created(store, [acl(), acl(operation=W), acl("billing", resource_type=G)])
    # two resources: register, one per binding, register again; then the version
    assert sent == Counter(UpdateItem=2 * 2 + 3 + 1)
    sent.clear()
    created(store, [acl()])
    assert sent == Counter(UpdateItem=1 + 1 + 1)  # nothing written: not registered again
    sent.clear()
    store.version()
    assert sent == Counter(GetItem=1)
    sent.clear()
    store.list()
    assert sent == Counter(GetItem=1, BatchGetItem=1)
    sent.clear()
    store.delete([AclFilter(resource_type=G)], exactly)  # the listing, the binding, a prune
    assert sent == Counter(GetItem=1 + 1, BatchGetItem=1, UpdateItem=1 + 1 + 1)
    sent.clear()
    store.list()
    assert sent == Counter(GetItem=1, BatchGetItem=1)  # the emptied resource left the registry


def test_a_registered_resource_whose_item_is_gone_is_pruned_by_the_next_listing(
    subject: Subject,
) -> None:
    """What a deleter that died between emptying a resource and pruning it leaves."""
    store = subject.store
    created(store, [acl(), acl("billing", resource_type=G)])
    subject.drop_item(AclResource(G, LIT, "billing"))
    subject.requests.clear()
    assert store.list() == [acl()]
    assert subject.requests == Counter(GetItem=1 + 1, BatchGetItem=1, UpdateItem=1)
    subject.requests.clear()
    assert store.list() == [acl()]
    assert subject.requests == Counter(GetItem=1, BatchGetItem=1)


def run_together(*calls: Callable[[], object]) -> list[object]:
    """Run the calls on threads released at once; their answers, in order."""
    start = threading.Barrier(len(calls))
    answers: list[object] = [None] * len(calls)

    def run(i: int) -> None:
        start.wait()
        answers[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def test_concurrent_creators_and_deleters_of_one_resource_lose_nothing(subject: Subject) -> None:
    store = subject.store
    mine = [acl(principal=f"User:a{i}") for i in range(12)]
    theirs = [acl(principal=f"User:b{i}") for i in range(12)]
    answers = run_together(lambda: store.create(mine), lambda: store.create(theirs))
    assert all(a.created for done in answers for a in done)  # type: ignore[attr-defined]
    assert store.list() == sorted(mine + theirs)

    # two deleters of the same bindings: each binding reported by exactly one of them
    everyone = AclFilter(resource_name="orders")
    first, second = run_together(
        lambda: store.delete([everyone], exactly), lambda: store.delete([everyone], exactly)
    )
    reported = first[0] + second[0]  # type: ignore[index]
    assert sorted(reported) == sorted(mine + theirs)
    assert store.list() == []

    # a deleter emptying the resource while a creator fills it again: whatever the deleter did
    # not report stays listed (a prune racing the creator leaves no binding unlisted)
    created(store, mine)
    deleted, _ = run_together(
        lambda: store.delete([AclFilter(resource_name="orders")], exactly),
        lambda: store.create(theirs),
    )
    assert set(mine) <= set(deleted[0])  # type: ignore[index]
    assert store.list() == sorted(set(mine + theirs) - set(deleted[0]))  # type: ignore[index]
    assert store.version() == 7


def test_the_largest_resource_the_bound_allows_fits_in_an_item(subject: Subject) -> None:
    """Bindings of the longest principals a binding may hold, up to MAX_SET_BYTES on one
    resource of the longest name: DynamoDB (400 KB an item) takes them, and one more binding
    is refused with the bound named, changing nothing."""
    store = subject.store
    name = "n" * MAX_NAME_BYTES

    def big(i: int, length: int) -> AclBinding:
        return acl(name, principal=f"User:{i:04}" + "p" * (length - 10))

    width = MAX_BINDING_BYTES - member_bytes(encode_binding(big(0, 10))) + 10
    count, rest = divmod(MAX_SET_BYTES, MAX_BINDING_BYTES)
    bindings = [big(i, width) for i in range(count)]
    assert member_bytes(encode_binding(bindings[0])) == MAX_BINDING_BYTES
    if rest:
        bindings.append(big(count, width - (MAX_BINDING_BYTES - rest)))
    assert sum(member_bytes(encode_binding(b)) for b in bindings) == MAX_SET_BYTES
    assert created(store, bindings) == [True] * len(bindings)
    version = store.version()
    [refused] = store.create([acl(name, principal="User:one-more")])
    assert not refused.created and isinstance(refused.error, InvalidRequest)
    assert f"holds as many ACLs as its item may ({MAX_SET_BYTES} bytes)" in str(refused.error)
    assert len(store.list()) == len(bindings)
    assert store.version() == version + 1
    # there already: kept, as Kafka keeps it, even with the resource full
    assert created(store, bindings[:1]) == [False]


def test_a_binding_or_name_past_its_bound_is_refused_before_any_request(subject: Subject) -> None:
    store = subject.store
    long_name = acl("n" * (MAX_NAME_BYTES + 1))
    long_principal = acl(principal="User:" + "p" * MAX_BINDING_BYTES)
    subject.requests.clear()
    answers = store.create([long_name, acl(), long_principal])
    assert [type(a.error) for a in answers] == [InvalidRequest, type(None), InvalidRequest]
    assert "resource name is over 1024 bytes" in str(answers[0].error)
    assert f"at most {MAX_BINDING_BYTES}" in str(answers[2].error)
    assert subject.requests == Counter(UpdateItem=4)  # acl() alone, and the version
    assert store.list() == [acl()]


def test_a_full_registry_refuses_a_new_resource_and_keeps_known_ones(subject: Subject) -> None:
    store = subject.store
    store.max_set_bytes = 70  # room for two resources' names (the registry's bound, made small)
    created(store, [acl("a" * 12), acl("b" * 12)])  # "TOPIC:LITERAL:" + 12: 26 bytes each
    [refused] = store.create([acl("c" * 12)])
    assert isinstance(refused.error, InvalidRequest)
    assert "the ACL registry holds as many resources as its item may (70 bytes)" in str(
        refused.error
    )
    assert created(store, [acl("a" * 12, operation=W)]) == [True]
    assert store.list() == sorted([acl("a" * 12), acl("a" * 12, operation=W), acl("b" * 12)])
    store.delete([AclFilter(resource_name="b" * 12)], exactly)  # room again
    assert created(store, [acl("c" * 12)]) == [True]
