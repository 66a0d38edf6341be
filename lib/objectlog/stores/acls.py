"""Kafka's ACLs as the table keeps them (issue 37, DESIGN.md section 17): the AclStore Protocol,
its answers, the encoding of bindings into items, and the bounds that keep each item under
DynamoDB's 400 KB.

One item per resource pattern (type, pattern type, name) holding its bindings, a registry of
those resources, and a version item every change bumps:

    acl#<TYPE>:<PATTERN>:<name> / acls   b (string set: one member per binding, the JSON text
                                         ["<principal>", "<host>", "<OPERATION>",
                                         "<PERMISSION>"]), sz (the members' bytes)
    acls / index                         names (string set: "<TYPE>:<PATTERN>:<name>" of every
                                         resource that may hold bindings), sz (their bytes)
    acls / version                       v (a counter: every create and delete call adds 1)

A binding is added and removed by one conditional UpdateItem on its resource's item (ADD or
DELETE of its set member, with ``sz`` kept beside it in the same request): the condition is
the member's absence (or, to remove it, its presence) and, to add, room under the bound. Two
agents changing one resource at once therefore lose nothing, a binding that exists is kept
(an idempotent create, as Kafka's), and of two deleters of one binding exactly one reports
it. The registry's names change the same way; a name is added before its resource's first
binding is written and again after (a deleter may prune it between the two), and pruned once
its resource holds none (removed, then put back if a binding appeared meanwhile: the same
protocol as the transactional id registry, stores.transactions).

Bounds: a resource's bindings take at most MAX_SET_BYTES (300 KiB: about 3,000 bindings of
100 bytes), and so do the registry's names (about 10,000 resources of 30 bytes); a resource
name at most MAX_NAME_BYTES, a binding at most MAX_BINDING_BYTES. A write past a bound is
refused (InvalidRequest naming the bound) and changes nothing.

DynamoDB requests per call (the memory store counts the same in ``requests``):
- create(bindings): per resource 1 UpdateItem (register) + 1 UpdateItem per binding + 1
  UpdateItem (register again, when one was written); then 1 UpdateItem (the version).
- list(): 1 GetItem (the registry) + 1 BatchGetItem per 100 resources, and for each
  registered resource left without bindings 1 UpdateItem + 1 GetItem (its prune).
- delete(filters): a list(), then 1 UpdateItem per matching binding, a prune (1 UpdateItem +
  1 GetItem) per resource it emptied, and 1 UpdateItem (the version).
- version(): 1 GetItem of a few bytes (1 read unit). A process's cache (services.acl_cache)
  reads only this in steady state, once per refresh interval, and lists on a change.
Each UpdateItem bills its item whole (1 write unit per KiB: a resource of 30 bindings is
about 2 KiB), a reload 1 read unit per 4 KiB of the registry and of each resource's item. An
emptied resource's item stays (its key and ``sz``), to take bindings again. No Scan, no
Query. Every create and delete call (of at least one binding or filter) bumps the
version, even one that changed nothing, so a call repeated after its first attempt died
between its writes and its bump still makes every cache reload.

Implementations: stores.dynamo_acls and stores.memory_acls; both pass
tests/contract/test_acl_store_contract.py, request counts included.
"""

from __future__ import annotations

