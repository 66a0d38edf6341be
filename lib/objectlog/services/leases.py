"""Leases in DynamoDB: one holder per role at a time, with an epoch that fences zombies.

    lease#<name> / lease    owner, epoch, exp (expiry, ms of the holder's clock)

Acquiring takes a free or expired lease with one conditional PutItem and epoch + 1. Expiry
only says when another process may take over; it is never trusted for safety, because clocks
skew and processes pause. Safety comes from the epoch: every write made under a lease is also
conditional on the epoch stored beside the state it changes (the compactor stamps its epoch on
the partition head, and its swap requires that stamp), so a holder that lost its lease while
paused fails its next write instead of overwriting its successor's work.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from objectlog.adapters.aws import applied, translated
from objectlog.clock import Clock
from objectlog.errors import LeaseLost
from objectlog.stores.metadata import DynamoMetadata


@dataclass(frozen=True)
class Lease:
    name: str
    owner: str
    epoch: int
    expires_ms: int


def lease_key(name: str) -> dict[str, Any]:
    return {"pk": {"S": f"lease#{name}"}, "sk": {"S": "lease"}}


def new_owner(role: str) -> str:
    return f"{role}-{uuid.uuid4().hex[:12]}"


class Leases:
    def __init__(self, metadata: DynamoMetadata, clock: Clock) -> None:
        self.client = metadata.client
        self.table = metadata.table
        self.clock = clock

    def current(self, name: str) -> Lease | None:
        with translated("GetItem lease"):
            item = self.client.get_item(
                TableName=self.table, Key=lease_key(name), ConsistentRead=True
            ).get("Item")
        return _parse(name, item) if item else None

    def acquire(self, name: str, owner: str, ttl_ms: int) -> Lease | None:
        """Take the lease if it is free, expired or already ours; None if someone holds it."""
        now = self.clock.now_ms()
        held = self.current(name)
        if held is not None and held.owner != owner and held.expires_ms > now:
            return None
        lease = Lease(name, owner, (held.epoch if held else 0) + 1, now + ttl_ms)
        condition = "attribute_not_exists(pk)" if held is None else "epoch = :seen"
        values = {} if held is None else {":seen": {"N": str(held.epoch)}}
        if self._put(lease, condition, values):
            return lease
        return None  # someone else took it between our read and our write

    def renew(self, lease: Lease, ttl_ms: int) -> Lease:
        """Extend our lease; LeaseLost if another holder took it meanwhile."""
        renewed = Lease(lease.name, lease.owner, lease.epoch, self.clock.now_ms() + ttl_ms)
        values = {":epoch": {"N": str(lease.epoch)}, ":owner": {"S": lease.owner}}
        if not self._put(renewed, "epoch = :epoch AND #owner = :owner", values):
            raise LeaseLost(f"lease {lease.name} (epoch {lease.epoch}) was taken over")
        return renewed

    def release(self, lease: Lease) -> None:
        """Give the lease up (expire it now) if we still hold it."""
        expired = Lease(lease.name, lease.owner, lease.epoch, 0)
        values = {":epoch": {"N": str(lease.epoch)}, ":owner": {"S": lease.owner}}
        self._put(expired, "epoch = :epoch AND #owner = :owner", values)

    def _put(self, lease: Lease, condition: str, values: dict[str, Any]) -> bool:
        kwargs: dict[str, Any] = {"ConditionExpression": condition}
        if values:
            kwargs["ExpressionAttributeValues"] = values
        if "#owner" in condition:
            kwargs["ExpressionAttributeNames"] = {"#owner": "owner"}
        return applied(
            lambda: self.client.put_item(
                TableName=self.table,
                Item={
                    **lease_key(lease.name),
                    "owner": {"S": lease.owner},
                    "epoch": {"N": str(lease.epoch)},
                    "exp": {"N": str(lease.expires_ms)},
                },
                **kwargs,
            ),
            what="PutItem lease",
            idempotent=True,
        )


def _parse(name: str, item: dict[str, Any]) -> Lease:
    return Lease(name, item["owner"]["S"], int(item["epoch"]["N"]), int(item["exp"]["N"]))
