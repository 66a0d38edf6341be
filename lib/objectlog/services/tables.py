"""Topics as Iceberg tables, zero copy (DESIGN.md section 11).

One table per topic lists exactly the topic's live L1 files: the compactor reconciles it
after every run, never before the index swap, by comparing the files the index references
with the files the table's current snapshot lists and committing the difference as one
snapshot (only additions: an append, which streaming readers follow; anything removed:
an overwrite). Reconciling is idempotent, so a crash between the swap and the table commit
heals on the next run, and a run that has nothing to merge still reconciles (the table trails
the log by at most two compaction intervals). In the same commit, snapshots older than the
delete grace period are expired; garbage collection keeps every file a retained snapshot
lists (retained_keys) and deletes table metadata nothing reaches.

The table is unpartitioned: each L1 file holds one partition and carries min/max statistics
for ``partition`` and ``topic``, so readers prune files by those metrics; files written before
the statistics existed are simply never pruned (and never mis-read, as a partitioned table
would mis-read them). A table knows its topic by the topic id in its properties: a deleted
topic's table is dropped, and a recreated topic gets a fresh table.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
    ValidationException,
)
from pyiceberg.io.pyarrow import parquet_file_to_data_file, schema_to_pyarrow
from pyiceberg.schema import Schema
from pyiceberg.table import Table, TableProperties
from pyiceberg.table.name_mapping import create_mapping_from_schema
from pyiceberg.table.update.snapshot import ExpireSnapshots
from pyiceberg.types import (
    BinaryType,
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)

from objectlog.clock import Clock
from objectlog.errors import StorageUnavailable
from objectlog.format.tables import FIELD_IDS, PROPERTY_TOPIC, PROPERTY_TOPIC_ID, table_name
from objectlog.format.topics import Topic
from objectlog.schemas.typed_values import DECODED, TYPED_COLUMNS, typed_schema

COMMIT_ATTEMPTS = 5
# When objectlog committed a snapshot, by its own (injected) clock: expiry and the delete grace
# period are measured on the same clock as the rest of compaction and GC.
COMMITTED_MS = "objectlog.committed-ms"
RETRY_BACKOFF_S = 0.05
IDS = FIELD_IDS
_PARTITION_IN_PATH = re.compile(r"/partition=(\d+)/")

SCHEMA = Schema(
    NestedField(IDS["key"], "key", BinaryType(), required=False),
    NestedField(IDS["value"], "value", BinaryType(), required=False),
    NestedField(IDS["topic"], "topic", StringType(), required=False),
    NestedField(IDS["partition"], "partition", IntegerType(), required=False),
    NestedField(IDS["offset"], "offset", LongType(), required=False),
    NestedField(IDS["timestamp"], "timestamp", TimestamptzType(), required=False),
    NestedField(IDS["timestampType"], "timestampType", IntegerType(), required=False),
    NestedField(
        IDS["headers"],
        "headers",
        ListType(
            IDS["headers.element"],
            StructType(
                NestedField(IDS["headers.element.key"], "key", StringType(), required=False),
                NestedField(IDS["headers.element.value"], "value", BinaryType(), required=False),
            ),
            element_required=False,
        ),
        required=False,
    ),
)

# Replacing files after another writer appended must not fail the run: both read snapshots
# (FACTS.md: a replace after another writer's append fails otherwise).
# Metrics (min/max in the manifests) for the columns L1 files keep statistics for, none for the
# rest: readers prune files by partition, topic, offset and time, and keys and values stay out
# of the manifests.
PRUNED_BY = ("topic", "partition", "offset", "timestamp")
TABLE_PROPERTIES = {
    "write.delete.isolation-level": "snapshot",
    "write.update.isolation-level": "snapshot",
    TableProperties.DEFAULT_NAME_MAPPING: create_mapping_from_schema(SCHEMA).model_dump_json(),
    "write.metadata.metrics.default": "none",
    **{f"write.metadata.metrics.column.{column}": "full" for column in PRUNED_BY},
}


@dataclass(frozen=True)
class TableReport:
    """What one reconcile did to a topic's table."""

    topic: str
    table: str  # namespace.name
    added: int = 0
    removed: int = 0
    created: bool = False
    snapshot_id: int | None = None
    expired: int = 0


