"""Compaction and retention of one partition, under its compactor lease (DESIGN.md section 7).

The vocabulary (as SlateDB's): the **planner** looks at the partition's index and proposes a
``CompactionPlan`` (where the log now starts, which refs to rewrite); the **executor** reads
those refs, applies key compaction, and writes L1 files; the **commit** swaps the index with
one conditional UpdateItem on the head. Steps:

1. Take the lease ``compact#<topic>#<partition>`` and stamp its epoch on the head (``ce``);
   spill the tail so all but its newest refs sit in manifests. Only manifest refs are
   compacted: producers append to the tail all the time, and a swap that leaves the tail
   alone never races them.
2. Retention (``retention.ms``, ``retention.bytes``) drops whole segments from the start and
   advances ``log_start_offset``. Segments that end at or below the log start (a DeleteRecords
   raised it) are dropped on every topic; one straddling the log start stays (readers refuse
   offsets below it).
3. Merge: runs of L0 refs become L1 files of about ``target_file_bytes`` with row groups of
   about ``row_group_bytes``. With ``cleanup.policy=compact``, the whole cleanable range
   (from the log start to the first ref newer than ``min.compaction.lag.ms``) is rewritten
   keeping the latest record of each key, and tombstones older than ``delete.retention.ms``
   are dropped. Offsets never change: an L1 row group's ref spans the offsets up to the next
   one's first, so the gaps compaction leaves are covered.
4. Write the new manifests and manifest list (the replaced objects listed as retired), then one
   UpdateItem on the head: ``ml``, ``lso``, ``ie + 1``, conditional on the head's ``ie`` and
   ``tid`` as read, on ``ce`` being this compactor's epoch (a compactor whose lease was taken
   over cannot swap), on the GC horizon being older than the new objects and on ``lso`` not
   going back (a DeleteRecords that landed since the head was read fails the swap, and the
   compactor plans again from the head as it is). Never on
   ``next_offset``: producers move it constantly, and a busy partition must not starve the
   compactor.

Work per run is bounded by ``max_bytes_per_run`` of input; the next run resumes where this
one stopped (what was merged is L1 now and is skipped).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc

from objectlog.clock import Clock, new_ulid
from objectlog.compaction.planning import (
    CompactionPlan,
    CompactionSettings,
    plan,
    tail_refs_kept,
)
from objectlog.format.index import (
    LEVEL_L1,
    Manifest,
    ManifestEntry,
    PlacedRef,
    SegmentRef,
)
from objectlog.format.l1 import decode_ref, encode_l1
from objectlog.format.layout import l1_key, location_key, object_key, object_keys
from objectlog.format.segment import SCHEMA
from objectlog.format.topics import Topic
from objectlog.format.txn import is_aborted
from objectlog.services.footers import Footers
from objectlog.services.index import MANIFEST_MAX_REFS, IndexStore
from objectlog.services.isolation import aborted_in
from objectlog.services.leases import Lease, Leases
from objectlog.stores.leases import LeaseStore
from objectlog.stores.metadata import MetadataStore, PartitionHead
from objectlog.stores.objects import ObjectStore

SWAP_ATTEMPTS = 3
READ_CONCURRENCY = 16  # ranged GETs in flight while reading the refs to rewrite


class TypedColumns(Protocol):
    """What adds a typed table's columns to the records of its L1 files
    (services.typed_tables.TypedRecords)."""

    def add(self, topic: Topic, records: pa.Table) -> tuple[pa.Table, int]: ...


@dataclass
class PartitionReport:
    """What one partition's run did (or, in a dry run, would do)."""

    topic: str
    partition: int
    skipped: str | None = None  # why nothing was done: "leased", "idle", "lost race"
    log_start_before: int = 0
    log_start_after: int = 0
    refs_in: int = 0  # refs replaced: dropped by retention or rewritten
    bytes_in: int = 0  # bytes read to rewrite
    bytes_out: int = 0
    records_in: int = 0
    records_out: int = 0
    records_undecodable: int = 0  # values a typed table's columns could not decode
    files_written: int = 0
    retired: list[str] = field(default_factory=list)
    refused_swaps: int = 0  # swaps whose condition failed: the index moved, or we were fenced
    # the head's open transactions (producer -> (epoch, first offset)) as this run last read
    # it, for the transaction sweep (services.transaction_sweep): no read of its own
    open_txns: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def write_amplification(self) -> float:
        return self.bytes_out / self.bytes_in if self.bytes_in else 0.0


