"""Request and response bodies of the routes a console needs (issue 39): the overview, a
topic's activity chart, a partition's details, a key's partition, ACLs, transactions."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from objectlog.http.models import FetchResponse, Model, RecordOut, Strict

ResourceTypeName = Literal["TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID"]
PatternTypeName = Literal["LITERAL", "PREFIXED"]
PermissionName = Literal["ALLOW", "DENY"]


class GroupsSummary(Model):
    count: int = Field(description="groups the caller may DESCRIBE")
    total_lag: int = Field(description="the sum of the lag of the first lag_groups groups")
    lag_groups: int = Field(description="how many groups total_lag sums (by name)")


class OverviewOut(Model):
    topics: int = Field(description="topics the caller may DESCRIBE")
    partitions: int
    records: int = Field(description="records held: sum of high watermark - log start offset")
    bytes: int = Field(description="bytes the index references (L0 and L1)")
    segments: int = Field(description="refs in the index")
    summed_partitions: int = Field(
        description="the partitions records, bytes and segments sum (whole topics, by name, "
        "up to 2,000 partitions); fewer than partitions: GET /topics/{topic} for the others"
    )
    groups: GroupsSummary
    produce_rate: ProduceRate
    compactor: CompactorSummary
    tables: TablesSummary


class ProduceRate(Model):
    last_minute: float = Field(
        description="records produced in the summed partitions in the last 60 s, from their "
        "newest refs (each head's tail and its manifest list's inline manifest), a ref's count "
        "spread over its time span"
    )
    last_5_minutes: float = Field(description="the same over the last 300 s")


class CompactorSummary(Model):
    l0_refs: int = Field(
        description="L0 refs (flushed objects not yet compacted) among the summed partitions' "
        "newest refs"
    )
    oldest_l0_age_ms: int | None = Field(
        description="how long ago the oldest of them was written; null when none waits"
    )


class TablesSummary(Model):
    catalog: bool = Field(description="whether a table catalog is configured")
    topics: int = Field(
        description="topics kept as Iceberg tables (objectlog.table.enabled); each table's "
        "state: GET /topics/{topic}/table"
    )


class TopicRowOut(Model):
    topic: str
    partitions: int
    records: int | None = Field(description="held; null where the topic was not summed")
    bytes: int | None
    segments: int | None


class TopicRowsOut(Model):
    topics: list[TopicRowOut]


class ActivityMinute(Model):
    start_ms: int
    records: float


class ActivityOut(Model):
    topic: str
    resolution_seconds: int
    minutes: list[ActivityMinute]


class TableOut(Model):
    table: str | None = Field(
        description="the table's catalog name; null when no catalog is configured or the "
        "compactor has not registered the topic's table (yet, or not kept as a table)"
    )
    table_enabled: bool = Field(description="the topic's objectlog.table.enabled")
    snapshot_id: int | None = None
    snapshot_ms: int | None = Field(default=None, description="when its snapshot was committed")
    files: int | None = Field(default=None, description="data files the table lists")
    missing_files: int | None = Field(
        default=None, description="live L1 files the table does not list yet"
    )
    stale_files: int | None = Field(
        default=None, description="files the table lists that the index no longer references"
    )
    offsets_behind: int | None = Field(
        default=None, description="offsets the log holds past the table's, over its partitions"
    )


class LevelOut(Model):
    refs: int
    objects: int
    bytes: int
    records: int


class PartitionDetailsOut(Model):
    topic: str
    partition: int
    log_start_offset: int
    high_watermark: int
    last_stable_offset: int
    records: int = Field(description="high watermark - log start offset")
    bytes: int = Field(description="bytes referenced by the index (L0 + L1)")
    l0: LevelOut = Field(description="flushed objects not yet compacted")
    l1: LevelOut = Field(description="compacted files")
    markers: int = Field(description="transaction markers (no object)")


class DecodedOut(Model):
    decoded: Any = Field(
        default=None,
        description="the bytes decoded through the schema registry, as REST Proxy answers them "
        "(Avro's JSON encoding, the JSON document, Protobuf's JSON mapping); null with a note",
    )
    schema_id: int | None = Field(default=None, description="the schema id of its wire prefix")
    note: str | None = Field(default=None, description="why it was not decoded")


class DecodedRecordOut(RecordOut):
    key_decoded: DecodedOut | None = Field(description="null for a null key")
    value_decoded: DecodedOut | None = Field(description="null for a null value")


class DecodedFetchOut(FetchResponse):
    records: list[DecodedRecordOut]  # type: ignore[assignment]


class KeyPartitionOut(Model):
    topic: str
    partitions: int
    partition: int = Field(description="toPositive(murmur2(key)) % partitions, Kafka's rule")


class AclIn(Strict):
    resource_type: ResourceTypeName
    resource_name: str = Field(min_length=1, max_length=1024)
    pattern_type: PatternTypeName = "LITERAL"
    principal: str = Field(min_length=1, max_length=1024, description="User:NAME or User:*")
    host: str = Field(default="*", min_length=1, max_length=256)
    operation: str = Field(
        min_length=1, max_length=64, description="Read, WRITE, ClusterAction, All..."
    )
    permission: PermissionName = "ALLOW"


class AddAclsRequest(Strict):
    acls: list[AclIn] = Field(min_length=1, max_length=100)


class AclEntryOut(Model):
    principal: str
    host: str
    operation: str
    permission: str


class AclResourceOut(Model):
    resource_type: str
    name: str
    pattern_type: str
    acls: list[AclEntryOut]


class AclListOut(Model):
    resources: list[AclResourceOut]


class AddedAclOut(Model):
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str
    created: bool = Field(description="false: it was there already")


class AddAclsOut(Model):
    acls: list[AddedAclOut]


class RemovedAclsOut(Model):
    removed: list[AclResourceOut]
    count: int


class TransactionOut(Model):
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    started_ms: int | None
    updated_ms: int
    deadline_ms: int | None
    partitions: list[str] = Field(description="topic/partition")
    groups: list[str]
    stuck: bool = Field(description="open longer than its timeout")


class TransactionList(Model):
    transactions: list[TransactionOut]


class AbortOut(Model):
    transactional_id: str
    before: TransactionOut
    after: TransactionOut
