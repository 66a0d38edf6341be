"""Confluent REST Proxy v2 under its own base path, /kafka (DESIGN.md section 13).

REST Proxy clients are configured with ``<api>/kafka`` as their base URL and send what REST
Proxy's documentation shows: produce in the binary and JSON embedded formats, topic and
partition metadata in its shapes, its error bodies (``error_code``, ``message``). objectlog's
own routes and their JSON are untouched. Formats that need a schema registry (avro,
jsonschema, protobuf) answer 415.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import BaseModel, ConfigDict, Field

from objectlog.errors import (
    ConsumerFormatMismatch,
    ConsumerInstanceExists,
    ConsumerInstanceNotFound,
    ErrorKind,
    InvalidConsumerConfig,
    InvalidRequest,
    NotAcceptable,
    ObjectLogError,
    RecordNotJson,
    TopicNotFound,
    UnknownPartition,
    UnsupportedContentType,
)
from objectlog.format.topics import PartitionInfo, TopicDescription, check_partition
from objectlog.http.models import MAX_RECORDS_PER_REQUEST, b64decode, rest_proxy_produce_response
from objectlog.http.routes import Services, parse_model, produce_and_wait

BASE = "/kafka"
V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"
JSON = "application/vnd.kafka.json.v2+json"
EMBEDDED_FORMATS = {BINARY: "binary", JSON: "json"}
SCHEMA_FORMATS = ("avro", "jsonschema", "protobuf")  # need a schema registry: not offered
RESPONSE_TYPES = (V2, "application/vnd.kafka+json", "application/json")
REQUEST_TYPES = (BINARY, JSON, V2, "application/vnd.kafka+json", "application/json")

# REST Proxy's error codes: the HTTP status, or the status and a sub-code where it has one.
TOPIC_NOT_FOUND = 40401
PARTITION_NOT_FOUND = 40402
INVALID_REQUEST = 42201
_SUB_CODES: tuple[tuple[type[ObjectLogError], int], ...] = (
    (TopicNotFound, TOPIC_NOT_FOUND),
    (UnknownPartition, PARTITION_NOT_FOUND),
    (ConsumerInstanceNotFound, 40403),
    (ConsumerFormatMismatch, 40601),
    (ConsumerInstanceExists, 40902),
    (RecordNotJson, 40903),  # REST Proxy's "illegal state"
    (InvalidConsumerConfig, 42204),
)


def error_code(error: ObjectLogError) -> int:
    """REST Proxy's error_code for an objectlog error."""
    for error_type, code in _SUB_CODES:
        if isinstance(error, error_type):
            return code
    if error.kind is ErrorKind.INVALID:
        return INVALID_REQUEST if isinstance(error, InvalidRequest) else 400
    return error.kind.http_status


def error_body(status: int, message: str, code: int | None = None) -> dict[str, Any]:
    return {"error_code": code or status, "message": message}


class ProduceRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")
    key: Any = None
    value: Any = None
    partition: int | None = Field(default=None, ge=0, le=2**31 - 1)


class ProduceBody(BaseModel):
    """REST Proxy v2's produce body; key_schema and value_schema belong to the schema formats,
    which are refused before this is parsed."""

    model_config = ConfigDict(extra="ignore")
    records: list[ProduceRecord] = Field(min_length=1, max_length=MAX_RECORDS_PER_REQUEST)


def media_type(header: str | None) -> str:
    """The media type of a Content-Type or Accept entry, without parameters, lower case."""
    return (header or "").split(";")[0].strip().lower()


def is_schema_format(media: str) -> bool:
    """Whether a media type names one of the schema formats (avro, jsonschema, protobuf)."""
    return any(f"vnd.kafka.{name}." in media for name in SCHEMA_FORMATS)


def embedded_format(content_type: str | None) -> str:
    """binary or json for a produce Content-Type; 415 for anything else."""
    given = media_type(content_type)
    if given in EMBEDDED_FORMATS:
        return EMBEDDED_FORMATS[given]
    if is_schema_format(given):
        raise UnsupportedContentType(
            f"{given}: the schema formats (avro, jsonschema, protobuf) need a schema "
            f"registry, which objectlog does not offer; send {BINARY} or {JSON}",
            field="content-type",
        )
    raise UnsupportedContentType(
        f"Content-Type {given or '(none)'} is not a REST Proxy v2 embedded format; "
        f"send {BINARY} or {JSON}",
        field="content-type",
    )


def response_type(accept: str | None) -> str:
    """The media type of the answer: the first of REST Proxy's that Accept allows."""
    if not accept:
        return V2
    for wanted in (media_type(part) for part in accept.split(",")):
        if wanted in RESPONSE_TYPES:
            return wanted
        if wanted in ("*/*", "application/*"):
            return V2
    raise NotAcceptable(f"Accept {accept!r}: this API answers {', '.join(RESPONSE_TYPES)}")


def encode_field(value: Any, format_: str, field: str) -> bytes | None:
    """A produce key or value as the bytes stored: base64-decoded (binary) or the JSON's
    UTF-8 bytes (json); null stays null (no key, or a tombstone)."""
    if value is None:
        return None
    if format_ == "binary":
        if not isinstance(value, str):
            raise InvalidRequest(f"{field}: binary data is a base64 string", field=field)
        return b64decode(value, field)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def produce_records(body: ProduceBody, format_: str, partition: int | None) -> list[dict[str, Any]]:
    return [
        dict(
            key=encode_field(r.key, format_, f"records[{i}].key"),
            value=encode_field(r.value, format_, f"records[{i}].value"),
            partition=partition if partition is not None else r.partition,
        )
        for i, r in enumerate(body.records)
    ]


