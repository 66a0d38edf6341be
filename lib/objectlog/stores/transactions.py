"""Kafka transactions' coordinator state (DESIGN.md section 16): the TransactionStore Protocol,
its record, and the bounds that keep a transaction's item under DynamoDB's 400 KB.

One item per transactional id, replaced whole by each transition, conditional on the version
it was read at (services.transactions holds the rules):

    txn#<id> / txn   pid, epoch, lpid, lepoch (the producer id and epoch before the last
                     InitProducerId: KIP-360's retries), state (Kafka's name), tmo (timeout,
                     ms), start (ms; while a transaction is open), deadline (ms; Ongoing only,
                     a sparse attribute an index can key the sweep on), parts (string set
                     "<topic>:<partition>"), groups (string set), offsets (JSON text: the
                     pending offsets per group), upd (ms), v (version), expiration (epoch
                     seconds: the table's TTL attribute; Empty and Complete* only, so an open
                     or decided transaction is never removed before it is settled)
    txns / index     names (string set): the transactional id registry ListTransactions reads

The registry is written only when an id is first stored (twice: stores.dynamo_transactions
says why) or pruned, never per transaction; each of those writes bills the whole registry item
(1 unit per KiB: about 25 ids of 40 bytes), and the item's 400 KB bound holds about 10,000
such ids at once (ids the TTL removed leave at the next listing). A listing reads it whole
(1 read unit per 4 KiB) plus one BatchGetItem per 100 ids; no Scan or Query.

Implementations: stores.dynamo_transactions (single-item calls, BatchGetItem for a listing)
and stores.memory_transactions; both pass tests/contract/test_transaction_store_contract.py,
request counts included.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from objectlog.errors import InvalidRequest, TransactionTooLarge
from objectlog.stores.groups import TopicPartition

# A transaction's bounds. DynamoDB refuses an item over 400 KB; every write bills the whole
# item (1 unit per KiB), and completing writes one marker per partition.
MAX_PARTITIONS = 1000
MAX_GROUPS = 100
MAX_ITEM_BYTES = 300 * 1024  # leaves room under 400 KB for the fixed attributes and the id
MAX_ID_BYTES = 1024  # DynamoDB's partition key takes 2048 bytes
FIXED_BYTES = 256  # attribute names, numbers, state and key prefixes, beside the id


class TxnState(Enum):
    """Kafka's transaction states; the value is the name ListTransactions and
    DescribeTransactions answer with."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"

    @property
    def prepared(self) -> bool:
        """Decided, its markers (and on commit its offsets) not yet all written."""
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    @property
    def open(self) -> bool:
        """Begun and not yet complete: Ongoing, or decided."""
        return self is TxnState.ONGOING or self.prepared

    @property
    def settled(self) -> bool:
        """No transaction in flight: a new one may begin (Empty, Complete*)."""
        return not self.open


@dataclass(frozen=True)
class PendingOffset:
    """An offset committed in a transaction (TxnOffsetCommit), applied to the group when the
    transaction commits, dropped when it aborts."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    generation: int = -1  # the committing member's group generation (applied fenced by it)


@dataclass(frozen=True)
class Transaction:
    """A transactional id's state as one item holds it. ``version`` is bumped by each write
    and is the condition of the next one."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: TxnState
    timeout_ms: int
    started_ms: int | None = None
    partitions: frozenset[TopicPartition] = frozenset()
    groups: frozenset[str] = frozenset()
    offsets: Mapping[str, Mapping[TopicPartition, PendingOffset]] = field(default_factory=dict)
    updated_ms: int = 0
    version: int = 0
    expires_at_s: int | None = None
    last_producer_id: int = -1
    last_producer_epoch: int = -1

    @property
    def deadline_ms(self) -> int | None:
        """When an open transaction times out: started + timeout."""
        return None if self.started_ms is None else self.started_ms + self.timeout_ms