import enum
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from objectlog.errors import InvalidRequest, ObjectLogError
from objectlog.format.acls import (
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

MAX_SET_BYTES = 300 * 1024  # a set's members; leaves room under 400 KB for the key and sz
MAX_NAME_BYTES = 1024  # a resource name: DynamoDB's partition key takes 2048 bytes
MAX_BINDING_BYTES = 4096  # a binding's member (principal and host, mostly)

# (filter, binding) -> whether the binding matches: services.authorization.matches, passed in
# because the stores sit below the services (DESIGN.md section 10).
Matcher = Callable[[AclFilter, AclBinding], bool]


@dataclass(frozen=True, order=True)
class AclResource:
    """A resource pattern: the key of the item holding the bindings on it."""

    resource_type: ResourceType
    pattern_type: PatternType
    name: str

    def encode(self) -> str:
        return f"{self.resource_type.name}:{self.pattern_type.name}:{self.name}"

    @classmethod
    def decode(cls, text: str) -> AclResource:
        kind, pattern, name = text.split(":", 2)
        return cls(ResourceType[kind], PatternType[pattern], name)

    @classmethod
    def of(cls, binding: AclBinding) -> AclResource:
        return cls(binding.resource_type, binding.pattern_type, binding.resource_name)


@dataclass(frozen=True)
class AclCreation:
    """One binding's answer to create (Kafka's CreateAclsResponse entry): created, or kept
    because it was there already (created False, no error), or refused (error)."""

    binding: AclBinding
    created: bool
    error: ObjectLogError | None = None


class AclStore(Protocol):
    """The ACL bindings and their version. Single-item requests and BatchGetItem only (request
    counts in the module docstring); raises StorageUnavailable, UnknownOutcome."""

    def create(self, bindings: Sequence[AclBinding]) -> list[AclCreation]:
        """Store each binding, keeping one that exists; one answer per binding, in order. A
        binding past a bound, or whose resource the registry has no room for, is answered
        with InvalidRequest and not stored; the others are."""
        ...

    def delete(self, filters: Sequence[AclFilter], matches: Matcher) -> list[list[AclBinding]]:
        """Remove every binding some filter matches; per filter (Kafka's DeleteAcls result),
        the bindings it matched that this call removed (one a concurrent deleter removed
        first is reported by that one), sorted."""
        ...

    def version(self) -> int:
        """The change counter (0 before the first change): every create and delete call adds
        1 after its writes, so a reader that sees it unchanged has missed no change."""
        ...

    # list comes last: its name would shadow the builtin in the annotations after it
    def list(
        self, filter: AclFilter | None = None, matches: Matcher | None = None
    ) -> list[AclBinding]:
        """Every binding (filter None), or those matches(filter, binding) accepts, sorted."""
        ...


def encode_binding(binding: AclBinding) -> str:
    """A binding's set member in its resource's item (the resource is the item's key)."""
    return json.dumps(
        [binding.principal, binding.host, binding.operation.name, binding.permission.name],
        separators=(",", ":"),
        ensure_ascii=False,
    )


def decode_binding(resource: AclResource, member: str) -> AclBinding:
    principal, host, operation, permission = json.loads(member)
    return AclBinding(
        resource.resource_type,
        resource.name,
        resource.pattern_type,
        principal,
        host,
        Operation[operation],
        Permission[permission],
    )


def member_bytes(member: str) -> int:
    """A string set member's size as DynamoDB counts it (and ``sz`` keeps)."""
    return len(member.encode())


def check_sizes(binding: AclBinding) -> None:
    """InvalidRequest for a binding whose name or member is past its bound."""
    if len(binding.resource_name.encode()) > MAX_NAME_BYTES:
        raise InvalidRequest(
            f"the resource name is over {MAX_NAME_BYTES} bytes", field="resource_name"
        )
    size = member_bytes(encode_binding(binding))
    if size > MAX_BINDING_BYTES:
        raise InvalidRequest(
            f"the binding's principal and host take {size} bytes, at most {MAX_BINDING_BYTES}",
            field="principal",
        )


def resource_full(resource: AclResource, bound: int) -> InvalidRequest:
    return InvalidRequest(
        f"the {resource.resource_type.name} {resource.pattern_type.name} resource "
        f"{resource.name!r} holds as many ACLs as its item may ({bound} bytes): "
        "remove some first",
        field="resource_name",
    )


def registry_full(resource: AclResource, bound: int) -> InvalidRequest:
    return InvalidRequest(
        f"the ACL registry holds as many resources as its item may ({bound} bytes): "
        f"no room for {resource.encode()!r}; remove ACLs of other resources first",
        field="resource_name",
    )


class SetItemsAclStore(ABC):
    """The AclStore's logic over items that each hold a set of strings (the module docstring's
    layout); a backend implements the five single-item primitives below. ``resource`` None
    names the registry item."""

    max_set_bytes = MAX_SET_BYTES  # a set's bound (tests lower it to fill the registry fast)

    @abstractmethod
    def _add(self, resource: AclResource | None, member: str, *, bounded: bool = True) -> Added:
        """Add member to the item's set unless it is there (one conditional UpdateItem); with
        bounded, only while the set stays within max_set_bytes."""

    @abstractmethod
    def _remove(self, resource: AclResource | None, member: str) -> bool | None:
        """Remove member if it is there (one conditional UpdateItem): None if it was not,
        else whether the set holds other members."""

    @abstractmethod
    def _members(self, resource: AclResource | None) -> frozenset[str]:
        """The item's set (one GetItem); empty if no item."""

    @abstractmethod
    def _members_of(self, resources: Sequence[AclResource]) -> dict[AclResource, frozenset[str]]:
        """The sets of the resources' items that exist (one BatchGetItem per 100)."""

    @abstractmethod
    def _bump(self) -> None:
        """Add 1 to the version (one UpdateItem)."""

    @abstractmethod
    def version(self) -> int: ...

    def create(self, bindings: Sequence[AclBinding]) -> list[AclCreation]:
        answers: dict[int, AclCreation] = {}
        for resource, positions in by_resource(bindings).items():
            valid = []
            for i in positions:
                try:
                    check_sizes(bindings[i])
                    valid.append(i)
                except InvalidRequest as e:
                    answers[i] = AclCreation(bindings[i], False, e)
            if valid:
                answers.update(self._create_on(resource, [(i, bindings[i]) for i in valid]))
        if bindings:
            self._bump()
        return [answers[i] for i in range(len(bindings))]

    def _create_on(
        self, resource: AclResource, bindings: list[tuple[int, AclBinding]]
    ) -> dict[int, AclCreation]:
        # Registered before the first write, so a listing never misses a stored binding; again
        # after, because a prune may have taken the name between (it saw no binding yet).
        if self._add(None, resource.encode()) is Added.NO_ROOM:
            full = registry_full(resource, self.max_set_bytes)
            return {i: AclCreation(b, False, full) for i, b in bindings}
        answers = {}
        for i, binding in bindings:
            added = self._add(resource, encode_binding(binding))
            error = resource_full(resource, self.max_set_bytes) if added is Added.NO_ROOM else None
            answers[i] = AclCreation(binding, added is Added.ADDED, error)
        if any(a.created for a in answers.values()):
            self._add(None, resource.encode(), bounded=False)  # within a name of the bound
        return answers

    def delete(self, filters: Sequence[AclFilter], matches: Matcher) -> list[list[AclBinding]]:
        if not filters:
            return []
        removed: list[AclBinding] = []
        emptied: set[AclResource] = set()
        for binding in self.list():
            if not any(matches(f, binding) for f in filters):
                continue
            resource = AclResource.of(binding)
            left = self._remove(resource, encode_binding(binding))
            if left is None:
                continue  # a concurrent deleter removed it (and reports it)
            removed.append(binding)
            if not left:
                emptied.add(resource)
        for resource in sorted(emptied):
            self._prune(resource)
        self._bump()
        return per_filter(removed, filters, matches)

    def list(
        self, filter: AclFilter | None = None, matches: Matcher | None = None
    ) -> list[AclBinding]:
        resources = sorted(AclResource.decode(name) for name in self._members(None))
        found = self._members_of(resources)
        bindings: list[AclBinding] = []
        for resource in resources:
            members = found.get(resource)
            if not members:
                self._prune(resource)  # a deleter or creator died between its steps (or is there)
                continue
            bindings.extend(decode_binding(resource, m) for m in members)
        return selected(bindings, filter, matches)

    def _prune(self, resource: AclResource) -> None:
        """Drop a resource without bindings from the registry; put it back if a binding
        appeared meanwhile (a creator registers before and after its write, so one of the two
        follows this)."""
        self._remove(None, resource.encode())
        if self._members(resource):
            self._add(None, resource.encode(), bounded=False)


class Added(enum.Enum):
    """A bounded set addition's outcome."""

    ADDED = "added"
    PRESENT = "present"  # there already: nothing changed
    NO_ROOM = "no room"  # the set would pass MAX_SET_BYTES: nothing changed


def by_resource(bindings: Iterable[AclBinding]) -> dict[AclResource, list[int]]:
    """The positions of the bindings on each resource, resources in first-seen order."""
    grouped: dict[AclResource, list[int]] = {}
    for i, binding in enumerate(bindings):
        grouped.setdefault(AclResource.of(binding), []).append(i)
    return grouped


def selected(
    bindings: Iterable[AclBinding], filter: AclFilter | None, matches: Matcher | None
) -> list[AclBinding]:
    """The bindings a listing answers (sorted): all, or those the filter matches."""
    if filter is None:
        return sorted(bindings)
    if matches is None:
        raise ValueError("a filtered listing needs matches (services.authorization.matches)")
    return sorted(b for b in bindings if matches(filter, b))


def per_filter(
    removed: Iterable[AclBinding], filters: Sequence[AclFilter], matches: Matcher
) -> list[list[AclBinding]]:
    """DeleteAcls' answer: for each filter, the removed bindings it matches."""
    done = sorted(removed)
    return [[b for b in done if matches(f, b)] for f in filters]
