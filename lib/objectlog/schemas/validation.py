"""Validated topics: Confluent's broker-side schema ID validation (DESIGN.md section 15).

A topic with ``confluent.value.schema.validation=true`` (or ``...key...``) takes a record only
if its value (key) carries the registry's wire format (format.schema_ids: magic byte 0 and a
schema id) with an id registered under the topic's subject, ``<topic>-value`` (``-key``), as
Confluent's TopicNameStrategy names it. A null value or key passes (a tombstone, a keyless
record). Versions soft-deleted from the subject still count: records written with them stay
readable.

The ids of a subject are read from its document (one GetItem) and kept for
``staleness_ms``; an id not among them reads the subject again once (a schema registered a
moment ago is taken at once), and the same missing id again only after ``miss_interval_ms``,
so a stream of bad ids costs at most one read a second per subject, never one a record. A
permanently deleted version is refused once the staleness has passed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from objectlog.errors import SchemaValidationFailed
from objectlog.format.schema_ids import framed_ids
from objectlog.format.topics import KEY_SCHEMA_VALIDATION, VALUE_SCHEMA_VALIDATION, Topic
from objectlog.schemas.settings import SubjectDocuments

STALENESS_MS = 30_000
MISS_INTERVAL_MS = 1_000


@dataclass
class _Known:
    ids: frozenset[int]
    read_ms: int
    absent: frozenset[int]  # ids wanted at that read and not found


class SchemaValidator:
    def __init__(
        self,
        subjects: SubjectDocuments,
        now_ms: Callable[[], int],
        *,
        staleness_ms: int = STALENESS_MS,
        miss_interval_ms: int = MISS_INTERVAL_MS,
    ) -> None:
        self.subjects = subjects
        self.now_ms = now_ms
        self.staleness_ms = staleness_ms
        self.miss_interval_ms = miss_interval_ms
        self._known: dict[str, _Known] = {}
        self._lock = threading.Lock()

    def check(
        self, topic: Topic, keys: pa.Array | pa.ChunkedArray, values: pa.Array | pa.ChunkedArray
    ) -> None:
        """Refuse the records (all of them: the caller's batch or request) if any breaks the
        topic's validation: SchemaValidationFailed naming the first and the positions of all."""
        refused: dict[int, str] = {}
        if topic.config.get(VALUE_SCHEMA_VALIDATION) == "true":
            refused.update(self._refused(f"{topic.name}-value", "value", values))
        if topic.config.get(KEY_SCHEMA_VALIDATION) == "true":
            for row, reason in self._refused(f"{topic.name}-key", "key", keys).items():
                refused.setdefault(row, reason)
        if refused:
            rows = sorted(refused)
            raise SchemaValidationFailed(
                f"{len(rows)} of {len(values)} records refused by topic {topic.name!r}'s schema "
                f"validation; record {rows[0]}: {refused[rows[0]]}",
                field="records",
                records=tuple(rows),
            )

    def _refused(
        self, subject: str, what: str, column: pa.Array | pa.ChunkedArray
    ) -> dict[int, str]:
        ids, framed, null = framed_ids(column)
        refused = {
            int(row): f"its {what} does not carry the Schema Registry's wire format "
            "(magic byte 0 and a 4-byte schema id)"
            for row in np.flatnonzero(~framed & ~null)
        }
        wanted = set(np.unique(ids[framed]).tolist())
        if wanted:
            known = self._ids(subject, wanted)
            for row in np.flatnonzero(framed & ~np.isin(ids, list(known))):
                refused[int(row)] = (
                    f"its {what}'s schema id {int(ids[row])} is not registered under "
                    f"subject {subject!r}"
                )
        return refused

    def _ids(self, subject: str, wanted: set[int]) -> frozenset[int]:
        """The subject's ids: cached while fresh; read again when stale, when an id is wanted
        that the last read did not see (registered since, perhaps), or when ids already seen
        missing are wanted again and the last read is older than the miss interval."""
        now = self.now_ms()
        with self._lock:
            known = self._known.get(subject)
        if known is not None and not self._read_again(known, wanted, now):
            return known.ids
        state = self.subjects.read(subject)
        ids = frozenset(v.id for v in state.versions)
        with self._lock:
            self._known[subject] = _Known(ids, now, frozenset(wanted - ids))
        return ids

    def _read_again(self, known: _Known, wanted: set[int], now: int) -> bool:
        age = now - known.read_ms
        missing = wanted - known.ids
        if age >= self.staleness_ms or missing - known.absent:
            return True
        return bool(missing) and age >= self.miss_interval_ms
