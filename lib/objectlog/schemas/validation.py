"""Validated topics: Confluent's broker-side schema ID validation (DESIGN.md section 15).

A topic with ``confluent.value.schema.validation=true`` (or ``...key...``) takes a record only
if its value (key) carries the registry's wire format (format.schema_ids: magic byte 0 and a
schema id) with an id registered under the topic's subject, ``<topic>-value`` (``-key``), as
Confluent's TopicNameStrategy names it. A null value or key passes (a tombstone, a keyless
record). ``confluent.value.subject.name.strategy`` (``...key...``) may name the subject by the
record instead, as Confluent's RecordNameStrategy (the record's full name) and
TopicRecordNameStrategy (``<topic>-<record name>``) do: the name is read from the schema the
record's id names (schemas.record_names), once per id, and each record is then checked
against its own subject. Versions soft-deleted from the subject still count: records written
with them stay readable.

The ids of a subject are read from its document (one GetItem) and kept for
``staleness_ms``; an id not among them reads the subject again once (a schema registered a
moment ago is taken at once), and the same missing id again only after ``miss_interval_ms``,
so a stream of bad ids costs at most one read a second per subject, never one a record. A
permanently deleted version is refused once the staleness has passed.
"""

from __future__ import annotations

import struct
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from objectlog.errors import SchemaValidationFailed, UndecodableRecord
from objectlog.format.schema_ids import PREFIX_BYTES, framed_ids
from objectlog.format.topic_configs import RECORD_NAME_STRATEGY, TOPIC_NAME_STRATEGY
from objectlog.format.topics import (
    KEY_SCHEMA_VALIDATION,
    KEY_SUBJECT_STRATEGY,
    STRICT_SCHEMA_VALIDATION,
    VALUE_SCHEMA_VALIDATION,
    VALUE_SUBJECT_STRATEGY,
    Topic,
)
from objectlog.schemas import serde
from objectlog.schemas.record_names import RecordNames, RecordNameUnknown
from objectlog.schemas.settings import SubjectDocuments

