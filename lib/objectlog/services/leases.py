"""Leases: one holder per role at a time, with an epoch that fences zombies.

Acquiring takes a free or expired lease with one conditional write and epoch + 1. Expiry only
says when another process may take over; it is never trusted for safety, because clocks skew
and processes pause. Safety comes from the epoch: every write made under a lease is also
conditional on the epoch stored beside the state it changes (the compactor stamps its epoch on
the partition head, and its swap requires that stamp), so a holder that lost its lease while
paused fails its next write instead of overwriting its successor's work.
"""

from __future__ import annotations

import uuid

from objectlog.clock import Clock
from objectlog.stores.leases import Lease, LeaseStore

__all__ = ["Lease", "Leases", "new_owner"]


def new_owner(role: str) -> str:
    return f"{role}-{uuid.uuid4().hex[:12]}"


class Leases:
    def __init__(self, store: LeaseStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    def current(self, name: str) -> Lease | None:
        return self.store.get(name)

    def acquire(self, name: str, owner: str, ttl_ms: int) -> Lease | None:
        """Take the lease if it is free, expired or already ours; None if someone holds it."""
        now = self.clock.now_ms()
        held = self.store.get(name)
        if held is not None and held.owner != owner and held.expires_ms > now:
            return None
        lease = Lease(name, owner, (held.epoch if held else 0) + 1, now + ttl_ms)
        if self.store.put(lease, seen_epoch=None if held is None else held.epoch):
            return lease
        return None  # someone else took it between our read and our write

    def release(self, lease: Lease) -> None:
        """Give the lease up (expire it now) if we still hold it."""
        expired = Lease(lease.name, lease.owner, lease.epoch, 0)
        self.store.put(expired, seen_epoch=lease.epoch, owner=lease.owner)
