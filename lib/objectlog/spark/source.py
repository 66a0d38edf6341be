"""The "objectlog" Python data source (PySpark 4.0+): Kafka source schema and options."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from objectlog.log import ObjectLog
from objectlog.spark.planning import (
    ReadTask,
    connection_config,
    plan,
    read_task,
    schema_ddl,
    truthy,
)


class ObjectLogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "objectlog"

    def schema(self) -> str:
        return schema_ddl(truthy(self.options.get("includeHeaders", "false")))

    def reader(self, schema: Any) -> DataSourceReader:
        return ObjectLogBatchReader(self.options)  # case-insensitive, as Spark options are


class ObjectLogBatchReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        self.options = options
        self.include_headers = truthy(options.get("includeHeaders", "false"))

    def partitions(self) -> Sequence[InputPartition]:
        with ObjectLog(connection_config(self.options)) as log:
            return [InputPartition(task) for task in plan(log, self.options)]

    def read(self, partition: InputPartition | None) -> Iterator[pa.RecordBatch]:
        if partition is None:  # Spark reads once with no partition when none were planned
            return
        with ObjectLog(connection_config(self.options)) as log:
            task: ReadTask = partition.value
            yield from read_task(log, task, self.include_headers)