VALUE_ID_HEADER, KEY_ID_HEADER = "__value_schema_id", "__key_schema_id"  # Confluent's
HEADER_MAGIC_BYTE = 1  # a schema id header: magic byte 1, then the schema's 16-byte guid
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
        names: RecordNames,
        now_ms: Callable[[], int],
        *,
        staleness_ms: int = STALENESS_MS,
        miss_interval_ms: int = MISS_INTERVAL_MS,
    ) -> None:
        self.subjects = subjects
        self.names = names
        self.now_ms = now_ms
        self.staleness_ms = staleness_ms
        self.miss_interval_ms = miss_interval_ms
        self._known: dict[str, _Known] = {}
        self._guids: dict[str, int] = {}
        self._missing_guids: dict[str, int] = {}  # guid -> when it was last not found
        self._lock = threading.Lock()

    def check(
        self,
        topic: Topic,
        keys: pa.Array | pa.ChunkedArray,
        values: pa.Array | pa.ChunkedArray,
        headers: pa.Array | pa.ChunkedArray | None = None,
    ) -> None:
        """Refuse the records (all of them: the caller's batch or request) if any breaks the
        topic's validation: SchemaValidationFailed naming the first and the positions of all."""
        refused: dict[int, str] = {}
        config = topic.config
        strict = config.get(STRICT_SCHEMA_VALIDATION) == "true"
        if config.get(VALUE_SCHEMA_VALIDATION) == "true":
            strategy = config.get(VALUE_SUBJECT_STRATEGY)
            carried = self._header_ids(VALUE_ID_HEADER, headers)
            found = self._refused(topic.name, "value", strategy, values, carried, strict)
            refused.update(found)
        if config.get(KEY_SCHEMA_VALIDATION) == "true":
            strategy = config.get(KEY_SUBJECT_STRATEGY)
            carried = self._header_ids(KEY_ID_HEADER, headers)
            found = self._refused(topic.name, "key", strategy, keys, carried, strict)
            for row, reason in found.items():
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
        self,
        topic: str,
        what: str,
        strategy: str,
        column: pa.Array | pa.ChunkedArray,
        carried: dict[int, tuple[int | None, bytes]],
        strict: bool = False,
    ) -> dict[int, str]:
        """Why each refused row is refused. carried: the rows whose schema id is in a header
        (None: a guid no schema has), with the header's bytes after the guid."""
        ids, framed, null = framed_ids(column)
        refused: dict[int, str] = {}
        for row, (schema_id, _) in carried.items():
            if schema_id is None:
                refused[row] = f"its {what}'s schema id header names a guid no schema has"
            else:
                ids[row], framed[row] = schema_id, True
        refused.update(
            (
                int(row),
                f"its {what} does not carry the Schema Registry's wire format (magic byte 0 and "
                "a 4-byte schema id, or a schema id header)",
            )
            for row in np.flatnonzero(~framed & ~null)
            if int(row) not in refused
        )
        rows = np.flatnonzero(framed)
        if strategy == TOPIC_NAME_STRATEGY:
            by_subject = {f"{topic}-{what}": rows} if len(rows) else {}
        else:
            by_subject = self._by_record_subject(
                topic, what, strategy, ids, rows, column, carried, refused
            )
        for subject, subject_rows in by_subject.items():
            known = self._ids(subject, set(np.unique(ids[subject_rows]).tolist()))
            for row in subject_rows[~np.isin(ids[subject_rows], list(known))]:
                refused[int(row)] = (
                    f"its {what}'s schema id {int(ids[row])} is not registered under "
                    f"subject {subject!r}"
                )
        if strict:
            self._undecodable(what, ids, rows, column, carried, refused)
        return refused

    def _undecodable(
        self,
        what: str,
        ids: np.ndarray,
        rows: np.ndarray,
        column: pa.Array | pa.ChunkedArray,
        carried: dict[int, tuple[int | None, bytes]],
        refused: dict[int, str],
    ) -> None:
        """Strict mode: each row its id checks decoded with its schema (schemas.serde.check);
        a record whose id is in a header is checked as if the id led its payload."""
        registry = self.names.registry
        for row in rows.tolist():
            if row in refused:
                continue
            data = column[row].as_py()
            if row in carried:
                data = struct.pack(">bI", 0, int(ids[row])) + carried[row][1] + data
            try:
                serde.check(registry, data)
            except UndecodableRecord as e:
                refused[row] = f"its {what} does not decode with its schema: {e.message}"

    def _by_record_subject(
        self,
        topic: str,
        what: str,
        strategy: str,
        ids: np.ndarray,
        rows: np.ndarray,
        column: pa.Array | pa.ChunkedArray,
        carried: dict[int, tuple[int | None, bytes]],
        refused: dict[int, str],
    ) -> dict[str, np.ndarray]:
        """The framed rows by the subject their record name gives (RecordNameStrategy: the
        name; TopicRecordNameStrategy: <topic>-<name>); a row without a name is refused."""
        grouped: dict[str, list[int]] = {}
        for row in rows.tolist():
            indexes = carried[row][1] if row in carried else column[row].as_py()[PREFIX_BYTES:]
            try:
                name = self.names.record_name(int(ids[row]), indexes)
            except RecordNameUnknown as e:
                refused[row] = f"its {what}: {e}"
                continue
            subject = name if strategy == RECORD_NAME_STRATEGY else f"{topic}-{name}"
            grouped.setdefault(subject, []).append(row)
        return {subject: np.array(found) for subject, found in grouped.items()}

    def _header_ids(
        self, name: str, headers: pa.Array | pa.ChunkedArray | None
    ) -> dict[int, tuple[int | None, bytes]]:
        """The rows with a schema id header (Confluent's __value_schema_id: magic byte 1, a
        16-byte guid, then a Protobuf record's message indexes): the id the guid names (None
        if none), and the bytes after the guid. Only rows that have headers are looked at."""
        if headers is None:
            return {}
        if isinstance(headers, pa.ChunkedArray):
            headers = headers.combine_chunks()
        lengths = pc.fill_null(pc.list_value_length(headers), 0).to_numpy(zero_copy_only=False)
        carried: dict[int, tuple[int | None, bytes]] = {}
        for row in np.flatnonzero(lengths).tolist():
            for key, value in ((h["key"], h["value"]) for h in headers[row].as_py()):
                if key == name and value and value[0] == HEADER_MAGIC_BYTE and len(value) >= 17:
                    guid = str(uuid.UUID(bytes=value[1:17]))
                    carried[row] = (self._id_of_guid(guid), value[17:])
        return carried

    def _id_of_guid(self, guid: str) -> int | None:
        """The id a guid names: kept once found (it never changes); a guid not found is read
        again only after the miss interval, so bad headers cost no read per record."""
        now = self.now_ms()
        with self._lock:
            if guid in self._guids:
                return self._guids[guid]
            missed = self._missing_guids.get(guid)
        if missed is not None and now - missed < self.miss_interval_ms:
            return None
        schema_id = self.names.registry.store.id_by_guid(guid)
        with self._lock:
            if schema_id is None:
                self._missing_guids[guid] = now
            else:
                self._guids[guid] = schema_id
        return schema_id

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
