"""Confluent REST Proxy v2 under its own base path, /kafka (DESIGN.md section 13).

REST Proxy clients are configured with ``<api>/kafka`` as their base URL and send what REST
Proxy's documentation shows: produce in the binary and JSON embedded formats and in the schema
formats (avro, jsonschema, protobuf: keys and values encoded by objectlog.schemas.serde with
schemas of objectlog's registry, registered under the topic's subjects as REST Proxy registers
them), topic and partition metadata in its shapes, its error bodies (``error_code``,
``message``). objectlog's own routes and their JSON are untouched. Each route checks the ACLs
first (http.guards, door ``rest-proxy``): a refusal answers 403 with error_code 40301.
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
    InvalidSchema,
    NotAcceptable,
    NotAuthorized,
    ObjectLogError,
    RecordNotJson,
    SchemaFormatRefused,
    SchemaMismatch,
    SchemaRegistryError,
    TopicNotFound,
    UndecodableRecord,
    UnknownPartition,
    UnsupportedContentType,
)
from objectlog.format.acls import Operation
from objectlog.format.topics import (
    PartitionInfo,
    TopicDescription,
    check_partition,
    validate_topic_name,
)
from objectlog.http.guards import TOPIC
from objectlog.http.models import MAX_RECORDS_PER_REQUEST, b64decode, rest_proxy_produce_response
from objectlog.http.routes import Services, parse_model, produce_and_wait, route_guard
from objectlog.schemas import serde
from objectlog.schemas.parsing import SchemaInput
from objectlog.schemas.registry import SchemaRegistry
from objectlog.schemas.types import AVRO, PROTOBUF
from objectlog.schemas.types import JSON as JSON_SCHEMA
from objectlog.stores.schemas import StoredSchema

BASE = "/kafka"
V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"
JSON = "application/vnd.kafka.json.v2+json"
# the schema formats, by the registry's name of the schema type each takes
SCHEMA_FORMATS = {"avro": AVRO, "jsonschema": JSON_SCHEMA, "protobuf": PROTOBUF}
EMBEDDED_FORMATS = {
    BINARY: "binary",
    JSON: "json",
    **{f"application/vnd.kafka.{name}.v2+json": name for name in SCHEMA_FORMATS},
}
RESPONSE_TYPES = (V2, "application/vnd.kafka+json", "application/json")
REQUEST_TYPES = (*EMBEDDED_FORMATS, V2, "application/vnd.kafka+json", "application/json")

# REST Proxy's error codes: the HTTP status, or the status and a sub-code where it has one
# (kafka-rest's Errors.java).
TOPIC_NOT_FOUND = 40401
PARTITION_NOT_FOUND = 40402
INVALID_REQUEST = 42201
KEY_SCHEMA_MISSING = 42201
VALUE_SCHEMA_MISSING = 42202
JSON_CONVERSION = 42203  # a key or value that does not fit its schema
INVALID_SCHEMA = 42205
SCHEMA_LOOKUP = 42207  # a schema registration or lookup that failed ("Error serializing message")
KAFKA_AUTHORIZATION = 40301  # KAFKA_AUTHORIZATION_ERROR_CODE: the ACLs refused the request
DOOR = "rest-proxy"  # its name in authorization logs and metrics (services.access)
_SUB_CODES: tuple[tuple[type[ObjectLogError], int], ...] = (
    (NotAuthorized, KAFKA_AUTHORIZATION),
    (TopicNotFound, TOPIC_NOT_FOUND),
    (UnknownPartition, PARTITION_NOT_FOUND),
    (ConsumerInstanceNotFound, 40403),
    (ConsumerFormatMismatch, 40601),
    (ConsumerInstanceExists, 40902),
    (RecordNotJson, 40903),  # REST Proxy's "illegal state"
    (UndecodableRecord, 40903),
    (SchemaMismatch, JSON_CONVERSION),
    (InvalidConsumerConfig, 42204),
)


def error_code(error: ObjectLogError) -> int:
    """REST Proxy's error_code for an objectlog error."""
    if isinstance(error, SchemaFormatRefused):
        return error.code
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
    """REST Proxy v2's produce body; the schemas (as text, or the id of one the registry holds)
    belong to the schema formats, and the binary and json formats ignore them."""

    model_config = ConfigDict(extra="ignore")
    key_schema: str | None = None
    key_schema_id: int | None = None
    value_schema: str | None = None
    value_schema_id: int | None = None
    records: list[ProduceRecord] = Field(min_length=1, max_length=MAX_RECORDS_PER_REQUEST)