class TransactionStore(Protocol):
    """Transaction items and the transactional id registry. Every call is a single-item
    request but list's reads (below); raises StorageUnavailable, UnknownOutcome.

    DynamoDB requests per call (the memory store counts the same in ``requests``): get 1
    GetItem; put_new 2 UpdateItem (the registry, before and after) and 1 PutItem (one
    UpdateItem fewer when the id exists); replace 1 PutItem; list 1 GetItem (the registry),
    one BatchGetItem per 100 ids, and for an id whose item is gone (the TTL removed it) 1
    UpdateItem and 1 GetItem that prune it."""

    def get(self, transactional_id: str) -> Transaction | None:
        """The item as stored (expired ones too, until the TTL removes them)."""
        ...

    def put_new(self, txn: Transaction) -> bool:
        """Store txn (at version 1) unless an item exists for its id; False then. The id is
        registered before and after the write, so a listing finds every item."""
        ...

    def replace(self, txn: Transaction, expected_version: int) -> bool:
        """Store txn (at expected_version + 1) if the stored item is at expected_version;
        False otherwise."""
        ...

    def list(
        self, states: Collection[TxnState] | None = None, limit: int | None = None
    ) -> list[Transaction]:
        """The registered ids' items in these states (all states: None), by id, at most
        limit; ids whose items are gone leave the registry."""
        ...


def check_transactional_id(transactional_id: str) -> None:
    """InvalidRequest for an empty id (as Kafka) or one too long for the table's key."""
    if not transactional_id:
        raise InvalidRequest("the transactional id is empty", field="transactional_id")
    if len(transactional_id.encode()) > MAX_ID_BYTES:
        raise InvalidRequest(
            f"the transactional id is over {MAX_ID_BYTES} bytes", field="transactional_id"
        )


def offsets_mark(txn: Transaction) -> str:
    """The mark a transaction leaves on the offset items it commits offsets for (GroupStore.
    hold_pending): its id, producer id and start, so no other transaction of the same id
    (one after it, or a late completer of one before it) takes the mark for its own."""
    return f"{txn.transactional_id}\n{txn.producer_id}.{txn.started_ms}"


def marking_id(mark: str | None) -> str | None:
    """The transactional id of an offsets_mark (None for none)."""
    return None if mark is None else mark.partition("\n")[0]


def check_version(txn: Transaction, expected_version: int) -> None:
    """A write's record is at the version after the one it is conditional on (ValueError)."""
    if txn.version != expected_version + 1:
        raise ValueError(f"version {txn.version} does not follow {expected_version}")


def check_bounds(txn: Transaction) -> None:
    """TransactionTooLarge if txn holds more partitions or groups than a transaction may, or
    would make an item over MAX_ITEM_BYTES (long names, large offset metadata)."""
    where = f"transaction of {txn.transactional_id!r}"
    if len(txn.partitions) > MAX_PARTITIONS:
        raise TransactionTooLarge(
            f"{where}: {len(txn.partitions)} partitions, at most {MAX_PARTITIONS}"
        )
    if len(txn.groups) > MAX_GROUPS:
        raise TransactionTooLarge(f"{where}: {len(txn.groups)} groups, at most {MAX_GROUPS}")
    size = item_bytes(txn)
    if size > MAX_ITEM_BYTES:
        raise TransactionTooLarge(
            f"{where}: its partitions, groups and pending offsets take {size} bytes, "
            f"at most {MAX_ITEM_BYTES}"
        )


def item_bytes(txn: Transaction) -> int:
    """The item's size as DynamoDB bills it, to within FIXED_BYTES: the id (in the key), the
    partitions' and groups' set members and the offsets' JSON text."""
    return (
        FIXED_BYTES
        + len(txn.transactional_id.encode())
        + sum(len(tp.encode().encode()) for tp in txn.partitions)
        + sum(len(group.encode()) for group in txn.groups)
        + len(encode_offsets(txn.offsets).encode())
    )


def encode_offsets(offsets: Mapping[str, Mapping[TopicPartition, PendingOffset]]) -> str:
    """{"<group>": [[topic, partition, offset, leader epoch, metadata, generation], ...]},
    sorted."""
    return json.dumps(
        {
            group: [
                [tp.topic, tp.partition, o.offset, o.leader_epoch, o.metadata, o.generation]
                for tp, o in sorted(by_partition.items())
            ]
            for group, by_partition in sorted(offsets.items())
        },
        separators=(",", ":"),
    )


def decode_offsets(text: str) -> dict[str, dict[TopicPartition, PendingOffset]]:
    return {
        group: {
            TopicPartition(row[0], int(row[1])): PendingOffset(
                int(row[2]), int(row[3]), row[4], int(row[5]) if len(row) > 5 else -1
            )
            for row in rows
        }
        for group, rows in json.loads(text).items()
    }
