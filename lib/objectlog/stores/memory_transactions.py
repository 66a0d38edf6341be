"""TransactionStore in memory, for unit and model tests (the same contract as
DynamoTransactionStore). ``requests`` counts the DynamoDB requests the DynamoDB store would
send for the same calls, so tests can state what a transition costs."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Collection

from objectlog.stores.transactions import Transaction, TxnState, check_version


class MemoryTransactionStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, Transaction] = {}
        self._registry: set[str] = set()
        self.requests: Counter[str] = Counter()

    def get(self, transactional_id: str) -> Transaction | None:
        with self._lock:
            self.requests["GetItem"] += 1
            return self._items.get(transactional_id)

    def put_new(self, txn: Transaction) -> bool:
        check_version(txn, 0)
        with self._lock:
            self.requests.update(UpdateItem=1, PutItem=1)
            self._registry.add(txn.transactional_id)
            if txn.transactional_id in self._items:
                return False
            self.requests["UpdateItem"] += 1
            self._items[txn.transactional_id] = txn
            return True

    def replace(self, txn: Transaction, expected_version: int) -> bool:
        check_version(txn, expected_version)
        with self._lock:
            self.requests["PutItem"] += 1
            stored = self._items.get(txn.transactional_id)
            if stored is None or stored.version != expected_version:
                return False
            self._items[txn.transactional_id] = txn
            return True

    def list(
        self, states: Collection[TxnState] | None = None, limit: int | None = None
    ) -> list[Transaction]:
        with self._lock:
            self.requests["GetItem"] += 1
            if self._registry:
                self.requests["BatchGetItem"] += (len(self._registry) + 99) // 100
            gone = self._registry - self._items.keys()
            self.requests.update(UpdateItem=len(gone), GetItem=len(gone))
            self._registry -= gone
            listed = [
                self._items[i]
                for i in sorted(self._registry)
                if states is None or self._items[i].state in states
            ]
            return listed if limit is None else listed[:limit]

    def remove(self, transactional_id: str) -> None:
        """What DynamoDB's TTL does to an expired item (tests only): the item goes, its name
        stays in the registry."""
        with self._lock:
            self._items.pop(transactional_id, None)
