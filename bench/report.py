"""Figures, their floors and verdicts, printed as rich tables."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

console = Console(width=160)


@dataclass
class Row:
    measure: str
    ours: float
    unit: str
    reference: float | None = None
    reference_name: str = ""
    target: str = ""
    passed: bool | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return self.ours / self.reference if self.reference else None


@dataclass
class Section:
    title: str
    columns: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)  # printed first: what was measured where

    def header(self, text: str) -> None:
        """A line printed now and again at the top of the final report (e.g. the endpoint)."""
        if text in self.headers:
            return
        self.headers.append(text)
        console.print(f"[bold]{text}[/]")

    def endpoint(self, description: str) -> None:
        """Say which AWS endpoint the figures below were measured on."""
        self.header(f"endpoint: {description}")

    def add(self, row: Row) -> Row:
        self.rows.append(row)
        ratio = f", ratio {row.ratio:.2f}" if row.ratio is not None else ""
        reference = (
            f" vs {_number(row.reference)} {row.unit} {row.reference_name}" if row.reference else ""
        )
        console.print(
            f"  {row.measure}: [bold]{_number(row.ours)} {row.unit}[/]{reference}{ratio} "
            f"{_verdict(row.passed)} {row.note}"
        )
        return row

    def section(self, title: str, *columns: str) -> Section:
        section = Section(title, columns)
        self.sections.append(section)
        return section

    def load_note(self, at_start: tuple[float, float, float]) -> None:
        """Note the machine's load average at the start (os.getloadavg()) and now."""
        now = os.getloadavg()
        self.note(
            f"load average (1 min) at start {at_start[0]:.2f}, at end {now[0]:.2f}, on "
            f"{os.cpu_count()} CPUs shared with the endpoint and other jobs"
        )

    def note(self, text: str) -> None:
        self.notes.append(text)
        console.print(f"  [dim]{text}[/]")

    def print(self) -> None:
        for text in self.headers:
            console.print(f"[bold]{text}[/]")
        for section in self.sections:
            table = Table(title=section.title, title_justify="left")
            for column in section.columns:
                table.add_column(column)
            for values in section.rows:
                table.add_row(*values)
            console.print(table)
        table = Table(title="objectlog vs floors, measured side by side", title_justify="left")
        for column in ("measure", "objectlog", "floor / reference", "ratio", "target", ""):
            table.add_column(column)
        for row in self.rows:
            table.add_row(
                row.measure,
                f"{_number(row.ours)} {row.unit}",
                f"{_number(row.reference)} {row.unit} {row.reference_name}"
                if row.reference
                else row.reference_name,
                f"{row.ratio:.2f}" if row.ratio is not None else "",
                row.target,
                _verdict(row.passed),
            )
        console.print(table)
        for note in self.notes:
            console.print(f"- {note}")


def _number(value: float | None) -> str:
    if value is None:
        return ""
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if 0 < abs(value) < 0.1:  # dollars per GB
        return f"{value:.4f}"
    return f"{value:.2f}"


def _verdict(passed: bool | None) -> str:
    return "" if passed is None else ("[green]PASS[/]" if passed else "[red]MISS[/]")
