"""Reads and grows the segment index: the head's tail plus immutable manifests on S3.

A spill moves the oldest tail refs into the index. Whoever notices a head past TAIL_MAX spills
it on its own (one manifest-list PUT, one UpdateItem). A writer that knows a head is getting
close (its last commit's answer) carries the spill instead: the new manifest list (and a full
manifest written out) travel at the end of its next flush's L0 object, and that flush's commit
to the partition moves the refs in the same UpdateItem, so a spill costs no request of its own.
"""

from __future__ import annotations

import bisect
import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from objectlog.cache import LruCache
from objectlog.clock import Clock, new_ulid
from objectlog.concurrency import Workers
from objectlog.errors import ObjectLogError
from objectlog.format.index import (
    LEVEL_L1,
    Manifest,
    ManifestEntry,
    ManifestList,
    PlacedRef,
    Retired,
    SegmentRef,
    place,
)
from objectlog.format.layout import (
    carried_location,
    location_key,
    manifest_key,
    manifest_list_key,
    object_key,
    parse_location,
)
from objectlog.stores.metadata import CarriedSpill, MetadataStore, PartitionHead
from objectlog.stores.objects import ObjectStore

# A head holds at most TAIL_MAX refs before whoever notices spills all but TAIL_KEEP of them.
TAIL_MAX = 16
TAIL_KEEP = 2
# A writer carries a spill in its next flush once a head it knows holds this many refs, or is
# this large: a commit writing a head past 1 KiB costs two write units, and the carried spill
# lands a commit or two later (a ref is about 64 bytes).
CARRY_AT_REFS = 8
REF_BYTES = 64
CARRY_AT_BYTES = 1024 - 4 * REF_BYTES
# The newest manifest, held in the manifest list, absorbs spills until it would pass this many
# refs; then it is written as a manifest object of its own and a new one starts.
MANIFEST_MAX_REFS = 512
# Producer state kept in a head: at most this many producers, none unused for longer.
PRODUCER_CAP = 24
PRODUCER_EXPIRY_S = 24 * 3600
# A spill removes at most this many producers' state (the least recently used first): each is
# four REMOVE paths in the spill's (or the carrying commit's) UpdateExpression, which must stay
# well inside DynamoDB's 4 KB expression limit (and moto's parser, which fails past about 150
# paths). Many producers joining at once are expired over several spills.
EXPIRED_PER_SPILL = 8
# Replaced index and data objects stay readable this long (Kafka's file.delete.delay.ms).
DEFAULT_DELETE_GRACE_MS = 60_000
PRELOAD_THREADS = 8  # index objects read at once by preload()


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
        self._preload_pool: Workers | None = None
        self.spills = 0

    def close(self) -> None:
        if self._preload_pool is not None:
            self._preload_pool.shutdown(wait=False, cancel_futures=True)
            self._preload_pool = None

    def preload(self, starts: Sequence[tuple[PartitionHead, int]]) -> None:
        """Read at once the index objects that planning from each (head, offset) reads first
        and finds uncached: the manifest lists, then the manifest each offset falls in. A fetch
        of several partitions from cold caches then waits for two rounds of GETs instead of
        two GETs per partition one after another. Errors are left for the plan to meet."""
        indexed = [(head, offset) for head, offset in starts if offset < head.tail_base]
        lists = {head.manifest_list for head, _ in indexed if head.manifest_list}
        self._load_at_once(self.manifest_list, [k for k in lists if self._lists.get(k) is None])
        manifests = set()
        for head, offset in indexed:
            listing = self._lists.get(head.manifest_list) if head.manifest_list else None
            entry = next(listing.covering(offset), None) if listing else None
            if entry is not None and entry.manifest is None:
                manifests.add(entry.key)
        self._load_at_once(self.manifest, [k for k in manifests if self._manifests.get(k) is None])

    def _load_at_once(self, load: Callable[[str], object], locations: list[str]) -> None:
        if len(locations) < 2:
            return  # one GET gains nothing from a thread: the plan reads it
        if self._preload_pool is None:
            self._preload_pool = Workers(PRELOAD_THREADS, thread_name_prefix="objectlog-index")
        for future in [self._preload_pool.submit(load, location) for location in locations]:
            with contextlib.suppress(ObjectLogError):
                future.result()

    def manifest_list(self, location: str) -> ManifestList:
        return self._lists.get_or_load(
            location, lambda: ManifestList.from_json(self._read(location))
        )

    def manifest(self, location: str) -> Manifest:
        return self._manifests.get_or_load(
            location, lambda: Manifest.from_json(self._read(location))
        )

    def _read(self, location: str) -> bytes:
        key, start, length = parse_location(location)
        if start is None or length is None:
            return self.store.get(key)
        return self.store.get_range(key, start, length)

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

    def extent(self, head: PartitionHead) -> tuple[int, int]:
        """How many refs the head's index holds and their bytes, from the tail and the
        manifest list's summaries (one cached read): a topic description's segments and
        bytes, which no commit counts."""
        refs, size = len(head.tail), sum(ref.length for ref in head.tail)
        if head.manifest_list:
            for entry in self.manifest_list(head.manifest_list).entries:
                refs += entry.refs
                size += entry.bytes
        return refs, size

    def needs_spill(self, head: PartitionHead) -> bool:
        return len(head.tail) > TAIL_MAX

    def should_carry_spill(self, head: PartitionHead) -> bool:
        """Whether a writer that knows this head should carry a spill in its next flush: its
        tail holds CARRY_AT_REFS refs, or the head is large and the spill would save the next
        commit a write unit (a head made large by its producers' state, which a spill does
        not move, would otherwise carry a spill in every commit)."""
        movable = len(head.tail) - TAIL_KEEP
        if movable <= 0:
            return False
        if len(head.tail) >= CARRY_AT_REFS:
            return True
        if head.item_bytes < CARRY_AT_BYTES:
            return False
        written = head.item_bytes + REF_BYTES  # the next commit adds a ref
        return _write_units(written - movable * REF_BYTES) < _write_units(written)

    def plan_spill(self, head: PartitionHead, keep: int = TAIL_KEEP) -> SpillPlan | None:
        """The spill of all but the newest keep tail refs, worked out from head (None if
        nothing would move). The moved refs join the list's inline manifest, which is written
        out as a manifest of its own once it would pass MANIFEST_MAX_REFS."""
        moved = head.tail[: max(0, len(head.tail) - keep)]
        if not moved:
            return None
        previous = self.manifest_list(head.manifest_list) if head.manifest_list else None
        entries = list(previous.entries) if previous else []
        opened = Manifest(head.tail_base, tuple(moved))
        closed = None
        last = entries[-1].manifest if entries else None
        if last is not None:  # the inline manifest: grow it, or write it out and start anew
            entries.pop()
            if last.end_offset == head.tail_base and len(last.refs) + len(moved) <= (
                MANIFEST_MAX_REFS
            ):
                opened = Manifest(last.base_offset, last.refs + tuple(moved))
            else:
                closed = last
        retired = [location_key(head.manifest_list)] if head.manifest_list else []
        return SpillPlan(
            head, tuple(moved), tuple(entries), closed, opened, self.retiring(previous, retired)
        )

    def spill(self, head: PartitionHead, keep: int = TAIL_KEEP) -> bool:
        """Move all but the newest keep tail refs into the index on its own: the list (and a
        full manifest) as objects of their own, then one UpdateItem; False if we lost a race."""
        created = self.clock.now_ms()  # no later than the objects written below (GC horizon)
        plan = self.plan_spill(head, keep)
        if plan is None:
            return False
        closed = None
        if plan.closed is not None:
            closed = self.put_manifest(head.topic_id, head.partition, plan.closed)
        listing = plan.listing(closed)
        lkey = self.put_manifest_list(
            head.topic_id, head.partition, list(listing.entries), listing.retired
        )
        done = self.metadata.spill(
            head.topic,
            head.partition,
            expected_epoch=head.index_epoch,
            refs_removed=len(plan.moved),
            span_removed=plan.span,
            manifest_list=lkey,
            object_time_ms=created,
            expired_producers=self.expired_producers(head),
        )
        self.spills += int(done)
        return done

    def carry(self, plan: SpillPlan, key: str, start: int) -> tuple[bytes, str]:
        """The bytes a flush's object carries at start for this spill (a full manifest, then
        the manifest list), and the list's location; cached, so this writer never reads them."""
        blob, closed = b"", None
        if plan.closed is not None:
            blob = plan.closed.to_json()
            closed = carried_location(key, start, len(blob))
            self._manifests.put(closed, plan.closed)
        listing = plan.listing(closed)
        data = listing.to_json()
        location = carried_location(key, start + len(blob), len(data))
        self._lists.put(location, listing)
        return blob + data, location

    def carried(
        self, plan: SpillPlan, location: str, now: PartitionHead, producer_id: str | None
    ) -> CarriedSpill | None:
        """What a commit tells the head for a carried spill, if now (the newest head the
        writer knows) is the plan's head with refs appended since; None if it changed."""
        planned = plan.head
        if (
            now.index_epoch != planned.index_epoch
            or now.manifest_list != planned.manifest_list
            or now.tail[: len(plan.moved)] != plan.moved
        ):
            return None
        expired = tuple(p for p in self.expired_producers(now) if p != producer_id)
        return CarriedSpill(
            index_epoch=now.index_epoch,
            tail_length=len(now.tail),
            tail=now.tail[len(plan.moved) :],
            span_removed=plan.span,
            manifest_list=location,
            expired_producers=expired,
        )

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
        """The producers a spill of head removes: beyond PRODUCER_CAP or unused for longer
        than PRODUCER_EXPIRY_S, the least recently used first, at most EXPIRED_PER_SPILL."""
        now_s = self.clock.now_ms() // 1000
        by_age = sorted(head.producers.items(), key=lambda item: item[1].last_use_s, reverse=True)
        expired = [
            pid
            for rank, (pid, state) in enumerate(by_age)
            if rank >= PRODUCER_CAP or state.last_use_s < now_s - PRODUCER_EXPIRY_S
        ]
        return expired[::-1][:EXPIRED_PER_SPILL]


@dataclass(frozen=True)
class SpillPlan:
    """A spill worked out from one head: the refs it moves, the list entries that stay, the
    inline manifest written out when full (closed), and the new inline manifest (opened)."""

    head: PartitionHead
    moved: tuple[SegmentRef, ...]
    kept: tuple[ManifestEntry, ...]
    closed: Manifest | None
    opened: Manifest
    retired: tuple[Retired, ...]

    @property
    def span(self) -> int:
        return sum(ref.span for ref in self.moved)

    def listing(self, closed_location: str | None) -> ManifestList:
        """The new manifest list, given where the closed manifest was written."""
        entries = list(self.kept)
        if self.closed is not None:
            assert closed_location is not None
            entries.append(ManifestEntry.summarize(closed_location, self.closed))
        return ManifestList((*entries, ManifestEntry.holding(self.opened)), self.retired)


def _write_units(item_bytes: int) -> int:
    """DynamoDB's write units for writing an item this large: one per KiB started."""
    return -(-item_bytes // 1024)
