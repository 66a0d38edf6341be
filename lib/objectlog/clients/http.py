"""The HTTP transport: the same ObjectLog API, over the objectlog HTTP API.

``ObjectLog.connect(api_url=...)`` returns an HttpObjectLog. Topics, fetches and offsets map to
the API's routes; the Producer is the same class as for direct access, with an HttpAppender in
place of the S3/DynamoDB one: each flush becomes one POST per topic carrying an
Idempotency-Key derived from the producer id and the flush, so a retried request (lost answer,
5xx) returns the first response and writes nothing new. Requests to an API that is not on
loopback are SigV4-signed (service ``execute-api``) with the caller's AWS credentials.
"""

from __future__ import annotations

import base64
import itertools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import pyarrow as pa

from objectlog.clients.arguments import (
    check_compression,
    check_fetch_args,
    check_isolation_level,
    check_non_negative,
)
from objectlog.clients.consumer import Consumer
from objectlog.clients.contract import LogClient
from objectlog.clients.http_groups import HttpGroups
from objectlog.clients.http_session import ApiSession, error_from
from objectlog.clients.producer import Producer
from objectlog.clients.topic_cache import TopicCache
from objectlog.clients.values import Offsets
from objectlog.config import DEFAULT_REGION
from objectlog.errors import InvalidRequest, ObjectLogError, UnknownOutcome
from objectlog.format.segment import records_table
from objectlog.format.topics import (
    DEFAULTS,
    PartitionInfo,
    Topic,
    TopicConfig,
    TopicDescription,
    validate_topic_name,
)
from objectlog.services.append import AppendOutcome, AppendStats, PartitionBatch, StagedFlush
from objectlog.services.fetch import DEFAULT_MAX_BYTES, FetchRequest, FetchResult
from objectlog.services.isolation import READ_UNCOMMITTED


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


class HttpAppender:
    """Appends batches through the HTTP API: one POST per topic per flush."""

    def __init__(self, api: ApiSession) -> None:
        self.api = api
        self.stats = AppendStats()
        self._flushes = itertools.count()

    def close(self) -> None:
        pass

    def last_sequence(self, topic: str, partition: int, producer_id: str) -> int | None:
        return None  # the API's Idempotency-Key, not sequences, deduplicates HTTP produce

    def stage(self, batches: Sequence[PartitionBatch]) -> StagedFlush:
        """Nothing to upload ahead: the API writes the object when the records are posted."""
        return StagedFlush([AppendOutcome(batch) for batch in batches if batch.records])

    def commit_staged(self, staged: StagedFlush, producer_id: str | None) -> list[AppendOutcome]:
        outcomes = staged.outcomes
        flush = next(self._flushes)
        by_topic: dict[str, list[AppendOutcome]] = {}
        for outcome in outcomes:
            by_topic.setdefault(outcome.batch.topic.name, []).append(outcome)
        for topic, group in by_topic.items():
            self._post(topic, group, f"{producer_id}-{flush}-{topic}" if producer_id else None)
        return outcomes

    def _post(self, topic: str, group: list[AppendOutcome], key: str | None) -> None:
        records: list[dict[str, Any]] = []
        for outcome in group:
            table = outcome.batch.table
            columns = table.set_column(
                table.schema.get_field_index("timestamp"),
                "timestamp",
                table.column("timestamp").cast(pa.int64()),
            ).to_pydict()
            for i in range(outcome.batch.records):
                records.append(
                    {
                        "key": _b64(columns["key"][i]),
                        "value": _b64(columns["value"][i]),
                        "headers": [
                            {"key": h["key"], "value": _b64(h["value"])}
                            for h in columns["headers"][i]
                        ],
                        "partition": outcome.batch.partition,
                        "timestamp": columns["timestamp"][i],
                    }
                )
        started = time.perf_counter()
        try:
            body = self.api.request(
                "POST",
                f"{_topic_path(topic)}/records",
                json={"records": records},
                headers={"Idempotency-Key": key} if key else None,
                retry_unsafe=key is not None,
            )
        except ObjectLogError as e:
            for outcome in group:
                outcome.error = e
            return
        finally:
            self.stats.commit_s += time.perf_counter() - started
        offsets = iter(body["offsets"])
        for outcome in group:
            mine = [next(offsets) for _ in range(outcome.batch.records)]
            failed = next((o for o in mine if o.get("error")), None)
            if failed is not None:
                outcome.error = UnknownOutcome(failed.get("message") or failed["error"])
            else:
                outcome.base_offset = mine[0]["offset"]
        self.stats.objects_put += 1


