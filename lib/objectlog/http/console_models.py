"""Request and response bodies of the routes a console needs (issue 39): the overview, a
topic's activity chart, a partition's details, a key's partition, ACLs, transactions."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from objectlog.http.models import Model, Strict

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


class ActivityMinute(Model):
    start_ms: int
    records: float


class ActivityOut(Model):
    topic: str
    resolution_seconds: int
    minutes: list[ActivityMinute]


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
