"""ObjectLog: the entry point. Topics, producers and fetches over S3 + DynamoDB."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

import pyarrow as pa

from objectlog import concurrency
from objectlog.adapters import aws
from objectlog.clients.arguments import (
    check_compression,
    check_fetch_args,
    check_fetch_request,
    check_isolation_level,
    check_non_negative,
)
from objectlog.clients.consumer import Consumer
from objectlog.clients.contract import LogClient
from objectlog.clients.producer import Producer
from objectlog.clients.topic_cache import TopicCache
from objectlog.clients.transactional import TransactionalProducer
from objectlog.clients.values import Offsets
from objectlog.clock import Clock, SystemClock, new_ulid
from objectlog.config import Config
from objectlog.errors import InvalidRequest, TopicExists, TopicNotFound
from objectlog.format.segment import decode_parquet
from objectlog.format.topics import (
    PartitionInfo,
    Topic,
    TopicConfig,
    TopicDescription,
    validate_alteration,
    validate_config,
    validate_partition_count,
    validate_topic_name,
)
from objectlog.groups.coordinator import GroupCoordinator
from objectlog.schemas.record_names import RecordNames
from objectlog.schemas.registry import SchemaRegistry
from objectlog.schemas.validation import SchemaValidator
from objectlog.services.activity import TopicActivity
from objectlog.services.append import Appender
from objectlog.services.delete_records import delete_records
from objectlog.services.fetch import DEFAULT_MAX_BYTES, FetchRequest, FetchResult, Reader
from objectlog.services.footers import Footers
from objectlog.services.index import IndexStore
from objectlog.services.isolation import READ_UNCOMMITTED
from objectlog.services.range_reads import ConcurrentReads
from objectlog.services.recent_heads import RecentHeads
from objectlog.services.transaction_log import GroupOffsets, OffsetsPending, PartitionMarkers
from objectlog.services.transactions import TransactionCoordinator
from objectlog.stores.items import ItemStores
from objectlog.stores.leases import LeaseStore
from objectlog.stores.local import LocalObjectStore
from objectlog.stores.metadata import ACTIVE, DELETING, MetadataStore, PartitionHead
from objectlog.stores.objects import ObjectStore
from objectlog.stores.s3 import S3ObjectStore

if TYPE_CHECKING:
    from objectlog.clients.http import HttpObjectLog
    from objectlog.services.tables import Tables, TableState

# How long a topic_or_create that lost the race to create a topic waits for the winner to finish.
AUTO_CREATE_WAITS_S = (0.05, 0.1, 0.2, 0.4, 0.8)


class ObjectLog:
    """A connection to one objectlog deployment (a bucket, a table and a prefix)."""

    def __init__(
        self,
        config: Config,
        *,
        store: ObjectStore | None = None,
        items: ItemStores | None = None,
        clock: Clock | None = None,
        s3_client: Any = None,
        dynamodb_client: Any = None,
    ) -> None:
        """The stores default to S3 and one DynamoDB table from config; pass MemoryObjectStore
        and ItemStores.memory() for a log with no AWS at all (unit tests)."""
        self.config = config
        self.clock = clock or SystemClock()
        session = None
        if store is None or items is None:
            session = aws.make_session(config)
        if store is None and config.objects_dir:
            store = LocalObjectStore(config.objects_dir)
        self.store = store or S3ObjectStore(
            s3_client or aws.s3_client(config, session), config.bucket
        )
        self.items = items or ItemStores.dynamodb(
            dynamodb_client or aws.dynamodb_client(config, session), config.table
        )
        self.metadata: MetadataStore = self.items.metadata
        self.lease_store: LeaseStore = self.items.leases
        self.activity = TopicActivity(self.items.activity)  # touches, idle waits: one per log
        self.index = IndexStore(
            self.store, self.metadata, config.prefix, self.clock, config.delete_grace_ms
        )
        self.footers = Footers(self.store)
        self._topics = TopicCache(self._load_topic)
        self.range_reads = ConcurrentReads(
            self.store.get_range, concurrent=isinstance(self.store, S3ObjectStore)
        )
        self._recent_heads = RecentHeads(
            min(config.head_reuse_ms, config.delete_grace_ms // 2) / 1000
        )
        self._reader: Reader | None = None
        self._groups: GroupCoordinator | None = None
        self._schema_registry: SchemaRegistry | None = None
        self._transactions: TransactionCoordinator | None = None
        self._schema_validator: SchemaValidator | None = None
        self._tables: Tables | None = None

    @overload
    @classmethod
    def connect(cls, api_url: None = None, **overrides: Any) -> ObjectLog: ...

    @overload
    @classmethod
    def connect(cls, api_url: str, **overrides: Any) -> HttpObjectLog: ...

    @classmethod
    def connect(cls, api_url: str | None = None, **overrides: Any) -> ObjectLog | HttpObjectLog:
        """Connect using the environment (AWS_ENDPOINT_URL, OBJECTLOG_BUCKET, ...), or to the
        HTTP API at api_url (SigV4-signed unless it is on loopback)."""
        if api_url is not None:
            from objectlog.clients.http import HttpObjectLog

            return HttpObjectLog(api_url, **overrides)
        return cls(Config.from_env(**overrides))

    def ensure_resources(self) -> None:
        """Create the bucket and table if missing (the embedded stack; Terraform on AWS)."""
        if isinstance(self.store, S3ObjectStore):
            self.store.ensure_bucket(self.config.region)
        self.metadata.ensure_table()

    def close(self) -> None:
        """Stop the log's worker threads: read-ahead, index preloads, concurrent reads."""
        if self._reader is not None:
            self._reader.close()
        self.index.close()
        self.range_reads.close()

    def __enter__(self) -> ObjectLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- topics ------------------------------------------------------------------------

    def create_topic(
        self, name: str, partitions: int = 1, config: Mapping[str, object] | None = None
    ) -> Topic:
        topic = Topic(
            name=validate_topic_name(name),
            topic_id=new_ulid(self.clock),
            partitions=validate_partition_count(partitions),
            config=TopicConfig(validate_config(config)),
            created_ms=self.clock.now_ms(),
        )
        self.metadata.put_new_topic(topic)
        self.metadata.put_heads(topic, range(topic.partitions))
        self.metadata.set_topic_state(topic.name, ACTIVE)
        self.metadata.register(topic.name)
        return topic

    def topic_or_create(self, name: str) -> Topic:
        """The topic; one that does not exist is created with ``num_partitions`` partitions and
        the default configs when ``auto_create_topics`` is on (Kafka's auto.create.topics.enable),
        else TopicNotFound. A creation raced by another process answers the topic it made."""
        try:
            return self.topic(name)
        except TopicNotFound:
            if not self.config.auto_create_topics:
                raise
        try:
            return self.create_topic(name, partitions=self.config.num_partitions)
        except TopicExists:
            return self._created_elsewhere(name)

    def _created_elsewhere(self, name: str) -> Topic:
        """The topic another process is creating, once it is active (its heads are put in a
        few requests); TopicNotFound if it is not by then."""
        for pause in AUTO_CREATE_WAITS_S:
            try:
                return self.topic(name, fresh=True)
            except TopicNotFound:
                concurrency.sleep(pause)
        return self.topic(name, fresh=True)

    def list_topics(self) -> list[str]:
        names = self.metadata.registered_names()
        topics = self.metadata.get_topics(names)
        return [name for name in names if name in topics and topics[name].state == ACTIVE]

    def topic(self, name: str, *, fresh: bool = False) -> Topic:
        """The topic's metadata, cached for a few seconds; TopicNotFound if absent."""
        return self._topics.get(name, fresh=fresh)

    def _load_topic(self, name: str) -> Topic:
        topic = self.metadata.get_topic(name)
        if topic is None or topic.state != ACTIVE:
            raise TopicNotFound(f"topic {name!r} does not exist", field="topic")
        return topic

    def forget_topic(self, name: str) -> None:
        self._topics.forget(name)

    def check_schemas(
        self, topic: Topic, keys: pa.Array, values: pa.Array, headers: pa.Array | None
    ) -> None:
        if topic.config.schema_validated:  # no validator, no work, for the others
            self.schema_validator.check(topic, keys, values, headers)

    def describe_topic(self, name: str) -> TopicDescription:
        topic = self.topic(name, fresh=True)
        heads = self.metadata.get_heads(name, range(topic.partitions))
        partitions = []
        for p in sorted(heads):
            segments, size = self.index.extent(heads[p])
            partitions.append(
                PartitionInfo(
                    partition=p,
                    log_start_offset=heads[p].log_start_offset,
                    high_watermark=heads[p].next_offset,
                    segments=segments,
                    bytes=size,
                )
            )
        return TopicDescription(topic, partitions)

    def alter_topic_config(
        self,
        name: str,
        set: Mapping[str, object] | None = None,
        delete: Iterable[str] = (),
    ) -> Topic:
        """Set and/or reset (to the default) config keys, as Kafka's incremental alter does."""
        topic = self.topic(name, fresh=True)
        to_set, to_delete = validate_alteration(topic.config, set, delete)
        self.metadata.update_topic_config(name, to_set, to_delete)
        self.forget_topic(name)
        return self.topic(name, fresh=True)

    def add_partitions(self, name: str, total: int) -> Topic:
        """Grow the topic to ``total`` partitions (Kafka cannot shrink a topic either)."""
        topic = self.topic(name, fresh=True)
        validate_partition_count(total)
        if total <= topic.partitions:
            raise InvalidRequest(
                f"topic {name!r} has {topic.partitions} partitions; the new count must be larger",
                field="partitions",
            )
        self.metadata.put_heads(topic, range(topic.partitions, total))
        self.metadata.set_partition_count(name, topic.partitions, total)
        self.forget_topic(name)
        return self.topic(name, fresh=True)

    def delete_topic(self, name: str) -> None:
        """Delete the topic's metadata; its objects become garbage for the collector."""
        topic = self.metadata.get_topic(validate_topic_name(name))
        if topic is None:
            raise TopicNotFound(f"topic {name!r} does not exist", field="topic")
        self.metadata.set_topic_state(name, DELETING)
        self.metadata.delete_heads(name, range(topic.partitions))
        self.metadata.unregister(name)
        self.metadata.delete_topic_item(name)
        self.forget_topic(name)

    # ---- produce -----------------------------------------------------------------------

    def producer(self, **options: Any) -> Producer:
        """A Kafka-shaped producer (linger_ms, batch_bytes, enable_idempotence, compression);
        transactional with transactional_id= (clients.transactional)."""
        if "transactional_id" in options:
            return TransactionalProducer(self, **options)
        return Producer(self, **options)

    @property
    def groups(self) -> GroupCoordinator:
        """Consumer groups: join, heartbeat, commit, describe, reset offsets, delete."""
        if self._groups is None:
            pending = OffsetsPending(lambda: self.transactions)
            self._groups = GroupCoordinator(
                self.metadata, self.items.groups, self.clock, self.offset_for_time, pending
            )
        return self._groups

    @property
    def transactions(self) -> TransactionCoordinator:
        """Kafka's transaction coordinator on this log's table (docs/transactions.md)."""
        if self._transactions is None:
            markers = PartitionMarkers(self.metadata, self._topic_id, self.clock, self.activity)
            self._transactions = TransactionCoordinator(
                self.items.transactions,
                self.clock,
                self.metadata.next_producer_id,
                markers,
                GroupOffsets(self.groups),
                opener=markers,
            )
        return self._transactions

    def _topic_id(self, name: str, fresh: bool) -> str | None:
        try:
            return self.topic(name, fresh=fresh).topic_id
        except TopicNotFound:
            return None

    @property
    def schema_registry(self) -> SchemaRegistry:
        """The Schema Registry on this log's table (its parsed schemas cached here)."""
        if self._schema_registry is None:
            self._schema_registry = SchemaRegistry(self.items.schemas, self.items.documents)
        return self._schema_registry

    @property
    def schema_validator(self) -> SchemaValidator:
        """Validated topics' check (schemas.validation), shared by this client's doors."""
        if self._schema_validator is None:
            registry = self.schema_registry
            names = RecordNames(registry)
            self._schema_validator = SchemaValidator(
                registry.subject_docs, names, self.clock.now_ms
            )
        return self._schema_validator

    def consumer(self, **options: Any) -> Consumer:
        """A Kafka-shaped consumer: group=, topics=, auto_offset_reset=, enable_auto_commit=."""
        return Consumer(self, **options)

    def new_appender(self, *, compression: str = "none") -> Appender:
        check_compression(compression)
        return Appender(
            self.store,
            self.metadata,
            self.index,
            self.config.prefix,
            self.clock,
            compression=compression,
            activity=self.activity,
        )

    # ---- fetch -------------------------------------------------------------------------

    @property
    def reader(self) -> Reader:
        if self._reader is None:
            self._reader = Reader(
                self.metadata,
                self.index,
                self.config.prefix,
                self.range_reads.read_many,
                lambda topic: self.topic(topic).partitions,
                self.footers,
                activity=self.activity,
            )
        return self._reader

    def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_records: int | None = None,
        max_wait_ms: int = 0,
        isolation_level: str = READ_UNCOMMITTED,
    ) -> FetchResult:
        """Records from offset on; at the high watermark (the last stable offset with
        isolation_level="read_committed": docs/transactions.md), wait up to max_wait_ms for
        data."""
        check_fetch_args(partition, offset, max_bytes, max_records, max_wait_ms)
        check_isolation_level(isolation_level)
        self.topic(topic)
        request = FetchRequest(
            topic, partition, offset, max_bytes, max_records, isolation=isolation_level
        )
        return self.reader.fetch(request, max_wait_ms)

    def fetch_many(self, requests: Sequence[FetchRequest]) -> list[FetchResult]:
        """Fetch many partitions at once: one BatchGetItem, then concurrent ranged GETs."""
        for request in requests:
            check_fetch_request(request)
        heads = {}
        by_topic: dict[str, list[int]] = {}
        for request in requests:
            recent = self._recent_heads.reusable(request)
            if recent is not None:
                heads[(request.topic, request.partition)] = recent
            else:
                by_topic.setdefault(request.topic, []).append(request.partition)
        for topic, partitions in by_topic.items():
            for partition, head in self.metadata.get_heads(topic, partitions).items():
                heads[(topic, partition)] = head
                self._recent_heads.remember(topic, partition, head)
        return self.reader.fetch_many(requests, heads)

    @property
    def tables(self) -> Tables | None:
        """The topics' Iceberg tables, or None when no catalog is configured
        (OBJECTLOG_CATALOG): pyiceberg is imported only when tables are used."""
        if self._tables is None and self.config.catalog:
            from objectlog.adapters.iceberg import load_catalog, warehouse
            from objectlog.services.tables import Tables

            self._tables = Tables(
                load_catalog(self.config),
                self.config.table_namespace,
                warehouse(self.config),
                self.clock,
                self.config.delete_grace_ms,
            )
        return self._tables

    def table(self, topic: str) -> Any:
        """The topic's Iceberg table (a pyiceberg Table), or None until the compactor has first
        registered it; InvalidRequest when no catalog is configured."""
        tables = self.tables
        if tables is None:
            raise InvalidRequest(
                "no table catalog is configured: set OBJECTLOG_CATALOG (glue, or a SQL catalog "
                "URI such as sqlite:///path/catalog.db)",
                field="catalog",
            )
        return tables.load(self.topic(topic, fresh=True))

    def table_state(self, topic: str) -> TableState | None:
        """The topic's table beside its log (snapshot, files, how many it trails the index by),
        or None without a catalog or before the compactor first registered it."""
        if self.tables is None:
            return None
        info = self.topic(topic, fresh=True)
        heads = self.metadata.get_heads(topic, range(info.partitions))
        ends = {p: (head.log_start_offset, head.next_offset) for p, head in heads.items()}
        return self.tables.state(info, self._l1_uris(heads.values(), "s3"), ends)

    def live_files(self, topic: str, *, scheme: str = "s3") -> list[str]:
        """URIs of the topic's live L1 files (what its Iceberg table lists), partition by
        partition in offset order; never the bare directory, which also holds files replaced
        but within their grace period, and a deleted topic's leftovers."""
        info = self.topic(topic, fresh=True)
        heads = self.metadata.get_heads(topic, range(info.partitions))
        return self._l1_uris(heads.values(), scheme)

    def _l1_uris(self, heads: Iterable[PartitionHead], scheme: str) -> list[str]:
        return [f"{scheme}://{self.config.bucket}/{key}" for key in self.index.live_l1_keys(heads)]

    def offsets(self, topic: str, partition: int) -> Offsets:
        """The partition's log start and high watermark, from a head read now; a fetch_many
        from below that high watermark may plan from this head (services.recent_heads), so a
        consumer that resets to the earliest offset reads the head once, not twice."""
        check_non_negative("partition", partition)
        head = self.reader.head(topic, partition)
        self._recent_heads.remember(topic, partition, head)
        return Offsets(head.log_start_offset, head.next_offset, head.last_stable_offset)

    def delete_records(self, topic: str, offsets: Mapping[int, int]) -> dict[int, int]:
        """Delete each partition's records before its offset (-1: all of them), as Kafka's
        DeleteRecords: the partitions' new log start offsets. Nothing is written unless
        every partition can be: PolicyViolation (a topic compacted only), UnknownPartition,
        OffsetOutOfRange (past the high watermark, or below -1), TopicNotFound
        (services.delete_records)."""
        for partition in offsets:
            check_non_negative("partition", partition)
        starts = delete_records(self.metadata, self.topic(topic, fresh=True), offsets)
        for partition in starts:
            self._recent_heads.forget(topic, partition)  # this client's fetches see it at once
        return starts

    def offset_for_time(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        """The first offset whose timestamp is >= timestamp_ms, or None if there is none."""
        check_non_negative("partition", partition)
        head = self.reader.head(topic, partition)
        for placed in self.index.placed_refs(head, head.log_start_offset):
            if placed.ref.max_timestamp < timestamp_ms:
                continue
            start = max(placed.base_offset, head.log_start_offset)
            request = FetchRequest(topic, partition, start, placed.ref.length + 1)
            result = self.reader.fetch_many([request], heads={(topic, partition): head})[0]
            for record in result.records:
                if record.timestamp >= timestamp_ms:
                    return record.offset
        return None


# mypy proves ObjectLog keeps the contract every transport shares.
_CONTRACT: type[LogClient] = ObjectLog
__all__ = ["ObjectLog", "Offsets", "decode_parquet"]
