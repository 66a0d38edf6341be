"""The "objectlog" Python data source (PySpark 4.0+): Kafka's source and sink, on objectlog.

- ``spark.read.format("objectlog")``: BatchReader; ``pushFilters`` (Spark 4.1+) prunes
  partitions, offsets and segments; Spark 4.0 never calls it.
- ``spark.readStream.format("objectlog")``: StreamReader, offsets in the Kafka source's JSON.
- ``df.write.format("objectlog")`` and ``writeStream``: BatchWriter and StreamWriter take
  Arrow batches (executors upload, the driver commits; see objectlog.spark.sink).

Everything here is glue: planning, reading and the sink live in modules that do not import
pyspark. Readers and writers carry options and a Config, never a connection, because Spark
pickles them to the executors.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from objectlog.errors import InvalidRequest
from objectlog.spark.connection import connect, connection_config
from objectlog.spark.options import ReadOptions, SinkOptions, include_headers, typed_values
from objectlog.spark.planning import (
    NO_PRUNING,
    InputSplit,
    ReadTask,
    TopicPartition,
    from_json,
    initial_offsets,
    latest_offsets,
    pack,
    plan_batch,
    plan_stream,
    to_json,
)
from objectlog.spark.pushdown import prune
from objectlog.spark.reading import read_task, schema_ddl
from objectlog.spark.sink import (
    TaskUpload,
    batch_commit_identity,
    check_schema,
    commit_uploads,
    sink_producer_id,
    upload_task,
)
from objectlog.spark.typed import planned_for, read_schema

if TYPE_CHECKING:
    AvailableNow = object
else:
    try:  # Spark 4.2+: admission control and Trigger.AvailableNow for Python sources
        from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow as AvailableNow
    except ImportError:
        AvailableNow = object


class ObjectLogDataSource(DataSource):
    """The source as registered: objectlog.spark.register subclasses it with the session's
    read defaults (its parallelism and file split sizes), which a query's options override,
    and whether Spark pushes filters to Python sources (4.1+ refuses a reader that takes
    them while spark.sql.python.filterPushdown.enabled is off)."""

    session_defaults: dict[str, str] = {}  # noqa: RUF012 (set per registration, read-only)
    push_filters = False

    @classmethod
    def name(cls) -> str:
        return "objectlog"

    def schema(self) -> Any:
        if not typed_values(self.options):  # a write's options name no subscription
            return schema_ddl(include_headers(self.options))
        options = {**self.session_defaults, **self.options}
        parsed = ReadOptions.parse(options, streaming=False)
        planned = planned_for(connect(connection_config(options)), parsed)
        return read_schema(parsed.include_headers, planned)

    def reader(self, schema: StructType) -> DataSourceReader:
        options = {**self.session_defaults, **self.options}
        return FilteringBatchReader(options) if self.push_filters else BatchReader(options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader({**self.session_defaults, **self.options})

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        return BatchWriter(self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return StreamWriter(self.options, schema, overwrite)


def _partitions(tasks: list[ReadTask], options: ReadOptions) -> list[InputPartition]:
    return [InputPartition(split) for split in pack(tasks, options)]


def _read(
    options: ReadOptions,
    config: Any,
    partition: InputPartition | None,
    planned: pa.DataType | None = None,
) -> Iterator[Any]:
    if partition is None or partition.value is None:  # none planned: Spark reads once anyway
        return
    split: InputSplit = partition.value
    log = connect(config)
    for task in split:
        yield from read_task(log, task, options.include_headers, options.fail_on_data_loss, planned)


class BatchReader(DataSourceReader):
    def __init__(self, options: Any) -> None:
        self.options = ReadOptions.parse(options, streaming=False)  # checked on the driver
        self.config = connection_config(options)
        self.pruning = NO_PRUNING
        self.planned = planned_for(connect(self.config), self.options)

    def partitions(self) -> Sequence[InputPartition]:
        tasks = plan_batch(connect(self.config), self.options, self.pruning)
        return _partitions(tasks, self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, self.config, partition, self.planned)


class FilteringBatchReader(BatchReader):
    """The reader where Spark pushes filters (4.1+, spark.sql.python.filterPushdown.enabled)."""

    def pushFilters(self, filters: list[Any]) -> Iterable[Any]:
        """Keep what prunes; hand back what Spark must still evaluate."""
        self.pruning, remaining = prune(filters)
        return remaining


class StreamReader(DataSourceStreamReader, AvailableNow):
    """Micro-batches over the subscribed partitions; offsets are the Kafka source's JSON.

    Spark 4.0 asks latestOffset() without the batch's start, so the reader remembers where
    the last batch it planned ended (Spark replays that plan on restart, through
    setLatestSeenOffset) and applies maxOffsetsPerTrigger from there.
    """

    def __init__(self, options: Any) -> None:
        self.options = ReadOptions.parse(options, streaming=True)
        self.config = connection_config(options)
        self.planned = planned_for(connect(self.config), self.options)
        self._position: dict[TopicPartition, int] | None = None
        self._target: dict[TopicPartition, int] | None = None

    def initialOffset(self) -> dict:
        offsets = initial_offsets(connect(self.config), self.options)
        if self._position is None:
            self._position = offsets
        return to_json(offsets)

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        log = connect(self.config)
        if start is not None:
            begin: dict[TopicPartition, int] | None = from_json(start)
        else:
            if self._position is None:
                self._position = initial_offsets(log, self.options)
            begin = self._position
        cap = self.options.max_offsets_per_trigger
        if limit is not None:
            cap = _max_rows(limit, cap)
        return to_json(latest_offsets(log, self.options, begin, cap, self._target))

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, until = from_json(start), from_json(end)
        self._position = until
        tasks = plan_stream(connect(self.config), self.options, begin, until)
        return _partitions(tasks, self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, self.config, partition, self.planned)

    def commit(self, end: dict) -> None:
        self._position = from_json(end)

    # ---- Spark 4.2+: admission control, Trigger.AvailableNow -------------------------------

    def getDefaultReadLimit(self) -> Any:
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        cap = self.options.max_offsets_per_trigger
        return ReadMaxRows(cap) if cap else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = latest_offsets(connect(self.config), self.options, None, None)

    def reportLatestOffset(self) -> dict:
        return to_json(latest_offsets(connect(self.config), self.options, None, None))


def _max_rows(limit: Any, default: int | None) -> int | None:
    """The cap a Spark ReadLimit sets (ReadAllAvailable: none; others: the option's)."""
    kind = type(limit).__name__
    if kind == "ReadMaxRows":
        return int(limit.max_rows)
    return None if kind == "ReadAllAvailable" else default


class SinkMessage(WriterCommitMessage):
    """A write task's uploads, on their way to the driver's commit."""

    def __init__(self, upload: TaskUpload) -> None:
        self.upload = upload


class _Sink:
    def __init__(self, options: Any, schema: StructType, overwrite: bool) -> None:
        if overwrite:
            raise InvalidRequest("objectlog topics are append-only: use mode('append')")
        self.options = SinkOptions.parse(options)
        check_schema([(f.name, f.dataType.simpleString()) for f in schema.fields], self.options)
        self.config = connection_config(options)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkMessage:
        from pyspark import TaskContext

        context = TaskContext.get()
        task = context.partitionId() if context is not None else 0
        return SinkMessage(upload_task(connect(self.config), iterator, self.options, task))

    @staticmethod
    def uploads(messages: Sequence[WriterCommitMessage | None]) -> list[TaskUpload | None]:
        return [m.upload if isinstance(m, SinkMessage) else None for m in messages]


class BatchWriter(_Sink, DataSourceArrowWriter):
    def __init__(self, options: Any, schema: StructType, overwrite: bool) -> None:
        super().__init__(options, schema, overwrite)
        batch_commit_identity(self.options)  # checked before any task runs

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        producer_id, batch_id = batch_commit_identity(self.options)
        commit_uploads(connect(self.config), self.uploads(messages), producer_id, batch_id)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing was committed; the uploaded objects are garbage for the collector."""


class StreamWriter(_Sink, DataSourceStreamWriter, DataSourceArrowWriter):
    def __init__(self, options: Any, schema: StructType, overwrite: bool) -> None:
        super().__init__(options, schema, overwrite)
        self.producer_id = sink_producer_id(self.options)

    def commit(  # type: ignore[override]
        self, messages: list[WriterCommitMessage | None], batchId: int
    ) -> None:
        commit_uploads(connect(self.config), self.uploads(messages), self.producer_id, batchId)

    def abort(  # type: ignore[override]
        self, messages: list[WriterCommitMessage | None], batchId: int
    ) -> None:
        """Nothing of this attempt was committed by us; a retry of the batch commits it."""
