"""Routes of the HTTP API and which function serves each (as API Gateway routes them).

Handlers here only translate between HTTP and the library; the library decides.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import pyarrow as pa
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel, ValidationError

from objectlog.clients.direct import ObjectLog
from objectlog.clients.instances import ConsumerInstances
from objectlog.clients.producer import Producer
from objectlog.errors import (
    InvalidRequest,
    ObjectLogError,
    UnsupportedContentType,
)
from objectlog.format.acls import Operation
from objectlog.format.records import check_key, check_record_size, record_size
from objectlog.format.segment import HEADER_TYPE
from objectlog.format.topics import PartitionInfo, TopicDescription, validate_topic_name
from objectlog.http.access import HttpAccess
from objectlog.http.console_paths import CONSOLE_ROUTES, FETCH, PRODUCE
from objectlog.http.guards import TOPIC, RouteGuard
from objectlog.http.idempotency import HEADER as IDEMPOTENCY_HEADER
from objectlog.http.idempotency import IdempotentRunner, Landed, Outcome, Produce
from objectlog.http.models import (
    AlterTopicRequest,
    CreateTopicRequest,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    FetchResponse,
    OffsetOut,
    OffsetsResponse,
    ProduceRequest,
    ProduceResponse,
    RestProxyProduceRequest,
    TopicList,
    TopicOut,
    b64decode,
    record_out,
    rest_proxy_produce_response,
)
from objectlog.schemas.registry import SchemaRegistry
from objectlog.services.isolation import ISOLATION_LEVELS, READ_UNCOMMITTED
from objectlog.telemetry import metrics

REST_PROXY_BINARY = "application/vnd.kafka.binary.v2+json"
MAX_WAIT_MS = 20_000
MAX_FETCH_BYTES = 5 << 20  # the response must fit Lambda's 6 MB, base64 included

# (method, API Gateway route path, function): the single source of the route table.
ROUTES: list[tuple[str, str, str]] = [
    ("POST", "/topics", PRODUCE),
    ("GET", "/topics", FETCH),
    ("GET", "/topics/{topic}", FETCH),
    ("PATCH", "/topics/{topic}", PRODUCE),
    ("DELETE", "/topics/{topic}", PRODUCE),
    ("POST", "/topics/{topic}", PRODUCE),
    ("POST", "/topics/{topic}/records", PRODUCE),
    ("POST", "/topics/{topic}/delete-records", PRODUCE),
    ("GET", "/topics/{topic}/partitions/{partition}/records", FETCH),
    ("GET", "/topics/{topic}/partitions/{partition}/offsets", FETCH),
    ("GET", "/groups", FETCH),
    ("GET", "/groups/{group}", FETCH),
    ("DELETE", "/groups/{group}", FETCH),
    ("POST", "/groups/{group}/members", FETCH),
    ("POST", "/groups/{group}/members/{member}/heartbeat", FETCH),
    ("POST", "/groups/{group}/members/{member}/leave", FETCH),
    ("GET", "/groups/{group}/offsets", FETCH),
    ("POST", "/groups/{group}/offsets", FETCH),
    ("POST", "/groups/{group}/offsets/reset", FETCH),
    # Confluent REST Proxy v2 under its own base path (http/rest_proxy.py)
    ("GET", "/kafka/topics", FETCH),
    ("GET", "/kafka/topics/{topic}", FETCH),
    ("POST", "/kafka/topics/{topic}", PRODUCE),
    ("GET", "/kafka/topics/{topic}/partitions", FETCH),
    ("GET", "/kafka/topics/{topic}/partitions/{partition}", FETCH),
    ("POST", "/kafka/topics/{topic}/partitions/{partition}", PRODUCE),
    ("GET", "/kafka/topics/{topic}/partitions/{partition}/offsets", FETCH),
    ("POST", "/kafka/consumers/{group}", FETCH),
    ("DELETE", "/kafka/consumers/{group}/instances/{instance}", FETCH),
    ("POST", "/kafka/consumers/{group}/instances/{instance}/subscription", FETCH),
    ("GET", "/kafka/consumers/{group}/instances/{instance}/subscription", FETCH),
    ("DELETE", "/kafka/consumers/{group}/instances/{instance}/subscription", FETCH),
    ("POST", "/kafka/consumers/{group}/instances/{instance}/assignments", FETCH),
    ("GET", "/kafka/consumers/{group}/instances/{instance}/assignments", FETCH),
    ("POST", "/kafka/consumers/{group}/instances/{instance}/positions", FETCH),
    ("POST", "/kafka/consumers/{group}/instances/{instance}/positions/beginning", FETCH),
    ("POST", "/kafka/consumers/{group}/instances/{instance}/positions/end", FETCH),
    ("GET", "/kafka/consumers/{group}/instances/{instance}/records", FETCH),
    ("POST", "/kafka/consumers/{group}/instances/{instance}/offsets", FETCH),
    ("GET", "/kafka/consumers/{group}/instances/{instance}/offsets", FETCH),
    # Confluent's Schema Registry under its own base path (http/schema_registry.py): greedy, as
    # a subject may hold "/" (API Gateway decodes %2F before routing)
    ("GET", "/schema-registry", FETCH),
    ("GET", "/schema-registry/{proxy+}", FETCH),
    ("POST", "/schema-registry/{proxy+}", PRODUCE),
    ("PUT", "/schema-registry/{proxy+}", PRODUCE),
    ("DELETE", "/schema-registry/{proxy+}", PRODUCE),
    ("GET", "/docs", FETCH),
    ("GET", "/openapi.json", FETCH),
    *CONSOLE_ROUTES,
]

ModelT = TypeVar("ModelT", bound=BaseModel)
TopicName = Annotated[str, Path(description="topic name", min_length=1, max_length=249)]
PartitionNumber = Annotated[int, Path(ge=0, le=2**31 - 1)]
GroupName = Annotated[str, Path(description="group id", min_length=1, max_length=249)]
MemberId = Annotated[str, Path(description="member id from join", min_length=1, max_length=300)]
# A plain string, not a Literal: the library checks it, so a bad value is its InvalidRequest
# (400, naming the field), not a validation error; the enum documents the values.
IsolationLevel = Annotated[
    str,
    Query(
        description="read_uncommitted (every record, up to the high watermark) or "
        "read_committed (committed transactions only, up to the last stable offset; a long "
        "poll waits for the last stable offset to move): docs/transactions.md",
        json_schema_extra={"enum": list(ISOLATION_LEVELS)},
    ),
]


@dataclass
class Services:
    """What the handlers use, built once per Lambda container (or per local gateway)."""

    log_factory: Callable[[], ObjectLog]
    _log: ObjectLog | None = None
    _producer: Producer | None = None
    _idempotency: IdempotentRunner | None = None
    _consumer_instances: ConsumerInstances | None = None
    _access: HttpAccess | None = None

    @property
    def access(self) -> HttpAccess:
        """Authorization by ACLs (http.access), built once per container."""
        if self._access is None:
            self._access = HttpAccess(lambda: self.log)
        return self._access

    @property
    def log(self) -> ObjectLog:
        if self._log is None:
            self._log = self.log_factory()
        return self._log

    @property
    def registry(self) -> SchemaRegistry:
        return self.log.schema_registry

    @property
    def producer(self) -> Producer:
        if self._producer is None:
            self._producer = self.log.producer(linger_ms=0)
        return self._producer

    @property
    def idempotency(self) -> IdempotentRunner:
        if self._idempotency is None:
            self._idempotency = IdempotentRunner(self.log)
        return self._idempotency

    @property
    def consumer_instances(self) -> ConsumerInstances:
        if self._consumer_instances is None:
            self._consumer_instances = ConsumerInstances(self.log)
        return self._consumer_instances

    def prepare(self) -> None:
        """Build the log (its S3 and DynamoDB clients) now rather than at the first request;
        not the producer: its id and partitioner must be this process's (functions.snapstart)."""
        _ = self.log

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close()
        if self._log is not None:
            self._log.close()