@dataclass(frozen=True)
class TableState:
    """A topic's table beside its log: what `objectlog topics describe` shows."""

    table: str
    snapshot_id: int | None
    snapshot_ms: int | None
    files: int
    missing: int  # live L1 files the table does not list yet
    stale: int  # files the table lists that the index no longer references
    offsets_behind: int  # offsets the log has past the table's last one, summed over partitions

    @property
    def lag_files(self) -> int:
        return self.missing + self.stale


class Tables:
    """The topics' tables in one catalog namespace (the compactor's, and readers')."""

    def __init__(
        self,
        catalog: Any,
        namespace: str,
        warehouse: str,
        clock: Clock,
        retain_ms: int,
    ) -> None:
        self.catalog = catalog
        self.namespace = namespace
        self.warehouse = warehouse.rstrip("/") + "/"
        self.clock = clock
        self.retain_ms = retain_ms
        self._namespace_ready = False
        self._typed_seen: dict[str, dict[str, pa.Field]] = {}  # topic id -> typed columns

    def identifier(self, topic: str) -> tuple[str, str]:
        return (self.namespace, table_name(topic))

    def load(self, topic: Topic) -> Table | None:
        """The topic's table, if it has one for this topic id."""
        try:
            table = self.catalog.load_table(self.identifier(topic.name))
        except NoSuchTableError:
            return None
        if table.properties.get(PROPERTY_TOPIC_ID) != topic.topic_id:
            return None
        return table

    def typed_columns(
        self, topic: Topic, widen: Callable[[pa.DataType | None], pa.DataType | None]
    ) -> list[pa.Field]:
        """The typed columns (schemas.typed_values.TYPED_COLUMNS) as the topic's table holds
        them, with their field ids, after evolving the table to widen's type for
        value_decoded (given the one it holds now, None if none yet; widen gives None while
        no schema has given one, and the column waits). Columns are only ever added or widened
        (Iceberg's schema evolution), so field ids stay, and what this process last saw of a
        table is used again while widen needs no more: a table another compactor widened
        meanwhile still reads files written to the narrower type. A concurrent evolution makes
        this one load the table and widen again."""
        seen = self._typed_seen.get(topic.topic_id)
        if seen is not None:
            fields, _ = _typed_fields(seen, widen)
            if fields is not None:
                return fields
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            table, _ = self._table(topic)
            held = _arrow_fields(table.schema())
            fields, wanted = _typed_fields(held, widen)
            if fields is not None:
                self._typed_seen[topic.topic_id] = {f.name: f for f in fields}
                return fields
            try:
                with table.update_schema() as update:
                    update.union_by_name(typed_schema(wanted))
            except (CommitFailedException, ValidationException):
                if attempt == COMMIT_ATTEMPTS:
                    raise StorageUnavailable(
                        f"table of topic {topic.name!r}: {COMMIT_ATTEMPTS} schema updates lost "
                        "a race"
                    ) from None
                time.sleep(RETRY_BACKOFF_S * 2**attempt)
        raise AssertionError("unreachable")

    def reconcile(self, topic: Topic, live: Sequence[str]) -> TableReport:
        """Make the table list exactly the live files (URIs), in one snapshot."""
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            try:
                return self._reconcile_once(topic, live)
            except (CommitFailedException, ValidationException, TableAlreadyExistsError):
                if attempt == COMMIT_ATTEMPTS:
                    raise StorageUnavailable(
                        f"table of topic {topic.name!r}: {COMMIT_ATTEMPTS} commits lost a race"
                    ) from None
                time.sleep(RETRY_BACKOFF_S * 2**attempt)
        raise AssertionError("unreachable")

    def state(
        self, topic: Topic, live: Sequence[str], log_ends: Mapping[int, tuple[int, int]]
    ) -> TableState | None:
        """The table beside the log: live files (URIs) and, per partition, the log's
        (log start, high watermark)."""
        table = self.load(topic)
        if table is None:
            return None
        listed = _data_files(table)
        snapshot = table.current_snapshot()
        table_ends = _table_ends(listed.values())
        return TableState(
            table=".".join(self.identifier(topic.name)),
            snapshot_id=snapshot.snapshot_id if snapshot else None,
            snapshot_ms=snapshot.timestamp_ms if snapshot else None,
            files=len(listed),
            missing=len(set(live) - set(listed)),
            stale=len(set(listed) - set(live)),
            offsets_behind=sum(
                max(0, high - max(start, table_ends.get(partition, 0)))
                for partition, (start, high) in log_ends.items()
            ),
        )

    def drop_stale(self, topics: Mapping[str, Topic]) -> list[str]:
        """Drop the tables of deleted topics (or of a previous topic of the same name)."""
        dropped = []
        for identifier in self._objectlog_tables():
            table = self.catalog.load_table(identifier)
            topic = topics.get(table.properties.get(PROPERTY_TOPIC, ""))
            if topic is None or table.properties.get(PROPERTY_TOPIC_ID) != topic.topic_id:
                self.catalog.drop_table(identifier)
                dropped.append(".".join(identifier))
        return dropped

    def retained_keys(self) -> set[str]:
        """Every object the tables still reach (URIs): data files of retained snapshots, their
        manifest lists and manifests, and the current and logged metadata files."""
        keys: set[str] = set()
        for identifier in self._objectlog_tables():
            table = self.catalog.load_table(identifier)
            keys.add(table.metadata_location)
            keys.update(entry.metadata_file for entry in table.metadata.metadata_log)
            for snapshot in table.metadata.snapshots:
                keys.add(snapshot.manifest_list)
                for manifest in snapshot.manifests(table.io):
                    keys.add(manifest.manifest_path)
                    for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
                        keys.add(entry.data_file.file_path)
        return keys

    # ---- internals --------------------------------------------------------------------

    def _reconcile_once(self, topic: Topic, live: Sequence[str]) -> TableReport:
        table, created = self._table(topic)
        listed = _data_files(table)
        added = [path for path in live if path not in listed]
        removed = [listed[path] for path in listed if path not in set(live)]
        now_ms = self.clock.now_ms()
        with table.transaction() as tx:
            if added or removed:
                update = tx.update_snapshot(
                    snapshot_properties={
                        PROPERTY_TOPIC_ID: topic.topic_id,
                        COMMITTED_MS: str(now_ms),
                    }
                )
                producer = update.overwrite() if removed else update.fast_append()
                with producer as snapshot:
                    for data_file in removed:
                        snapshot.delete_data_file(data_file)
                    for path in added:
                        snapshot.append_data_file(
                            parquet_file_to_data_file(table.io, tx.table_metadata, path)
                        )
            expired = _expire(tx, now_ms - self.retain_ms)
        current = table.refresh().current_snapshot()
        return TableReport(
            topic=topic.name,
            table=".".join(self.identifier(topic.name)),
            added=len(added),
            removed=len(removed),
            created=created,
            snapshot_id=current.snapshot_id if current else None,
            expired=expired,
        )

    def _table(self, topic: Topic) -> tuple[Table, bool]:
        identifier = self.identifier(topic.name)
        try:
            table = self.catalog.load_table(identifier)
            if table.properties.get(PROPERTY_TOPIC_ID) == topic.topic_id:
                return table, False
            self.catalog.drop_table(identifier)  # the table of a deleted topic of that name
        except NoSuchTableError:
            pass
        self._ensure_namespace()
        table = self.catalog.create_table(
            identifier,
            schema=SCHEMA,
            location=f"{self.warehouse}{identifier[1]}-{topic.topic_id.lower()}",
            properties={
                **TABLE_PROPERTIES,
                PROPERTY_TOPIC: topic.name,
                PROPERTY_TOPIC_ID: topic.topic_id,
            },
        )
        return table, True

    def _ensure_namespace(self) -> None:
        """Create the namespace unless it exists (on AWS Terraform made the Glue database, and
        the compact role may not create one)."""
        if self._namespace_ready:
            return
        try:
            self.catalog.load_namespace_properties(self.namespace)
        except NoSuchNamespaceError:
            with contextlib.suppress(NamespaceAlreadyExistsError):
                self.catalog.create_namespace(self.namespace)
        self._namespace_ready = True

    def _objectlog_tables(self) -> Iterable[tuple[str, str]]:
        try:
            identifiers = self.catalog.list_tables(self.namespace)
        except NoSuchNamespaceError:  # no table was ever created
            return []
        found = []
        for identifier in identifiers:
            table = self.catalog.load_table(identifier)
            if PROPERTY_TOPIC_ID in table.properties:
                found.append(tuple(identifier))
        return found


