"""A commit's UpdateItem on a partition head, the part every commit shares (DynamoMetadata's
commits, and Kafka producers' in stores.kafka_window): the ref appended to the tail (or, when
the commit carries a spill, the tail the spill keeps plus the ref), ``next`` moved by the ref's
span, and the condition on the topic id, the GC horizon and, for a carried spill, the head the
spill was planned on (stores.head_rules.spill_applies). Each kind of commit adds its producer
state: paths set between the ref and ``next`` (the base is copied from the old ``next``
before it moves; moto wants them in that order) and clauses of the condition."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from objectlog.adapters.dynamodb import DynamoTable
from objectlog.stores.metadata import CarriedSpill, Commit, PartitionHead


class HeadWrites:
    """What DynamoMetadata's head-writing mixins (stores.log_start, stores.txn_marks) need of
    it: its table, and reading a head."""

    table: DynamoTable

    def get_head(self, topic: str, partition: int) -> PartitionHead | None:
        raise NotImplementedError

    def _parse_head(self, topic: str, partition: int, item: Mapping[str, Any]) -> PartitionHead:
        raise NotImplementedError

    def _head_at(self, topic: str, partition: int) -> dict[str, str]:
        raise NotImplementedError


@dataclass
class HeadCommit:
    condition: str
    names: dict[str, str]
    values: dict[str, Any]
    sets: list[str]  # the ref appended, or the tail a carried spill leaves plus the ref
    removes: list[str] = field(default_factory=list)

    def pin(self, known: PartitionHead) -> None:
        """Make the write conditional on the head the writer knows (head_rules.pinned_head): its
        next offset and index epoch, which every other change a writer plans from moves."""
        self.condition += " AND #next = :base"
        self.values[":base"] = known.next_offset
        if ":ie" not in self.values:  # a carried spill's condition pins the epoch already
            self.condition += " AND ie = :ie"
            self.values[":ie"] = known.index_epoch

    def expression(self, producer_sets: list[str]) -> str:
        """The update expression, with the producer state's paths set before ``next`` moves."""
        sets = [*self.sets, *producer_sets, "#next = #next + :span"]
        remove = f" REMOVE {', '.join(self.removes)}" if self.removes else ""
        return f"SET {', '.join(sets)}{remove}"


def head_commit(commit: Commit) -> HeadCommit:
    ref = commit.ref
    update = HeadCommit(
        condition="tid = :tid AND gch < :ots",
        names={"#next": "next"},
        values={
            ":span": ref.span,
            ":refs": [ref.encode()],
            ":tid": commit.topic_id,
            ":ots": commit.object_time_ms,
        },
        sets=["tail = list_append(tail, :refs)"],
    )
    if commit.transaction_epoch is not None:  # KIP-890: only inside its open transaction
        update.condition += " AND oe.#txp = :txe"
        update.names["#txp"] = commit.producer_id or ""
        update.values[":txe"] = commit.transaction_epoch
    if commit.spill is not None:
        update.condition += " AND ie = :ie AND size(tail) = :tn"
        update.sets, update.removes = _carried_spill_clauses(
            commit.spill, update.names, update.values
        )
    return update


def _carried_spill_clauses(
    spill: CarriedSpill, names: dict[str, str], values: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """A commit's SET and REMOVE clauses when it carries a spill: the tail replaced by the
    refs the spill keeps plus the commit's (its condition pins the tail it replaces), the
    tail base moved past the spilled refs, the new manifest list, the next index epoch, and
    expired producers' state removed."""
    values.update(
        {
            ":tail": [ref.encode() for ref in spill.tail] + values.pop(":refs"),
            ":ie": spill.index_epoch,
            ":one": 1,
            ":tn": spill.tail_length,
            ":moved": spill.span_removed,
            ":ml": spill.manifest_list,
        }
    )
    sets = ["tail = :tail", "tb = tb + :moved", "ml = :ml", "ie = ie + :one"]
    removes = []
    for i, pid in enumerate(spill.expired_producers):
        for suffix in "sbtw":  # w: a Kafka producer's window
            names[f"#x{i}{suffix}"] = f"{pid}{suffix}"
            removes.append(f"ps.#x{i}{suffix}")
    return sets, removes
