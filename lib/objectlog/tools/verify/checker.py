"""The checker: anomalies in a workload's history, against the log as finally read.

Every produced value is unique, so a value names one send. The final read is every partition
from its log start to its high watermark, by a client with no faults. Anomalies (Jepsen's Kafka
workload names, DESIGN.md section 9):

- lost: an acknowledged record is not in the log at the offset it was given (invariant 1);
- duplicate: one value at two offsets (invariant 3: retries never duplicate);
- inconsistent offset: one offset read with two different values, in any two reads (2);
- unexplained gap: an offset between log start and high watermark with no record, where no
  compaction or retention can explain it (the workload's topic is delete-policy, no retention);
- aborted read: a record whose send was refused is readable (invariant 4);
- non-monotonic: a member's polls of a partition went backwards, or repeated an offset, while
  it kept owning the partition;
- committed backwards: a group's committed offset decreased without a seek or reset (5);
- skipped: a record below the group's final committed offset that no member ever processed;
- unreferenced object: an object older than the GC horizon that no index references (7).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from objectlog.tools.verify.history import FAILED, OK, History

ANOMALIES = (
    "lost",
    "duplicate",
    "inconsistent offset",
    "unexplained gap",
    "aborted read",
    "non-monotonic",
    "committed backwards",
    "skipped",
    "unreferenced object",
)

Rows = Sequence[tuple[int, bytes | None]]  # (offset, value), one partition, as finally read


@dataclass
class FinalState:
    partitions: Mapping[int, Rows]
    log_start: Mapping[int, int]
    high_watermark: Mapping[int, int]
    final_committed: Mapping[int, int]
    unreferenced_old_objects: Sequence[str] = ()


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


def check(history: History, final: FinalState) -> Verdict:
    verdict = Verdict()
    where = _positions(final)
    _check_produces(history, where, verdict)
    _check_log(final, verdict)
    _check_reads(history, final, verdict)
    _check_group(history, final, verdict)
    for key in final.unreferenced_old_objects:
        verdict.add("unreferenced object", key)
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
    for op in history.produces:
        found = where.get(op.value, [])
        if len(found) > 1:
            verdict.add("duplicate", f"{op.value!r} at {found}")
        if op.outcome == OK and (op.partition, op.offset) not in found:
            verdict.add("lost", f"{op.client} {op.value!r} acked at {op.partition}/{op.offset}")
        if op.outcome == FAILED and found:
            verdict.add("aborted read", f"{op.client} {op.value!r} ({op.error}) read at {found}")


def _check_log(final: FinalState, verdict: Verdict) -> None:
    for partition, rows in final.partitions.items():
        offsets = [offset for offset, _ in rows]
        expected = list(range(final.log_start[partition], final.high_watermark[partition]))
        if offsets != expected:
            missing = sorted(set(expected) - set(offsets))[:5]
            verdict.add("unexplained gap", f"partition {partition}: missing offsets {missing}")


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
    highest: dict[int, int] = {}
    for sample in history.committed:
        if sample.offset < highest.get(sample.partition, 0):
            verdict.add(
                "committed backwards",
                f"partition {sample.partition}: {sample.offset} after {highest[sample.partition]}",
            )
        highest[sample.partition] = max(highest.get(sample.partition, 0), sample.offset)
    processed = {(p, o) for poll in history.polls for p, o, _ in poll.records}
    for partition, committed in final.final_committed.items():
        for offset, _ in final.partitions.get(partition, ()):
            if offset < committed and (partition, offset) not in processed:
                verdict.add("skipped", f"{partition}/{offset} below committed {committed}")
