"""The registry workload's tables: operations by kind and outcome, refusals by error, faults
injected by kind, each anomaly count, the verdict."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.table import Table
from rich.text import Text

from objectlog.tools.verify.checker import Verdict
from objectlog.tools.verify.registry_checker import REGISTRY_ANOMALIES
from objectlog.tools.verify.registry_history import OUTCOMES, REFUSED, RegistryHistory
from objectlog.tools.verify.registry_workload import REGISTRY_FAULT_KINDS


def registry_report(history: RegistryHistory, verdict: Verdict, console: Console) -> bool:
    """Print the tables and the verdict; whether it passed."""
    outcomes = history.outcomes()
    operations = Table(title=f"schema registry operations ({history.seconds:.0f} s)")
    for column in ("operation", *OUTCOMES, "all"):
        operations.add_column(column, justify="left" if column == "operation" else "right")
    for kind in sorted({kind for kind, _ in outcomes}):
        row = [outcomes[(kind, outcome)] for outcome in OUTCOMES]
        operations.add_row(kind, *map(str, row), str(sum(row)))
    refusals = Counter(op.error for op in history.ops if op.outcome == REFUSED)
    for error, count in sorted(refusals.items()):
        operations.add_row(f"  refused: {error}", "", str(count), "", "")
    console.print(operations)

    faults = Table(title="schema registry faults injected")
    faults.add_column("kind")
    faults.add_column("count", justify="right")
    for kind in REGISTRY_FAULT_KINDS:
        faults.add_row(kind, str(history.faults[kind]) if kind in history.faults else "off")
    for event, count in sorted(history.events.items()):
        faults.add_row(f"  event: {event}", str(count))
    console.print(faults)

    anomalies = Table(title="schema registry anomalies")
    anomalies.add_column("anomaly")
    anomalies.add_column("count", justify="right")
    anomalies.add_column("examples")
    for name in REGISTRY_ANOMALIES:
        examples = "; ".join(verdict.examples.get(name, []))
        anomalies.add_row(name, str(verdict.counts[name]), examples)
    console.print(anomalies)
    if verdict.ok:
        console.print("schema registry verdict: [bold green]PASS[/]: no anomaly")
    else:
        console.print(
            Text.assemble(
                "schema registry verdict: ", ("FAIL", "bold red"), f": {verdict.summary()}"
            )
        )
    return verdict.ok
