"""Input partitions sized as Spark's file sources size theirs (FilePartition.maxSplitBytes and
its next-fit packing): by bytes, the session's parallelism and the open cost."""

from __future__ import annotations

from dataclasses import replace

import pytest

from objectlog.spark.options import ReadOptions, byte_size
from objectlog.spark.planning import ReadTask, Slice, pack, split_bytes, split_count

MIB = 1 << 20
OPTIONS = ReadOptions.parse({"subscribe": "t"}, streaming=False)


def task(partition: int, *sizes: int) -> ReadTask:
    slices = tuple(Slice(f"k{i}", 0, size, i, i + 1, 0) for i, size in enumerate(sizes))
    return ReadTask("t", partition, 0, len(sizes), slices)


@pytest.mark.parametrize(
    ("total", "files", "parallelism", "minimum", "expected"),
    [
        pytest.param(256 * MIB, 4, 2, 0, 128 * MIB, id="capped-at-maxPartitionBytes"),
        pytest.param(64 * MIB, 4, 2, 0, 40 * MIB, id="spread-over-two-cores-with-open-costs"),
        pytest.param(1 * MIB, 1, 2, 0, 4 * MIB, id="at-least-the-open-cost"),
        pytest.param(64 * MIB, 4, 2, 8, 10 * MIB, id="minPartitions-above-parallelism"),
        pytest.param(64 * MIB, 4, 0, 0, 128 * MIB, id="no-parallelism-known"),
    ],
)
def test_split_bytes(total: int, files: int, parallelism: int, minimum: int, expected: int) -> None:
    options = replace(OPTIONS, parallelism=parallelism, min_partitions=minimum)
    assert split_bytes(total, files, options) == expected


def test_small_tasks_of_many_partitions_pack_into_one_split_per_core() -> None:
    options = replace(OPTIONS, parallelism=2)
    tasks = [task(p, 8 * MIB) for p in range(8)]
    splits = pack(tasks, options)
    assert len(splits) == 2 and [len(split) for split in splits] == [4, 4]
    assert sorted(t.partition for split in splits for t in split) == list(range(8))


def test_four_large_partitions_on_two_cores_are_two_balanced_splits() -> None:
    """Spark's next-fit packing gives four here (64 + 4 + 64 > 128); balanced, two."""
    options = replace(OPTIONS, parallelism=2)
    splits = pack([task(p, 60 * MIB) for p in range(4)], options)
    assert [len(split) for split in splits] == [2, 2]


def test_largest_first_to_the_lightest_split() -> None:
    options = replace(OPTIONS, parallelism=2, open_cost_bytes=MIB)
    tasks = [task(0, 9 * MIB), task(1, 12 * MIB), task(2, 5 * MIB), task(3, 4 * MIB)]
    splits = pack(tasks, options)
    assert [[t.partition for t in split] for split in splits] == [[1, 3], [0, 2]]


def test_more_data_than_max_bytes_per_core_gives_more_splits() -> None:
    options = replace(OPTIONS, parallelism=2, max_bytes_per_partition=16 * MIB, open_cost_bytes=0)
    assert split_count(64 * MIB, options) == 4


def test_min_partitions_gives_at_least_that_many_where_tasks_allow() -> None:
    options = replace(OPTIONS, parallelism=1, min_partitions=4)
    tasks = [task(p, MIB) for p in range(4)]
    assert sorted(len(split) for split in pack(tasks, options)) == [1, 1, 1, 1]
    assert len(pack(tasks[:2], options)) == 2  # no more splits than tasks


def test_no_tasks_no_splits() -> None:
    assert pack([], OPTIONS) == []


def test_session_defaults_are_read_options() -> None:
    parsed = ReadOptions.parse(
        {
            "subscribe": "t",
            "defaultParallelism": "6",
            "maxBytesPerPartition": str(byte_size("64m")),
            "openCostInBytes": "0",
        },
        streaming=False,
    )
    assert (parsed.parallelism, parsed.max_bytes_per_partition, parsed.open_cost_bytes) == (
        6,
        64 * MIB,
        0,
    )
