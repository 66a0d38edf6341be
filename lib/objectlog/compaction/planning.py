"""The planner of a partition's compaction run (compaction.compactor's vocabulary): what
retention drops and which refs a run rewrites, from the partition's index alone."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from objectlog.clock import ulid_time_ms
from objectlog.format.index import LEVEL_L0, UNMERGED_LEVELS, PlacedRef, SegmentRef
from objectlog.format.topics import Topic
from objectlog.services.index import TAIL_KEEP
from objectlog.stores.metadata import PartitionHead

MIB = 1 << 20


@dataclass(frozen=True)
class CompactionSettings:
    target_file_bytes: int = 64 * MIB
    row_group_bytes: int = 2 * MIB
    max_bytes_per_run: int = 256 * MIB
    lease_ttl_ms: int = 5 * 60_000
    compression: str = "zstd"


@dataclass(frozen=True)
class CompactionPlan:
    """The planner's proposal: a new log start, and the refs to rewrite (consecutive)."""

    log_start: int
    dropped: tuple[PlacedRef, ...]  # removed by retention
    rewrite: tuple[PlacedRef, ...]
    compact_keys: bool

    @property
    def empty(self) -> bool:
        return not self.dropped and not self.rewrite


def plan(
    topic: Topic,
    head: PartitionHead,
    refs: Sequence[PlacedRef],
    now_ms: int,
    settings: CompactionSettings,
) -> CompactionPlan:
    """Propose retention and merging over refs: the head's manifest refs, in offset order,
    from the first the index holds (also those below the log start), up to the last stable
    offset (an open transaction's refs, and everything after its first, wait)."""
    config = topic.config
    refs = _prefix(refs, lambda p: p.end_offset <= head.last_stable_offset)
    deleted = _prefix(refs, lambda p: p.end_offset <= head.log_start_offset)
    kept = list(refs[len(deleted) :])
    dropped = list(deleted)  # whatever the cleanup policy: readers never reach them again
    if config.retention_ms >= 0:
        while kept and kept[0].ref.max_timestamp < now_ms - config.retention_ms:
            dropped.append(kept.pop(0))
    if config.retention_bytes >= 0:
        total = sum(p.ref.length for p in kept) + sum(r.length for r in head.tail)
        while kept and total - kept[0].ref.length >= config.retention_bytes:
            total -= kept[0].ref.length
            dropped.append(kept.pop(0))
    if "delete" not in config.get("cleanup.policy").split(","):
        dropped, kept = list(deleted), list(refs[len(deleted) :])
    log_start = max(head.log_start_offset, dropped[-1].end_offset if dropped else 0)
    if config.compacted:
        lag = int(config.get("min.compaction.lag.ms"))
        cleanable = _prefix(kept, lambda p: p.ref.max_timestamp <= now_ms - lag)
        return CompactionPlan(
            log_start, tuple(dropped), tuple(_key_compaction_range(cleanable, settings)), True
        )
    return CompactionPlan(log_start, tuple(dropped), tuple(_first_l0_run(kept, settings)), False)


def _key_compaction_range(
    cleanable: Sequence[PlacedRef], settings: CompactionSettings
) -> list[PlacedRef]:
    """What a compacted topic's run rewrites: nothing without new (L0) data; the whole
    cleanable range when it fits the budget (older values of every key are dropped); else a
    budget's worth from the first L0 ref on (the latest value of each key is still kept, and
    the next run continues after it; older duplicates in earlier files stay until the
    partition fits a run)."""
    first_l0 = next((i for i, p in enumerate(cleanable) if _unmerged(p)), None)
    if first_l0 is None:
        return []
    if sum(p.ref.length for p in cleanable) <= settings.max_bytes_per_run:
        return list(cleanable)
    return _within_budget(cleanable[first_l0:], settings.max_bytes_per_run)


def _prefix(refs: Sequence[PlacedRef], keep: Callable[[PlacedRef], bool]) -> list[PlacedRef]:
    out = []
    for placed in refs:
        if not keep(placed):
            break
        out.append(placed)
    return out


def _within_budget(refs: Sequence[PlacedRef], budget: int) -> list[PlacedRef]:
    out: list[PlacedRef] = []
    total = 0
    for placed in refs:
        if out and total + placed.ref.length > budget:
            break
        out.append(placed)
        total += placed.ref.length
    return out


def tail_refs_kept(tail: Sequence[SegmentRef], now_ms: int, table_lag_ms: int | None) -> int:
    """How many of the newest tail refs a compaction run leaves in the head: TAIL_KEEP (hot
    data stays in the head), fewer where a table must not lag: none written before
    now - table_lag_ms (an L0 ref's object id is a ULID of its write time)."""
    kept = min(TAIL_KEEP, len(tail))
    if table_lag_ms is None:
        return kept
    cutoff = now_ms - table_lag_ms
    young = 0
    for ref in reversed(tail):
        if _written_ms(ref) <= cutoff:
            break
        young += 1
    return min(kept, young)


def _written_ms(ref: SegmentRef) -> int:
    return ulid_time_ms(ref.object_id) if ref.level == LEVEL_L0 else ref.max_timestamp


def _first_l0_run(refs: Sequence[PlacedRef], settings: CompactionSettings) -> list[PlacedRef]:
    """The first run of consecutive L0 refs and markers (what is L1 already stays), within
    the budget."""
    start = next((i for i, p in enumerate(refs) if _unmerged(p)), len(refs))
    run = _prefix(refs[start:], _unmerged)
    return _within_budget(run, settings.max_bytes_per_run)


def _unmerged(placed: PlacedRef) -> bool:
    return placed.ref.level in UNMERGED_LEVELS
