"""Request and response bodies of the HTTP API. Keys, values and header values are base64."""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any, Self

from pydantic import BaseModel, ConfigDict, Field

from objectlog.errors import InvalidRequest
from objectlog.format.records import Record

if TYPE_CHECKING:
    from objectlog.services.fetch import FetchResult

MAX_RECORDS_PER_REQUEST = 10_000


class Model(BaseModel):
    """A body's model: pydantic builds its validator at first use, not at import, so a cold
    start builds only what its function's main route needs (http.app.warm_resolver, before a
    SnapStart snapshot); the other routes' models are built when those routes are first called."""

    model_config = ConfigDict(defer_build=True)


class Strict(Model):
    model_config = ConfigDict(extra="forbid")


class HeaderIn(Strict):
    key: str = Field(min_length=1, max_length=1024)
    value: str | None = Field(default=None, description="base64")


class RecordIn(Strict):
    key: str | None = Field(default=None, description="base64; null for no key")
    value: str | None = Field(default=None, description="base64; null for a tombstone")
    headers: list[HeaderIn] = Field(default_factory=list, max_length=1000)
    partition: int | None = Field(default=None, ge=0, le=2**31 - 1)
    timestamp: int | None = Field(default=None, ge=0, le=2**63 - 1, description="ms since epoch")


class ProduceRequest(Strict):
    records: list[RecordIn] = Field(min_length=1, max_length=MAX_RECORDS_PER_REQUEST)


class RestProxyRecord(Strict):
    key: str | None = None
    value: str | None = None
    partition: int | None = Field(default=None, ge=0, le=2**31 - 1)


class RestProxyProduceRequest(Model):
    """Confluent REST Proxy v2, application/vnd.kafka.binary.v2+json."""

    model_config = ConfigDict(extra="ignore")
    records: list[RestProxyRecord] = Field(min_length=1, max_length=MAX_RECORDS_PER_REQUEST)


class OffsetOut(Model):
    partition: int
    offset: int | None
    timestamp: int | None = None
    error: str | None = None
    message: str | None = None


class ProduceResponse(Model):
    offsets: list[OffsetOut]


class CreateTopicRequest(Strict):
    name: str = Field(min_length=1, max_length=249)
    partitions: int = Field(default=1, ge=1, le=10_000)
    config: dict[str, str] = Field(default_factory=dict)


class AlterTopicRequest(Strict):
    set: dict[str, str] = Field(default_factory=dict, description="config keys to set")
    delete: list[str] = Field(default_factory=list, description="config keys to reset")
    partitions: int | None = Field(default=None, ge=1, le=10_000, description="grow to this")


class RecordsBefore(Strict):
    partition: int = Field(ge=0, le=2**31 - 1)
    offset: int = Field(
        ge=-(2**63),
        le=2**63 - 1,
        description="delete the records before this offset; -1: every record (to the high "
        "watermark)",
    )


class DeleteRecordsRequest(Strict):
    partitions: list[RecordsBefore] = Field(max_length=10_000)


class LogStartOut(Model):
    partition: int
    log_start_offset: int


class DeleteRecordsResponse(Model):
    partitions: list[LogStartOut]


class PartitionOut(Model):
    partition: int
    log_start_offset: int
    high_watermark: int
    segments: int
    bytes: int


class TopicOut(Model):
    topic: str
    topic_id: str
    partition_count: int
    config: dict[str, str]
    partitions: list[PartitionOut]


class TopicList(Model):
    topics: list[str]


class HeaderOut(Model):
    key: str
    value: str | None


class RecordOut(Model):
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestampType: int
    key: str | None
    value: str | None
    headers: list[HeaderOut]


class FetchResponse(Model):
    records: list[RecordOut]
    next_offset: int
    high_watermark: int
    log_start_offset: int
    last_stable_offset: int = Field(
        description="where read_committed stops: the first offset of the partition's oldest "
        "open transaction, or the high watermark when none is open"
    )

    @classmethod
    def answer(cls, result: FetchResult, records: list[dict[str, Any]]) -> Self:
        """A fetch's answer: its records as record_out (or a caller) made them, and the
        partition's offsets as the fetch found them."""
        return cls.model_validate(
            {
                "records": records,
                "next_offset": result.next_offset,
                "high_watermark": result.high_watermark,
                "log_start_offset": result.log_start_offset,
                "last_stable_offset": result.last_stable_offset,
            }
        )


class OffsetsResponse(Model):
    earliest: int
    latest: int
    last_stable_offset: int = Field(
        description="the latest offset for read_committed readers: the first offset of the "
        "partition's oldest open transaction, or latest when none is open"
    )
    timestamp: int | None = None
    offset: int | None = Field(default=None, description="first offset at or after timestamp")


def b64decode(text: str | None, field: str) -> bytes | None:
    if text is None:
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequest(f"{field} is not valid base64", field=field) from None