def route_guard(services: Services, router: Router, door: str = "http") -> RouteGuard:
    """The ACL checks of a router's routes (http.guards), on the request being answered."""
    return RouteGuard(services.access, lambda: router.current_event.raw_event, door)


HeadsQuery = Annotated[
    bool,
    Query(description="false: the id, partition count and config only, no partition's head read"),
]


def topic_out(guard: RouteGuard, description: TopicDescription) -> TopicOut:
    """A topic's answer; its configs only to who may DESCRIBE_CONFIGS it."""
    body = description.to_dict()
    if not guard.config_shown(description.topic.name):
        body["config"] = {}
    return TopicOut.model_validate(body)


def topic_admin_router(services: Services) -> Router:
    router = Router()
    guard = route_guard(services, router)

    @router.post("/topics", summary="Create a topic", responses={201: {"description": "created"}})
    def create_topic(request: Annotated[CreateTopicRequest, Body()]) -> Response[TopicOut]:
        guard.create_topic(request.name)
        topic = services.log.create_topic(request.name, request.partitions, request.config)
        empty = [PartitionInfo(p, 0, 0, 0, 0) for p in range(topic.partitions)]
        return Response(201, "application/json", topic_out(guard, TopicDescription(topic, empty)))

    @router.patch("/topics/<topic>", summary="Alter a topic's config or grow its partitions")
    def alter_topic(topic: TopicName, request: Annotated[AlterTopicRequest, Body()]) -> TopicOut:
        if request.partitions is not None:
            guard.topic(Operation.ALTER, topic)
        if request.set or request.delete:
            guard.topic(Operation.ALTER_CONFIGS, topic)
        log = services.log
        if request.partitions is not None:
            log.add_partitions(topic, request.partitions)
        if request.set or request.delete:
            log.alter_topic_config(topic, set=request.set, delete=request.delete)
        return topic_out(guard, log.describe_topic(topic))

    @router.delete("/topics/<topic>", summary="Delete a topic")
    def delete_topic(topic: TopicName) -> Response[None]:
        guard.topic(Operation.DELETE, topic)
        services.log.delete_topic(topic)
        return Response(204, "application/json", None)

    @router.post(
        "/topics/<topic>/delete-records",
        summary="Delete the records before offsets (Kafka's DeleteRecords)",
    )
    def delete_records(
        topic: TopicName, request: Annotated[DeleteRecordsRequest, Body()]
    ) -> DeleteRecordsResponse:
        guard.topic(Operation.DELETE, topic)
        offsets = {p.partition: p.offset for p in request.partitions}
        starts = services.log.delete_records(topic, offsets)
        return DeleteRecordsResponse.model_validate(
            {"partitions": [{"partition": p, "log_start_offset": o} for p, o in starts.items()]}
        )

    return router


