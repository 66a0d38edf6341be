"""Versioned documents: small JSON states read whole and replaced whole, conditional on the
version read (optimistic concurrency), for state whose shape is its owner's business (the
Kafka agent's classic consumer groups).

    doc#<kind>#<name> / doc    v (version, from 1), body (JSON text),
                               expiration (epoch seconds, optional: DynamoDB's TTL removes
                               a document its owner abandoned; owners check expiry themselves)

MemoryDocumentStore (below) is the in-memory one; both pass tests/contract.
"""

from __future__ import annotations

import threading
from typing import Protocol

from objectlog.adapters.dynamodb import DynamoTable

ABSENT = 0  # the version of a document that does not exist


class DocumentStore(Protocol):
    def read(self, kind: str, name: str) -> tuple[str | None, int]:
        """The document's body and version; (None, ABSENT) when there is none."""
        ...

    def write(
        self, kind: str, name: str, body: str, *, seen: int, expires_s: int | None = None
    ) -> bool:
        """Store body as version seen + 1 if the stored version is still seen (ABSENT: if
        there is none); False otherwise. expires_s lets the table's TTL remove it after then."""
        ...

    def delete(self, kind: str, name: str, *, seen: int) -> bool:
        """Delete the document if it is still at version seen; False otherwise."""
        ...


def document_key(kind: str, name: str) -> dict[str, str]:
    return {"pk": f"doc#{kind}#{name}", "sk": "doc"}


class DynamoDocumentStore:
    def __init__(self, table: DynamoTable) -> None:
        self.table = table

    def read(self, kind: str, name: str) -> tuple[str | None, int]:
        item = self.table.get(document_key(kind, name))
        return (None, ABSENT) if item is None else (item["body"], int(item["v"]))

    def write(
        self, kind: str, name: str, body: str, *, seen: int, expires_s: int | None = None
    ) -> bool:
        item: dict[str, object] = {**document_key(kind, name), "v": seen + 1, "body": body}
        if expires_s is not None:
            item["expiration"] = expires_s
        if seen == ABSENT:
            condition, values = "attribute_not_exists(pk)", None
        else:
            condition, values = "v = :seen", {":seen": seen}
        return self.table.put(
            item, condition=condition, values=values, repeatable=False, what="PutItem document"
        ).applied

    def delete(self, kind: str, name: str, *, seen: int) -> bool:
        return self.table.delete(
            document_key(kind, name),
            condition="v = :seen",
            values={":seen": seen},
            what="DeleteItem document",
        ).applied


class MemoryDocumentStore:
    def __init__(self) -> None:
        self._documents: dict[tuple[str, str], tuple[str, int]] = {}
        self._lock = threading.Lock()

    def read(self, kind: str, name: str) -> tuple[str | None, int]:
        with self._lock:
            return self._documents.get((kind, name), (None, ABSENT))

    def write(
        self, kind: str, name: str, body: str, *, seen: int, expires_s: int | None = None
    ) -> bool:
        with self._lock:
            if self._documents.get((kind, name), (None, ABSENT))[1] != seen:
                return False
            self._documents[(kind, name)] = (body, seen + 1)
            return True

    def delete(self, kind: str, name: str, *, seen: int) -> bool:
        with self._lock:
            if self._documents.get((kind, name), (None, ABSENT))[1] != seen or seen == ABSENT:
                return False
            del self._documents[(kind, name)]
            return True
