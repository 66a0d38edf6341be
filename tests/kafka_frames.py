"""Kafka requests as raw frames, for the agent's tests: encoded and decoded with kio, sent on a
connection of their own."""

from __future__ import annotations

import io
import socket
from collections.abc import Mapping
from typing import Any

from kio.serial import entity_reader, entity_writer

from objectlog.kafka.wire import build, request_schema, response_schema


def request(
    api_key: int,
    version: int,
    values: Mapping[str, Any] | None = None,
    *,
    correlation_id: int = 5,
    client_id: str = "raw",
) -> bytes:
    """A request as kio encodes it (header and body, no size prefix): zero values, but for
    ``values`` (nested entities as mappings, wire.build's rules)."""
    body = build(request_schema(api_key, version), values or {})
    return encoded(api_key, version, body, correlation_id=correlation_id, client_id=client_id)


def encoded(
    api_key: int, version: int, body: Any, *, correlation_id: int = 5, client_id: str = "raw"
) -> bytes:
    """A request whose body is a kio entity, with its header (no size prefix)."""
    header = request_schema(api_key, version).__header_schema__
    out = io.BytesIO()
    entity_writer(header)(
        out,
        header(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=correlation_id,
            client_id=client_id,
        ),
    )
    entity_writer(type(body))(out, body)
    return out.getvalue()


def answer_frame(address: str, data: bytes) -> bytes | None:
    """The answer (after its size) to one request (header and body, no size), or None if the
    agent closed the connection."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=15) as connection:
        connection.sendall(len(data).to_bytes(4, "big") + data)
        size = connection.recv(4, socket.MSG_WAITALL)
        if len(size) < 4:
            return None
        return connection.recv(int.from_bytes(size, "big"), socket.MSG_WAITALL)


def answer(address: str, api_key: int, version: int, values: Mapping[str, Any]) -> Any:
    """The agent's answer to one request, decoded (its header skipped)."""
    data = answer_frame(address, request(api_key, version, values))
    assert data is not None, f"the agent closed the connection on API {api_key} v{version}"
    schema = response_schema(api_key, version)
    header_size = 5 if schema.__flexible__ else 4  # v1 header: empty tagged fields too
    return entity_reader(schema)(data, header_size)[0]
