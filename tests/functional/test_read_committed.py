"""read_committed in the library's fetch (issue 36, docs/transactions.md): up to the last
stable offset, never an aborted transaction's record, a committed one whole, markers skipped
by every reader; read_uncommitted sees every record. Transactional refs and markers are
written through the head store directly (the doors' transactional producers come next)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from objectlog import ObjectLog
from objectlog.clock import new_ulid
from objectlog.errors import InvalidRequest
from objectlog.format.index import LEVEL_L0, SegmentRef
from objectlog.format.layout import l0_key
from objectlog.format.segment import encode_parquet, records_table
from objectlog.format.txn import transactional
from objectlog.stores.metadata import Commit

TOPIC = "txns"


@pytest.fixture
def txlog(log: ObjectLog) -> Iterator[ObjectLog]:
    log.create_topic(TOPIC, 1)
    yield log


def write(log: ObjectLog, values: list[bytes], producer: str | None = None) -> int:
    """One L0 object of values committed to partition 0, transactional for producer; its
    base offset."""
    n, now = len(values), log.clock.now_ms()
    table = records_table(
        topics=[TOPIC] * n,
        partitions=[0] * n,
        offsets=list(range(n)),
        timestamps=[now] * n,
        timestamp_types=[0] * n,
        keys=[None] * n,
        values=list(values),
        headers=[[] for _ in range(n)],
    )
    body = encode_parquet(table)
    ulid = new_ulid(log.clock)
    log.store.put_if_absent(l0_key(log.config.prefix, ulid), body)
    txn = transactional(producer) if producer else ""
    ref = SegmentRef(LEVEL_L0, ulid, 0, len(body), n, n, now, now, txn)
    topic = log.topic(TOPIC)
    commit = Commit(topic.topic_id, TOPIC, 0, ref, log.clock.now_ms(), None, 0, now_s=1)
    return log.metadata.commit(commit).base_offset


def begin(log: ObjectLog, producer: str) -> int:
    topic_id = log.topic(TOPIC).topic_id
    return log.metadata.open_transaction(TOPIC, 0, topic_id=topic_id, producer=producer, epoch=0)


def end(log: ObjectLog, producer: str, commit: bool) -> int | None:
    return log.metadata.write_marker(
        TOPIC,
        0,
        topic_id=log.topic(TOPIC).topic_id,
        producer=producer,
        epoch=0,
        commit=commit,
        time_ms=log.clock.now_ms(),
    )


def read(log: ObjectLog, isolation: str) -> list[tuple[int, bytes]]:
    """Every record from 0 as fetches in turn return them (small budgets: many fetches)."""
    out, offset = [], 0
    for _ in range(100):
        result = log.fetch(TOPIC, 0, offset, max_records=2, isolation_level=isolation)
        out += [(r.offset, r.value) for r in result.records]
        if result.next_offset == offset:
            break
        offset = result.next_offset
    return out


def test_read_committed_sees_committed_transactions_whole_and_never_an_aborted_record(
    txlog: ObjectLog,
) -> None:
    write(txlog, [b"plain-0", b"plain-1"])  # 0-1
    begin(txlog, "k1")
    begin(txlog, "k2")
    write(txlog, [b"a-2", b"a-3"], "k1")  # k1: to be aborted
    write(txlog, [b"c-4"], "k2")  # k2: to be committed
    write(txlog, [b"plain-5"])
    write(txlog, [b"a-6"], "k1")
    head = txlog.metadata.get_head(TOPIC, 0)
    assert head is not None and head.last_stable_offset == 2  # both open: held at k1's first
    assert [o for o, _ in read(txlog, "read_committed")] == [0, 1]
    assert len(read(txlog, "read_uncommitted")) == 7

    assert end(txlog, "k2", commit=True) == 7  # the marker takes offset 7
    assert [o for o, _ in read(txlog, "read_committed")] == [0, 1]  # k1 still holds the LSO
    assert end(txlog, "k1", commit=False) == 8
    committed = read(txlog, "read_committed")
    assert committed == [(0, b"plain-0"), (1, b"plain-1"), (4, b"c-4"), (5, b"plain-5")]
    uncommitted = read(txlog, "read_uncommitted")  # every record; the markers skipped
    assert [o for o, _ in uncommitted] == [0, 1, 2, 3, 4, 5, 6]
    result = txlog.fetch(TOPIC, 0, 7, isolation_level="read_committed")
    assert result.records == [] and result.next_offset == 9 and result.last_stable_offset == 9


def test_an_abort_marker_past_the_lso_still_hides_what_it_aborted(txlog: ObjectLog) -> None:
    """k1's records lie below the LSO that k2's transaction (opened later, still open) holds,
    and k1's abort marker lies past it: read_committed must not return k1's records."""
    begin(txlog, "k1")
    write(txlog, [b"a-0"], "k1")  # 0
    begin(txlog, "k2")  # k2's first offset is 1
    write(txlog, [b"c-1"], "k2")  # 1
    end(txlog, "k1", commit=False)  # the abort marker at 2, past the LSO (1)
    head = txlog.metadata.get_head(TOPIC, 0)
    assert head is not None and head.last_stable_offset == 1
    assert read(txlog, "read_committed") == []
    end(txlog, "k2", commit=True)
    assert read(txlog, "read_committed") == [(1, b"c-1")]


def test_an_unknown_isolation_level_is_refused(txlog: ObjectLog) -> None:
    with pytest.raises(InvalidRequest, match="isolation_level"):
        txlog.fetch(TOPIC, 0, 0, isolation_level="serializable")


def test_compaction_stops_at_the_lso_and_writes_committed_records_only(txlog: ObjectLog) -> None:
    from objectlog.compaction.compactor import CompactionSettings
    from objectlog.compaction.maintenance import run_maintenance
    from objectlog.format.index import LEVEL_L1

    write(txlog, [b"plain-0"])  # 0
    begin(txlog, "k1")
    write(txlog, [b"a-1"], "k1")  # 1: aborted below
    begin(txlog, "k2")
    write(txlog, [b"c-2"], "k2")  # 2
    end(txlog, "k1", commit=False)  # 3
    begin(txlog, "k3")  # 4: stays open, so the LSO stays at 4
    write(txlog, [b"open-4"], "k3")
    end(txlog, "k2", commit=True)  # 5
    settings = CompactionSettings(target_file_bytes=1 << 10)
    run_maintenance(txlog, settings=settings, gc_min_age_ms=0, sweep=False)  # k3 has no item
    head = txlog.metadata.get_head(TOPIC, 0)
    assert head is not None and head.last_stable_offset == 4
    refs = list(txlog.index.all_placed_refs(head))
    merged = [p for p in refs if p.ref.level == LEVEL_L1]
    assert merged and max(p.end_offset for p in merged) <= 4  # nothing past the LSO
    assert read(txlog, "read_committed") == [(0, b"plain-0"), (2, b"c-2")]
    # the aborted record is gone from L1 for every reader; the open one still reads
    assert read(txlog, "read_uncommitted") == [(0, b"plain-0"), (2, b"c-2"), (4, b"open-4")]


def test_the_librarys_consumer_reads_committed_records_only(txlog: ObjectLog) -> None:
    write(txlog, [b"plain-0"])
    begin(txlog, "k1")
    write(txlog, [b"aborted-1"], "k1")
    end(txlog, "k1", commit=False)
    begin(txlog, "k2")
    write(txlog, [b"committed-3"], "k2")
    end(txlog, "k2", commit=True)
    seen = {}
    for isolation in ("read_committed", "read_uncommitted"):
        with txlog.consumer(
            topics=[TOPIC],
            group=f"g-{isolation}",
            auto_offset_reset="earliest",
            isolation_level=isolation,
        ) as consumer:
            got = []
            for _ in range(20):
                got += [r.value for r in consumer.poll(timeout=0.2)]
                if len(got) >= 2:
                    break
            seen[isolation] = got
    assert seen["read_committed"] == [b"plain-0", b"committed-3"]
    assert seen["read_uncommitted"] == [b"plain-0", b"aborted-1", b"committed-3"]
    with pytest.raises(InvalidRequest, match="isolation_level"):
        txlog.consumer(topics=[TOPIC], isolation_level="snapshot")