class HttpObjectLog:
    """The LogClient contract over the objectlog HTTP API."""

    def __init__(
        self,
        api_url: str,
        *,
        sign: bool | None = None,
        region: str = DEFAULT_REGION,
        token: str | Callable[[], str] | None = None,
        http: Any = None,
    ) -> None:
        """SigV4-signed off loopback (sign= decides), or with a bearer token (ApiSession)."""
        self.api_url = api_url
        self.api = ApiSession(api_url, sign=sign, region=region, token=token, http=http)
        self._topics = TopicCache(lambda name: self.describe_topic(name).topic)
        self.groups = HttpGroups(self.api)

    def close(self) -> None:
        self.api.close()

    def __enter__(self) -> HttpObjectLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- topics ------------------------------------------------------------------------

    def create_topic(
        self, name: str, partitions: int = 1, config: Mapping[str, object] | None = None
    ) -> Topic:
        body = self.api.request(
            "POST",
            "/topics",
            json={
                "name": name,
                "partitions": partitions,
                "config": {k: str(v) for k, v in (config or {}).items()},
            },
        )
        return _description(body).topic

    def list_topics(self) -> list[str]:
        return list(self.api.request("GET", "/topics")["topics"])

    def describe_topic(self, name: str) -> TopicDescription:
        return _description(self.api.request("GET", _topic_path(name)))

    def topic(self, name: str, *, fresh: bool = False) -> Topic:
        return self._topics.get(name, fresh=fresh)

    def forget_topic(self, name: str) -> None:
        self._topics.forget(name)

    def check_schemas(
        self, topic: Topic, keys: pa.Array, values: pa.Array, headers: pa.Array | None
    ) -> None:
        """Nothing here: the HTTP API checks each request's records against the registry
        when they arrive, and refuses the request (422, SchemaValidationFailed)."""

    def alter_topic_config(
        self, name: str, set: Mapping[str, object] | None = None, delete: Iterable[str] = ()
    ) -> Topic:
        body = self.api.request(
            "PATCH",
            _topic_path(name),
            json={"set": {k: str(v) for k, v in (set or {}).items()}, "delete": list(delete)},
        )
        self.forget_topic(name)
        return _description(body).topic

    def add_partitions(self, name: str, total: int) -> Topic:
        body = self.api.request("PATCH", _topic_path(name), json={"partitions": total})
        self.forget_topic(name)
        return _description(body).topic

    def delete_topic(self, name: str) -> None:
        self.api.request("DELETE", _topic_path(name))
        self.forget_topic(name)

    # ---- produce and fetch -------------------------------------------------------------

    def producer(self, **options: Any) -> Producer:
        if "transactional_id" in options:  # the coordinator is on the table (or the agent)
            raise InvalidRequest(
                "transactions are not offered over the HTTP API: use the library on the table "
                "(ObjectLog.connect() without api_url) or a Kafka client through the agent "
                "(docs/transactions.md)",
                field="transactional_id",
            )
        return Producer(self, **options)

    def consumer(self, **options: Any) -> Consumer:
        """A Kafka-shaped consumer whose group calls go through the API."""
        return Consumer(self, **options)

    def new_appender(self, *, compression: str = "none") -> HttpAppender:
        check_compression(compression)  # the API's producer chooses its own compression
        return HttpAppender(self.api)

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
        check_fetch_args(partition, offset, max_bytes, max_records, max_wait_ms)
        check_isolation_level(isolation_level)
        params: dict[str, Any] = {
            "offset": offset,
            "max_bytes": max_bytes,
            "max_wait_ms": max_wait_ms,
            "isolation_level": isolation_level,
        }
        if max_records is not None:
            params["max_records"] = max_records
        body = self.api.request("GET", _partition_path(topic, partition, "records"), params=params)
        if "last_stable_offset" not in body and isolation_level != READ_UNCOMMITTED:
            raise _isolation_not_offered(self.api_url)
        return FetchResult(
            topic=topic,
            partition=partition,
            table=_records_table(body["records"]),
            next_offset=body["next_offset"],
            high_watermark=body["high_watermark"],
            log_start_offset=body["log_start_offset"],
            last_stable_offset=body.get("last_stable_offset", -1),
        )

    def fetch_many(self, requests: Sequence[FetchRequest]) -> list[FetchResult]:
        return [
            self.fetch(
                r.topic,
                r.partition,
                r.offset,
                max_bytes=r.max_bytes,
                max_records=r.max_records,
                isolation_level=r.isolation,
            )
            for r in requests
        ]

    def offsets(self, topic: str, partition: int) -> Offsets:
        body = self.api.request("GET", _partition_path(topic, partition, "offsets"))
        return Offsets(body["earliest"], body["latest"], body["last_stable_offset"])

    def delete_records(self, topic: str, offsets: Mapping[int, int]) -> dict[int, int]:
        for partition in offsets:
            check_non_negative("partition", partition)
        asked = [{"partition": p, "offset": offset} for p, offset in offsets.items()]
        body = self.api.request(
            "POST", f"{_topic_path(topic)}/delete-records", json={"partitions": asked}
        )
        return {p["partition"]: p["log_start_offset"] for p in body["partitions"]}

    def offset_for_time(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        body = self.api.request(
            "GET",
            _partition_path(topic, partition, "offsets"),
            params={"timestamp": timestamp_ms},
        )
        offset: int | None = body.get("offset")
        return offset


def _topic_path(name: str) -> str:
    """The topic's route; a name that breaks Kafka's rules is refused before it is sent."""
    return f"/topics/{quote(validate_topic_name(name), safe='')}"


def _partition_path(topic: str, partition: int, leaf: str) -> str:
    check_non_negative("partition", partition)
    return f"{_topic_path(topic)}/partitions/{partition}/{leaf}"


def _description(body: Mapping[str, Any]) -> TopicDescription:
    config = {k: v for k, v in body["config"].items() if DEFAULTS.get(k) != v}
    topic = Topic(
        name=body["topic"],
        topic_id=body["topic_id"],
        partitions=body["partition_count"],
        config=TopicConfig(config),
        created_ms=0,
    )
    return TopicDescription(topic, [PartitionInfo(**p) for p in body["partitions"]])


def _records_table(records: list[dict[str, Any]]) -> pa.Table:
    return records_table(
        topics=[r["topic"] for r in records],
        partitions=[r["partition"] for r in records],
        offsets=[r["offset"] for r in records],
        timestamps=[r["timestamp"] for r in records],
        timestamp_types=[r["timestampType"] for r in records],
        keys=[_unb64(r["key"]) for r in records],
        values=[_unb64(r["value"]) for r in records],
        headers=[
            [{"key": h["key"], "value": _unb64(h["value"])} for h in r["headers"]] for r in records
        ],
    )


# mypy proves HttpObjectLog keeps the contract every transport shares.
_CONTRACT: type[LogClient] = HttpObjectLog
__all__ = ["ApiSession", "HttpAppender", "HttpObjectLog", "error_from"]


def _isolation_not_offered(api_url: str) -> InvalidRequest:
    """An API that answers no last stable offset predates isolation_level and ignored it: its
    records may be uncommitted ones, which a read_committed caller must never be given."""
    return InvalidRequest(
        f"the HTTP API at {api_url} does not offer isolation_level read_committed (a "
        "deployment older than it): update the deployment, or read with the library on the "
        "table or through the Kafka agent",
        field="isolation_level",
    )
