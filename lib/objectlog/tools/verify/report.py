"""The verify table: operations, faults injected by kind, each anomaly count, the verdict."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from objectlog.tools.verify.aio_members import AIO_MEMBER
from objectlog.tools.verify.checker import ANOMALIES
from objectlog.tools.verify.history import ABORTED, COMMITTED, UNKNOWN
from objectlog.tools.verify.workload import (
    FAULT_KINDS,
    KAFKA_GROUP,
    REST_GROUP,
    TXN_GROUP,
    WorkloadResult,
)


def render(result: WorkloadResult, console: Console) -> None:
    outcomes = result.outcomes
    clients = sorted({client for client, _ in outcomes})
    operations = Table(title=f"operations ({result.seconds:.0f} s)")
    for column in ("client", "ok", "failed", "unknown", "all"):
        operations.add_column(column, justify="left" if column == "client" else "right")
    for client in clients:
        row = [outcomes[(client, outcome)] for outcome in ("ok", "failed", "unknown")]
        operations.add_row(client, *map(str, row), str(sum(row)))
    groups = (
        ("", "group"),
        (KAFKA_GROUP, "kafka group"),
        (REST_GROUP, "rest group"),
        (TXN_GROUP, "txn pipeline"),
    )
    for group, label in groups:
        polls = [p for p in result.history.polls if p.group == group]
        records = str(sum(len(p.records) for p in polls))
        operations.add_row(f"{label} (polls / records)", str(len(polls)), "", "", records)
        if not group:  # the asyncio members among the group's (tools.verify.aio_members)
            aio = [p for p in polls if p.member.startswith(f"{AIO_MEMBER}:")]
            aio_records = str(sum(len(p.records) for p in aio))
            label = "  of which asyncio members (polls / records)"
            operations.add_row(label, str(len(aio)), "", "", aio_records)
    txns = result.history.txns
    if txns:
        told = [
            sum(t.outcome == outcome for t in txns) for outcome in (COMMITTED, ABORTED, UNKNOWN)
        ]
        crashed = sum(t.crashed for t in txns)
        label = f"transactions (committed / aborted / unknown, {crashed} crashed)"
        operations.add_row(label, *map(str, told), str(len(txns)))
    console.print(operations)

    faults = Table(title="faults injected")
    faults.add_column("kind")
    faults.add_column("count", justify="right")
    for kind in FAULT_KINDS:
        enabled = kind in result.config.faults
        faults.add_row(kind, str(result.faults.get(kind, 0)) if enabled else "off")
    for event, count in sorted(result.history.events.items()):
        faults.add_row(f"  event: {event}", str(count))
    console.print(faults)

    anomalies = Table(title="anomalies")
    anomalies.add_column("anomaly")
    anomalies.add_column("count", justify="right")
    anomalies.add_column("examples")
    for name in ANOMALIES:
        count = result.verdict.counts[name]
        examples = "; ".join(result.verdict.examples.get(name, []))
        anomalies.add_row(name, str(count), examples)
    console.print(anomalies)
    if result.verdict.ok:
        console.print("verdict: [bold green]PASS[/]: no anomaly")
    else:
        console.print(
            Text.assemble("verdict: ", ("FAIL", "bold red"), f": {result.verdict.summary()}")
        )
