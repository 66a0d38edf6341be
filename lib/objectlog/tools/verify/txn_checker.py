"""The transactional checks (Jepsen's, on Kafka's transaction model): anomalies of the
consume-transform-produce pipeline's history (tools.verify.txn_pipeline) against its output
topic as a client with no faults finally read it, read_committed and read_uncommitted.

Each output record's value names its transaction and its input (``output_value``), so a value
names one send of one transaction. Anomalies:

- aborted txn read (G1a): a read_committed read returned an output of a transaction that was
  told aborted, or whose producer was abandoned before it asked to commit (the next instance
  of its transactional id fenced it, which aborts it);
- torn transaction: part of a transaction's outputs is visible read_committed, and another
  output of it, on a partition whose last stable offset is past it, is not;
- invisible commit: a transaction told committed with none of its outputs visible
  read_committed (none of them waiting past a last stable offset);
- lost output / duplicate output: an input below the pipeline group's final committed offset
  with no output, or with more than one, in the committed log (exactly once); one output value
  at two offsets of the log (the transactional producer's retries duplicated it);
- unknown output: an output no transaction of the history wrote, or naming an input the group
  never committed past;
- non-monotonic LSO: a partition's sampled last stable offset went backwards;
- stuck transaction: after the drain, a partition's last stable offset is below its high
  watermark (a transaction left open);
- unexplained gap (checker's, amended for this topic: DESIGN.md section 9, invariant 2): an
  offset missing from a read where no marker, no aborted transaction (read_committed) and no
  compaction (a ref holding fewer records than its span) explains it, read from the refs with
  format.txn's rules.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from objectlog.format.index import PlacedRef
from objectlog.format.txn import aborted_ranges, is_aborted, is_marker
from objectlog.services.isolation import READ_COMMITTED, READ_UNCOMMITTED
from objectlog.tools.verify.history import ABORTED, COMMITTED, History


class Verdict(Protocol):
    """Where anomalies go (checker.Verdict, which imports this module)."""

    def add(self, anomaly: str, example: str) -> None: ...


TXN_ANOMALIES = (
    "aborted txn read",
    "torn transaction",
    "invisible commit",
    "lost output",
    "duplicate output",
    "unknown output",
    "non-monotonic LSO",
    "stuck transaction",
)

Rows = Sequence[tuple[int, bytes | None]]  # (offset, value), one partition


def output_value(txn: str, topic: str, partition: int, offset: int) -> bytes:
    """The value of the output a transaction writes for the input at topic/partition/offset."""
    return f"{txn}|{topic}/{partition}/{offset}".encode()


def parse_output(value: bytes | None) -> tuple[str, int, int] | None:
    """(transaction, input partition, input offset) of an output value, or None."""
    try:
        txn, where = (value or b"").decode().split("|", 1)
        _, partition, offset = where.rsplit("/", 2)
        return txn, int(partition), int(offset)
    except ValueError:
        return None


@dataclass
class TxnFinal:
    """The pipeline's output topic as finally read, with what explains its gaps."""

    committed: Mapping[int, Rows]  # read_committed, log start to last stable offset
    uncommitted: Mapping[int, Rows]  # read_uncommitted, log start to high watermark
    log_start: Mapping[int, int]
    last_stable: Mapping[int, int]
    high_watermark: Mapping[int, int]
    refs: Mapping[int, Sequence[PlacedRef]]  # each partition's refs from its log start
    group_committed: Mapping[int, int]  # the pipeline group's on the input topic
    open_txns: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)  # the heads'


def check_transactions(
    history: History, inputs: Mapping[int, Rows], final: TxnFinal, verdict: Verdict
) -> None:
    """Every transactional anomaly (the module's docstring); inputs: the input topic's rows
    as finally read."""
    for partition in final.high_watermark:
        refs = final.refs.get(partition, ())
        start, stable = final.log_start[partition], final.last_stable[partition]
        rows = final.committed.get(partition, ())
        _check_gaps(partition, rows, refs, start, stable, READ_COMMITTED, verdict)
        rows = final.uncommitted.get(partition, ())
        end = final.high_watermark[partition]
        _check_gaps(partition, rows, refs, start, end, READ_UNCOMMITTED, verdict)
    _check_outcomes(history, final, verdict)
    _check_exactly_once(history, inputs, final, verdict)
    _check_stable(history, final, verdict)


