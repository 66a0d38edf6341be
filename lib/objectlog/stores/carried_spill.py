"""A carried spill in a commit's UpdateItem (DynamoMetadata's commits, and Kafka producers'
in stores.kafka_window): the clauses that move the spilled refs out of the head, and the
condition that pins the head the spill was planned on (stores.metadata.spill_applies)."""

from __future__ import annotations

from typing import Any

from objectlog.stores.metadata import CarriedSpill

CARRIED_SPILL_CONDITION = " AND ie = :ie AND size(tail) = :tn"


def carried_spill_clauses(
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
