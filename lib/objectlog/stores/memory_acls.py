"""AclStore in memory, for unit tests and `objectlog dev` without DynamoDB (the same contract
as DynamoAclStore: the logic is stores.acls' SetItemsAclStore, the primitives here are atomic
as DynamoDB's single-item requests are). ``requests`` counts the DynamoDB requests the
DynamoDB store would send for the same calls."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence

from objectlog.stores.acls import AclResource, Added, SetItemsAclStore, member_bytes

BATCH_GET_LIMIT = 100


class MemoryAclStore(SetItemsAclStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sets: dict[AclResource | None, set[str]] = {}
        self._version = 0
        self.requests: Counter[str] = Counter()

    def _add(self, resource: AclResource | None, member: str, *, bounded: bool = True) -> Added:
        with self._lock:
            self.requests["UpdateItem"] += 1
            members = self._sets.setdefault(resource, set())
            if member in members:
                return Added.PRESENT
            used = sum(member_bytes(m) for m in members)
            if bounded and used + member_bytes(member) > self.max_set_bytes:
                return Added.NO_ROOM
            members.add(member)
            return Added.ADDED

    def _remove(self, resource: AclResource | None, member: str) -> bool | None:
        with self._lock:
            self.requests["UpdateItem"] += 1
            members = self._sets.get(resource, set())
            if member not in members:
                return None
            members.discard(member)
            return bool(members)

    def _members(self, resource: AclResource | None) -> frozenset[str]:
        with self._lock:
            self.requests["GetItem"] += 1
            return frozenset(self._sets.get(resource, ()))

    def _members_of(self, resources: Sequence[AclResource]) -> dict[AclResource, frozenset[str]]:
        with self._lock:
            self.requests["BatchGetItem"] += -(-len(set(resources)) // BATCH_GET_LIMIT)
            return {r: frozenset(self._sets[r]) for r in resources if r in self._sets}

    def _bump(self) -> None:
        with self._lock:
            self.requests["UpdateItem"] += 1
            self._version += 1

    def version(self) -> int:
        with self._lock:
            self.requests["GetItem"] += 1
            return self._version

    def remove_item(self, resource: AclResource) -> None:
        """What a deleter that died before pruning leaves, as a test's DeleteItem does on
        DynamoDB (tests only): the item goes, its name stays in the registry."""
        with self._lock:
            self._sets.pop(resource, None)
