"""Garbage collection: delete objects no index references, never one a reader or a paused
writer may still need (DESIGN.md sections 4.7 and 7).

1. Raise the GC horizon on every partition head to ``now - min_age_ms``. From then on no
   commit, spill or compaction swap can make the index point at an object written at or
   before the horizon: each of those writes is conditional on ``gch`` being older than its
   objects, so a writer paused past the horizon fails and writes new objects instead.
2. Read every head and the manifests it points at: the referenced set is every object a ref
   names, every object holding a manifest or manifest list in use (its own, or the L0 object
   that carried it: format/layout.py), and every object a manifest list retired
   less than ``delete_grace_ms`` ago (so a reader that resolved the old index a moment ago can
   still read it).
3. List the bucket's objectlog prefixes and delete what is not referenced and was written (by
   the ULID in its name) at or before the horizon.

With topics' Iceberg tables (services/tables.py), every file a retained snapshot lists counts
as referenced too (a reader time-travelling to it still finds its data), and table metadata
no table reaches any more (files of expired snapshots, replaced metadata) is deleted once it
is older than the horizon; its names carry no ULID, so its age is its last-modified time.

Invariant 7 follows: after a run, every object is referenced by the index, or is newer than
the GC horizon.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from objectlog.clock import Clock
from objectlog.format.layout import (
    INDEX_DIR,
    L0_DIR,
    TABLES_DIR,
    TOPICS_DIR,
    location_key,
    object_keys,
    object_time_ms,
)
from objectlog.services.index import IndexStore
from objectlog.stores.metadata import MetadataStore, PartitionHead
from objectlog.stores.objects import ObjectInfo, ObjectStore

DEFAULT_MIN_AGE_MS = 60 * 60_000  # past any producer's PUT-to-commit pause, or a sink's batch


@dataclass
class GcReport:
    horizon_ms: int
    dry_run: bool
    referenced: int = 0
    scanned: int = 0
    deleted: list[str] = field(default_factory=list)
    deleted_bytes: int = 0


class GarbageCollector:
    def __init__(
        self,
        store: ObjectStore,
        metadata: MetadataStore,
        index: IndexStore,
        prefix: str,
        clock: Clock,
        min_age_ms: int = DEFAULT_MIN_AGE_MS,
        tables: RetainedFiles | None = None,
    ) -> None:
        self.store = store
        self.metadata = metadata
        self.index = index
        self.prefix = prefix
        self.clock = clock
        self.min_age_ms = min_age_ms
        self.tables = tables

    def run(self, *, dry_run: bool = False) -> GcReport:
        now = self.clock.now_ms()
        report = GcReport(horizon_ms=now - self.min_age_ms, dry_run=dry_run)
        heads = self._heads()
        if not dry_run:
            for head in heads:
                self.metadata.raise_gc_horizon(head.topic, head.partition, report.horizon_ms)
            heads = self._heads()  # read after the horizon rose: see step 2
        referenced = self.referenced(heads, now)
        report.referenced = len(referenced)
        objects = list(self._objects())
        report.scanned = len(objects)
        doomed = _unreferenced_before(objects, referenced, report.horizon_ms, self._table_dir)
        report.deleted = [info.key for info in doomed]
        report.deleted_bytes = sum(info.size for info in doomed)
        if doomed and not dry_run:
            self.store.delete_many(report.deleted)
        return report

    def stale_objects(self, horizon_ms: int) -> list[str]:
        """Objects no index references (nor retired within grace) written at or before
        horizon_ms: after a collection with that horizon, none (invariant 7). The grace is
        judged at that collection's time (its horizon + min_age_ms), as it judged it: an
        object it kept because its retirement was within grace must not count as stale
        because the grace ran out since (seen once in a verify run on LocalStack)."""
        referenced = self.referenced(self._heads(), horizon_ms + self.min_age_ms)
        stale = _unreferenced_before(self._objects(), referenced, horizon_ms, self._table_dir)
        return [info.key for info in stale]

    def referenced(self, heads: Iterable[PartitionHead], now_ms: int) -> set[str]:
        """Every object key the index needs now, or retired within the grace period."""
        keys: set[str] = set()
        grace_start = now_ms - self.index.delete_grace_ms
        for head in heads:
            keys.update(object_keys(self.prefix, head.tail))
            if not head.manifest_list:
                continue
            keys.add(location_key(head.manifest_list))
            listing = self.index.manifest_list(head.manifest_list)
            keys.update(r.key for r in listing.retired if r.at_ms > grace_start)
            for entry in listing.entries:
                if entry.key:  # not an inline manifest
                    keys.add(location_key(entry.key))
                manifest = self.index.manifest_of(entry)
                keys.update(object_keys(self.prefix, manifest.refs))
        if self.tables is not None:
            keys.update(_bucket_key(uri) for uri in self.tables.retained_keys())
        return keys

    @property
    def _table_dir(self) -> str:
        return self.prefix + TABLES_DIR

    def _heads(self) -> list[PartitionHead]:
        names = self.metadata.registered_names()
        heads: list[PartitionHead] = []
        for name, topic in sorted(self.metadata.get_topics(names).items()):
            heads += self.metadata.get_heads(name, range(topic.partitions)).values()
        return heads

    def _objects(self) -> Iterator[ObjectInfo]:
        directories = [L0_DIR, INDEX_DIR, TOPICS_DIR]
        if self.tables is not None:
            directories.append(TABLES_DIR)
        for directory in directories:
            yield from self.store.list(self.prefix + directory)


class RetainedFiles(Protocol):
    def retained_keys(self) -> set[str]:
        """URIs of every object the topics' tables still reach."""
        ...


def _bucket_key(uri: str) -> str:
    """s3://bucket/key -> key."""
    return uri.split("://", 1)[-1].split("/", 1)[-1]


def _unreferenced_before(
    objects: Iterable[ObjectInfo], referenced: set[str], horizon_ms: int, table_dir: str
) -> list[ObjectInfo]:
    """The objects not referenced and written (by their name's ULID; table metadata by its
    last-modified time) at or before horizon_ms; any other object whose name has no ULID is
    not objectlog's and is never deleted."""
    doomed = []
    for info in objects:
        written = object_time_ms(info.key)
        if written is None and info.key.startswith(table_dir):
            written = info.last_modified_ms
        if info.key not in referenced and written is not None and written <= horizon_ms:
            doomed.append(info)
    return doomed
