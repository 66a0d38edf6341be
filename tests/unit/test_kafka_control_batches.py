"""The agent's Fetch records with transactions (kafka.batches.encode_records, issue 36), read
back by kafka-python's record batch reader (pure Python, not the aiokafka codec the agent
writes with): a marker is a control batch at its offset (transactional and control bits, the
producer id, one control record of key version 0 + type and value version 0 + coordinator
epoch), transactional records are batches of their producer with the transactional bit, plain
records are plain batches, all in offset order; what follows records left unsent is not sent."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from kafka.record.default_records import ControlRecord
from kafka.record.memory_records import MemoryRecords

from objectlog.format.index import LEVEL_L0, LEVEL_MARKER, PlacedRef, SegmentRef
from objectlog.format.segment import records_table
from objectlog.format.txn import marker, transactional
from objectlog.kafka.batches import encode_control, encode_records, kafka_producer_id
from objectlog.services.isolation import hole
from objectlog.stores.metadata import kafka_producer

STAMP = 1_700_000_000_000


def batches(data: bytes) -> list[Any]:
    records, found = MemoryRecords(data), []
    while (batch := records.next_batch()) is not None:
        assert batch.validate_crc()
        found.append(batch)
    assert records.valid_bytes() == len(data)
    return found


def summary(data: bytes) -> list[tuple[Any, ...]]:
    """Each batch: kind, base offset, next offset, producer id, transactional, and its records'
    offsets (a control batch: commit or abort)."""
    out: list[tuple[Any, ...]] = []
    for batch in batches(data):
        records = list(batch)
        if batch.is_control_batch:
            [control] = records
            assert isinstance(control, ControlRecord)
            kind = "commit" if control.commit else "abort"
            out.append((kind, batch.base_offset, batch.next_offset, batch.producer_id, True))
        else:
            offsets = [r.offset for r in records]
            head = ("data", batch.base_offset, batch.next_offset, batch.producer_id)
            out.append((*head, batch.is_transactional, offsets))
    return out


@pytest.mark.parametrize(
    ("commit", "kind"), [pytest.param(True, 1, id="commit"), pytest.param(False, 0, id="abort")]
)
def test_a_control_batch_is_kafkas_transaction_marker(commit: bool, kind: int) -> None:
    [batch] = batches(encode_control(41, commit, 7, STAMP))
    assert batch.magic == 2
    assert batch.is_control_batch and batch.is_transactional
    assert (batch.base_offset, batch.last_offset_delta, batch.next_offset) == (41, 0, 42)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 0, -1)
    assert batch.attributes & 0x30 == 0x30 and batch.compression_type == 0
    [record] = list(batch)
    assert isinstance(record, ControlRecord)
    assert (record.offset, record.timestamp, record.version, record.type) == (41, STAMP, 0, kind)
    assert record.key == struct.pack(">hh", 0, kind)
    assert record.value == struct.pack(">hi", 0, 0)  # version 0, coordinator epoch 0


def table(offsets: list[int]) -> Any:
    n = len(offsets)
    return records_table(
        topics=["t"] * n,
        partitions=[0] * n,
        offsets=offsets,
        timestamps=[STAMP] * n,
        timestamp_types=[0] * n,
        keys=[None] * n,
        values=[b"v%d" % o for o in offsets],
        headers=[[] for _ in range(n)],
    )


def data(base: int, span: int, producer: str | None = None) -> PlacedRef:
    txn = transactional(producer) if producer else ""
    return PlacedRef(base, SegmentRef(LEVEL_L0, "o", 0, 100, span, span, STAMP, STAMP, txn))


def mark(offset: int, commit: bool, producer: str, first: int) -> PlacedRef:
    return PlacedRef(offset, marker(commit, producer, first, STAMP))


K7, K8 = kafka_producer(7), kafka_producer(8)
# plain 0-1, k7 2-3, k8 4 (aborted), k7's commit 5, k8's abort 6, plain 7, k7 8 and commit 9
PLAN = [
    data(0, 2),
    data(2, 2, K7),
    data(4, 1, K8),
    mark(5, True, K7, 2),
    mark(6, False, K8, 4),
    data(7, 1),
    data(8, 1, K7),
    mark(9, True, K7, 8),
]


def test_records_and_markers_go_in_offset_order_each_producer_in_its_own_batches() -> None:
    answer = encode_records(table([0, 1, 2, 3, 4, 7, 8]), PLAN, 0, 10)
    assert summary(answer) == [
        ("data", 0, 2, -1, False, [0, 1]),
        ("data", 2, 4, 7, True, [2, 3]),
        ("data", 4, 5, 8, True, [4]),
        ("commit", 5, 6, 7, True),
        ("abort", 6, 7, 8, True),
        ("data", 7, 8, -1, False, [7]),
        ("data", 8, 9, 7, True, [8]),
        ("commit", 9, 10, 7, True),
    ]


def test_read_committed_holes_are_gaps_and_the_abort_still_moves_the_consumer() -> None:
    plan = [hole(p) if p.ref.txn == transactional(K8) else p for p in PLAN]
    assert plan[2].ref.level == LEVEL_MARKER and not plan[2].ref.txn
    answer = encode_records(table([0, 1, 2, 3, 7, 8]), plan, 0, 10)
    assert [s[:3] for s in summary(answer)] == [
        ("data", 0, 2),
        ("data", 2, 4),
        ("commit", 5, 6),
        ("abort", 6, 7),
        ("data", 7, 8),
        ("data", 8, 9),
        ("commit", 9, 10),
    ]
    # at the aborted range at the tail: nothing to read, the abort marker moves it past
    tail = encode_records(table([]), plan[2:5], 4, 7)
    assert [s[:3] for s in summary(tail)] == [("commit", 5, 6), ("abort", 6, 7)]


def test_nothing_past_records_left_unsent_goes() -> None:
    # a budget kept 0-2: the rest of k7's ref and all after it wait for the next fetch
    assert [s[:3] for s in summary(encode_records(table([0, 1, 2]), PLAN, 0))] == [
        ("data", 0, 2),
        ("data", 2, 3),
    ]
    # a budget kept 0-4: the markers after k8's ref go, not plain 7 nor what follows it
    kept = [s[:3] for s in summary(encode_records(table([0, 1, 2, 3, 4]), PLAN, 0))]
    assert kept == [
        ("data", 0, 2),
        ("data", 2, 4),
        ("data", 4, 5),
        ("commit", 5, 6),
        ("abort", 6, 7),
    ]


def test_a_fetch_from_inside_the_plan_sends_no_marker_below_it() -> None:
    answer = encode_records(table([7, 8]), PLAN, 6, 10)
    assert [s[:3] for s in summary(answer)] == [
        ("abort", 6, 7),
        ("data", 7, 8),
        ("data", 8, 9),
        ("commit", 9, 10),
    ]
    assert summary(encode_records(table([8]), PLAN, 8, 10))[-1][:2] == ("commit", 9)
    assert encode_records(table([]), PLAN, 10, 10) == b""


def test_a_result_without_refs_is_one_plain_batch() -> None:
    assert summary(encode_records(table([3, 5]), [], 3)) == [("data", 3, 6, -1, False, [3, 5])]


@pytest.mark.parametrize(
    ("producer", "expected"),
    [(kafka_producer(12), 12), (None, -1), ("lib-1", -1), ("k", -1), ("k-3", -1), ("kx1", -1)],
)
def test_kafka_producer_ids_from_producer_keys(producer: str | None, expected: int) -> None:
    assert kafka_producer_id(producer) == expected
