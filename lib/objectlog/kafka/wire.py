"""Kafka's wire framing on kio's typed messages (FACTS.md, The Kafka protocol).

A frame is a 4-byte big-endian size and that many bytes: a request header (its version follows
from the API and its version: the request class names its header schema), then the request.
Responses go back with a v0 header (correlation id) or, for flexible versions, v1 (with tagged
fields); ApiVersions always answers with a v0 header, so a client can read the answer to a
version it sent that the agent does not know.

Handlers build responses as plain mappings of the newest version's fields; ``build`` turns one
into the version the client asked for, dropping fields that version lacks and giving the ones it
has but the mapping leaves out their zero value.
"""

from __future__ import annotations

import asyncio
import datetime
import io
import logging
import uuid
from collections.abc import Mapping
from dataclasses import MISSING, Field, dataclass, fields
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import EntityField, EntityTupleField, classify_field, is_optional
from kio.static.primitive import Records

logger = logging.getLogger(__name__)
API_VERSIONS_KEY = 18
FRAME_SIZE_BYTES = 4
HEADER_PREFIX_BYTES = 4  # api key (int16) and api version (int16), in every header version


class MalformedFrame(Exception):
    """The connection sent something that is not a Kafka request: it is closed."""


@dataclass(frozen=True)
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any  # the kio request entity; None when the version is not one kio (or we) know


async def read_frame(reader: asyncio.StreamReader, max_bytes: int) -> bytes | None:
    """The next frame's bytes, or None at a clean end of the stream."""
    try:
        prefix = await reader.readexactly(FRAME_SIZE_BYTES)
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise MalformedFrame("the connection ended inside a frame's size") from e
    size = int.from_bytes(prefix, "big", signed=True)
    if size < HEADER_PREFIX_BYTES + 4:
        raise MalformedFrame(f"a frame of {size} bytes cannot hold a request header")
    if size > max_bytes:
        raise MalformedFrame(f"a frame of {size} bytes is over the limit of {max_bytes}")
    try:
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError as e:
        raise MalformedFrame(f"the connection ended inside a frame of {size} bytes") from e


def parse_request(frame: bytes, supported: Mapping[int, tuple[int, int]]) -> Request:
    """The frame's header and, for an API and version in ``supported``, its request.

    An ApiVersions request of a version the agent does not support is returned with no body
    (answered with UNSUPPORTED_VERSION, as Kafka does); any other unsupported API or version,
    and any frame whose header or request is cut short or does not parse, is a MalformedFrame.
    Bytes after the fields the version defines are ignored, as Kafka's broker ignores them
    (librdkafka 2.16's all-topics Metadata v12 carries 3)."""
    api_key = int.from_bytes(frame[0:2], "big", signed=True)
    api_version = int.from_bytes(frame[2:4], "big", signed=True)
    versions = supported.get(api_key)
    known = versions is not None and versions[0] <= api_version <= versions[1]
    if not known and api_key == API_VERSIONS_KEY:
        correlation_id = int.from_bytes(frame[4:8], "big", signed=True)
        return Request(api_key, api_version, correlation_id, None, None)
    if not known:
        raise MalformedFrame(f"API {api_key} version {api_version} is not offered")
    schema = request_schema(api_key, api_version)
    try:
        header, used = entity_reader(schema.__header_schema__)(frame, 0)
        body, size = entity_reader(schema)(frame, used)
    except Exception as e:  # kio's BufferUnderflow, bad UTF-8, bad varints
        raise MalformedFrame(f"API {api_key} v{api_version}: {type(e).__name__}: {e}") from e
    if used + size < len(frame):  # a broker reads the fields it knows and ignores the rest
        logger.debug(
            "API %d v%d correlation %d: %d bytes after the request, ignored",
            api_key,
            api_version,
            header.correlation_id,
            len(frame) - used - size,
        )
    return Request(api_key, api_version, header.correlation_id, header.client_id, body)


def encode_response(request: Request, response: Any) -> bytes:
    """The response frame (size prefix included) for a request."""
    schema = type(response)
    out = io.BytesIO()
    out.write(b"\0\0\0\0")
    header_schema = schema.__header_schema__
    if request.api_key == API_VERSIONS_KEY:
        from kio.schema.response_header.v0.header import ResponseHeader

        header_schema = ResponseHeader
    entity_writer(header_schema)(out, header_schema(correlation_id=request.correlation_id))
    entity_writer(schema)(out, response)
    frame = out.getbuffer()
    frame[0:4] = (len(frame) - 4).to_bytes(4, "big")
    return bytes(frame)


@cache
def request_schema(api_key: int, api_version: int) -> Any:
    return load_request_schema(api_key, api_version)


@cache
def response_schema(api_key: int, api_version: int) -> Any:
    return load_response_schema(api_key, api_version)


def build(schema: Any, values: Mapping[str, Any]) -> Any:
    """A kio entity of ``schema`` from a mapping: fields the schema lacks are dropped, fields it
    has that the mapping leaves out get their default or their type's zero value; nested
    entities are mappings (or sequences of them)."""
    arguments = {}
    for spec in fields(schema):
        if spec.name in values:
            arguments[spec.name] = _converted(spec, values[spec.name])
        elif spec.default is MISSING and spec.default_factory is MISSING:
            arguments[spec.name] = _zero(spec)
    return schema(**arguments)


def _converted(spec: Field[Any], value: Any) -> Any:
    kind = classify_field(spec)
    if isinstance(kind, EntityTupleField):
        if value is None:  # a null array (every topic, say), where the version allows one
            return None if is_optional(spec) else ()
        return tuple(build(kind.type_, item) for item in value)
    if isinstance(kind, EntityField):
        return None if value is None else build(kind.type_, value)
    if value is None:  # a field this version cannot leave null gets its zero value
        return None if is_optional(spec) else _zero(spec)
    kafka_type = spec.metadata.get("kafka_type")
    if kafka_type == "error_code":
        return ErrorCode(int(value))
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=int(value))
    if kafka_type == "datetime_i64":
        return datetime.datetime.fromtimestamp(int(value) / 1000, tz=datetime.UTC)
    if kafka_type == "records":
        return Records(value)
    return value


def _zero(spec: Field[Any]) -> Any:
    kind = classify_field(spec)
    if kind.is_array:
        return ()
    kafka_type = spec.metadata.get("kafka_type")
    if isinstance(kind, EntityField):
        return None if is_optional(spec) else build(kind.type_, {})
    zeros: dict[str, Any] = {
        "bool": False,
        "string": "",
        "bytes": b"",
        "records": None,
        "uuid": uuid.UUID(int=0),
        "error_code": ErrorCode.none,
        "timedelta_i32": datetime.timedelta(0),
        "timedelta_i64": datetime.timedelta(0),
        "float64": 0.0,
        "datetime_i64": datetime.datetime.fromtimestamp(0, tz=datetime.UTC),
    }
    return zeros.get(str(kafka_type), 0)
