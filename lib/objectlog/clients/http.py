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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlsplit

import pyarrow as pa
import requests

from objectlog import errors
from objectlog.adapters.sigv4 import SigV4
from objectlog.clients.consumer import Consumer
from objectlog.clients.http_groups import HttpGroups
from objectlog.clients.producer import Producer
from objectlog.clients.values import Offsets
from objectlog.config import DEFAULT_REGION
from objectlog.errors import ObjectLogError, StorageUnavailable, UnknownOutcome
from objectlog.format.segment import records_table
from objectlog.format.topics import (
    PartitionInfo,
    Topic,
    TopicConfig,
    TopicDescription,
    validate_topic_name,
)
from objectlog.services.append import AppendOutcome, AppendStats, PartitionBatch
from objectlog.services.fetch import DEFAULT_MAX_BYTES, FetchRequest, FetchResult

ATTEMPTS = 5
BACKOFF_S = 0.05
TOPIC_CACHE_TTL_S = 10.0
STATUS_ERRORS: dict[int, type[ObjectLogError]] = {
    400: errors.InvalidRequest,
    404: errors.TopicNotFound,
    409: errors.ConcurrentModification,
    413: errors.RecordTooLarge,
    415: errors.UnsupportedContentType,
}


def error_from(response: requests.Response) -> ObjectLogError:
    """Rebuild the library's error from the API's JSON error body."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    message = str(body.get("message") or response.reason or response.status_code)
    name = str(body.get("error", ""))
    if response.status_code == 416 or name == "OffsetOutOfRange":
        return errors.OffsetOutOfRange(
            message,
            log_start_offset=int(body.get("log_start_offset", 0)),
            high_watermark=int(body.get("high_watermark", 0)),
        )
    known = getattr(errors, name, None)
    if (
        isinstance(known, type)
        and issubclass(known, ObjectLogError)
        and known is not errors.OffsetOutOfRange
    ):
        return known(message, field=body.get("field"))
    if response.status_code >= 500:
        return StorageUnavailable(f"{message} (request id {body.get('request_id', '?')})")
    return STATUS_ERRORS.get(response.status_code, errors.InvalidRequest)(
        message, field=body.get("field")
    )


class ApiSession:
    def __init__(
        self,
        api_url: str,
        *,
        sign: bool | None = None,
        region: str = DEFAULT_REGION,
        timeout_s: float = 30.0,
    ) -> None:
        self.base = api_url.rstrip("/")
        self.http = requests.Session()
        self.timeout_s = timeout_s
        host = urlsplit(self.base).hostname or ""
        if (
            sign
            if sign is not None
            else not (host.startswith("127.") or host in ("localhost", "::1"))
        ):
            self.http.auth = SigV4(region)

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        retry_unsafe: bool = False,
    ) -> Any:
        """Send and decode; retries what is safe to retry (reads, and writes with a key)."""
        safe = method == "GET" or retry_unsafe
        last: ObjectLogError | None = None
        for attempt in range(ATTEMPTS if safe else 1):
            try:
                response = self.http.request(
                    method,
                    self.base + path,
                    json=json,
                    params=params,
                    headers=headers,
                    timeout=self.timeout_s,
                )
            except requests.ConnectionError as e:
                last = StorageUnavailable(f"{method} {path}: cannot connect: {e}")
            except requests.Timeout as e:
                last = (StorageUnavailable if method == "GET" else UnknownOutcome)(
                    f"{method} {path}: {e}"
                )
            else:
                if response.status_code < 400:
                    return response.json() if response.content else None
                last = error_from(response)
                if response.status_code < 500:
                    raise last
            time.sleep(BACKOFF_S * 2**attempt)
        if method != "GET" and isinstance(last, StorageUnavailable) and safe:
            last = UnknownOutcome(
                f"{method} {path}: no answer after {ATTEMPTS} attempts: {last.message}"
            )
        assert last is not None
        raise last

    def close(self) -> None:
        self.http.close()


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

    def append(
        self, batches: Sequence[PartitionBatch], producer_id: str | None
    ) -> list[AppendOutcome]:
        outcomes = [AppendOutcome(batch) for batch in batches if batch.records]
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
                f"/topics/{quote(topic, safe='')}/records",
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
    """The ObjectLog API over HTTP."""

    def __init__(
        self, api_url: str, *, sign: bool | None = None, region: str = DEFAULT_REGION
    ) -> None:
        self.api_url = api_url
        self.api = ApiSession(api_url, sign=sign, region=region)
        self._topics: dict[str, tuple[float, Topic]] = {}
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
        return _description(self.api.request("GET", f"/topics/{_path(name)}"))

    def topic(self, name: str, *, fresh: bool = False) -> Topic:
        cached = self._topics.get(name)
        if cached and not fresh and time.monotonic() - cached[0] < TOPIC_CACHE_TTL_S:
            return cached[1]
        topic = self.describe_topic(validate_topic_name(name)).topic
        self._topics[name] = (time.monotonic(), topic)
        return topic

    def forget_topic(self, name: str) -> None:
        self._topics.pop(name, None)

    def alter_topic_config(
        self, name: str, set: Mapping[str, object] | None = None, delete: Iterable[str] = ()
    ) -> Topic:
        body = self.api.request(
            "PATCH",
            f"/topics/{_path(name)}",
            json={"set": {k: str(v) for k, v in (set or {}).items()}, "delete": list(delete)},
        )
        self.forget_topic(name)
        return _description(body).topic

    def add_partitions(self, name: str, total: int) -> Topic:
        body = self.api.request("PATCH", f"/topics/{_path(name)}", json={"partitions": total})
        self.forget_topic(name)
        return _description(body).topic

    def delete_topic(self, name: str) -> None:
        self.api.request("DELETE", f"/topics/{_path(name)}")
        self.forget_topic(name)

    # ---- produce and fetch -------------------------------------------------------------

    def producer(self, **options: Any) -> Producer:
        return Producer(self, **options)

    def consumer(self, **options: Any) -> Consumer:
        """A Kafka-shaped consumer whose group calls go through the API."""
        return Consumer(self, **options)

    def new_appender(self, *, compression: str = "none") -> HttpAppender:
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
    ) -> FetchResult:
        params: dict[str, Any] = {
            "offset": offset,
            "max_bytes": max_bytes,
            "max_wait_ms": max_wait_ms,
        }
        if max_records is not None:
            params["max_records"] = max_records
        body = self.api.request(
            "GET", f"/topics/{_path(topic)}/partitions/{partition}/records", params=params
        )
        return FetchResult(
            topic=topic,
            partition=partition,
            table=_records_table(body["records"]),
            next_offset=body["next_offset"],
            high_watermark=body["high_watermark"],
            log_start_offset=body["log_start_offset"],
        )

    def fetch_many(self, requests_: Sequence[FetchRequest]) -> list[FetchResult]:
        return [
            self.fetch(
                r.topic, r.partition, r.offset, max_bytes=r.max_bytes, max_records=r.max_records
            )
            for r in requests_
        ]

    def offsets(self, topic: str, partition: int) -> Offsets:
        body = self.api.request("GET", f"/topics/{_path(topic)}/partitions/{partition}/offsets")
        return Offsets(earliest=body["earliest"], latest=body["latest"])

    def offset_for_time(self, topic: str, partition: int, timestamp_ms: int) -> int | None:
        body = self.api.request(
            "GET",
            f"/topics/{_path(topic)}/partitions/{partition}/offsets",
            params={"timestamp": timestamp_ms},
        )
        offset: int | None = body.get("offset")
        return offset


def _path(name: str) -> str:
    return quote(name, safe="")


def _description(body: Mapping[str, Any]) -> TopicDescription:
    from objectlog.format.topics import DEFAULTS

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
