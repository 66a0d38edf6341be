"""REST Proxy v2's consumer API under /kafka/consumers (the fetch function serves it).

Handlers translate between REST Proxy's requests and objectlog.clients.instances, where
instances live (state in DynamoDB, group members, expiry). Bodies are REST Proxy's own JSON
(Content-Type application/vnd.kafka.v2+json), parsed here by the models below; their schemas are
in the OpenAPI document so the fuzz run sends them. Records are answered in the instance's
embedded format: base64 (binary), JSON (json), or decoded from the Schema Registry's wire
format with the writer's schema (avro, jsonschema, protobuf: objectlog.schemas.serde).

Every route needs READ on the group, and on each topic it names (http.guards has the table);
an instance answers only the principal that created it (clients.instances). A refusal answers
403 with error_code 40301.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import Annotated, Any, TypeVar

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import BaseModel, ConfigDict, Field, field_validator

from objectlog.clients.instances import ConsumerInstances
from objectlog.errors import (
    AnswerTooLarge,
    InvalidConsumerConfig,
    NotAcceptable,
    RecordNotJson,
    UndecodableRecord,
)
from objectlog.format.acls import Operation
from objectlog.format.records import Record
from objectlog.groups.values import OffsetAndMetadata
from objectlog.http import rest_proxy
from objectlog.http.routes import Services, parse_model, route_guard
from objectlog.schemas import serde
from objectlog.schemas.registry import SchemaRegistry
from objectlog.services.isolation import ISOLATION_LEVELS, READ_UNCOMMITTED
from objectlog.stores.groups import TopicPartition

ModelT = TypeVar("ModelT", bound=BaseModel)
CONSUMERS = f"{rest_proxy.BASE}/consumers/<group>"
INSTANCE = f"{CONSUMERS}/instances/<instance>"
TAGS = ["REST Proxy v2 consumers"]
# A read's answer must fit Lambda's 6 MB response: base64 makes 3 MiB of keys and values 4 MiB,
# and each record's JSON (topic name, offsets) is at most about 350 bytes more.
MAX_READ_BYTES = 3 << 20
# The schema formats' JSON is larger than the bytes read (Avro's bytes as escaped strings,
# Protobuf's fields at their defaults), so a read asking for one of them reads less; an answer
# past MAX_ANSWER_BYTES all the same is refused before any position moves.
MAX_SCHEMA_READ_BYTES = 1 << 20
MAX_ANSWER_BYTES = 5_500_000
MAX_READ_RECORDS = 5_000
PARTITION = Field(ge=0, le=2**31 - 1)
OFFSET = Field(ge=0, le=2**63 - 1)


class CreateConsumer(BaseModel):
    """REST Proxy's create request; its names carry dots, so they are aliases here."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    name: str | None = None
    id: str | None = Field(default=None, description="deprecated: overrides name")
    format: str = "binary"
    auto_offset_reset: str = Field(default="latest", alias="auto.offset.reset")
    auto_commit_enable: bool | str = Field(default=True, alias="auto.commit.enable")
    fetch_min_bytes: int | str = Field(default=1, alias="fetch.min.bytes")
    request_timeout_ms: int | str = Field(default=1000, alias="consumer.request.timeout.ms")
    instance_timeout_ms: int | str | None = Field(
        default=None,
        alias="consumer.instance.timeout.ms",
        description="objectlog's addition: this instance's idle timeout",
    )
    isolation_level: str = Field(
        default=READ_UNCOMMITTED,
        alias="isolation.level",
        description="Kafka's consumer isolation.level, read_uncommitted (the default, as "
        "Kafka's) or read_committed: committed transactions only (docs/transactions.md)",
        json_schema_extra={"enum": list(ISOLATION_LEVELS)},
    )


class Partition(BaseModel):
    model_config = ConfigDict(extra="ignore")
    topic: str = Field(min_length=1, max_length=249)
    partition: int = PARTITION

    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class PartitionOffset(Partition):
    offset: int = OFFSET
    metadata: str | None = Field(default=None, max_length=4096)


class Subscription(BaseModel):
    model_config = ConfigDict(extra="ignore")
    topics: list[str] | None = Field(default=None, min_length=1, max_length=10_000)
    topic_pattern: str | None = Field(default=None, min_length=1, max_length=10_000)


class Partitions(BaseModel):
    model_config = ConfigDict(extra="ignore")
    partitions: list[Partition] = Field(max_length=100_000)


