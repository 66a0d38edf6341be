"""Lease items: the LeaseStore Protocol, its value type, and the DynamoDB implementation.

    lease#<name> / lease    owner, epoch, exp (expiry, ms of the holder's clock)

The memory implementation is stores.memory.MemoryLeaseStore; both pass tests/contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from objectlog.adapters.dynamodb import DynamoTable


@dataclass(frozen=True)
class Lease:
    name: str
    owner: str
    epoch: int
    expires_ms: int


class LeaseStore(Protocol):
    def get(self, name: str) -> Lease | None: ...

    def put(self, lease: Lease, *, seen_epoch: int | None, owner: str | None = None) -> bool:
        """Write the lease if the stored one is still at seen_epoch (None: if there is none)
        and, when owner is given, still held by owner; False otherwise."""
        ...


def lease_key(name: str) -> dict[str, str]:
    return {"pk": f"lease#{name}", "sk": "lease"}


class DynamoLeaseStore:
    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def get(self, name: str) -> Lease | None:
        item = self.table.get(lease_key(name))
        return None if item is None else Lease(name, item["owner"], item["epoch"], item["exp"])

    def put(self, lease: Lease, *, seen_epoch: int | None, owner: str | None = None) -> bool:
        item = {
            **lease_key(lease.name),
            "owner": lease.owner,
            "epoch": lease.epoch,
            "exp": lease.expires_ms,
        }
        if seen_epoch is None:
            return self.table.put(
                item, condition="attribute_not_exists(pk)", what="PutItem lease"
            ).applied
        condition, values = "epoch = :seen", {":seen": seen_epoch}
        names = None
        if owner is not None:
            condition += " AND #owner = :owner"
            values[":owner"] = owner  # type: ignore[assignment]
            names = {"#owner": "owner"}
        return self.table.put(
            item, condition=condition, names=names, values=values, what="PutItem lease"
        ).applied