def b64encode(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def record_out(record: Record) -> dict[str, Any]:
    return {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "timestampType": record.timestamp_type,
        "key": b64encode(record.key),
        "value": b64encode(record.value),
        "headers": [{"key": k, "value": b64encode(v)} for k, v in record.headers],
    }


# ---- consumer groups ---------------------------------------------------------------------

TopicField = Field(min_length=1, max_length=249)


class PartitionRef(Strict):
    topic: str = TopicField
    partition: int = Field(ge=0, le=2**31 - 1)


class OffsetIn(Strict):
    topic: str = TopicField
    partition: int = Field(ge=0, le=2**31 - 1)
    offset: int = Field(ge=0, le=2**63 - 1)
    metadata: str = Field(default="", max_length=4096)


class ReleaseIn(Strict):
    topic: str = TopicField
    partition: int = Field(ge=0, le=2**31 - 1)
    offset: int | None = Field(default=None, ge=0, le=2**63 - 1, description="final commit")
    metadata: str = Field(default="", max_length=4096)


class JoinRequest(Strict):
    topics: list[str] = Field(min_length=1, max_length=1000)
    client_id: str = Field(default="objectlog", min_length=1, max_length=249)
    session_timeout_ms: int = Field(default=10_000, ge=100, le=3_600_000)
    strategies: list[str] = Field(default_factory=lambda: ["range", "sticky"], min_length=1)


class HeartbeatRequest(Strict):
    owned: list[PartitionRef] = Field(default_factory=list, max_length=100_000)
    release: list[ReleaseIn] = Field(
        default_factory=list,
        max_length=100_000,
        description="partitions given up, with their final offsets when offset is set",
    )


class LeaveRequest(Strict):
    release: list[ReleaseIn] = Field(default_factory=list, max_length=100_000)


class MembershipOut(Model):
    group: str
    member_id: str
    generation: int
    strategy: str
    members: list[str]
    assigned: list[PartitionRef]
    owned: list[PartitionRef] = Field(
        description="partitions whose offset items this member holds: consume those also "
        "assigned, release the others"
    )
    claimed: list[PartitionRef] = Field(
        default_factory=list,
        description="owned partitions this call took over: forget any position kept for them "
        "and read the committed offset again",
    )


class CommitRequest(Strict):
    member_id: str | None = Field(
        default=None, description="omit to commit from outside the group (assign())"
    )
    generation: int = Field(default=-1, ge=-1)
    offsets: list[OffsetIn] = Field(min_length=1, max_length=100_000)


class CommittedOut(Model):
    topic: str
    partition: int
    offset: int | None
    metadata: str | None


class CommittedResponse(Model):
    offsets: list[CommittedOut]
    unstable: list[str] = Field(
        default_factory=list,
        description="with require_stable: the topic:partition pairs whose offset a "
        "transaction still holds pending (left out of offsets; ask again when it ends)",
    )


class GroupList(Model):
    groups: list[str]


class MemberOut(Model):
    member_id: str
    client_id: str
    topics: list[str]
    session_timeout_ms: int
    lease_expires_ms: int
    assigned: list[PartitionRef]


class PartitionOffsetOut(Model):
    topic: str
    partition: int
    committed: int | None
    metadata: str
    log_start_offset: int
    high_watermark: int
    lag: int | None
    owner: str | None
    pending_transaction: str | None = Field(
        default=None,
        description="the transactional id whose offset for the partition is pending: read "
        "committed members taking it over wait for that transaction to end",
    )


class GroupOut(Model):
    group: str
    state: str
    generation: int
    strategy: str | None
    members: list[MemberOut]
    offsets: list[PartitionOffsetOut]
    total_lag: int


class ResetOffsetsRequest(Strict):
    topics: list[str] = Field(min_length=1, max_length=1000)
    to: str = Field(
        default="earliest", description="earliest, latest, timestamp, offset or current"
    )
    timestamp: int | None = Field(default=None, ge=0, le=2**63 - 1, description="with to=timestamp")
    offsets: list[OffsetIn] = Field(default_factory=list, description="with to=offset")
    shift_by: int | None = Field(default=None, description="with to=current")
    dry_run: bool = False


class ResetOffsetsResponse(Model):
    offsets: list[CommittedOut]
    dry_run: bool


REST_PROXY_KAFKA_ERROR = 50002  # REST Proxy's error_code for a record Kafka refused


def rest_proxy_produce_response(offsets: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "key_schema_id": None,
        "value_schema_id": None,
        "offsets": [
            {
                "partition": o["partition"],
                "offset": o["offset"],
                "error_code": None if o.get("error") is None else REST_PROXY_KAFKA_ERROR,
                "error": o.get("message"),
            }
            for o in offsets
        ],
    }