class Offsets(BaseModel):
    model_config = ConfigDict(extra="ignore")
    offsets: list[PartitionOffset] = Field(max_length=100_000)


class CommitOffsets(BaseModel):
    model_config = ConfigDict(extra="ignore")
    offsets: list[PartitionOffset] | None = Field(default=None, max_length=100_000)

    @field_validator("offsets")
    @classmethod
    def _none_when_empty(cls, value: list[PartitionOffset] | None) -> list[PartitionOffset] | None:
        return value or None  # no offsets: commit everything read, as REST Proxy does


def consumers_router(services: Services) -> Router:
    router = Router()
    guard = route_guard(services, router, rest_proxy.DOOR)

    def instances() -> ConsumerInstances:  # built at the first request, not at import
        return services.consumer_instances.serving(guard.caller())

    def allowed(group: str, topics: Iterable[str] = ()) -> None:
        """READ on the group, then on each topic named (before anything is read)."""
        guard.group(Operation.READ, group)
        guard.topics(Operation.READ, topics)

    def body(model: type[ModelT], *, optional: bool = False) -> ModelT:
        text = router.current_event.decoded_body
        if optional and not (text or "").strip():
            return model()
        return parse_model(model, text)

    def answer(status: int, content: Any = None) -> Response[Any]:
        kind = rest_proxy.response_type(router.current_event.headers.get("accept"))
        return Response(status, kind, None if content is None else json.dumps(content))

    @router.post(CONSUMERS, **_doc("create a consumer instance in the group", CreateConsumer))
    def create(group: str) -> Response[Any]:
        allowed(group)
        request = body(CreateConsumer)
        settings = instances().default_settings(**_settings(request))
        name = instances().create(group, request.id or request.name, settings)
        base = _base_uri(router)
        return answer(200, {"instance_id": name, "base_uri": f"{base}/{group}/instances/{name}"})

    @router.delete(INSTANCE, **_doc("delete the instance (it leaves its group)"))
    def delete(group: str, instance: str) -> Response[Any]:
        allowed(group)
        instances().delete(group, instance)
        return answer(204)

    @router.post(f"{INSTANCE}/subscription", **_doc("subscribe to topics", Subscription))
    def subscribe(group: str, instance: str) -> Response[Any]:
        request = body(Subscription)
        allowed(group, request.topics or ())
        instances().subscribe(group, instance, request.topics, request.topic_pattern)
        return answer(204)

    @router.get(f"{INSTANCE}/subscription", **_doc("the topics subscribed to"))
    def subscription(group: str, instance: str) -> Response[Any]:
        allowed(group)
        return answer(200, {"topics": instances().subscription(group, instance)})

    @router.delete(f"{INSTANCE}/subscription", **_doc("unsubscribe (leave the group)"))
    def unsubscribe(group: str, instance: str) -> Response[Any]:
        allowed(group)
        instances().unsubscribe(group, instance)
        return answer(204)

    @router.post(f"{INSTANCE}/assignments", **_doc("assign partitions by hand", Partitions))
    def assign(group: str, instance: str) -> Response[Any]:
        partitions = [p.tp() for p in body(Partitions).partitions]
        allowed(group, (tp.topic for tp in partitions))
        instances().assign(group, instance, partitions)
        return answer(204)

    @router.get(f"{INSTANCE}/assignments", **_doc("the partitions the instance reads"))
    def assignments(group: str, instance: str) -> Response[Any]:
        allowed(group)
        partitions = instances().assignment(group, instance)
        return answer(200, {"partitions": [_partition_out(tp) for tp in partitions]})

    @router.post(f"{INSTANCE}/positions", **_doc("seek to offsets", Offsets))
    def seek(group: str, instance: str) -> Response[Any]:
        offsets = {o.tp(): o.offset for o in body(Offsets).offsets}
        allowed(group, (tp.topic for tp in offsets))
        instances().seek(group, instance, offsets)
        return answer(204)

    @router.post(f"{INSTANCE}/positions/beginning", **_doc("seek to the beginning", Partitions))
    def seek_to_beginning(group: str, instance: str) -> Response[Any]:
        partitions = [p.tp() for p in body(Partitions).partitions]
        allowed(group, (tp.topic for tp in partitions))
        instances().seek_to_beginning(group, instance, partitions)
        return answer(204)

    @router.post(f"{INSTANCE}/positions/end", **_doc("seek to the end", Partitions))
    def seek_to_end(group: str, instance: str) -> Response[Any]:
        partitions = [p.tp() for p in body(Partitions).partitions]
        allowed(group, (tp.topic for tp in partitions))
        instances().seek_to_end(group, instance, partitions)
        return answer(204)

    def render(format_: str, records: list[Record]) -> Response[Any]:
        if format_ in rest_proxy.SCHEMA_FORMATS:
            return _render_records(format_, records, services.registry)
        return _render_records(format_, records)

    @router.get(
        f"{INSTANCE}/records",
        **_doc(
            "read records: Accept application/vnd.kafka.{binary,json,avro,jsonschema,protobuf}"
            ".v2+json, the instance's format"
        ),
    )
    def records(
        group: str,
        instance: str,
        timeout: Annotated[
            int | None, Query(ge=0, le=2**31 - 1, description="ms to wait for records")
        ] = None,
        max_bytes: Annotated[
            int | None, Query(ge=1, le=2**63 - 1, description="of keys and values")
        ] = None,
    ) -> Response[Any]:
        allowed(group)  # and READ on what it reads, asked by the instance (clients.instances)
        wanted = _accepted_format(router.current_event.headers.get("accept"))
        most = MAX_SCHEMA_READ_BYTES if wanted in rest_proxy.SCHEMA_FORMATS else MAX_READ_BYTES
        limit = min(max_bytes or most, most)
        return instances().records(
            group,
            instance,
            render,
            format_=wanted,
            timeout_ms=timeout,
            max_bytes=limit,
            max_records=MAX_READ_RECORDS,
        )

    @router.post(
        f"{INSTANCE}/offsets", **_doc("commit offsets (none given: all read)", CommitOffsets)
    )
    def commit(group: str, instance: str) -> Response[Any]:
        given = body(CommitOffsets, optional=True).offsets
        allowed(group, (o.topic for o in given or ()))  # none: the instance asks (its reads)
        # REST Proxy's offsets are those of the last records processed: it commits the next.
        offsets = (
            None
            if given is None
            else {o.tp(): OffsetAndMetadata(o.offset + 1, o.metadata or "") for o in given}
        )
        instances().commit(group, instance, offsets)
        return answer(204)

    @router.get(
        f"{INSTANCE}/offsets", **_doc("committed offsets (a JSON body names them)", Partitions)
    )
    def committed(group: str, instance: str) -> Response[Any]:
        partitions = [p.tp() for p in body(Partitions).partitions]
        allowed(group, (tp.topic for tp in partitions))
        found = instances().committed(group, instance, partitions)
        offsets = [
            {**_partition_out(tp), "offset": value.offset, "metadata": value.metadata or ""}
            for tp, value in found.items()
            if value is not None
        ]
        return answer(200, {"offsets": offsets})

    return router


