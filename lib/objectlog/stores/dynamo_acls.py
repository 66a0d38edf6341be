"""AclStore on DynamoDB (the item layout and request counts are in stores.acls).

Each primitive is one single-item request. An addition or removal is conditional on the
member's absence or presence, with the set's byte count ``sz`` changed in the same request,
so a repeat after a lost answer changes nothing more (it reads as "there already" or "not
there"). The version's ADD may count a repeat twice: a bump only makes caches reload.
"""

from __future__ import annotations

from collections.abc import Sequence

from objectlog.adapters.dynamodb import DynamoTable
from objectlog.stores.acls import AclResource, Added, SetItemsAclStore, member_bytes

REGISTRY_KEY = {"pk": "acls", "sk": "index"}
VERSION_KEY = {"pk": "acls", "sk": "version"}
PREFIX = "acl#"
SET = {"#s": "names"}  # the registry's set
BINDINGS = {"#s": "b"}  # a resource's set


def resource_key(resource: AclResource) -> dict[str, str]:
    return {"pk": f"{PREFIX}{resource.encode()}", "sk": "acls"}


def _item(resource: AclResource | None) -> tuple[dict[str, str], dict[str, str], str]:
    """The key, the set's attribute and the item's name in the request log."""
    if resource is None:
        return REGISTRY_KEY, SET, "ACL registry"
    return resource_key(resource), BINDINGS, "ACL resource"


class DynamoAclStore(SetItemsAclStore):
    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def _add(self, resource: AclResource | None, member: str, *, bounded: bool = True) -> Added:
        key, names, what = _item(resource)
        size = member_bytes(member)
        condition = "NOT contains(#s, :m)"
        values: dict[str, object] = {":set": {member}, ":m": member, ":n": size}
        if bounded:
            condition += " AND (attribute_not_exists(sz) OR sz <= :room)"
            values[":room"] = self.max_set_bytes - size
        written = self.table.update(
            key,
            "ADD #s :set, sz :n",
            condition=condition,
            names=names,
            values=values,
            repeatable=True,
            what=f"UpdateItem {what} (add)",
        )
        if written.applied:
            return Added.ADDED
        old = written.item or {}
        return Added.PRESENT if member in old.get(names["#s"], ()) else Added.NO_ROOM

    def _remove(self, resource: AclResource | None, member: str) -> bool | None:
        key, names, what = _item(resource)
        written = self.table.update(
            key,
            "DELETE #s :set ADD sz :n",
            condition="contains(#s, :m)",
            names=names,
            values={":set": {member}, ":m": member, ":n": -member_bytes(member)},
            returns="ALL_NEW",
            repeatable=True,
            what=f"UpdateItem {what} (remove)",
        )
        if not written.applied:
            return None
        return bool((written.item or {}).get(names["#s"]))  # DynamoDB drops an emptied set

    def _members(self, resource: AclResource | None) -> frozenset[str]:
        key, names, _ = _item(resource)
        item = self.table.get(key)
        return frozenset(item.get(names["#s"], ())) if item else frozenset()

    def _members_of(self, resources: Sequence[AclResource]) -> dict[AclResource, frozenset[str]]:
        items = self.table.batch_get(resource_key(r) for r in resources)
        return {
            AclResource.decode(item["pk"][len(PREFIX) :]): frozenset(item.get("b", ()))
            for item in items
        }

    def _bump(self) -> None:
        self.table.update(
            VERSION_KEY,
            "ADD v :one",
            values={":one": 1},
            repeatable=True,
            what="UpdateItem ACL version",
        )

    def version(self) -> int:
        item = self.table.get(VERSION_KEY)
        return int(item["v"]) if item else 0