def _typed_fields(
    held: Mapping[str, pa.Field], widen: Callable[[pa.DataType | None], pa.DataType | None]
) -> tuple[list[pa.Field] | None, pa.DataType | None]:
    """(the typed columns held, if they take what widen wants; what it wants)."""
    current = held[DECODED].type if DECODED in held else None
    wanted = widen(current)
    names = [name for name in TYPED_COLUMNS if name != DECODED or wanted is not None]
    if wanted == current and all(name in held for name in names):
        return [held[name] for name in names], wanted
    return None, wanted


def _arrow_fields(schema: Schema) -> dict[str, pa.Field]:
    """The table's columns as Arrow fields carrying their field ids (PARQUET:field_id), in
    the plain (not large) types L1 files are written with."""
    return {f.name: f.with_type(_plain(f.type)) for f in schema_to_pyarrow(schema)}


def _plain(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_large_string(kind):
        return pa.string()
    if pa.types.is_large_binary(kind):
        return pa.binary()
    if pa.types.is_large_list(kind) or pa.types.is_list(kind):
        return pa.list_(kind.value_field.with_type(_plain(kind.value_type)))
    if pa.types.is_map(kind):
        return pa.map_(
            kind.key_field.with_type(_plain(kind.key_type)),
            kind.item_field.with_type(_plain(kind.item_type)),
        )
    if pa.types.is_struct(kind):
        return pa.struct([f.with_type(_plain(f.type)) for f in kind])
    return kind


def _data_files(table: Table) -> dict[str, Any]:
    """The current snapshot's data files by path."""
    if table.current_snapshot() is None:
        return {}
    return {task.file.file_path: task.file for task in table.scan().plan_files()}


def _table_ends(files: Iterable[Any]) -> dict[int, int]:
    """Per partition, the offset after the last one the table's files hold (from the files'
    offset upper bounds; the partition from the L1 path, which files without statistics have)."""
    ends: dict[int, int] = {}
    for data_file in files:
        found = _PARTITION_IN_PATH.search(data_file.file_path)
        upper = (data_file.upper_bounds or {}).get(IDS["offset"])
        if found is None or upper is None:
            continue
        partition = int(found.group(1))
        end = int.from_bytes(upper, "little", signed=True) + 1
        ends[partition] = max(ends.get(partition, 0), end)
    return ends


def _expire(tx: Any, before_ms: int) -> int:
    """Expire (within tx) the snapshots committed before before_ms, the current one excepted."""
    metadata = tx.table_metadata
    current = metadata.current_snapshot_id
    doomed = [
        s.snapshot_id
        for s in metadata.snapshots
        if s.snapshot_id != current and _committed_ms(s) < before_ms
    ]
    if doomed:
        ExpireSnapshots(transaction=tx).by_ids(doomed).commit()
    return len(doomed)


def _committed_ms(snapshot: Any) -> int:
    stamp = snapshot.summary[COMMITTED_MS] if snapshot.summary is not None else None
    return int(stamp) if stamp is not None else int(snapshot.timestamp_ms)