def _settings(request: CreateConsumer) -> dict[str, Any]:
    """InstanceSettings' arguments from REST Proxy's create request."""
    given: dict[str, Any] = {
        "format": request.format,
        "auto_offset_reset": request.auto_offset_reset,
        "auto_commit": _flag("auto.commit.enable", request.auto_commit_enable),
        "fetch_min_bytes": _integer("fetch.min.bytes", request.fetch_min_bytes),
        "request_timeout_ms": _integer("consumer.request.timeout.ms", request.request_timeout_ms),
        "isolation_level": request.isolation_level,
    }
    if request.instance_timeout_ms is not None:
        given["instance_timeout_ms"] = _integer(
            "consumer.instance.timeout.ms", request.instance_timeout_ms
        )
    return given


def _flag(name: str, value: bool | str) -> bool:
    """REST Proxy takes its settings as strings: "true" or "false"."""
    if isinstance(value, bool):
        return value
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise InvalidConsumerConfig(f"{name} must be true or false, got {value!r}", field=name)


def _integer(name: str, value: int | str) -> int:
    if isinstance(value, int):
        return value
    if value.strip().isdigit():
        return int(value)
    raise InvalidConsumerConfig(f"{name} must be an integer, got {value!r}", field=name)


def _base_uri(router: Router) -> str:
    """Where this API's consumers are, as the client reached it (through API Gateway or the
    local gateway), so base_uri works from the client's side."""
    event = router.current_event
    headers = event.headers
    context = event.get("requestContext") or {}
    host = headers.get("host") or context.get("domainName")
    scheme = headers.get("x-forwarded-proto") or "https"
    stage = context.get("stage")
    prefix = "" if stage in (None, "", "$default") else f"/{stage}"
    return f"{scheme}://{host}{prefix}{rest_proxy.BASE}/consumers"


