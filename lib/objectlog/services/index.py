"""Reads and grows the segment index: the head's tail plus immutable manifests on S3."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator

from objectlog.cache import LruCache
from objectlog.clock import Clock, new_ulid
from objectlog.format.index import (
    LEVEL_L1,
    Manifest,
    ManifestEntry,
    ManifestList,
    PlacedRef,
    Retired,
    place,
)
from objectlog.format.layout import manifest_key, manifest_list_key, object_key
from objectlog.stores.metadata import MetadataStore, PartitionHead
from objectlog.stores.objects import ObjectStore

# A head holds at most TAIL_MAX refs before whoever notices spills all but TAIL_KEEP of them.
TAIL_MAX = 16
TAIL_KEEP = 2
# The newest manifest, held in the manifest list, absorbs spills until it would pass this many
# refs; then it is written as a manifest object of its own and a new one starts.
MANIFEST_MAX_REFS = 512
# Producer state kept in a head: at most this many producers, none unused for longer.
PRODUCER_CAP = 24
PRODUCER_EXPIRY_S = 24 * 3600
# Replaced index and data objects stay readable this long (Kafka's file.delete.delay.ms).
DEFAULT_DELETE_GRACE_MS = 60_000


class IndexStore:
    def __init__(
        self,
        store: ObjectStore,
        metadata: MetadataStore,
        prefix: str,
        clock: Clock,
        delete_grace_ms: int = DEFAULT_DELETE_GRACE_MS,
    ) -> None:
        self.store = store
        self.metadata = metadata
        self.prefix = prefix
        self.clock = clock
        self.delete_grace_ms = delete_grace_ms
        self._lists: LruCache[str, ManifestList] = LruCache(256)
        self._manifests: LruCache[str, Manifest] = LruCache(1024)
        self._placed: LruCache[str, tuple[tuple[PlacedRef, ...], list[int]]] = LruCache(256)
        self.spills = 0

    def manifest_list(self, key: str) -> ManifestList:
        return self._lists.get_or_load(key, lambda: ManifestList.from_json(self.store.get(key)))

    def manifest(self, key: str) -> Manifest:
        return self._manifests.get_or_load(key, lambda: Manifest.from_json(self.store.get(key)))

    def manifest_of(self, entry: ManifestEntry) -> Manifest:
        """The manifest an entry summarizes: held inline, or read from its object."""
        return entry.manifest or self.manifest(entry.key)

    def _placed_manifest(
        self, list_key: str, entry: ManifestEntry
    ) -> tuple[tuple[PlacedRef, ...], list[int]]:
        """A manifest's refs with their offsets, and their end offsets for bisecting."""

        def load() -> tuple[tuple[PlacedRef, ...], list[int]]:
            placed = tuple(self.manifest_of(entry).placed())
            return placed, [p.end_offset for p in placed]

        # Lists and manifests are immutable, so an inline manifest is named by its list.
        return self._placed.get_or_load(entry.key or f"{list_key}#inline", load)

    def placed_refs(self, head: PartitionHead, from_offset: int) -> Iterator[PlacedRef]:
        """Refs covering from_offset onwards, in offset order: manifests first, then the tail."""
        if from_offset < head.tail_base and head.manifest_list:
            for entry in self.manifest_list(head.manifest_list).covering(from_offset):
                placed_refs, ends = self._placed_manifest(head.manifest_list, entry)
                for placed in placed_refs[bisect.bisect_right(ends, from_offset) :]:
                    if placed.base_offset >= head.tail_base:
                        break
                    yield placed
        for placed in place(head.tail_base, head.tail):
            if placed.end_offset > from_offset:
                yield placed

    def all_placed_refs(self, head: PartitionHead) -> Iterator[PlacedRef]:
        return self.placed_refs(head, head.log_start_offset)

    def live_l1_keys(self, heads: Iterable[PartitionHead]) -> list[str]:
        """The L1 files the heads' index references now, partition by partition in offset
        order: what spark.read.parquet and the topic's Iceberg table should see."""
        keys: dict[str, None] = {}
        for head in sorted(heads, key=lambda h: h.partition):
            for placed in self.all_placed_refs(head):
                if placed.ref.level == LEVEL_L1:
                    keys.setdefault(object_key(self.prefix, LEVEL_L1, placed.ref.object_id))
        return list(keys)

    def needs_spill(self, head: PartitionHead) -> bool:
        return len(head.tail) > TAIL_MAX

    def spill(self, head: PartitionHead, keep: int = TAIL_KEEP) -> bool:
        """Move all but the newest keep tail refs into the index; False if we lost a race.

        The moved refs join the list's inline manifest (one new object: the list), which is
        written out as a manifest object of its own once it would pass MANIFEST_MAX_REFS.
        """
        moved = head.tail[: max(0, len(head.tail) - keep)]
        if not moved:
            return False
        created = self.clock.now_ms()  # no later than the objects written below (GC horizon)
        previous = self.manifest_list(head.manifest_list) if head.manifest_list else None
        entries = list(previous.entries) if previous else []
        open_manifest = Manifest(head.tail_base, tuple(moved))
        last = entries[-1].manifest if entries else None
        if last is not None:  # the inline manifest: grow it, or write it out and start anew
            entries.pop()
            if last.end_offset == head.tail_base and len(last.refs) + len(moved) <= (
                MANIFEST_MAX_REFS
            ):
                open_manifest = Manifest(last.base_offset, last.refs + tuple(moved))
            else:
                key = self.put_manifest(head.topic_id, head.partition, last)
                entries.append(ManifestEntry.summarize(key, last))
        entries.append(ManifestEntry.holding(open_manifest))
        retired = [head.manifest_list] if head.manifest_list else []
        lkey = self.put_manifest_list(
            head.topic_id, head.partition, entries, self.retiring(previous, retired)
        )
        done = self.metadata.spill(
            head.topic,
            head.partition,
            expected_epoch=head.index_epoch,
            refs_removed=len(moved),
            span_removed=sum(ref.span for ref in moved),
            manifest_list=lkey,
            object_time_ms=created,
            expired_producers=self.expired_producers(head),
        )
        self.spills += int(done)
        return done

    def put_manifest(self, topic_id: str, partition: int, manifest: Manifest) -> str:
        key = manifest_key(self.prefix, topic_id, partition, new_ulid(self.clock))
        self.store.put_if_absent(key, manifest.to_json())
        self._manifests.put(key, manifest)
        return key

    def put_manifest_list(
        self,
        topic_id: str,
        partition: int,
        entries: list[ManifestEntry],
        retired: tuple[Retired, ...],
    ) -> str:
        listing = ManifestList(tuple(entries), retired)
        key = manifest_list_key(self.prefix, topic_id, partition, new_ulid(self.clock))
        self.store.put_if_absent(key, listing.to_json())
        self._lists.put(key, listing)
        return key

    def retiring(self, previous: ManifestList | None, keys: list[str]) -> tuple[Retired, ...]:
        """What a new manifest list carries as retired: previous's still in grace, plus keys."""
        return (previous or ManifestList(())).retiring(
            keys, self.clock.now_ms(), self.delete_grace_ms
        )

    def expired_producers(self, head: PartitionHead) -> list[str]:
        now_s = self.clock.now_ms() // 1000
        by_age = sorted(head.producers.items(), key=lambda item: item[1].last_use_s, reverse=True)
        return [
            pid
            for rank, (pid, state) in enumerate(by_age)
            if rank >= PRODUCER_CAP or state.last_use_s < now_s - PRODUCER_EXPIRY_S
        ]
