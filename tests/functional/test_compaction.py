"""Compaction, retention and garbage collection against moto server (DESIGN.md section 7).

Kafka's guarantees (offsets and order never change, the latest value of every key is kept,
tombstones live at least delete.retention.ms), fencing of a compactor whose lease was taken
over, a compactor killed at every step, readers racing compaction and GC, and invariant 7
(every object is referenced, or newer than the GC horizon).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.compute
import pyarrow.parquet as pq
import pytest

from objectlog import FetchRequest, ObjectLog
from objectlog.clock import ManualClock, new_ulid
from objectlog.compaction.compactor import CompactionSettings, PartitionReport
from objectlog.compaction.gc import GarbageCollector
from objectlog.compaction.maintenance import collector_for, compactor_for, run_maintenance
from objectlog.config import Config
from objectlog.errors import ObjectLogError, OffsetOutOfRange
from objectlog.format.index import LEVEL_L0, LEVEL_L1
from objectlog.format.layout import INDEX_DIR, L0_DIR, TOPICS_DIR, l0_key
from objectlog.spark.files import live_files
from tests.faults import FaultInjector, spills, swaps

SMALL = CompactionSettings(target_file_bytes=16 << 10, row_group_bytes=2 << 10)
Row = tuple[int, bytes | None, bytes | None]


def produce(
    log: ObjectLog,
    topic: str,
    flushes: int,
    per_flush: int,
    *,
    clock: ManualClock | None = None,
    key: Callable[[int], bytes | None] = lambda i: b"k%d" % i,
    value: Callable[[int], bytes | None] = lambda i: b"v%d" % i,
    partitions: int = 1,
) -> None:
    """flushes L0 objects of per_flush records in each partition (record i gets key(i))."""
    n = 0
    with log.producer(linger_ms=0) as producer:
        for _ in range(flushes):
            for p in range(partitions):
                for _ in range(per_flush):
                    stamp = clock.now_ms() if clock else None
                    producer.send(topic, value(n), key=key(n), partition=p, timestamp_ms=stamp)
                    n += 1
            producer.flush()


def read_all(
    log: ObjectLog,
    topic: str,
    partition: int = 0,
    start: int | None = None,
    *,
    many: bool = False,
) -> list[Row]:
    """Every row from start; many: through fetch_many, which reuses recent heads
    (services.recent_heads) where fetch reads the head each time."""
    offset = log.offsets(topic, partition).earliest if start is None else start
    rows: list[Row] = []
    while True:
        if many:
            request = FetchRequest(topic, partition, offset, max_bytes=64 << 10)
            result = log.fetch_many([request])[0]
        else:
            result = log.fetch(topic, partition, offset, max_bytes=64 << 10)
        rows += [(r.offset, r.key, r.value) for r in result.records]
        if result.next_offset >= result.high_watermark:
            return rows
        assert result.next_offset > offset
        offset = result.next_offset


def levels(log: ObjectLog, topic: str, partition: int = 0) -> list[int]:
    head = log.metadata.get_head(topic, partition)
    assert head is not None
    return [p.ref.level for p in log.index.all_placed_refs(head)]


def compact(log: ObjectLog, topic: str, settings: CompactionSettings = SMALL) -> PartitionReport:
    report = run_maintenance(log, [topic], settings=settings, collect=False)
    return report.partitions[0]


def all_keys(log: ObjectLog) -> set[str]:
    prefix = log.config.prefix
    return {
        info.key
        for directory in (L0_DIR, INDEX_DIR, TOPICS_DIR)
        for info in log.store.list(prefix + directory)
    }


def assert_invariant_7(log: ObjectLog, collector: GarbageCollector, horizon_ms: int) -> None:
    """Every object is referenced by the index (or retired within grace), or newer than the
    GC horizon."""
    assert collector.stale_objects(horizon_ms) == []
    assert all_keys(log)  # there was something to check


@pytest.fixture
def short_grace_log(log_config: Config, clock: ManualClock) -> Iterator[ObjectLog]:
    with ObjectLog(replace(log_config, delete_grace_ms=1_000), clock=clock) as objectlog:
        objectlog.ensure_resources()
        yield objectlog


# ---- merging --------------------------------------------------------------------------------


@pytest.mark.emulators
def test_merging_keeps_every_record_at_its_offset(clocked_log: ObjectLog) -> None:
    clocked_log.create_topic("t", partitions=2)
    produce(clocked_log, "t", flushes=30, per_flush=10, partitions=2)
    before = [read_all(clocked_log, "t", p) for p in range(2)]
    assert set(levels(clocked_log, "t")) == {LEVEL_L0}

    report = compact(clocked_log, "t")
    assert report.refs_in >= 20 and report.files_written >= 1
    assert report.records_out == report.records_in > 0
    assert [read_all(clocked_log, "t", p) for p in range(2)] == before
    assert levels(clocked_log, "t").count(LEVEL_L1) > levels(clocked_log, "t").count(LEVEL_L0)
    assert read_all(clocked_log, "t", 0, start=77) == before[0][77:]  # inside a row group
    assert compact(clocked_log, "t").skipped == "idle"  # nothing left to merge

    # The L1 files are plain Parquet with absolute offsets: what live_files lists reads as
    # the same records from the log start on.
    tables = [
        pq.read_table(pa.BufferReader(clocked_log.store.get(uri.split("/", 3)[3])))
        for uri in live_files(clocked_log, "t")
    ]
    merged = pa.concat_tables(tables)
    for p in range(2):
        rows = merged.filter(pa.compute.equal(merged.column("partition"), p))
        offsets, values = rows.column("offset").to_pylist(), rows.column("value").to_pylist()
        assert offsets and [(o, v) for o, _, v in before[p][: len(offsets)]] == list(
            zip(offsets, values, strict=True)
        )


def test_a_fetch_reads_one_row_group_not_the_whole_file(clocked_log: ObjectLog) -> None:
    clocked_log.create_topic("t")
    produce(clocked_log, "t", flushes=40, per_flush=20, value=lambda i: b"x" * 200)
    compact(clocked_log, "t", replace(SMALL, target_file_bytes=1 << 20))
    head = clocked_log.metadata.get_head("t", 0)
    assert head is not None
    l1 = [p for p in clocked_log.index.all_placed_refs(head) if p.ref.level == LEVEL_L1]
    assert len({p.ref.object_id for p in l1}) == 1 and len(l1) > 5  # one file, many groups
    result = clocked_log.fetch("t", 0, l1[3].base_offset + 1, max_bytes=1)
    assert [r.offset for r in result.records] == [l1[3].base_offset + 1]


# ---- retention --------------------------------------------------------------------------


def test_retention_by_time_advances_the_log_start(
    clocked_log: ObjectLog, clock: ManualClock
) -> None:
    clocked_log.create_topic("t", config={"retention.ms": "60000"})
    produce(clocked_log, "t", flushes=20, per_flush=5, clock=clock)
    clock.advance(61_000)
    produce(clocked_log, "t", flushes=20, per_flush=5, clock=clock)
    everything = read_all(clocked_log, "t")
    report = compact(clocked_log, "t")
    assert report.log_start_after == 100 > report.log_start_before == 0
    assert clocked_log.offsets("t", 0).earliest == 100
    assert read_all(clocked_log, "t") == everything[100:]
    with pytest.raises(OffsetOutOfRange, match="earliest offset is 100"):
        clocked_log.fetch("t", 0, 5)


def test_retention_by_bytes_drops_whole_segments(clocked_log: ObjectLog) -> None:
    clocked_log.create_topic("t", config={"retention.bytes": "20000"})
    produce(clocked_log, "t", flushes=40, per_flush=10, value=lambda i: b"x" * 100)
    report = compact(clocked_log, "t")
    head = clocked_log.metadata.get_head("t", 0)
    assert head is not None
    assert report.log_start_after > 0
    kept = sum(p.ref.length for p in clocked_log.index.all_placed_refs(head))
    assert kept <= 20_000 + max(p.ref.length for p in clocked_log.index.all_placed_refs(head))
    assert read_all(clocked_log, "t")[0][0] == head.log_start_offset


# ---- key compaction ---------------------------------------------------------------------


def latest_by_key(rows: list[Row]) -> dict[bytes | None, Row]:
    latest: dict[bytes | None, Row] = {}
    for row in rows:
        latest[row[1]] = row
    return latest


@pytest.mark.emulators
def test_key_compaction_keeps_the_latest_value_at_its_offset(
    clocked_log: ObjectLog, clock: ManualClock
) -> None:
    clocked_log.create_topic(
        "c", config={"cleanup.policy": "compact", "delete.retention.ms": "10000"}
    )
    keys = [b"a", b"b", b"c", b"d"]
    produce(clocked_log, "c", 24, 5, clock=clock, key=lambda i: keys[i % 4])
    produce(clocked_log, "c", 1, 1, clock=clock, key=lambda i: b"c", value=lambda i: None)
    produce(clocked_log, "c", 3, 1, clock=clock, key=lambda i: b"e")
    everything = read_all(clocked_log, "c")
    compact(clocked_log, "c")
    after = read_all(clocked_log, "c")
    assert set(after) <= set(everything)  # offsets and contents never change
    assert [r[0] for r in after] == sorted(r[0] for r in after)
    latest = latest_by_key(everything)
    assert latest_by_key(after) == latest  # the tombstone of c is still there
    assert len(after) < len(everything)

    clock.advance(11_000)  # the tombstone is now past delete.retention.ms
    produce(clocked_log, "c", 4, 1, clock=clock, key=lambda i: b"f")
    compact(clocked_log, "c")
    final = latest_by_key(read_all(clocked_log, "c"))
    assert b"c" not in final  # the tombstone is gone, and the values it deleted with it
    for key in (b"a", b"b", b"d", b"e"):
        assert final[key] == latest[key]


def test_records_newer_than_the_compaction_lag_are_not_compacted(
    clocked_log: ObjectLog, clock: ManualClock
) -> None:
    clocked_log.create_topic(
        "c", config={"cleanup.policy": "compact", "min.compaction.lag.ms": "60000"}
    )
    produce(clocked_log, "c", 20, 4, clock=clock, key=lambda i: b"same")
    everything = read_all(clocked_log, "c")
    assert compact(clocked_log, "c").skipped == "idle"
    assert read_all(clocked_log, "c") == everything
    clock.advance(60_001)
    compact(clocked_log, "c")
    after = read_all(clocked_log, "c")
    assert after[-1] == everything[-1] and len(after) < len(everything)


# ---- leases and fencing -----------------------------------------------------------------


def test_a_compactor_whose_lease_was_taken_over_cannot_swap(
    clocked_log: ObjectLog, clock: ManualClock
) -> None:
    clocked_log.create_topic("t")
    produce(clocked_log, "t", 30, 5)
    everything = read_all(clocked_log, "t")
    topic = clocked_log.topic("t")
    zombie, successor = compactor_for(clocked_log, SMALL), compactor_for(clocked_log, SMALL)
    name = "compact#t#0"
    lease = zombie.leases.acquire(name, zombie.owner, SMALL.lease_ttl_ms)
    assert lease is not None
    assert clocked_log.metadata.stamp_compactor_epoch("t", 0, lease.epoch)
    assert successor.compact_partition(topic, 0).skipped == "leased"  # one holder at a time

    clock.advance(SMALL.lease_ttl_ms + 1)  # the zombie paused past its lease
    taken = successor.compact_partition(topic, 0)
    assert taken.skipped is None and taken.refs_in > 0

    def l1_files() -> set[str]:
        head = clocked_log.metadata.get_head("t", 0)
        assert head is not None
        return {
            p.ref.object_id
            for p in clocked_log.index.all_placed_refs(head)
            if p.ref.level == LEVEL_L1
        }

    successors_files = l1_files()
    produce(clocked_log, "t", 20, 5)  # new L0 data, so the zombie has something to swap
    report = PartitionReport("t", 0)
    assert zombie._attempt(topic, 0, lease, report, dry_run=False) is False  # fenced
    assert report.files_written > 0  # it got as far as its swap
    assert l1_files() == successors_files  # and none of its files entered the index
    assert read_all(clocked_log, "t")[:150] == everything


# ---- crashes ----------------------------------------------------------------------------


class Crash(Exception):
    """The compactor process died here."""


STEPS = ["spill", "l1 file", "manifest", "manifest list", "swap"]


def crash_at(step: str, log: ObjectLog, monkeypatch: pytest.MonkeyPatch) -> None:
    put = log.store.put_if_absent

    def failing_put(key: str, body: bytes) -> None:
        if (step == "l1 file" and "/partition=" in key) or (
            step == ("manifest" if "/m-" in key else "manifest list" if "/l-" in key else "")
        ):
            raise Crash(step)
        put(key, body)

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise Crash(step)

    if step == "spill":
        monkeypatch.setattr(log.index, "spill", fail)
    elif step == "swap":
        monkeypatch.setattr(log.metadata, "swap_index", fail)
    else:
        monkeypatch.setattr(log.store, "put_if_absent", failing_put)


@pytest.mark.parametrize("step", STEPS)
def test_a_compactor_killed_at_any_step_leaves_a_readable_log(
    short_grace_log: ObjectLog, clock: ManualClock, step: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = short_grace_log
    log.create_topic("t")
    produce(log, "t", 30, 5, clock=clock)
    everything = read_all(log, "t")
    with monkeypatch.context() as patch:
        crash_at(step, log, patch)
        with pytest.raises(Crash):
            compact(log, "t")
    assert read_all(log, "t") == everything
    clock.advance(SMALL.lease_ttl_ms + 1)  # the dead compactor's lease lapses
    assert compact(log, "t").skipped is None
    assert read_all(log, "t") == everything

    collector = collector_for(log, min_age_ms=10_000)
    clock.advance(11_000)  # past the grace period and the GC horizon
    report = collector.run()
    assert report.deleted  # the replaced L0 objects, and what the crash left behind
    assert_invariant_7(log, collector, report.horizon_ms)
    assert read_all(log, "t") == everything


@pytest.mark.parametrize("call", ["swap", "spill"])
def test_a_compactor_call_whose_answer_botocore_lost_leaves_a_readable_log(
    short_grace_log: ObjectLog, clock: ManualClock, call: str
) -> None:
    """botocore's retry handler resends a call whose answer timed out; a resent swap (or
    spill) that had landed fails its condition against itself. The compactor must not take
    that for "another writer won" and clean up what the head now references."""
    log = short_grace_log
    log.create_topic("t")
    produce(log, "t", 30, 5, clock=clock)
    everything = read_all(log, "t")
    faults = FaultInjector()
    lost = faults.lose_answer_in_sdk(
        log.metadata.client, "UpdateItem", times=1, when=swaps if call == "swap" else spills
    )
    try:
        compact(log, "t")
    except ObjectLogError:
        pass  # an unknown outcome may end this run; the log must not lose anything
    finally:
        faults.remove()
    assert lost.injected == 1
    assert read_all(log, "t") == everything
    clock.advance(SMALL.lease_ttl_ms + 1)
    compact(log, "t")
    collector = collector_for(log, min_age_ms=10_000)
    clock.advance(11_000)  # past the grace period and the GC horizon
    report = collector.run()
    assert_invariant_7(log, collector, report.horizon_ms)
    assert read_all(log, "t") == everything


# ---- garbage collection -----------------------------------------------------------------


@pytest.mark.emulators
def test_gc_deletes_orphans_past_the_horizon_and_replaced_objects_past_the_grace(
    short_grace_log: ObjectLog, clock: ManualClock
) -> None:
    log = short_grace_log
    log.create_topic("t")
    produce(log, "t", 20, 5, clock=clock)
    orphan = l0_key(log.config.prefix, new_ulid(clock))  # a producer died after its PUT
    log.store.put_if_absent(orphan, b"never committed")
    collector = collector_for(log, min_age_ms=5_000)

    assert collector.run().deleted == []  # everything is referenced or young
    report = compact(log, "t")
    replaced = set(report.retired)
    assert replaced and all(key.startswith(log.config.prefix + L0_DIR) for key in replaced)
    clock.advance(500)
    dry = collector.run(dry_run=True)
    assert orphan not in dry.deleted and not replaced & set(dry.deleted)

    clock.advance(5_000)  # past the horizon and the grace period
    dry = collector.run(dry_run=True)
    assert orphan in dry.deleted and replaced <= set(dry.deleted)
    assert orphan in all_keys(log)  # a dry run deletes nothing
    run = collector.run()
    assert set(run.deleted) == set(dry.deleted)
    assert orphan not in all_keys(log) and not replaced & all_keys(log)
    assert_invariant_7(log, collector, run.horizon_ms)
    assert len(read_all(log, "t")) == 100


@pytest.mark.parametrize("many", [False, True], ids=["fetch", "fetch_many-reusing-heads"])
def test_readers_during_compaction_and_gc_see_no_error_gap_or_duplicate(
    log_config: Config, many: bool
) -> None:
    config = replace(log_config, delete_grace_ms=200)  # heads reused up to 100 ms
    with ObjectLog(config) as writer, ObjectLog(config) as reader:
        writer.ensure_resources()
        writer.create_topic("t")
        produce(writer, "t", 40, 5)
        expected = read_all(writer, "t")
        stop = threading.Event()
        problems: list[str] = []
        reads = 0

        def keep_reading() -> None:
            nonlocal reads
            while not stop.is_set():
                try:
                    rows = read_all(reader, "t", many=many)
                except Exception as e:  # the test's verdict, reported below
                    problems.append(repr(e))
                    return
                if rows[: len(expected)] != expected:
                    problems.append(f"read {len(rows)} rows, not the {len(expected)} produced")
                    return
                reads += 1

        threads = [threading.Thread(target=keep_reading) for _ in range(2)]
        for thread in threads:
            thread.start()
        try:
            for round_ in range(4):
                produce(writer, "t", 20, 5, key=lambda i, r=round_: b"r%d-%d" % (r, i))
                expected = read_all(writer, "t")[: len(expected)]
                run_maintenance(
                    writer,
                    ["t"],
                    settings=replace(SMALL, target_file_bytes=4 << 10),
                    gc_min_age_ms=0,
                )
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        assert problems == []
        assert reads > 0


def test_a_range_whose_records_are_all_compacted_away_stays_covered(
    clocked_log: ObjectLog, clock: ManualClock
) -> None:
    """Found by the model-based test: three tombstones of one key, the older two expired."""
    clocked_log.create_topic(
        "c", config={"cleanup.policy": "compact", "delete.retention.ms": "5000"}
    )
    for _ in range(4):
        produce(clocked_log, "c", 1, 1, clock=clock, key=lambda i: b"a", value=lambda i: None)
        clock.advance(3_000)
    produce(clocked_log, "c", 1, 1, clock=clock, key=lambda i: b"b")  # keeps two refs in the tail
    report = compact(clocked_log, "c")
    assert report.skipped is None and report.records_out < report.records_in
    rows = read_all(clocked_log, "c")
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)
    assert rows[-1][1] == b"b" and clocked_log.offsets("c", 0).latest == 5


def test_a_compacted_partition_larger_than_a_run_is_cleaned_in_windows(
    clocked_log: ObjectLog, clock: ManualClock
) -> None:
    """Each run is bounded by max_bytes_per_run and the next one resumes after it."""
    clocked_log.create_topic("c", config={"cleanup.policy": "compact"})
    produce(clocked_log, "c", 40, 5, clock=clock, key=lambda i: b"k%d" % (i % 7))
    everything = read_all(clocked_log, "c")
    head = clocked_log.metadata.get_head("c", 0)
    assert head is not None
    total = sum(p.ref.length for p in clocked_log.index.all_placed_refs(head))
    small = replace(SMALL, max_bytes_per_run=total // 5)
    runs = 0
    while compact(clocked_log, "c", small).refs_in and runs < 20:
        runs += 1
        rows = read_all(clocked_log, "c")
        assert latest_by_key(rows) == latest_by_key(everything)  # after every run
        assert set(rows) <= set(everything)
    assert 3 <= runs < 20  # several bounded runs, and they finish
    assert set(levels(clocked_log, "c")[:-2]) == {LEVEL_L1}  # all merged but the tail
