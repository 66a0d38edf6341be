"""TransactionStore on DynamoDB (the item layout is in stores.transactions).

Every write is conditional: put_new on the item's absence, replace on the version read. Both
may be repeated after a lost answer: a repeat whose first attempt landed fails its condition,
and the caller's re-read finds its own write.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from objectlog.adapters.dynamodb import DynamoTable, Item
from objectlog.stores.groups import TopicPartition
from objectlog.stores.name_sets import DynamoNameSet
from objectlog.stores.transactions import (
    Transaction,
    TxnState,
    check_version,
    decode_offsets,
    encode_offsets,
)

REGISTRY_KEY = {"pk": "txns", "sk": "index"}
PREFIX = "txn#"


def transaction_key(transactional_id: str) -> dict[str, str]:
    return {"pk": f"{PREFIX}{transactional_id}", "sk": "txn"}


class DynamoTransactionStore:
    def __init__(self, table: DynamoTable) -> None:
        self.table = table
        self.registry = DynamoNameSet(table, REGISTRY_KEY, "transactional id registry")

    def get(self, transactional_id: str) -> Transaction | None:
        item = self.table.get(transaction_key(transactional_id))
        return None if item is None else from_item(item)

    def put_new(self, txn: Transaction) -> bool:
        check_version(txn, 0)
        # Registered first, so an item is never unlisted; again after, because a listing may
        # prune the name between the two (it saw no item yet).
        self.registry.add(txn.transactional_id)
        written = self.table.put(
            to_item(txn), condition="attribute_not_exists(pk)", what="PutItem transaction"
        )
        if written.applied:
            self.registry.add(txn.transactional_id)
        return written.applied

    def replace(self, txn: Transaction, expected_version: int) -> bool:
        check_version(txn, expected_version)
        return self.table.put(
            to_item(txn),
            condition="v = :v",
            values={":v": expected_version},
            what="PutItem transaction",
        ).applied

    def list(
        self, states: Collection[TxnState] | None = None, limit: int | None = None
    ) -> list[Transaction]:
        ids = self.registry.names()
        found = {
            item["pk"][len(PREFIX) :]: from_item(item)
            for item in self.table.batch_get(transaction_key(i) for i in ids)
        }
        for gone in set(ids) - set(found):
            self._prune(gone)
        listed = [found[i] for i in sorted(found) if states is None or found[i].state in states]
        return listed if limit is None else listed[:limit]

    def _prune(self, transactional_id: str) -> None:
        """Drop a name whose item is gone; put it back if the item appeared meanwhile (a
        put_new registers before and after its write, so one of the two follows this)."""
        self.registry.remove(transactional_id)
        if self.table.get(transaction_key(transactional_id)) is not None:
            self.registry.add(transactional_id)


def to_item(txn: Transaction) -> Item:
    item: Item = {
        **transaction_key(txn.transactional_id),
        "pid": txn.producer_id,
        "epoch": txn.producer_epoch,
        "lpid": txn.last_producer_id,
        "lepoch": txn.last_producer_epoch,
        "state": txn.state.value,
        "tmo": txn.timeout_ms,
        "upd": txn.updated_ms,
        "v": txn.version,
    }
    optional: dict[str, Any] = {
        "start": txn.started_ms,
        "deadline": txn.deadline_ms if txn.state is TxnState.ONGOING else None,
        "parts": {tp.encode() for tp in txn.partitions},
        "groups": set(txn.groups),
        "offsets": encode_offsets(txn.offsets) if txn.offsets else None,
        "expiration": txn.expires_at_s,
    }
    # left out: None, and empty sets (DynamoDB stores none)
    item.update({k: v for k, v in optional.items() if v is not None and v != set()})
    return item


def from_item(item: Item) -> Transaction:
    return Transaction(
        transactional_id=item["pk"][len(PREFIX) :],
        producer_id=int(item["pid"]),
        producer_epoch=int(item["epoch"]),
        state=TxnState(item["state"]),
        timeout_ms=int(item["tmo"]),
        started_ms=item.get("start"),
        partitions=frozenset(TopicPartition.decode(p) for p in item.get("parts", ())),
        groups=frozenset(item.get("groups", ())),
        offsets=decode_offsets(item["offsets"]) if "offsets" in item else {},
        updated_ms=int(item["upd"]),
        version=int(item["v"]),
        expires_at_s=item.get("expiration"),
        last_producer_id=int(item["lpid"]),
        last_producer_epoch=int(item["lepoch"]),
    )
