"""The transactional checks of objectlog verify (tools.verify.txn_checker) on injected
histories, no servers: each anomaly planted in a clean history is found, and the clean
history (markers, aborted records, a compacted range) passes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pytest

from objectlog.format.index import LEVEL_L0, LEVEL_L1, PlacedRef, SegmentRef
from objectlog.format.txn import marker, transactional
from objectlog.tools.verify.checker import ANOMALIES, FinalState, Verdict, check
from objectlog.tools.verify.history import (
    ABORTED,
    COMMITTED,
    UNKNOWN,
    History,
    StableSample,
    Txn,
)
from objectlog.tools.verify.txn_checker import (
    TXN_ANOMALIES,
    TxnFinal,
    check_transactions,
    output_value,
    parse_output,
)

PRODUCER = "k1"
Entry = tuple[str, bytes | None]  # ("T", value): a transactional record; ("C"|"A", None): a marker


def out(txn: str, offset: int) -> bytes:
    return output_value(txn, "verify", 0, offset)


@dataclass
class Partition:
    """One output partition built from entries as the log would hold them."""

    refs: list[PlacedRef] = field(default_factory=list)
    uncommitted: list[tuple[int, bytes | None]] = field(default_factory=list)
    committed: list[tuple[int, bytes | None]] = field(default_factory=list)
    last_stable: int = 0
    end: int = 0


def partition(*entries: Entry) -> Partition:
    built = Partition()
    pending: list[tuple[int, bytes | None]] = []
    for offset, (kind, value) in enumerate(entries):
        if kind == "T":
            ref = SegmentRef(LEVEL_L0, f"o{offset}", 0, 10, 1, 1, 0, 0, transactional(PRODUCER))
            built.uncommitted.append((offset, value))
            pending.append((offset, value))
        else:
            first = pending[0][0] if pending else offset
            ref = marker(kind == "C", PRODUCER, first, 0)
            built.committed += pending if kind == "C" else []
            pending = []
        built.refs.append(PlacedRef(offset, ref))
    built.end = len(entries)
    built.last_stable = pending[0][0] if pending else built.end
    return built


@dataclass
class Scenario:
    """Two output partitions, three transactions over inputs 0/0..0/3: A committed, B
    aborted on purpose, C committed (B's input again, and the next)."""

    outputs: dict[int, Partition]
    txns: list[Txn]
    inputs: dict[int, list[tuple[int, bytes | None]]]
    group_committed: dict[int, int]
    stable: list[StableSample]

    def final(self) -> TxnFinal:
        return TxnFinal(
            committed={p: built.committed for p, built in self.outputs.items()},
            uncommitted={p: built.uncommitted for p, built in self.outputs.items()},
            log_start=dict.fromkeys(self.outputs, 0),
            last_stable={p: built.last_stable for p, built in self.outputs.items()},
            high_watermark={p: built.end for p, built in self.outputs.items()},
            refs={p: built.refs for p, built in self.outputs.items()},
            group_committed=self.group_committed,
        )

    def history(self) -> History:
        history = History()
        for txn in self.txns:
            history.add_txn(txn)
        for sample in self.stable:
            history.add_stable(sample)
        return history

    def verdict(self) -> Verdict:
        verdict = Verdict()
        check_transactions(self.history(), self.inputs, self.final(), verdict)
        return verdict


def txn(name: str, outcome: str, inputs: list[int], outputs: list[int], **more: object) -> Txn:
    """A transaction over inputs 0/i writing out(name, i) to the output partitions given."""
    values = tuple((p, out(name, i)) for p, i in zip(outputs, inputs, strict=True))
    return Txn(name, "verify-txn-0", outcome, tuple((0, i) for i in inputs), values, **more)  # type: ignore[arg-type]


def clean() -> Scenario:
    return Scenario(
        outputs={
            0: partition(
                ("T", out("A", 0)),
                ("C", None),
                ("T", out("B", 2)),
                ("A", None),
                ("T", out("C", 2)),
                ("C", None),
            ),
            1: partition(("T", out("A", 1)), ("C", None), ("T", out("C", 3)), ("C", None)),
        },
        txns=[
            txn("A", COMMITTED, [0, 1], [0, 1]),
            txn("B", ABORTED, [2], [0]),
            txn("C", COMMITTED, [2, 3], [0, 1]),
        ],
        inputs={0: [(i, b"in-%d" % i) for i in range(4)]},
        group_committed={0: 4},
        stable=[StableSample(0, 1, 1), StableSample(0, 2, 3), StableSample(0, 6, 6)],
    )


def found(verdict: Verdict) -> set[str]:
    return {name for name, count in verdict.counts.items() if count}


def test_a_clean_history_passes() -> None:
    verdict = clean().verdict()
    assert found(verdict) == set(), verdict.summary()


def test_a_compacted_range_explains_its_gaps() -> None:
    """The compactor keeps neither markers nor aborted records: an L1 ref over partition 0's
    six offsets holds its two committed records, and both reads have gaps it explains."""
    scenario = clean()
    p0 = scenario.outputs[0]
    l1 = SegmentRef(LEVEL_L1, "l1/0", 0, 100, 6, 2, 0, 0)
    p0.refs = [PlacedRef(0, l1)]
    p0.uncommitted = list(p0.committed)
    assert found(scenario.verdict()) == set(), scenario.verdict().summary()
    p0.uncommitted = p0.committed[:1]  # one record fewer than the ref holds
    assert found(scenario.verdict()) == {"unexplained gap"}


def read_aborted(s: Scenario) -> None:
    s.outputs[0].committed = sorted([*s.outputs[0].committed, (2, out("B", 2))])


def crashed_and_read(s: Scenario) -> None:
    s.txns[1] = replace(s.txns[1], outcome=UNKNOWN, crashed=True)
    read_aborted(s)


def torn(s: Scenario) -> None:
    """C's marker on partition 1 is an abort while partition 0's is a commit."""
    s.outputs[1] = partition(("T", out("A", 1)), ("C", None), ("T", out("C", 3)), ("A", None))


def invisible(s: Scenario) -> None:
    s.outputs[0] = partition(
        ("T", out("A", 0)),
        ("C", None),
        ("T", out("B", 2)),
        ("A", None),
        ("T", out("C", 2)),
        ("A", None),
    )
    torn(s)


def lost(s: Scenario) -> None:
    s.inputs[0].append((4, b"in-4"))
    s.group_committed[0] = 5


def duplicated(s: Scenario) -> None:
    s.outputs[1] = partition(
        ("T", out("A", 1)), ("C", None), ("T", out("C", 3)), ("T", out("C", 3)), ("C", None)
    )


def unknown(s: Scenario) -> None:
    s.outputs[1] = partition(
        ("T", out("A", 1)), ("C", None), ("T", out("C", 3)), ("T", b"nobody"), ("C", None)
    )


def lso_backwards(s: Scenario) -> None:
    s.stable.append(StableSample(0, 4, 6))


def stuck(s: Scenario) -> None:
    s.outputs[1] = partition(
        ("T", out("A", 1)), ("C", None), ("T", out("C", 3)), ("C", None), ("T", out("D", 4))
    )
    s.txns.append(txn("D", UNKNOWN, [4], [1], crashed=True))


def gap(s: Scenario) -> None:
    s.outputs[0].uncommitted = s.outputs[0].uncommitted[1:]


# an aborted output read is also a second output of its input, and a read of a ref the index
# says is aborted
G1A = {"aborted txn read", "duplicate output", "unexplained gap"}


@pytest.mark.parametrize(
    ("plant", "expected"),
    [
        pytest.param(read_aborted, G1A, id="G1a"),
        pytest.param(crashed_and_read, G1A, id="G1a-crash"),
        pytest.param(torn, {"torn transaction", "lost output"}, id="torn"),
        pytest.param(invisible, {"invisible commit", "lost output"}, id="invisible-commit"),
        pytest.param(lost, {"lost output"}, id="lost-output"),
        pytest.param(duplicated, {"duplicate output"}, id="duplicate-output"),
        pytest.param(unknown, {"unknown output"}, id="unknown-output"),
        pytest.param(lso_backwards, {"non-monotonic LSO"}, id="lso-backwards"),
        pytest.param(stuck, {"stuck transaction"}, id="stuck"),
        pytest.param(gap, {"unexplained gap"}, id="gap"),
    ],
)
def test_each_planted_anomaly_is_found(
    plant: Callable[[Scenario], None], expected: set[str]
) -> None:
    scenario = clean()
    plant(scenario)
    verdict = scenario.verdict()
    assert found(verdict) == expected, verdict.summary()


def test_a_transaction_waiting_past_the_last_stable_offset_is_not_torn() -> None:
    """Part of a transaction past a partition's last stable offset (its marker not yet written
    there, its offsets committed) is not missing from a torn transaction: the stuck check
    speaks of it, and exactly-once of the input whose output is not yet readable."""
    scenario = clean()
    scenario.outputs[1] = partition(
        ("T", out("A", 1)), ("C", None), ("T", out("C", 3)), ("C", None), ("T", out("E", 4))
    )
    scenario.outputs[0].refs.append(PlacedRef(6, SegmentRef(LEVEL_L0, "o6", 0, 10, 1, 1, 0, 0)))
    scenario.outputs[0].uncommitted.append((6, out("E", 5)))
    scenario.outputs[0].committed.append((6, out("E", 5)))
    scenario.outputs[0].end = scenario.outputs[0].last_stable = 7
    scenario.txns.append(txn("E", UNKNOWN, [4, 5], [1, 0]))
    scenario.inputs[0] += [(4, b"in-4"), (5, b"in-5")]
    scenario.group_committed[0] = 6
    verdict = scenario.verdict()
    assert found(verdict) == {"stuck transaction", "lost output"}, verdict.summary()


def test_the_checker_runs_them_beside_its_own() -> None:
    scenario = clean()
    read_aborted(scenario)
    inputs = FinalState(scenario.inputs, {0: 0}, {0: 4}, {0: 0})
    inputs.transactions = scenario.final()
    verdict = check(scenario.history(), inputs)
    assert set(TXN_ANOMALIES) <= set(ANOMALIES) == set(verdict.counts)
    # the input topic's own checks run too: nobody produced its records
    assert found(verdict) == G1A | {"unknown value"}


def test_an_output_value_names_its_transaction_and_input() -> None:
    assert parse_output(output_value("t0-1.2", "verify", 3, 41)) == ("t0-1.2", 3, 41)
    assert parse_output(b"verify-0") is None and parse_output(None) is None