def produce_router(services: Services) -> Router:
    router = Router()
    guard = route_guard(services, router)

    @router.post("/topics/<topic>/records", summary="Produce records")
    def produce(
        topic: TopicName, request: Annotated[ProduceRequest, Body()]
    ) -> Response[ProduceResponse]:
        guard.produce(services.log, topic)
        records = [
            dict(
                key=b64decode(r.key, f"records[{i}].key"),
                value=b64decode(r.value, f"records[{i}].value"),
                headers=[
                    (h.key, b64decode(h.value, f"records[{i}].headers[{j}].value"))
                    for j, h in enumerate(r.headers)
                ],
                partition=r.partition,
                timestamp_ms=r.timestamp,
            )
            for i, r in enumerate(request.records)
        ]

        def run(landed: Landed) -> tuple[Outcome, Landed]:
            offsets, status = produce_and_wait(services, topic, records, landed)
            return {"status": status, "body": {"offsets": offsets}}, landed_of(offsets)

        outcome = _once(router, services, "records", topic, run)
        body = ProduceResponse(offsets=[OffsetOut(**o) for o in outcome["body"]["offsets"]])
        return Response(outcome["status"], "application/json", body)

    @router.post(
        "/topics/<topic>",
        summary="Produce records (Confluent REST Proxy v2 binary form)",
        description=(
            f"Content-Type: {REST_PROXY_BINARY}; body "
            '{"records": [{"key": base64, "value": base64, "partition": int}]}'
        ),
        enable_validation=False,  # Powertools validates JSON bodies only; the model does it here
    )
    def produce_rest_proxy(topic: str) -> Response[str]:
        guard.produce(services.log, topic)
        event = router.current_event
        content_type = (event.headers.get("content-type") or "").split(";")[0].strip()
        if content_type != REST_PROXY_BINARY:
            raise UnsupportedContentType(
                f"POST /topics/{{topic}} takes Content-Type {REST_PROXY_BINARY}; "
                f"use POST /topics/{{topic}}/records for application/json",
                field="content-type",
            )
        request = parse_model(RestProxyProduceRequest, event.decoded_body)
        records = [
            dict(
                key=b64decode(r.key, f"records[{i}].key"),
                value=b64decode(r.value, f"records[{i}].value"),
                partition=r.partition,
            )
            for i, r in enumerate(request.records)
        ]

        def run(landed: Landed) -> tuple[Outcome, Landed]:
            offsets, status = produce_and_wait(services, topic, records, landed)
            return {"status": status, "body": rest_proxy_produce_response(offsets)}, landed_of(
                offsets
            )

        outcome = _once(router, services, "rest-proxy", topic, run)
        return Response(outcome["status"], REST_PROXY_BINARY, json.dumps(outcome["body"]))

    return router


