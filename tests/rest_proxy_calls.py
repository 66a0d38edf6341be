"""REST Proxy v2 requests for the tests: one call with its media types, and the error it
answered (status and REST Proxy's error_code)."""

from __future__ import annotations

import json
from typing import Any

import requests

V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"


def call(
    method: str,
    url: str,
    body: object = None,
    *,
    content_type: str = V2,
    accept: str = V2,
    params: dict[str, Any] | None = None,
) -> requests.Response:
    data = None if body is None else json.dumps(body)
    headers = {"Content-Type": content_type, "Accept": accept}
    return requests.request(method, url, data=data, headers=headers, params=params, timeout=30)


def error(response: requests.Response) -> tuple[int, int]:
    body = response.json()
    assert set(body) == {"error_code", "message"} and body["message"], body
    return response.status_code, body["error_code"]