def partition_out(partition: int) -> dict[str, Any]:
    """A partition as REST Proxy shows it: one logical broker (0) leads every partition."""
    return {
        "partition": partition,
        "leader": 0,
        "replicas": [{"broker": 0, "leader": True, "in_sync": True}],
    }


def topic_out(description: TopicDescription) -> dict[str, Any]:
    return {
        "name": description.topic.name,
        "configs": {k: str(v) for k, v in description.topic.config.effective().items()},
        "partitions": [partition_out(p.partition) for p in description.partitions],
    }


def partition_of(description: TopicDescription, partition: int) -> PartitionInfo:
    check_partition(description.topic, partition)
    return next(info for info in description.partitions if info.partition == partition)


def request_body(model: type[BaseModel], media_types: list[str]) -> dict[str, Any]:
    """An OpenAPI requestBody: the model's schema under REST Proxy's media types (the routes
    parse their bodies themselves, so Powertools would not describe them)."""
    schema = _inline(model.model_json_schema(by_alias=True))
    return {"required": True, "content": {kind: {"schema": schema} for kind in media_types}}


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with its $defs references replaced by the definitions themselves."""
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(definitions[ref.removeprefix("#/$defs/")])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved


def produce_router(services: Services) -> Router:
    """POST /kafka/topics/{topic} and .../partitions/{partition} (the produce function)."""
    router = Router()

    def answer(topic: str, partition: int | None) -> Response[str]:
        event = router.current_event
        answer_type = response_type(event.headers.get("accept"))
        format_ = embedded_format(event.headers.get("content-type"))
        body = parse_model(ProduceBody, event.decoded_body)
        records = produce_records(body, format_, partition)
        # as REST Proxy's producer, a produce to the topic may create it; to a partition, not
        offsets, status = produce_and_wait(services, topic, records, may_create=partition is None)
        return Response(status, answer_type, json.dumps(rest_proxy_produce_response(offsets)))

    @router.post(
        f"{BASE}/topics/<topic>",
        summary="REST Proxy v2: produce to a topic",
        description=f"Content-Type {BINARY} (base64 keys and values) or {JSON} (JSON keys and "
        "values, stored as their UTF-8 JSON bytes); records may name their partition.",
        tags=["REST Proxy v2"],
        enable_validation=False,  # the body is REST Proxy's, parsed by ProduceBody
        openapi_extensions={"requestBody": request_body(ProduceBody, [BINARY, JSON])},
    )
    def produce_to_topic(topic: str) -> Response[str]:
        return answer(topic, None)

    @router.post(
        f"{BASE}/topics/<topic>/partitions/<partition>",
        summary="REST Proxy v2: produce to one partition",
        tags=["REST Proxy v2"],
        enable_validation=False,
        openapi_extensions={"requestBody": request_body(ProduceBody, [BINARY, JSON])},
    )
    def produce_to_partition(topic: str, partition: str) -> Response[str]:
        return answer(topic, _partition_number(partition))

    return router


def metadata_router(services: Services) -> Router:
    """REST Proxy v2's topic and partition metadata (the fetch function)."""
    router = Router()

    def describe(topic: str) -> TopicDescription:
        return services.log.describe_topic(topic)

    def ok(body: Any) -> Response[str]:
        answer_type = response_type(router.current_event.headers.get("accept"))
        return Response(200, answer_type, json.dumps(body))

    @router.get(f"{BASE}/topics", summary="REST Proxy v2: topic names", tags=["REST Proxy v2"])
    def list_topics() -> Response[str]:
        return ok(services.log.list_topics())

    @router.get(f"{BASE}/topics/<topic>", summary="REST Proxy v2: a topic", tags=["REST Proxy v2"])
    def get_topic(topic: str) -> Response[str]:
        return ok(topic_out(describe(topic)))

    @router.get(
        f"{BASE}/topics/<topic>/partitions",
        summary="REST Proxy v2: a topic's partitions",
        tags=["REST Proxy v2"],
    )
    def get_partitions(topic: str) -> Response[str]:
        return ok([partition_out(p.partition) for p in describe(topic).partitions])

    @router.get(
        f"{BASE}/topics/<topic>/partitions/<partition>",
        summary="REST Proxy v2: a partition",
        tags=["REST Proxy v2"],
    )
    def get_partition(topic: str, partition: str) -> Response[str]:
        info = partition_of(describe(topic), _partition_number(partition))
        return ok(partition_out(info.partition))

    @router.get(
        f"{BASE}/topics/<topic>/partitions/<partition>/offsets",
        summary="REST Proxy v2: a partition's beginning and end offsets",
        tags=["REST Proxy v2"],
    )
    def get_offsets(topic: str, partition: str) -> Response[str]:
        info = partition_of(describe(topic), _partition_number(partition))
        return ok({"beginning_offset": info.log_start_offset, "end_offset": info.high_watermark})

    return router


def _partition_number(text: str) -> int:
    if not text.isdigit() or int(text) > 2**31 - 1:
        raise InvalidRequest(f"partition {text!r} is not a partition number", field="partition")
    return int(text)