def _once(router: Router, services: Services, route: str, topic: str, run: Produce) -> Outcome:
    """Run a produce once per Idempotency-Key (when the request carries one)."""
    event = router.current_event
    key = event.headers.get(IDEMPOTENCY_HEADER)
    if key is None:
        return run({})[0]
    body = event.decoded_body or ""
    return services.idempotency.run(key, route, topic, body, run, router.lambda_context)


def parse_model(model: type[ModelT], body: str | None) -> ModelT:
    try:
        return model.model_validate_json(body or "")
    except ValidationError as e:
        first = e.errors()[0]
        field = ".".join(str(part) for part in first.get("loc", ())) or None
        raise InvalidRequest(f"{field or 'body'}: {first.get('msg')}", field=field) from None


def produce_and_wait(
    services: Services,
    topic: str,
    records: list[dict[str, Any]],
    landed: Landed | None = None,
    *,
    may_create: bool = True,
) -> tuple[list[dict[str, Any]], int]:
    """Validate every record first (a bad request stores nothing), then send and wait. The
    records an earlier run of the same request stored (landed) are not sent again: their
    offsets entries are that run's. A topic that does not exist is created where the
    deployment auto-creates topics (Config.auto_create_topics) and the route may_create."""
    landed = landed or {}
    log = services.log
    name = validate_topic_name(topic)
    info = log.topic_or_create(name) if may_create else log.topic(name)
    for i, record in enumerate(records):
        partition = record.get("partition")
        if partition is not None and partition >= info.partitions:
            raise InvalidRequest(
                f"records[{i}].partition is {partition}, but topic {topic!r} has "
                f"{info.partitions} partitions",
                field=f"records[{i}].partition",
            )
        size = record_size(record["key"], record["value"], record.get("headers"))
        check_record_size(info, size, field=f"records[{i}]", record=f"records[{i}]")
        check_key(info, record["key"], field=f"records[{i}].key", record=f"records[{i}]")
    if info.config.schema_validated:  # every record's schema id, before any is sent
        keys = pa.array([r["key"] for r in records], pa.binary())
        values = pa.array([r["value"] for r in records], pa.binary())
        headers = pa.array([r.get("headers") or [] for r in records], HEADER_TYPE)
        log.schema_validator.check(info, keys, values, headers)
    producer = services.producer
    retries_before = producer.stats.commit_retries
    futures = {
        i: producer.send(topic, **record) for i, record in enumerate(records) if i not in landed
    }
    producer.flush()
    metrics.add_metric(name="records", unit=MetricUnit.Count, value=len(records))
    metrics.add_metric(
        name="bytes",
        unit=MetricUnit.Bytes,
        value=sum(len(r["key"] or b"") + len(r["value"] or b"") for r in records),
    )
    metrics.add_metric(
        name="commit_retries",
        unit=MetricUnit.Count,
        value=producer.stats.commit_retries - retries_before,
    )
    offsets: list[dict[str, Any]] = []
    first_error: ObjectLogError | None = None
    for i, record in enumerate(records):
        if i in landed:
            offsets.append(landed[i])
            continue
        future = futures[i]
        error = future.exception()
        if error is None:
            md = future.result()
            offsets.append(
                {"partition": md.partition, "offset": md.offset, "timestamp": md.timestamp}
            )
        else:
            first_error = first_error or error
            offsets.append(
                {
                    "partition": record.get("partition")
                    if record.get("partition") is not None
                    else -1,
                    "offset": None,
                    "error": type(error).__name__,
                    "message": error.message,
                }
            )
    return offsets, first_error.kind.http_status if first_error else 200