def _check_gaps(
    partition: int,
    rows: Rows,
    refs: Sequence[PlacedRef],
    start: int,
    end: int,
    isolation: str,
    verdict: Verdict,
) -> None:
    """Each ref in [start, end) must read as exactly its records: none for a marker, or for
    read_committed a ref of an aborted transaction; an L0 ref's records are its span, an L1
    ref's fewer where compaction dropped some. An offset outside every ref, or read twice,
    or a read out of order, is unexplained too."""
    label = f"output partition {partition} ({isolation})"
    offsets = [offset for offset, _ in rows]
    if offsets != sorted(set(offsets)) or any(not start <= o < end for o in offsets):
        verdict.add("unexplained gap", f"{label}: offsets out of order or range {offsets[:5]}")
        return
    aborted = aborted_ranges(refs) if isolation == READ_COMMITTED else []
    explained = 0
    for placed in refs:
        low, high = max(placed.base_offset, start), min(placed.end_offset, end)
        if low >= high:
            continue
        read = bisect.bisect_left(offsets, high) - bisect.bisect_left(offsets, low)
        explained += read
        if is_marker(placed.ref) or is_aborted(placed, aborted):
            expected = 0
        elif (low, high) == (placed.base_offset, placed.end_offset):
            expected = placed.ref.records
        else:  # a ref the read's end or log start cuts: at most what it covers
            expected = min(read, high - low)
        if read != expected:
            verdict.add(
                "unexplained gap",
                f"{label}: ref at {placed.base_offset} (span {placed.ref.span}, "
                f"{expected} to read) read as {read}",
            )
    if explained != len(offsets):
        verdict.add("unexplained gap", f"{label}: {len(offsets) - explained} reads in no ref")


def _check_outcomes(history: History, final: TxnFinal, verdict: Verdict) -> None:
    visible = {value for rows in final.committed.values() for _, value in rows}
    located: dict[bytes | None, list[tuple[int, int]]] = defaultdict(list)
    for partition, rows in final.uncommitted.items():
        for offset, value in rows:
            located[value].append((partition, offset))
    for value, places in located.items():
        if len(places) > 1:
            verdict.add("duplicate output", f"{value!r} at {places}")

    def waiting(partition: int, value: bytes) -> bool:  # past its partition's stable offset
        return any(o >= final.last_stable.get(p, 0) for p, o in located.get(value, ()))

    for txn in history.txns:
        seen = [value for _, value in txn.outputs if value in visible]
        told = "crashed" if txn.crashed else txn.outcome
        if seen and (txn.outcome == ABORTED or txn.crashed):
            verdict.add("aborted txn read", f"{txn.name} ({told}): {seen[:3]} read_committed")
            continue
        missing = [v for p, v in txn.outputs if v not in visible and not waiting(p, v)]
        if seen and missing:
            verdict.add(
                "torn transaction",
                f"{txn.name} ({told}): {len(seen)} of {len(txn.outputs)} outputs visible, "
                f"{missing[:3]} not (found at {[located.get(v) for v in missing[:3]]})",
            )
        elif txn.outcome == COMMITTED and not seen and missing:
            verdict.add("invisible commit", f"{txn.name}: none of {len(txn.outputs)} outputs")


def _check_exactly_once(
    history: History, inputs: Mapping[int, Rows], final: TxnFinal, verdict: Verdict
) -> None:
    written = {value for txn in history.txns for _, value in txn.outputs}
    outputs: Counter[tuple[int, int]] = Counter()
    by_input: dict[tuple[int, int], list[bytes | None]] = defaultdict(list)
    for partition, rows in final.committed.items():
        for offset, value in rows:
            parsed = parse_output(value)
            if value not in written or parsed is None:
                verdict.add("unknown output", f"{partition}/{offset}: {value!r}")
                continue
            _, in_partition, in_offset = parsed
            outputs[(in_partition, in_offset)] += 1
            by_input[(in_partition, in_offset)].append(value)
    consumed = set()
    for partition, rows in inputs.items():
        limit = final.group_committed.get(partition, 0)
        for offset, _ in rows:
            if offset >= limit:
                continue
            consumed.add((partition, offset))
            n = outputs[(partition, offset)]
            if n == 0:
                verdict.add("lost output", f"input {partition}/{offset} below {limit}")
            elif n > 1:
                verdict.add(
                    "duplicate output",
                    f"input {partition}/{offset}: {by_input[(partition, offset)][:3]}",
                )
    for where in sorted(set(outputs) - consumed):
        verdict.add("unknown output", f"{by_input[where][:2]} name an input not consumed")


def _check_stable(history: History, final: TxnFinal, verdict: Verdict) -> None:
    highest: dict[int, int] = {}
    for sample in history.stable:
        if sample.last_stable < highest.get(sample.partition, -1):
            verdict.add(
                "non-monotonic LSO",
                f"partition {sample.partition}: {sample.last_stable} after "
                f"{highest[sample.partition]}",
            )
        highest[sample.partition] = max(highest.get(sample.partition, -1), sample.last_stable)
    for partition, end in final.high_watermark.items():
        stable = final.last_stable[partition]
        if stable != end:
            opened = dict(final.open_txns.get(partition, {}))
            verdict.add(
                "stuck transaction",
                f"output partition {partition}: last stable {stable}, high watermark {end}, "
                f"open {opened}",
            )
