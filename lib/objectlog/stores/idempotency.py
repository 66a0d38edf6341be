"""Idempotency records (HTTP ``Idempotency-Key``): the IdempotencyStore Protocol, its value type
and the DynamoDB implementation.

    idempotency#produce / <hashed key>    status, expiration (s), in_progress_expiration (ms),
                                          data (the stored response), validation (body hash),
                                          landed (JSON: what a failed run stored, for its retry)

The layout is Powertools idempotency's own (its attribute names, and ``expiration`` is the
table's TTL attribute), so records written before this store existed are still read. The HTTP
layer adapts any IdempotencyStore to Powertools (http/idempotency.py); the memory
implementation is stores.memory.MemoryIdempotencyStore, and both pass tests/contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from objectlog.adapters.dynamodb import DynamoTable, Item

IN_PROGRESS = "INPROGRESS"
COMPLETED = "COMPLETED"
PARTITION_KEY = "idempotency#produce"


@dataclass(frozen=True)
class IdempotencyRecord:
    key: str
    status: str
    expires_s: int
    in_progress_expires_ms: int | None = None
    response: str | None = None
    payload_hash: str | None = None
    landed: str | None = None


@dataclass(frozen=True)
class Claim:
    """put_if_free's answer. holder: the stored record that still holds the key (None: the
    key is now the caller's). landed: when the caller took over a record that a failed run of
    the same request released, what that run stored (its retry must not store it again)."""

    holder: IdempotencyRecord | None = None
    landed: str | None = None


def landed_for(record: IdempotencyRecord, replaced: IdempotencyRecord | None) -> str | None:
    """What the replaced record's failed run stored, if it ran the same request (body hash)."""
    if replaced is None or replaced.payload_hash != record.payload_hash:
        return None
    return replaced.landed


def holds_key(record: IdempotencyRecord, now_ms: int) -> bool:
    """Whether a stored record still holds its key: not expired, and not an in-progress
    record whose holder ran out of time (a function that timed out mid-request)."""
    if record.expires_s < now_ms // 1000:
        return False
    stalled = (
        record.status == IN_PROGRESS
        and record.in_progress_expires_ms is not None
        and record.in_progress_expires_ms < now_ms
    )
    return not stalled


class IdempotencyStore(Protocol):
    def get(self, key: str) -> IdempotencyRecord | None: ...

    def put_if_free(self, record: IdempotencyRecord, now_ms: int) -> Claim:
        """Write record unless a stored record still holds its key (holds_key)."""
        ...

    def release(self, key: str, landed: str) -> None:
        """Free the key for a retry of the same request (the record stays, stalled, and
        carries landed to the retry that claims it; a different body gets nothing)."""
        ...

    def complete(self, record: IdempotencyRecord) -> None:
        """Store the record's status, response, expiry and payload hash (unconditionally)."""
        ...

    def delete(self, key: str) -> None: ...


def _key(key: str) -> dict[str, str]:
    return {"pk": PARTITION_KEY, "sk": key}


class DynamoIdempotencyStore:
    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def get(self, key: str) -> IdempotencyRecord | None:
        item = self.table.get(_key(key))
        return None if item is None else _record(item)

    def put_if_free(self, record: IdempotencyRecord, now_ms: int) -> Claim:
        item: Item = {**_key(record.key), "expiration": record.expires_s, "status": record.status}
        if record.in_progress_expires_ms is not None:
            item["in_progress_expiration"] = record.in_progress_expires_ms
        if record.payload_hash:
            item["validation"] = record.payload_hash
        written = self.table.put(
            item,
            condition=(
                "attribute_not_exists(pk) OR expiration < :now_s OR (#status = :in_progress"
                " AND attribute_exists(in_progress_expiration)"
                " AND in_progress_expiration < :now_ms)"
            ),
            names={"#status": "status"},
            values={":now_s": now_ms // 1000, ":now_ms": now_ms, ":in_progress": IN_PROGRESS},
            # A repeat after a lost answer finds its own record holding the key, which the
            # caller sees as "in progress": the same answer a concurrent duplicate gets.
            returns="ALL_OLD",
            repeatable=True,
            what="PutItem idempotency",
        )
        if written.applied:
            replaced = _record(written.item) if written.item else None
            return Claim(landed=landed_for(record, replaced))
        return Claim(holder=_record(written.item) if written.item else self.get(record.key))

    def release(self, key: str, landed: str) -> None:
        self.table.update(
            _key(key),
            "SET in_progress_expiration = :stalled, landed = :landed",
            values={":stalled": 0, ":landed": landed},
            repeatable=True,
            what="UpdateItem idempotency (release)",
        )

    def complete(self, record: IdempotencyRecord) -> None:
        update = "SET #data = :data, expiration = :exp, #status = :status"
        values: dict[str, Any] = {
            ":data": record.response or "",
            ":exp": record.expires_s,
            ":status": record.status,
        }
        if record.payload_hash:
            update += ", validation = :hash"
            values[":hash"] = record.payload_hash
        self.table.update(
            _key(record.key),
            update,
            names={"#data": "data", "#status": "status"},
            values=values,
            repeatable=True,
            what="UpdateItem idempotency",
        )

    def delete(self, key: str) -> None:
        self.table.delete(_key(key), what="DeleteItem idempotency")


def _record(item: Item) -> IdempotencyRecord:
    return IdempotencyRecord(
        key=item["sk"],
        status=item["status"],
        expires_s=item["expiration"],
        in_progress_expires_ms=item.get("in_progress_expiration"),
        response=item.get("data"),
        payload_hash=item.get("validation"),
        landed=item.get("landed"),
    )
