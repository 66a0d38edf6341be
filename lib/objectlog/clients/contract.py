"""The client contract: what every transport to an objectlog deployment answers.

``LogClient`` is implemented by ObjectLog (S3 and DynamoDB, clients/direct.py) and
HttpObjectLog (the HTTP API, clients/http.py); mypy checks both against it (the assignment at
the end of each module) and tests/contract/test_client_contract.py runs one suite on each. It
composes the narrower Protocols the Producer (ProducerHost) and the Consumer (ConsumerHost)
need, so code that only produces or only consumes asks for no more than that.

Errors are objectlog's own (objectlog.errors), of the same class and kind on every transport.
Besides those each method names, any call may raise StorageUnavailable (retriable: nothing is
known to have changed) and a write UnknownOutcome (its answer was lost; it may have landed).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Protocol, Self

from objectlog.clients.consumer import Consumer, ConsumerHost, Groups
from objectlog.clients.flushing import BatchAppender, ProducerHost
from objectlog.clients.producer import Producer
from objectlog.clients.values import Offsets
from objectlog.format.topics import Topic, TopicDescription
from objectlog.services.fetch import DEFAULT_MAX_BYTES, FetchRequest, FetchResult
from objectlog.stores.groups import TopicPartition


class GroupClient(Groups, Protocol):
    """Consumer groups: the member protocol the Consumer runs, and the admin calls.
    GroupCoordinator (direct) and HttpGroups (through the API) implement it."""

    def reset_offsets(
        self,
        group: str,
        topics: Collection[str],
        *,
        to: str = ...,
        timestamp_ms: int | None = ...,
        offsets: Mapping[TopicPartition, int] | None = ...,
        shift_by: int | None = ...,
        dry_run: bool = ...,
    ) -> dict[TopicPartition, int]:
        """Move an empty group's offsets (earliest, latest, timestamp, offset, current with
        shift_by); the new offsets, not stored when dry_run. GroupNotEmpty while members are
        live; TopicNotFound, UnknownPartition; InvalidRequest for a bad ``to`` or a missing
        argument it needs."""
        ...

    def delete_group(self, group: str) -> None:
        """Delete an empty group and its offsets. GroupNotFound, GroupNotEmpty."""
        ...


class LogClient(ProducerHost, ConsumerHost, Protocol):
    """A connection to one objectlog deployment, whatever the transport.

    Topic names that break Kafka's rules raise InvalidTopicName (an InvalidRequest) wherever a
    topic is named; an unknown topic raises TopicNotFound, a partition the topic does not have
    UnknownPartition, and a negative partition InvalidRequest.
    """

    def close(self) -> None:
        """Release the client's connections and readers."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...

    # ---- topics ------------------------------------------------------------------------

    def create_topic(
        self, name: str, partitions: int = 1, config: Mapping[str, object] | None = None
    ) -> Topic:
        """Create a topic of ``partitions`` (>= 1) with config overrides (Kafka's keys; values
        as strings or numbers). TopicExists; InvalidConfig for an unknown key or a bad value;
        InvalidRequest for a bad partition count."""
        ...

    def list_topics(self) -> list[str]:
        """The names of the active topics, sorted."""
        ...

    def describe_topic(self, name: str) -> TopicDescription:
        """The topic as stored now, with each partition's log start, high watermark, segments
        and bytes. TopicNotFound."""
        ...

    def topic(self, name: str, *, fresh: bool = False) -> Topic:
        """The topic's metadata, cached per client for a few seconds (TopicCache); fresh=True
        reads it now. TopicNotFound (the name is then forgotten). ``created_ms`` is 0 where
        the transport does not carry it (HTTP)."""
        ...

    def forget_topic(self, name: str) -> None:
        """Drop the cached topic, so the next topic() reads it again."""
        ...

    def alter_topic_config(
        self, name: str, set: Mapping[str, object] | None = None, delete: Iterable[str] = ()
    ) -> Topic:
        """Set keys and reset others to their defaults (Kafka's incremental alter); the topic
        as it is now. TopicNotFound; InvalidConfig."""
        ...

    def add_partitions(self, name: str, total: int) -> Topic:
        """Grow the topic to ``total`` partitions; the topic as it is now. TopicNotFound;
        InvalidRequest unless total is larger than the current count."""
        ...

    def delete_topic(self, name: str) -> None:
        """Delete the topic; its data becomes garbage for the collector. TopicNotFound."""
        ...

    # ---- produce -----------------------------------------------------------------------

    def producer(self, **options: Any) -> Producer:
        """A Kafka-shaped producer (linger_ms, batch_bytes, enable_idempotence, compression,
        buffer_memory, max_block_ms); InvalidRequest for a bad option. A record that cannot be
        delivered fails its own future: TopicNotFound, UnknownPartition, RecordTooLarge (key,
        value and headers over max.message.bytes)."""
        ...

    def new_appender(self, *, compression: str = "none") -> BatchAppender:
        """What the Producer writes its flushes with. InvalidRequest for an unknown
        compression."""
        ...

    # ---- consume -----------------------------------------------------------------------

    def consumer(self, **options: Any) -> Consumer:
        """A Kafka-shaped consumer (group, topics, auto_offset_reset, enable_auto_commit,
        isolation_level, ...); InvalidRequest for a bad option."""
        ...

    @property
    def groups(self) -> GroupClient:
        """Consumer groups: the member protocol and the admin calls."""
        ...

    def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_records: int | None = None,
        max_wait_ms: int = 0,
        isolation_level: str = "read_uncommitted",
    ) -> FetchResult:
        """Records from ``offset`` on, at most max_bytes (but at least one record) and
        max_records; at the high watermark, waits up to max_wait_ms for data. InvalidRequest
        for a negative partition, offset or wait or a max_bytes or max_records below 1 (the
        HTTP API also caps max_bytes at 5 MiB and max_wait_ms at 20 s); OffsetOutOfRange,
        naming the log start and the high watermark, for an offset outside them.
        isolation_level="read_committed" reads committed transactions only, up to the last
        stable offset (the result's last_stable_offset), and waits for that offset to move
        (docs/transactions.md); InvalidRequest for an isolation level Kafka does not name."""
        ...

    def fetch_many(self, requests: Sequence[FetchRequest]) -> list[FetchResult]:
        """One result per request, in order, each as fetch() answers it (without waiting).
        A request fetch() would refuse raises its error, and no results are returned."""
        ...

    def offsets(self, topic: str, partition: int) -> Offsets:
        """The partition's log start (earliest) and high watermark (latest)."""
        ...

    def offset_for_time(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        """The first offset whose timestamp is >= timestamp_ms, None if there is none."""
        ...

    def delete_records(self, topic: str, offsets: Mapping[int, int]) -> dict[int, int]:
        """Delete each partition's records before its offset (-1: every record, to the high
        watermark), as Kafka's DeleteRecords: each partition's log start after it, which
        only moves forward. The whole request is checked before any log start moves:
        UnknownPartition; OffsetOutOfRange for an offset past the high watermark or below
        -1; PolicyViolation on a topic whose cleanup.policy is compact only."""
        ...
