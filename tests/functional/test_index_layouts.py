"""Readers accept both index layouts (issue 18): a bucket and table written by the code before
spills held the newest manifest inline (tests/fixtures/index_v1, made by make_index_v1.py at
3fcc7e7) are read, produced to, compacted and collected by today's code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from objectlog import ObjectLog
from objectlog.compaction.maintenance import collector_for, run_maintenance
from tests.fixtures.make_index_v1 import SMALL, TOPIC, produce

FIXTURE = Path(__file__).parent.parent / "fixtures" / "index_v1"
WRITTEN = 162  # records per partition in the fixture (make_index_v1.py)


def load_fixture(log: ObjectLog) -> None:
    objects = FIXTURE / "objects"
    for path in sorted(objects.rglob("*")):
        if path.is_file():
            log.store.put_if_absent(path.relative_to(objects).as_posix(), path.read_bytes())
    for item in json.loads((FIXTURE / "items.json").read_text()):
        if item["pk"] == "topics":
            item["names"] = set(item["names"])  # the registry's string set
        log.metadata.table.put(item)


def read_all(log: ObjectLog, partition: int) -> list[tuple[int, bytes | None, bytes | None]]:
    rows, offset = [], log.offsets(TOPIC, partition).earliest
    while True:
        result = log.fetch(TOPIC, partition, offset, max_bytes=4 << 10)
        rows += [(r.offset, r.key, r.value) for r in result.records]
        if result.next_offset >= result.high_watermark:
            return rows
        offset = result.next_offset


def expected(partition: int, count: int) -> list[tuple[int, bytes | None, bytes | None]]:
    """What make_index_v1's produce() wrote: values p<partition>-<n>, keys k<n % 5>."""
    return [(n, b"k%d" % (n % 5), b"p%d-%d" % (partition, n)) for n in range(count)]


def list_layout(log: ObjectLog, partition: int) -> list[str]:
    """Each entry of the partition's manifest list: 'object' or 'inline'."""
    head = log.metadata.get_head(TOPIC, partition)
    assert head is not None and head.manifest_list
    entries = log.index.manifest_list(head.manifest_list).entries
    return ["object" if entry.key else "inline" for entry in entries]


@pytest.fixture
def legacy(log: ObjectLog) -> ObjectLog:
    load_fixture(log)
    return log


def test_a_layout_1_bucket_reads_as_written(legacy: ObjectLog) -> None:
    assert "inline" not in list_layout(legacy, 0) + list_layout(legacy, 1)
    for partition in (0, 1):
        assert read_all(legacy, partition) == expected(partition, WRITTEN)


def test_spills_onto_layout_1_lists_then_compaction_and_gc_keep_every_record(
    legacy: ObjectLog,
) -> None:
    for partition in (0, 1):
        produce(legacy, partition, 40, WRITTEN)
    total = WRITTEN + 40 * 3
    for partition in (0, 1):
        layout = list_layout(legacy, partition)
        assert "object" in layout and layout[-1] == "inline"
        assert read_all(legacy, partition) == expected(partition, total)

    run_maintenance(legacy, [TOPIC], settings=SMALL, gc_min_age_ms=0)
    with ObjectLog(legacy.config) as cold:  # caches empty: everything read from the bucket
        for partition in (0, 1):
            assert read_all(cold, partition) == expected(partition, total)
        collector = collector_for(cold, min_age_ms=0)
        assert collector.stale_objects(cold.clock.now_ms()) == []
