"""The checker: anomalies in a workload's history, against the log as finally read.

Every produced value is unique, so a value names one send. The final read is every partition
from its log start to its high watermark, by a client with no faults. Anomalies (Jepsen's Kafka
workload names, DESIGN.md section 9):

- lost: an acknowledged record is not in the log at the offset it was given (invariant 1);
- wrong partition: an acknowledged record landed on another partition than the one its client
  named (1);
- duplicate: one value at two offsets (invariant 3: retries never duplicate);
- inconsistent offset: one offset read with two different values, in any two reads (2);
- unexplained gap: an offset between log start and high watermark with no record, where no
  compaction or retention can explain it (the workload's topic is delete-policy, no retention);
- aborted read: a record whose send was refused is readable (invariant 4);
- unknown value: the log holds a record that no send of the history produced (1, 2);
- non-monotonic send: one client's acknowledged records on a partition got offsets out of
  the order it sent them in (2);
- non-monotonic: a member's polls of a partition went backwards, or repeated an offset, while
  it kept owning the partition;
- committed backwards: a group's committed offset decreased without a seek or reset (5);
- skipped: a record below the group's final committed offset that no member ever processed;
- unreferenced object: an object older than the GC horizon that no index references (7);
- and, where the workload ran its transactional pipeline, txn_checker's (TXN_ANOMALIES).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from objectlog.tools.verify.history import FAILED, OK, History
from objectlog.tools.verify.txn_checker import TXN_ANOMALIES, TxnFinal, check_transactions

ANOMALIES = (
    "lost",
    "wrong partition",
    "duplicate",
    "inconsistent offset",
    "unexplained gap",
    "aborted read",
    "unknown value",
    "non-monotonic send",
    "non-monotonic",
    "committed backwards",
    "skipped",
    "unreferenced object",
    *TXN_ANOMALIES,
)

Rows = Sequence[tuple[int, bytes | None]]  # (offset, value), one partition, as finally read


@dataclass
class FinalState:
    partitions: Mapping[int, Rows]
    log_start: Mapping[int, int]
    high_watermark: Mapping[int, int]
    final_committed: Mapping[int, int] = field(default_factory=dict)
    unreferenced_old_objects: Sequence[str] = ()
    other_groups: Mapping[str, Mapping[int, int]] = field(default_factory=dict)  # committed
    transactions: TxnFinal | None = None  # the transactional pipeline's output topic


@dataclass
class Verdict:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ANOMALIES, 0))
    examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def add(self, anomaly: str, example: str) -> None:
        self.counts[anomaly] += 1
        if len(self.examples[anomaly]) < 5:
            self.examples[anomaly].append(example)

    @property
    def ok(self) -> bool:
        return not any(self.counts.values())

    def summary(self) -> str:
        """Every anomaly found, its count and examples, on one line (a log excerpt that keeps
        only the failing line still says what went wrong)."""
        found = [
            f"{name} x{count}: {'; '.join(self.examples[name])}"
            for name, count in self.counts.items()
            if count
        ]
        return " | ".join(found) or "no anomaly"


def read_partition(
    log: Any, topic: str, partition: int, start: int = 0, **fetch_options: Any
) -> tuple[list[tuple[int, bytes | None]], int]:
    """The final read: every (offset, value) of a partition from start, fetched in steps
    (``fetch_options`` such as max_records set their size) until a fetch returns nothing, and
    the high watermark that last fetch reported. Whatever a fetch skipped or repeated, or a
    read that ended short of the high watermark, shows as an unexplained gap."""
    rows: list[tuple[int, bytes | None]] = []
    offset = start
    while True:
        result = log.fetch(topic, partition, offset, **fetch_options)
        records = result.records
        rows += [(record.offset, record.value) for record in records]
        if not records or result.next_offset <= offset:
            return rows, result.high_watermark
        offset = result.next_offset


def check(history: History, final: FinalState) -> Verdict:
    """Every anomaly of the history against the final read (the module's docstring)."""
    verdict = check_log(final)
    where = _positions(final)
    _check_produces(history, where, verdict)
    _check_values(history, final, verdict)
    _check_reads(history, final, verdict)
    _check_group(history, final, verdict)
    for key in final.unreferenced_old_objects:
        verdict.add("unreferenced object", key)
    if final.transactions is not None:
        check_transactions(history, final.partitions, final.transactions, verdict)
    return verdict


def _positions(final: FinalState) -> dict[bytes | None, list[tuple[int, int]]]:
    where: dict[bytes | None, list[tuple[int, int]]] = defaultdict(list)
    for partition, rows in final.partitions.items():
        for offset, value in rows:
            where[value].append((partition, offset))
    return where


def _check_produces(
    history: History, where: Mapping[bytes | None, list[tuple[int, int]]], verdict: Verdict
) -> None:
    last: dict[tuple[str, int], int] = {}  # (client, partition) -> its last acked offset
    for op in history.produces:
        found = where.get(op.value, [])
        if len(found) > 1:
            verdict.add("duplicate", f"{op.value!r} at {found}")
        if op.outcome == OK and (op.partition, op.offset) not in found:
            verdict.add("lost", f"{op.client} {op.value!r} acked at {op.partition}/{op.offset}")
        if op.outcome == OK and op.sent_to is not None and op.sent_to != op.partition:
            verdict.add(
                "wrong partition",
                f"{op.client} {op.value!r} sent to {op.sent_to}, acked at {op.partition}",
            )
        if op.outcome == FAILED and found:
            verdict.add("aborted read", f"{op.client} {op.value!r} ({op.error}) read at {found}")
        if op.outcome == OK and op.offset is not None:
            stream = (op.client, op.partition)
            if op.offset <= last.get(stream, -1):
                verdict.add(
                    "non-monotonic send",
                    f"{op.client} {op.value!r} acked at {op.partition}/{op.offset} "
                    f"after {last[stream]}",
                )
            last[stream] = op.offset


def _check_values(history: History, final: FinalState, verdict: Verdict) -> None:
    sent = {op.value for op in history.produces}
    for partition, rows in final.partitions.items():
        for offset, value in rows:
            if value not in sent:
                verdict.add("unknown value", f"{partition}/{offset}: {value!r}")


def check_log(final: FinalState) -> Verdict:
    """The final read alone: each partition's offsets run from log start to high watermark."""
    verdict = Verdict()
    for partition, rows in final.partitions.items():
        offsets = [offset for offset, _ in rows]
        expected = list(range(final.log_start[partition], final.high_watermark[partition]))
        if offsets != expected:
            missing = sorted(set(expected) - set(offsets))[:5]
            verdict.add("unexplained gap", f"partition {partition}: missing offsets {missing}")
    return verdict


def _check_reads(history: History, final: FinalState, verdict: Verdict) -> None:
    seen: dict[tuple[int, int], bytes | None] = {}
    for partition, rows in final.partitions.items():
        for offset, value in rows:
            seen[(partition, offset)] = value
    last: dict[tuple[str, int, int], int] = {}
    for poll in history.polls:
        for partition, offset, value in poll.records:
            known = seen.setdefault((partition, offset), value)
            if known != value:
                verdict.add("inconsistent offset", f"{partition}/{offset}: {known!r} vs {value!r}")
            stream = (poll.member, poll.ownership, partition)
            if offset <= last.get(stream, -1):
                verdict.add(
                    "non-monotonic", f"{poll.member} read {partition}/{offset} after {last[stream]}"
                )
            last[stream] = offset


def _check_group(history: History, final: FinalState, verdict: Verdict) -> None:
    """Per group: committed offsets never go backwards, and nothing below a group's final
    committed offset went unprocessed by that group's members."""
    highest: dict[tuple[str, int], int] = {}
    for sample in history.committed:
        key = (sample.group, sample.partition)
        if sample.offset < highest.get(key, 0):
            verdict.add(
                "committed backwards",
                f"{sample.group or 'group'} partition {sample.partition}: {sample.offset} "
                f"after {highest[key]}",
            )
        highest[key] = max(highest.get(key, 0), sample.offset)
    finals = {"": final.final_committed, **final.other_groups}
    for group, committed_by_partition in finals.items():
        processed = {
            (p, o) for poll in history.polls if poll.group == group for p, o, _ in poll.records
        }
        for partition, committed in committed_by_partition.items():
            for offset, _ in final.partitions.get(partition, ()):
                if offset < committed and (partition, offset) not in processed:
                    verdict.add(
                        "skipped",
                        f"{group or 'group'} {partition}/{offset} below committed {committed}",
                    )