def landed_of(offsets: list[dict[str, Any]]) -> Landed:
    """The records of a produce answer that were stored, by their index in the request."""
    return {i: entry for i, entry in enumerate(offsets) if entry.get("offset") is not None}


def fetch_router(services: Services) -> Router:
    router = Router()
    guard = route_guard(services, router)

    @router.get("/topics", summary="List topics (those the caller may DESCRIBE)")
    def list_topics() -> TopicList:
        names = services.log.list_topics()
        return TopicList(topics=guard.visible(Operation.DESCRIBE, TOPIC, names))

    @router.get("/topics/<topic>", summary="Describe a topic")
    def describe_topic(topic: TopicName, heads: HeadsQuery = True) -> TopicOut:
        guard.topic(Operation.DESCRIBE, topic)
        if not heads:  # one read however many partitions (the console's record browser)
            return topic_out(guard, TopicDescription(services.log.topic(topic), []))
        return topic_out(guard, services.log.describe_topic(topic))

    @router.get("/topics/<topic>/partitions/<partition>/records", summary="Fetch records")
    def fetch(
        topic: TopicName,
        partition: PartitionNumber,
        offset: Annotated[int, Query(ge=0, le=2**63 - 1)],
        max_bytes: Annotated[int, Query(ge=1, le=MAX_FETCH_BYTES)] = 1 << 20,
        max_records: Annotated[int | None, Query(ge=1, le=100_000)] = None,
        max_wait_ms: Annotated[int, Query(ge=0, le=MAX_WAIT_MS)] = 0,
        isolation_level: IsolationLevel = READ_UNCOMMITTED,
    ) -> FetchResponse:
        guard.topic(Operation.READ, topic)
        result = services.log.fetch(  # the library refuses an unknown isolation_level (400)
            topic,
            partition,
            offset,
            max_bytes=max_bytes,
            max_records=max_records,
            max_wait_ms=max_wait_ms,
            isolation_level=isolation_level,
        )
        return FetchResponse.answer(result, [record_out(r) for r in result.records])

    @router.get(
        "/topics/<topic>/partitions/<partition>/offsets",
        summary="Earliest, latest and by-time offsets",
    )
    def offsets(
        topic: TopicName,
        partition: PartitionNumber,
        timestamp: Annotated[int | None, Query(ge=0, le=2**63 - 1)] = None,
    ) -> OffsetsResponse:
        guard.topic(Operation.DESCRIBE, topic)
        log = services.log
        log.topic(topic)
        bounds = log.offsets(topic, partition)
        response = OffsetsResponse(
            earliest=bounds.earliest, latest=bounds.latest, last_stable_offset=bounds.last_stable
        )
        if timestamp is not None:
            response.timestamp = timestamp
            response.offset = log.offset_for_time(topic, partition, timestamp)
        return response

    return router
