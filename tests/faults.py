"""Checks over workload histories; the fault injector itself is objectlog.tools.verify.faults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from objectlog.clients.producer import RecordFuture
from objectlog.errors import ErrorKind
from objectlog.format.records import RecordMetadata
from objectlog.tools.verify.faults import (  # noqa: F401  (re-exported for the tests)
    DYNAMODB_THROTTLING,
    Fault,
    FaultInjector,
    InjectedCrash,
    Pause,
    async_read_client,
    both,
    canned,
    commits,
    fast_retries,
    from_producer,
    l0_objects,
    on_partition,
    spills,
)

# ---- checks ------------------------------------------------------------------------------


def read_partition(
    log: Any, topic: str, partition: int = 0, *, max_records: int | None = None
) -> list[bytes | None]:
    """Every value of the partition read back from offset 0 (so a value's index is its offset),
    checking that each fetch returns consecutive offsets from where it was asked and that the
    reads end exactly at the high watermark."""
    values: list[bytes | None] = []
    offset = 0
    while True:
        result = log.fetch(topic, partition, offset, max_records=max_records)
        offsets = [record.offset for record in result.records]
        assert offsets == list(range(offset, offset + len(offsets))), (offset, offsets)
        if not offsets:
            assert offset == result.high_watermark, (offset, result.high_watermark)
            return values
        values.extend(record.value for record in result.records)
        offset = result.next_offset


@dataclass
class Sent:
    """One send() of a workload: what was sent where, and what the producer said."""

    writer: int
    partition: int
    value: bytes
    future: RecordFuture

    @property
    def metadata(self) -> RecordMetadata | None:
        return None if self.future.exception(timeout=60) else self.future.result()


def check_history(log: Any, topic: str, partitions: int, history: list[Sent]) -> None:
    """Invariants 1, 2 and 4 over a whole workload (every value sent once, so unique),
    checked against a read of each partition from offset 0.

    Acknowledged records are readable exactly once, at their offset; refused ones ("nothing
    changed") are not readable; unknown ones are readable at most once; each writer's
    acknowledged records keep their send order.
    """
    stored = {p: read_partition(log, topic, p, max_records=50) for p in range(partitions)}
    positions: dict[bytes | None, list[tuple[int, int]]] = {}
    for partition, values in stored.items():
        for offset, value in enumerate(values):
            positions.setdefault(value, []).append((partition, offset))
    for sent in history:
        where = positions.get(sent.value, [])
        error = sent.future.exception(timeout=60)
        if error is None:
            metadata = sent.future.result()
            assert where == [(metadata.partition, metadata.offset)], (sent, where)
            assert metadata.partition == sent.partition
        elif error.kind is ErrorKind.UNKNOWN_OUTCOME:
            assert len(where) <= 1, (sent, error, where)
        else:
            assert where == [], (sent, error, where)
    everything = {s.value for s in history}
    assert all(value in everything for values in stored.values() for value in values)
    for writer in {s.writer for s in history}:
        for partition in range(partitions):
            acked = [
                md.offset
                for s in history
                if s.writer == writer and s.partition == partition and (md := s.metadata)
            ]
            assert acked == sorted(acked), f"writer {writer} reordered on partition {partition}"