def _accepted_format(accept: str | None) -> str | None:
    """The embedded format a records request asks for; None: the instance's own."""
    for wanted in (rest_proxy.media_type(part) for part in (accept or "").split(",")):
        if wanted in rest_proxy.EMBEDDED_FORMATS:
            return rest_proxy.EMBEDDED_FORMATS[wanted]
        if wanted in (*rest_proxy.RESPONSE_TYPES, "*/*", "application/*", ""):
            return None
    raise NotAcceptable(
        f"Accept {accept!r}: records are answered as application/vnd.kafka."
        f"{{binary,json,{','.join(rest_proxy.SCHEMA_FORMATS)}}}.v2+json",
        field="accept",
    )


def _render_records(
    format_: str, records: list[Record], registry: SchemaRegistry | None = None
) -> Response[Any]:
    if format_ == "binary":
        answered = [_binary_record(r) for r in records]
    elif format_ == "json":
        answered = [_json_record(r) for r in records]
    else:
        assert registry is not None
        schema_type = rest_proxy.SCHEMA_FORMATS[format_]
        answered = [_schema_record(r, format_, schema_type, registry) for r in records]
    body = json.dumps(answered, ensure_ascii=False)
    # a character is at most 4 UTF-8 bytes: most answers are measured without encoding them
    if len(body) > MAX_ANSWER_BYTES // 4 and len(body.encode()) > MAX_ANSWER_BYTES:
        raise AnswerTooLarge(
            f"the {len(records)} records read make an answer of more than {MAX_ANSWER_BYTES} "
            "bytes, more than a function can answer: read again with a smaller max_bytes (a "
            "single record this large: with a binary consumer instance)",
            field="max_bytes",
        )
    return Response(200, rest_proxy.format_media_type(format_), body)


def _binary_record(record: Record) -> dict[str, Any]:
    return {
        "topic": record.topic,
        "key": None if record.key is None else base64.b64encode(record.key).decode(),
        "value": None if record.value is None else base64.b64encode(record.value).decode(),
        "partition": record.partition,
        "offset": record.offset,
    }


def _json_record(record: Record) -> dict[str, Any]:
    return {
        "topic": record.topic,
        "key": _json_field(record, "key", record.key),
        "value": _json_field(record, "value", record.value),
        "partition": record.partition,
        "offset": record.offset,
    }


def _schema_record(
    record: Record, format_: str, schema_type: str, registry: SchemaRegistry
) -> dict[str, Any]:
    return {
        "topic": record.topic,
        "key": _decoded(record, "key", record.key, format_, schema_type, registry),
        "value": _decoded(record, "value", record.value, format_, schema_type, registry),
        "partition": record.partition,
        "offset": record.offset,
    }


def _decoded(
    record: Record,
    name: str,
    data: bytes | None,
    format_: str,
    schema_type: str,
    registry: SchemaRegistry,
) -> Any:
    """A key or value decoded with the schema its wire-format prefix names; a record that
    cannot be fails the whole read, as REST Proxy's deserializer fails its poll."""
    if data is None:
        return None
    try:
        return serde.decode(registry, data, schema_type)
    except UndecodableRecord as e:
        raise UndecodableRecord(
            f"the {name} of {record.topic}/{record.partition} at offset {record.offset} cannot "
            f"be read as {format_}: {e.message}; read it with a binary consumer instance, or "
            "seek past it",
            field=name,
        ) from None


def _json_field(record: Record, name: str, data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError:
        raise RecordNotJson(
            f"the {name} of {record.topic}/{record.partition} at offset {record.offset} is not "
            "JSON: read it with a binary consumer instance, or seek past it",
            field=name,
        ) from None


def _partition_out(tp: TopicPartition) -> dict[str, Any]:
    return {"topic": tp.topic, "partition": tp.partition}


def _doc(summary: str, request: type[BaseModel] | None = None) -> dict[str, Any]:
    """The route's OpenAPI entry: REST Proxy's body schema under its media type."""
    entry: dict[str, Any] = {"summary": f"REST Proxy v2: {summary}", "tags": TAGS}
    if request is not None:
        entry["enable_validation"] = False  # the body is REST Proxy's, parsed by the model
        entry["openapi_extensions"] = {
            "requestBody": rest_proxy.request_body(request, [rest_proxy.V2])
        }
    return entry