def media_type(header: str | None) -> str:
    """The media type of a Content-Type or Accept entry, without parameters, lower case."""
    return (header or "").split(";")[0].strip().lower()


def format_media_type(format_: str) -> str:
    """The v2 media type of an embedded format: application/vnd.kafka.avro.v2+json."""
    return f"application/vnd.kafka.{format_}.v2+json"


def embedded_format(content_type: str | None) -> str:
    """The embedded format of a produce Content-Type (binary, json, avro, jsonschema,
    protobuf); 415 for anything else."""
    given = media_type(content_type)
    if given in EMBEDDED_FORMATS:
        return EMBEDDED_FORMATS[given]
    raise UnsupportedContentType(
        f"Content-Type {given or '(none)'} is not a REST Proxy v2 embedded format; send "
        f"application/vnd.kafka.{{binary,json,{','.join(SCHEMA_FORMATS)}}}.v2+json",
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


def schema_records(
    registry: SchemaRegistry, topic: str, body: ProduceBody, format_: str, partition: int | None
) -> tuple[list[dict[str, Any]], int | None, int | None]:
    """The records of a schema-format produce in the registry's wire format, with the key and
    value schema ids (None where the request gives no schema). A schema given as text is
    registered under the topic's subject (TopicNameStrategy: <topic>-key, <topic>-value), as
    REST Proxy registers it; a schema id must be one of that subject's. Every record is
    encoded before any is sent, so a refused request stores no record."""
    schema_type = SCHEMA_FORMATS[format_]
    key_schema = request_schema(
        registry, f"{topic}-key", schema_type, body.key_schema, body.key_schema_id, "key"
    )
    value_schema = request_schema(
        registry, f"{topic}-value", schema_type, body.value_schema, body.value_schema_id, "value"
    )
    records = [
        dict(
            key=encode_schema_field(registry, key_schema, r.key, f"records[{i}].key"),
            value=encode_schema_field(registry, value_schema, r.value, f"records[{i}].value"),
            partition=partition if partition is not None else r.partition,
        )
        for i, r in enumerate(body.records)
    ]
    key_id = None if key_schema is None else key_schema.id
    return records, key_id, None if value_schema is None else value_schema.id


def request_schema(
    registry: SchemaRegistry,
    subject: str,
    schema_type: str,
    text: str | None,
    schema_id: int | None,
    what: str,
) -> StoredSchema | None:
    """The key's or value's schema a produce names: registered from its text, or looked up by
    its id under the subject (None: the request gives none)."""
    if text is not None and schema_id is not None:
        raise InvalidRequest(
            f"give {what}_schema or {what}_schema_id, not both", field=f"{what}_schema"
        )
    try:
        if text is not None:
            return registry.register(subject, SchemaInput(text, schema_type)).schema
        if schema_id is None:
            return None
        stored = registry.schema_by_id(schema_id, subject)
    except InvalidSchema as e:
        raise SchemaFormatRefused(
            f"Invalid schema: {e.message}", INVALID_SCHEMA, field=f"{what}_schema"
        ) from e
    except SchemaRegistryError as e:
        if e.retriable:
            raise
        raise SchemaFormatRefused(
            f"Error serializing message. {e.message}", SCHEMA_LOOKUP, field=f"{what}_schema"
        ) from e
    if stored.schema_type != schema_type:
        raise SchemaFormatRefused(
            f"Error serializing message. Schema {schema_id} is a {stored.schema_type} schema, "
            f"not {schema_type}",
            SCHEMA_LOOKUP,
            field=f"{what}_schema_id",
        )
    return stored


def encode_schema_field(
    registry: SchemaRegistry, schema: StoredSchema | None, value: Any, field: str
) -> bytes | None:
    """A key or value in the wire format of its schema; null stays null."""
    if value is None:
        return None
    if schema is None:
        what = field.rpartition(".")[2]
        raise SchemaFormatRefused(
            f"Request includes {what}s but does not include {what} schema ({field})",
            KEY_SCHEMA_MISSING if what == "key" else VALUE_SCHEMA_MISSING,
            field=f"{what}_schema",
        )
    try:
        return serde.encode(registry, schema, value)
    except SchemaMismatch as e:
        raise SchemaMismatch(
            f"Conversion of JSON to Object failed: {field}: {e.message}", field=field
        ) from None


def partition_out(partition: int) -> dict[str, Any]:
    """A partition as REST Proxy shows it: one logical broker (0) leads every partition."""
    return {
        "partition": partition,
        "leader": 0,
        "replicas": [{"broker": 0, "leader": True, "in_sync": True}],
    }


def topic_out(description: TopicDescription, configs: bool = True) -> dict[str, Any]:
    """A topic as REST Proxy shows it; ``configs``: whether the caller may see them."""
    shown = description.topic.config.effective() if configs else {}
    return {
        "name": description.topic.name,
        "configs": {k: str(v) for k, v in shown.items()},
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
    guard = route_guard(services, router, DOOR)

    def answer(topic: str, partition: int | None) -> Response[str]:
        event = router.current_event
        answer_type = response_type(event.headers.get("accept"))
        format_ = embedded_format(event.headers.get("content-type"))
        body = parse_model(ProduceBody, event.decoded_body)
        # as REST Proxy's producer, a produce to the topic may create it; to a partition, not
        may_create = partition is None
        # WRITE on the topic (and CREATE if made here) also covers a schema registered under
        # its subjects, as the Schema Registry authorizes registering (TopicNameStrategy)
        guard.produce(services.log, topic, may_create=may_create)
        key_schema_id = value_schema_id = None
        if format_ in SCHEMA_FORMATS:
            # the topic first: no schema is registered for a topic the produce cannot reach
            name = validate_topic_name(topic)
            if may_create:
                services.log.topic_or_create(name)
            else:
                services.log.topic(name)
            records, key_schema_id, value_schema_id = schema_records(
                services.registry, topic, body, format_, partition
            )
        else:
            records = produce_records(body, format_, partition)
        offsets, status = produce_and_wait(services, topic, records, may_create=may_create)
        answered = rest_proxy_produce_response(offsets)
        answered.update(key_schema_id=key_schema_id, value_schema_id=value_schema_id)
        return Response(status, answer_type, json.dumps(answered))

    produce_types = list(EMBEDDED_FORMATS)

    @router.post(
        f"{BASE}/topics/<topic>",
        summary="REST Proxy v2: produce to a topic",
        description=f"Content-Type {BINARY} (base64 keys and values), {JSON} (JSON keys and "
        "values, stored as their UTF-8 JSON bytes), or a schema format (application/vnd.kafka."
        "{avro,jsonschema,protobuf}.v2+json: JSON keys and values with key_schema/value_schema "
        "or their ids, stored in the Schema Registry's wire format); records may name their "
        "partition.",
        tags=["REST Proxy v2"],
        enable_validation=False,  # the body is REST Proxy's, parsed by ProduceBody
        openapi_extensions={"requestBody": request_body(ProduceBody, produce_types)},
    )
    def produce_to_topic(topic: str) -> Response[str]:
        return answer(topic, None)

    @router.post(
        f"{BASE}/topics/<topic>/partitions/<partition>",
        summary="REST Proxy v2: produce to one partition",
        tags=["REST Proxy v2"],
        enable_validation=False,
        openapi_extensions={"requestBody": request_body(ProduceBody, produce_types)},
    )
    def produce_to_partition(topic: str, partition: str) -> Response[str]:
        return answer(topic, _partition_number(partition))

    return router


def metadata_router(services: Services) -> Router:
    """REST Proxy v2's topic and partition metadata (the fetch function)."""
    router = Router()
    guard = route_guard(services, router, DOOR)

    def describe(topic: str) -> TopicDescription:
        guard.topic(Operation.DESCRIBE, topic)
        return services.log.describe_topic(topic)

    def ok(body: Any) -> Response[str]:
        answer_type = response_type(router.current_event.headers.get("accept"))
        return Response(200, answer_type, json.dumps(body))

    @router.get(f"{BASE}/topics", summary="REST Proxy v2: topic names", tags=["REST Proxy v2"])
    def list_topics() -> Response[str]:
        return ok(guard.visible(Operation.DESCRIBE, TOPIC, services.log.list_topics()))

    @router.get(f"{BASE}/topics/<topic>", summary="REST Proxy v2: a topic", tags=["REST Proxy v2"])
    def get_topic(topic: str) -> Response[str]:
        return ok(topic_out(describe(topic), guard.config_shown(topic)))

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
