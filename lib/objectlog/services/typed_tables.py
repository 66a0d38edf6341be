"""The typed columns a compaction writes beside the Kafka columns (DESIGN.md section 15).

For a topic kept as a table whose ``objectlog.table.mode`` decodes values, the compactor
hands the records of each L1 file here before writing it: the topic's table is evolved first
to hold the types of the schemas the records name (schemas.typed_values.merge_types; columns
only added or widened), and the typed columns are then written with the table's field ids, so
every Iceberg reader finds them by id, in old files and new ones alike. Values are decoded
again at every rewrite (retention or key compaction), with the schemas as they are then.
"""

from __future__ import annotations

import pyarrow as pa

from objectlog.errors import ObjectLogError
from objectlog.format.topics import Topic
from objectlog.schemas.typed_values import DECODED, ERROR, SCHEMA_ID, TypedValues
from objectlog.services.tables import Tables


class TypedRecords:
    def __init__(self, tables: Tables, values: TypedValues) -> None:
        self.tables = tables
        self.values = values

    def add(self, topic: Topic, records: pa.Table) -> tuple[pa.Table, int]:
        """records with the topic's typed columns (unchanged for key_value topics and topics
        without a table), and how many values did not decode."""
        if not self.values.decodes(topic):
            return records, 0
        values = records.column("value").combine_chunks()
        try:
            framed_values, ids, framed = self.values.framed(topic, values)
        except ObjectLogError as e:  # value_schema_latest, and the subject has no version
            return self._undecoded(topic, records, values, f"no latest schema: {e.message}")
        named = ids[framed]
        fields = self.tables.typed_columns(topic, lambda held: self.values.target(held, named))
        target = next((f.type for f in fields if f.name == DECODED), None)
        columns = self.values.columns(framed_values, ids, framed, target)
        return _with(records, fields, columns), len(values) - columns[ERROR].null_count

    def _undecoded(
        self, topic: Topic, records: pa.Table, values: pa.Array, reason: str
    ) -> tuple[pa.Table, int]:
        fields = self.tables.typed_columns(topic, lambda held: held)
        present = values.is_valid()
        errors = pa.array([reason if p else None for p in present.to_pylist()], pa.string())
        columns = {SCHEMA_ID: pa.nulls(len(values), pa.int32()), ERROR: errors}
        target = next((f.type for f in fields if f.name == DECODED), None)
        if target is not None:
            columns[DECODED] = pa.nulls(len(values), target)
        return _with(records, fields, columns), len(values) - errors.null_count


def _with(records: pa.Table, fields: list[pa.Field], columns: dict[str, pa.Array]) -> pa.Table:
    for field in fields:
        records = records.append_column(field, columns[field.name].cast(field.type))
    return records
