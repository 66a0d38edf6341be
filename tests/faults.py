"""Workload checks for the tests, through the verify checker (objectlog.tools.verify.checker);
the fault injector itself is objectlog.tools.verify.faults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from objectlog.clients.producer import RecordFuture
from objectlog.tools.verify import checker
from objectlog.tools.verify.checker import FinalState
from objectlog.tools.verify.faults import (  # noqa: F401  (re-exported for the tests)
    DYNAMODB_THROTTLING,
    Fault,
    FaultInjector,
    InjectedCrash,
    Pause,
    both,
    canned,
    carried_spills,
    commits,
    fast_retries,
    from_producer,
    l0_objects,
    on_partition,
    spills,
    swaps,
)
from objectlog.tools.verify.history import History, Produce

# ---- checks: the verify workload's checker (objectlog.tools.verify.checker) ----------------


def read_partition(
    log: Any, topic: str, partition: int = 0, *, max_records: int | None = None
) -> list[bytes | None]:
    """Every value of the partition read back from offset 0 (so a value's index is its offset),
    checked by the verify checker: the reads return every offset from 0 to the high watermark
    once, in order (no unexplained gap)."""
    rows, high_watermark = checker.read_partition(log, topic, partition, max_records=max_records)
    verdict = checker.check_log(
        FinalState({partition: rows}, {partition: 0}, {partition: high_watermark})
    )
    assert verdict.ok, dict(verdict.examples)
    return [value for _, value in rows]


@dataclass
class Sent:
    """One send() of a workload: what was sent where, and what the producer said."""

    writer: int
    partition: int
    value: bytes
    future: RecordFuture

    def produce(self) -> Produce:
        """This send as the verify history records one."""
        return Produce.of(str(self.writer), self.partition, self.value, self.future, timeout=60)


def check_history(log: Any, topic: str, partitions: int, history: list[Sent]) -> None:
    """The verify checker over a whole workload (every value sent once, so unique), against a
    read of each partition from offset 0 in steps of 50 records.

    Acknowledged records are readable exactly once, at the partition they were sent to and the
    offset they were given; refused ones ("nothing changed") are not readable; unknown ones are
    readable at most once; every record read was sent; each writer's acknowledged records on a
    partition keep their send order; the reads cover every offset up to the high watermark.
    """
    check_produces(log, topic, partitions, [sent.produce() for sent in history])


def check_produces(log: Any, topic: str, partitions: int, produces: list[Produce]) -> None:
    """check_history's checks over what the clients were told (Produce records)."""
    reads = {p: checker.read_partition(log, topic, p, max_records=50) for p in range(partitions)}
    final = FinalState(
        partitions={p: rows for p, (rows, _) in reads.items()},
        log_start=dict.fromkeys(reads, 0),
        high_watermark={p: high_watermark for p, (_, high_watermark) in reads.items()},
    )
    verdict = checker.check(History(produces=produces), final)
    assert verdict.ok, dict(verdict.examples)
