"""``typedValues=true``: the typed columns of a typed table (value_decoded, value_schema_id,
value_error: schemas.typed_values) for every record a read returns, the live tail included,
decoded through the Schema Registry as the compactor decodes them.

The driver plans value_decoded's type once per query from the registry: the merge of every
version (soft-deleted ones too) of each subscribed topic's value subject (``<topic>-value``),
in id order, so a schema registered after planning decodes into the planned type (its new
fields left out until the next query). Values are decoded as each topic's
``objectlog.table.mode`` says: by the latest schema where it is ``value_schema_latest``, else
by the schema id each value carries. Spark has no time-of-day type before 4.1: Avro's
time-millis and time-micros (and Protobuf's, JSON's) come as microseconds (a long).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from objectlog.clients.direct import ObjectLog
from objectlog.errors import InvalidRequest, SchemaNotFound, SubjectNotFound
from objectlog.schemas.typed_values import DECODED, ERROR, SCHEMA_ID, TypedValues, conform
from objectlog.spark.options import TYPED_VALUES, ReadOptions


def planned_type(log: ObjectLog, topics: tuple[str, ...]) -> pa.DataType:
    """value_decoded's type for a read of topics: the merge of their value subjects' versions."""
    if not topics:
        raise InvalidRequest(
            f"{TYPED_VALUES} needs the topics named (subscribe or assign): the columns' type is "
            "planned from their subjects",
            field=TYPED_VALUES,
        )
    registry = log.schema_registry
    ids: list[int] = []
    for topic in topics:
        subject = f"{topic}-value"
        try:
            numbers = registry.versions(subject, deleted=True)
        except (SubjectNotFound, SchemaNotFound):
            continue
        ids += [registry.version(subject, n, deleted=True).schema.id for n in numbers]
    planned = TypedValues(registry).target(None, np.array(ids, dtype=np.int64))
    if planned is None:
        raise InvalidRequest(
            f"{TYPED_VALUES}: no schema is registered under "
            + ", ".join(f"{t}-value" for t in topics),
            field=TYPED_VALUES,
        )
    return planned


def spark_type(kind: pa.DataType) -> pa.DataType:
    """kind as Spark's Arrow conversion takes it: list items named element, times as longs."""
    if pa.types.is_struct(kind):
        return pa.struct([f.with_type(spark_type(f.type)) for f in kind])
    if pa.types.is_list(kind):
        return pa.list_(pa.field("element", spark_type(kind.value_type)))
    if pa.types.is_map(kind):
        return pa.map_(spark_type(kind.key_type), spark_type(kind.item_type))
    if pa.types.is_time(kind):
        return pa.int64()
    return kind


def planned_for(log: ObjectLog, options: ReadOptions) -> pa.DataType | None:
    """value_decoded's type when the read asks for typed values, else None."""
    if not options.typed_values:
        return None
    subscription = options.subscription
    return planned_type(log, subscription.topics or tuple(subscription.assign or ()))


def read_schema(include_headers: bool, planned: pa.DataType | None) -> Any:
    """The read's Spark schema: the Kafka source's, then the typed columns if planned."""
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
        fields.append(StructField("headers", ArrayType(header)))
    return StructType(fields + (spark_fields(planned) if planned is not None else []))


def spark_fields(planned: pa.DataType) -> list[Any]:
    """The Spark StructFields of the typed columns."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import IntegerType, StringType, StructField

    return [
        StructField(DECODED, from_arrow_type(spark_type(planned)), True),
        StructField(SCHEMA_ID, IntegerType(), True),
        StructField(ERROR, StringType(), True),
    ]


class TypedColumns:
    """Adds the typed columns to the records a task read (one per task: schemas read once)."""

    def __init__(self, log: ObjectLog, planned: pa.DataType) -> None:
        self.values = TypedValues(log.schema_registry)
        self.log = log
        self.planned = planned
        self.spark = spark_type(planned)

    def add(self, topic: str, records: pa.Table) -> pa.Table:
        values = records.column("value").combine_chunks()
        framed, ids, is_framed = self.values.framed(self.log.topic(topic), values)
        columns = self.values.columns(framed, ids, is_framed, self.planned)
        decoded = conform(columns[DECODED], self.spark)  # times become longs here
        return (
            records.append_column(DECODED, decoded)
            .append_column(SCHEMA_ID, columns[SCHEMA_ID])
            .append_column(ERROR, columns[ERROR])
        )