class Compactor:
    """Runs plans against one log's storage; ``compact_partition`` is one partition's run."""

    def __init__(
        self,
        store: ObjectStore,
        metadata: MetadataStore,
        leases: LeaseStore,
        index: IndexStore,
        footers: Footers,
        prefix: str,
        clock: Clock,
        settings: CompactionSettings | None = None,
        owner: str = "compactor",
        typed: TypedColumns | None = None,
    ) -> None:
        self.store = store
        self.metadata = metadata
        self.index = index
        self.footers = footers
        self.prefix = prefix
        self.clock = clock
        self.settings = settings or CompactionSettings()
        self.leases = Leases(leases, clock)
        self.owner = owner
        self.typed = typed

    def compact_partition(
        self,
        topic: Topic,
        partition: int,
        *,
        dry_run: bool = False,
        table_lag_ms: int | None = None,
    ) -> PartitionReport:
        """One partition's run. table_lag_ms (a topic kept as a table): tail refs written
        longer ago than this are spilled and merged too, so the table gets them this run."""
        report = PartitionReport(topic.name, partition)
        name = f"compact#{topic.name}#{partition}"
        lease = (
            None if dry_run else self.leases.acquire(name, self.owner, self.settings.lease_ttl_ms)
        )
        if not dry_run and lease is None:
            report.skipped = "leased"
            return report
        try:
            if lease is not None and not self.metadata.stamp_compactor_epoch(
                topic.name, partition, lease.epoch
            ):
                report.skipped = "fenced"
                return report
            for refused in range(SWAP_ATTEMPTS):
                attempt = PartitionReport(topic.name, partition)  # counts of this try only
                if self._attempt(topic, partition, lease, attempt, dry_run, table_lag_ms):
                    attempt.refused_swaps = refused
                    return attempt
            report.open_txns = attempt.open_txns
            report.skipped = "lost race"
            report.refused_swaps = SWAP_ATTEMPTS
            return report
        finally:
            if lease is not None:
                self.leases.release(lease)

    # ---- one attempt -------------------------------------------------------------------

    def _attempt(
        self,
        topic: Topic,
        partition: int,
        lease: Lease | None,
        report: PartitionReport,
        dry_run: bool,
        table_lag_ms: int | None = None,
    ) -> bool:
        """Plan, execute and commit once; False if the index changed under us (retry)."""
        head = self._spilled_head(topic, partition, dry_run, table_lag_ms)
        if head is None or head.topic_id != topic.topic_id:
            report.skipped = "gone"
            return True
        report.open_txns = head.open_txns
        keep = tail_refs_kept(head.tail, self.clock.now_ms(), table_lag_ms)
        refs = self._manifest_refs(head, as_if_spilled=dry_run, keep=keep)
        proposal = plan(topic, head, refs, self.clock.now_ms(), self.settings)
        report.log_start_before = head.log_start_offset
        report.log_start_after = proposal.log_start
        if proposal.empty:
            report.skipped = "idle"
            return True
        if dry_run:
            self._describe(proposal, report)
            return True
        created = self.clock.now_ms()
        new_refs = self._execute(topic, head, proposal, report)
        return self._commit(head, refs, proposal, new_refs, lease, created, report)

    def _spilled_head(
        self, topic: Topic, partition: int, dry_run: bool, table_lag_ms: int | None
    ) -> PartitionHead | None:
        head = self.metadata.get_head(topic.name, partition)
        if head is None or dry_run:
            return head
        keep = tail_refs_kept(head.tail, self.clock.now_ms(), table_lag_ms)
        if len(head.tail) > keep:
            self.index.spill(head, keep)  # losing the race is fine: someone else spilled
            head = self.metadata.get_head(topic.name, partition)
        return head

    def _manifest_refs(
        self, head: PartitionHead, *, as_if_spilled: bool, keep: int
    ) -> list[PlacedRef]:
        """The refs a swap may replace: those in manifests (a dry run, which does not spill,
        counts the tail refs a spill would move too). From the index's first ref, not from
        the log start: refs a DeleteRecords left below it are the plan's to drop."""
        end = head.tail_base
        if as_if_spilled and len(head.tail) > keep:
            end += sum(ref.span for ref in head.tail[: len(head.tail) - keep])
        return [placed for placed in self.index.placed_refs(head, 0) if placed.end_offset <= end]

    def _describe(self, proposal: CompactionPlan, report: PartitionReport) -> None:
        replaced = proposal.dropped + proposal.rewrite
        report.refs_in = len(replaced)
        report.bytes_in = sum(p.ref.length for p in proposal.rewrite)
        report.retired = sorted(object_keys(self.prefix, (p.ref for p in replaced)))

    # ---- the executor ------------------------------------------------------------------

    def _execute(
        self, topic: Topic, head: PartitionHead, proposal: CompactionPlan, report: PartitionReport
    ) -> list[SegmentRef]:
        """Read the refs to rewrite, compact keys if asked, write L1 files; their refs."""
        rewrite = proposal.rewrite
        if not rewrite:
            report.refs_in += len(proposal.dropped)
            return []
        aborted = aborted_in(self.index, head, rewrite)  # decided: the plan ends at the LSO
        kept = [p for p in rewrite if p.ref.has_object and not is_aborted(p, aborted)]
        with ThreadPoolExecutor(READ_CONCURRENCY, thread_name_prefix="objectlog-compact") as pool:
            table = pa.concat_tables([SCHEMA.empty_table(), *pool.map(self._read, kept)])
        report.refs_in += len(rewrite) + len(proposal.dropped)
        report.bytes_in += sum(p.ref.length for p in rewrite)
        report.records_in += table.num_rows
        if proposal.compact_keys:
            table = compact_keys(table, self.clock.now_ms(), topic)
        report.records_out += table.num_rows
        start, end = rewrite[0].base_offset, rewrite[-1].end_offset
        refs: list[SegmentRef] = []
        for piece_start, piece_end, piece in self._files(table, start, end):
            if self.typed is not None:  # per file, sized by its Kafka columns as any other
                piece, undecodable = self.typed.add(topic, piece)
                report.records_undecodable += undecodable
            refs += self._write_file(topic, head.partition, piece, piece_start, piece_end, report)
        return refs

    def _read(self, placed: PlacedRef) -> pa.Table:
        ref = placed.ref
        data = self.store.get_range(self._key(ref), ref.start, ref.length)
        return decode_ref(placed, data, self.footers, self.prefix)

    def _files(self, table: pa.Table, start: int, end: int) -> Iterator[tuple[int, int, pa.Table]]:
        """Cut table into files of about target_file_bytes: (first offset, end, rows)."""
        rows = table.num_rows
        per_file = max(1, int(self.settings.target_file_bytes * rows / max(1, table.nbytes)))
        offsets = table.column("offset")
        boundaries = [start] + [offsets[i].as_py() for i in range(per_file, rows, per_file)]
        for i, first in enumerate(boundaries):
            last = boundaries[i + 1] if i + 1 < len(boundaries) else end
            yield first, last, table.slice(i * per_file, per_file)

    def _write_file(
        self,
        topic: Topic,
        partition: int,
        table: pa.Table,
        start: int,
        end: int,
        report: PartitionReport,
    ) -> list[SegmentRef]:
        """One L1 file; a ref per row group, the first covering from start, the last to end."""
        body, groups = encode_l1(table, self.settings.row_group_bytes, self.settings.compression)
        object_id = l1_key("", topic.name, topic.topic_id, partition, start, new_ulid(self.clock))
        self.store.put_if_absent(self.prefix + object_id, body)
        report.files_written += 1
        report.bytes_out += len(body)
        groups = [group for group in groups if group.rows]
        if not groups:  # every record compacted away: one empty ref keeps the offsets covered
            return [SegmentRef(LEVEL_L1, object_id, 0, len(body), end - start, 0, 0, 0)]
        offsets = table.column("offset")
        firsts, row = [start], 0
        for group in groups[:-1]:
            row += group.rows
            firsts.append(offsets[row].as_py())
        firsts.append(end)
        timestamps = table.column("timestamp").cast(pa.int64())
        refs = []
        row = 0
        for i, group in enumerate(groups):
            stamps = timestamps.slice(row, group.rows)
            refs.append(
                SegmentRef(
                    LEVEL_L1,
                    object_id,
                    group.start,
                    group.length,
                    firsts[i + 1] - firsts[i],
                    group.rows,
                    pc.min(stamps).as_py(),
                    pc.max(stamps).as_py(),
                )
            )
            row += group.rows
        return refs

    # ---- the commit --------------------------------------------------------------------

    def _commit(
        self,
        head: PartitionHead,
        refs: list[PlacedRef],
        proposal: CompactionPlan,
        new_refs: list[SegmentRef],
        lease: Lease | None,
        created: int,
        report: PartitionReport,
    ) -> bool:
        rewritten = {id(p) for p in proposal.rewrite}
        dropped = {id(p) for p in proposal.dropped}
        kept = [placed for placed in refs if id(placed) not in dropped]
        index: list[SegmentRef] = []
        for placed in kept:
            if id(placed) in rewritten:
                if placed is proposal.rewrite[0]:
                    index += new_refs
                continue
            index.append(placed.ref)
        # The index starts where its first kept ref does: at the log start, or below it when
        # that ref straddles a log start a DeleteRecords set.
        base = kept[0].base_offset if kept else proposal.log_start
        entries = self._write_manifests(head, base, index)
        replaced = proposal.dropped + proposal.rewrite
        replaced_keys = object_keys(self.prefix, (p.ref for p in replaced))
        retired = sorted(replaced_keys - object_keys(self.prefix, index))
        previous = self.index.manifest_list(head.manifest_list) if head.manifest_list else None
        old_index = [location_key(head.manifest_list)] if head.manifest_list else []
        old_index += [location_key(e.key) for e in previous.entries if e.key] if previous else []
        listing = self.index.put_manifest_list(
            head.topic_id,
            head.partition,
            entries,
            self.index.retiring(previous, old_index + retired),
        )
        assert lease is not None
        done = self.metadata.swap_index(
            head.topic,
            head.partition,
            topic_id=head.topic_id,
            expected_index_epoch=head.index_epoch,
            compactor_epoch=lease.epoch,
            manifest_list=listing,
            log_start_offset=proposal.log_start,
            object_time_ms=created,
        )
        if done:
            report.retired = retired
        return done

    def _write_manifests(
        self, head: PartitionHead, base: int, refs: list[SegmentRef]
    ) -> list[ManifestEntry]:
        entries = []
        for i in range(0, len(refs), MANIFEST_MAX_REFS):
            manifest = Manifest(base, tuple(refs[i : i + MANIFEST_MAX_REFS]))
            key = self.index.put_manifest(head.topic_id, head.partition, manifest)
            entries.append(ManifestEntry.summarize(key, manifest))
            base = manifest.end_offset
        return entries

    def _key(self, ref: SegmentRef) -> str:
        return object_key(self.prefix, ref.level, ref.object_id)


def compact_keys(table: pa.Table, now_ms: int, topic: Topic) -> pa.Table:
    """Keep the latest record of each key (offset order kept); drop tombstones older than
    delete.retention.ms. Records without a key are kept (Kafka refuses them on compacted
    topics; objectlog accepts them and never removes them)."""
    if not table.num_rows:
        return table
    keys = table.column("key").to_pylist()
    latest: dict[bytes, int] = {}
    for row, key in enumerate(keys):
        if key is not None:
            latest[key] = row
    delete_before = now_ms - int(topic.config.get("delete.retention.ms"))
    values_null = table.column("value").is_null().to_pylist()
    stamps = table.column("timestamp").cast(pa.int64()).to_pylist()
    keep = [
        key is None
        or (latest[key] == row and not (values_null[row] and stamps[row] < delete_before))
        for row, key in enumerate(keys)
    ]
    return table.filter(pa.array(keep))
