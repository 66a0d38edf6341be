"""One maintenance run, as the scheduled compact function does it: every partition of the
chosen topics is compacted under its lease, transactions are swept (expired ones aborted,
decided ones completed, leftover head entries closed, from the heads compaction read:
services.transaction_sweep), then garbage is collected."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from objectlog.clock import Clock
from objectlog.compaction.compactor import CompactionSettings, Compactor, PartitionReport
from objectlog.compaction.gc import GarbageCollector, GcReport
from objectlog.config import Config
from objectlog.errors import TopicNotFound
from objectlog.format.topics import Topic
from objectlog.services.footers import Footers
from objectlog.services.index import IndexStore
from objectlog.services.transaction_sweep import (
    OpenEntry,
    SweepReport,
    TransactionSweep,
    open_entries,
)
from objectlog.services.transactions import TransactionCoordinator
from objectlog.stores.leases import LeaseStore
from objectlog.stores.metadata import MetadataStore
from objectlog.stores.objects import ObjectStore

if TYPE_CHECKING:  # pyiceberg is imported only where tables are used
    from objectlog.schemas.registry import SchemaRegistry
    from objectlog.services.tables import TableReport, Tables


class MaintainedLog(Protocol):
    """What maintenance needs of a log (objectlog.ObjectLog has it all)."""

    config: Config
    clock: Clock
    store: ObjectStore
    metadata: MetadataStore
    lease_store: LeaseStore
    index: IndexStore
    footers: Footers

    @property
    def tables(self) -> Tables | None: ...

    @property
    def schema_registry(self) -> SchemaRegistry: ...

    @property
    def transactions(self) -> TransactionCoordinator: ...

    def list_topics(self) -> list[str]: ...

    def topic(self, name: str, *, fresh: bool = False) -> Topic: ...

    def live_files(self, topic: str, *, scheme: str = "s3") -> list[str]: ...


@dataclass
class MaintenanceReport:
    dry_run: bool
    partitions: list[PartitionReport] = field(default_factory=list)
    tables: list[TableReport] = field(default_factory=list)
    tables_dropped: list[str] = field(default_factory=list)
    gc: GcReport | None = None
    sweep: SweepReport | None = None  # None: a dry run, or a run asked not to sweep
    seconds: float = 0.0

    @property
    def segments_merged(self) -> int:
        return sum(p.refs_in for p in self.partitions)

    @property
    def bytes_rewritten(self) -> int:
        return sum(p.bytes_out for p in self.partitions)

    @property
    def bytes_read(self) -> int:
        return sum(p.bytes_in for p in self.partitions)

    @property
    def write_amplification(self) -> float:
        return self.bytes_rewritten / self.bytes_read if self.bytes_read else 0.0

    @property
    def records_undecodable(self) -> int:
        return sum(p.records_undecodable for p in self.partitions)

    @property
    def objects_deleted(self) -> int:
        return len(self.gc.deleted) if self.gc else 0


def compactor_for(log: MaintainedLog, settings: CompactionSettings | None = None) -> Compactor:
    typed = None
    if log.tables is not None:  # typed columns go where a table reads them
        from objectlog.schemas.typed_values import TypedValues
        from objectlog.services.typed_tables import TypedRecords

        typed = TypedRecords(log.tables, TypedValues(log.schema_registry))
    return Compactor(
        log.store,
        log.metadata,
        log.lease_store,
        log.index,
        log.footers,
        log.config.prefix,
        log.clock,
        settings,
        owner=f"compactor-{uuid.uuid4().hex[:12]}",
        typed=typed,
    )


def collector_for(log: MaintainedLog, min_age_ms: int | None = None) -> GarbageCollector:
    collector = GarbageCollector(
        log.store, log.metadata, log.index, log.config.prefix, log.clock, tables=log.tables
    )
    if min_age_ms is not None:
        collector.min_age_ms = min_age_ms
    return collector


def run_maintenance(
    log: MaintainedLog,
    topics: Iterable[str] | None = None,
    *,
    dry_run: bool = False,
    settings: CompactionSettings | None = None,
    collect: bool = True,
    gc_min_age_ms: int | None = None,
    on_partition: Callable[[PartitionReport], None] | None = None,
    deadline_s: float | None = None,
    sweep: bool = True,
) -> MaintenanceReport:
    """Compact every partition of topics (all by default), sweep transactions (not in a dry
    run), then collect garbage.

    deadline_s (seconds of the monotonic clock) stops before starting a partition past it,
    so a Lambda invocation ends in time; the next run starts from the first partition again
    and finds the finished ones idle. The sweep runs all the same (its listing is two
    requests when there is nothing to do), on the heads of the partitions reached.
    """
    started = time.monotonic()
    report = MaintenanceReport(dry_run)
    compactor = compactor_for(log, settings)
    entries: list[OpenEntry] = []  # the heads' open transactions, as compaction read them
    names = list(topics) if topics is not None else log.list_topics()
    tabled: dict[str, Topic] = {}
    for name in names:
        try:
            topic = log.topic(name, fresh=True)
        except TopicNotFound:
            if topics is not None:
                raise
            continue  # deleted since it was listed: its objects are garbage now
        has_table = log.tables is not None and topic.config.table_enabled
        table_lag_ms = topic.config.table_lag_ms if has_table else None
        for partition in range(topic.partitions):
            if deadline_s is not None and time.monotonic() >= deadline_s:
                if sweep and not dry_run:
                    report.sweep = sweep_transactions(log, entries)
                report.seconds = time.monotonic() - started
                return report
            result = compactor.compact_partition(
                topic, partition, dry_run=dry_run, table_lag_ms=table_lag_ms
            )
            report.partitions.append(result)
            entries += open_entries(name, partition, topic.topic_id, result.open_txns)
            if on_partition is not None:
                on_partition(result)
        if log.tables is not None and has_table:
            tabled[name] = topic
            if not dry_run:  # after the swaps: the table follows the index, never leads it
                report.tables.append(log.tables.reconcile(topic, log.live_files(name)))
    if log.tables is not None and topics is None and not dry_run:
        report.tables_dropped = log.tables.drop_stale(tabled)
    if sweep and not dry_run:
        report.sweep = sweep_transactions(log, entries)
    if collect:
        report.gc = collector_for(log, gc_min_age_ms).run(dry_run=dry_run)
    report.seconds = time.monotonic() - started
    return report


def sweep_transactions(log: MaintainedLog, entries: Iterable[OpenEntry]) -> SweepReport:
    """The transaction sweep, after the heads holding entries were read."""
    return TransactionSweep(log.transactions, log.metadata, log.clock).run(entries)
