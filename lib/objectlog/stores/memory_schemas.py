"""SchemaStore in memory, for unit and model tests (the same contract as DynamoSchemaStore)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

from objectlog.stores.schemas import StoredSchema


class MemorySchemaStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_id = 0
        self._schemas: dict[int, StoredSchema] = {}
        self._guids: dict[str, int] = {}
        self._fingerprints: dict[str, int] = {}
        self._subjects: set[str] = set()

    def next_id(self) -> int:
        with self._lock:
            self._last_id += 1
            return self._last_id

    def put_schema(self, schema: StoredSchema) -> bool:
        with self._lock:
            if schema.id in self._schemas:
                return False
            self._schemas[schema.id] = dataclasses.replace(schema, uses=frozenset())
            self._guids.setdefault(schema.guid, schema.id)
            return True

    def schema(self, schema_id: int) -> StoredSchema | None:
        with self._lock:
            return self._schemas.get(schema_id)

    def id_by_guid(self, guid: str) -> int | None:
        with self._lock:
            return self._guids.get(guid)

    def id_by_fingerprint(self, fingerprint: str) -> int | None:
        with self._lock:
            return self._fingerprints.get(fingerprint)

    def claim_fingerprint(self, fingerprint: str, schema_id: int) -> int:
        with self._lock:
            return self._fingerprints.setdefault(fingerprint, schema_id)

    def add_use(self, schema_id: int, subject: str, version: int) -> None:
        self._change_uses(schema_id, lambda uses: uses | {(subject, version)})

    def remove_use(self, schema_id: int, subject: str, version: int) -> None:
        self._change_uses(schema_id, lambda uses: uses - {(subject, version)})

    def _change_uses(
        self,
        schema_id: int,
        change: Callable[[frozenset[tuple[str, int]]], frozenset[tuple[str, int]]],
    ) -> None:
        with self._lock:
            schema = self._schemas.get(schema_id)
            if schema is not None:
                self._schemas[schema_id] = dataclasses.replace(schema, uses=change(schema.uses))

    def subject_names(self) -> list[str]:
        with self._lock:
            return sorted(self._subjects)

    def add_subject(self, subject: str) -> None:
        with self._lock:
            self._subjects.add(subject)

    def remove_subject(self, subject: str) -> None:
        with self._lock:
            self._subjects.discard(subject)
