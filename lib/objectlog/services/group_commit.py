"""Group commit: the batches of many produce requests as one flush (kafka/coalesce.py).

One L0 object holds them all. Batches without a producer (a Kafka producer that is not
idempotent) bound for the same partition are merged into one batch: one slice, one ref, one
commit, each request's records in the order the requests came and after the request before
it, so a request's base offset is the merged commit's base plus the records ahead of it, and
all of them share the commit's fate (they would have, had they been one request). A batch with
a producer (idempotent or transactional) stays a member of its own and commits on its own, in
the flush's order after the partition's other members: its sequence, epoch and transaction
are checked for it alone, so a duplicate, a fenced epoch or a closed transaction never changes
another request's outcome. Requests refused by validation or ACLs never reach a flush.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import pyarrow as pa

from objectlog.format.segment import concat_slices
from objectlog.services.flushes import AppendOutcome, PartitionBatch


@dataclass(frozen=True)
class Entry:
    """One request's batch for one partition, and its producer's key (None: none)."""

    batch: PartitionBatch
    producer: str | None


@dataclass(frozen=True)
class Placement:
    """Where an entry went: the flush member holding it, after how many of its records."""

    member: int
    ahead: int


@dataclass
class FlushPlan:
    batches: list[PartitionBatch]  # the flush's members, for Appender.stage
    producers: list[str | None]  # each member's producer
    placements: list[Placement]  # each entry's, in the entries' order


def plan_flush(entries: Sequence[Entry]) -> FlushPlan:
    """The members of one flush: producerless entries merged per partition, the rest alone."""
    plan = FlushPlan([], [], [])
    pieces: list[list[pa.Table]] = []  # the tables a member is made of
    merged: dict[tuple[str, str, int], int] = {}  # (topic id, name, partition) -> member
    for entry in entries:
        batch = entry.batch
        key = (batch.topic.topic_id, batch.topic.name, batch.partition)
        member = merged.get(key) if _mergeable(entry) else None
        if member is None:
            member = len(plan.batches)
            plan.batches.append(batch)
            plan.producers.append(entry.producer)
            pieces.append([])
            if _mergeable(entry):
                merged[key] = member
        ahead = sum(table.num_rows for table in pieces[member])
        pieces[member].append(batch.table)
        plan.placements.append(Placement(member, ahead))
    for member, tables in enumerate(pieces):
        if len(tables) > 1:
            plan.batches[member] = replace(plan.batches[member], table=concat_slices(tables))
    return plan


def entry_outcomes(
    plan: FlushPlan, entries: Sequence[Entry], outcomes: Sequence[AppendOutcome]
) -> list[AppendOutcome]:
    """Each entry's outcome from its member's (Appender.commit_staged's, one per member)."""
    answers = []
    for entry, placement in zip(entries, plan.placements, strict=True):
        outcome = outcomes[placement.member]
        base = outcome.base_offset
        answers.append(
            AppendOutcome(
                entry.batch,
                base_offset=None if base is None else base + placement.ahead,
                duplicate=outcome.duplicate,
                error=outcome.error,
                head=outcome.head,
            )
        )
    return answers


def _mergeable(entry: Entry) -> bool:
    return entry.producer is None and not entry.batch.transactional
