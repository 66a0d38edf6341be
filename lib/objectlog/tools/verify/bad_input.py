"""A corpus of malformed and hostile requests for the HTTP API: each must get a 4xx with a JSON
body naming the problem, and none may store anything (no object, no offset, no group)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import requests

TOPIC = "bad-input"


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "application/json"),)
    params: tuple[tuple[str, str], ...] = ()


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


def _records(*records: dict[str, Any]) -> bytes:
    return _json({"records": list(records)})


B64 = base64.b64encode(b"ok").decode()
CORPUS: tuple[Case, ...] = (
    Case("truncated JSON", "POST", f"/topics/{TOPIC}/records", b'{"records": [{"value": "'),
    Case("not JSON at all", "POST", f"/topics/{TOPIC}/records", b"\x00\xff\xfe garbage"),
    Case("JSON array body", "POST", f"/topics/{TOPIC}/records", _json([{"value": B64}])),
    Case("bad base64 value", "POST", f"/topics/{TOPIC}/records", _records({"value": "%%%"})),
    Case(
        "bad base64 key", "POST", f"/topics/{TOPIC}/records", _records({"key": "a", "value": B64})
    ),
    Case(
        "bad base64 header",
        "POST",
        f"/topics/{TOPIC}/records",
        _records({"value": B64, "headers": [{"key": "h", "value": "?"}]}),
    ),
    Case(
        "record over max.message.bytes",
        "POST",
        f"/topics/{TOPIC}/records",
        _records({"value": base64.b64encode(b"x" * 2_000).decode()}),
    ),
    Case(
        "body over Lambda's 6 MB",
        "POST",
        f"/topics/{TOPIC}/records",
        b'{"records": [{"value": "' + b"A" * (6 * 1024 * 1024) + b'"}]}',
    ),
    Case(
        "huge header list",
        "POST",
        f"/topics/{TOPIC}/records",
        _records({"value": B64, "headers": [{"key": "h", "value": B64}] * 5_000}),
    ),
    Case(
        "header key too long",
        "POST",
        f"/topics/{TOPIC}/records",
        _records({"value": B64, "headers": [{"key": "k" * 5_000, "value": B64}]}),
    ),
    Case(
        "negative partition",
        "POST",
        f"/topics/{TOPIC}/records",
        _records({"value": B64, "partition": -1}),
    ),
    Case(
        "partition out of range",
        "POST",
        f"/topics/{TOPIC}/records",
        _records({"value": B64, "partition": 7}),
    ),
    Case(
        "partition overflow",
        "POST",
        f"/topics/{TOPIC}/records",
        _records({"value": B64, "partition": 2**63}),
    ),
    Case(
        "negative timestamp",
        "POST",
        f"/topics/{TOPIC}/records",
        _records({"value": B64, "timestamp": -5}),
    ),
    Case(
        "unknown record field",
        "POST",
        f"/topics/{TOPIC}/records",
        _records({"value": B64, "offset": 3}),
    ),
    Case(
        "unknown top-level field",
        "POST",
        f"/topics/{TOPIC}/records",
        _json({"records": [{"value": B64}], "acks": 0}),
    ),
    Case("no records", "POST", f"/topics/{TOPIC}/records", _json({"records": []})),
    Case(
        "wrong content type",
        "POST",
        f"/topics/{TOPIC}/records",
        _records({"value": B64}),
        (("Content-Type", "text/plain"),),
    ),
    Case(
        "form content type",
        "POST",
        f"/topics/{TOPIC}/records",
        b"value=x",
        (("Content-Type", "application/x-www-form-urlencoded"),),
    ),
    Case("missing topic", "POST", "/topics/no-such-topic/records", _records({"value": B64})),
    Case("path traversal topic", "POST", "/topics/..%2F..%2Fetc/records", _records({"value": B64})),
    Case("dot-dot topic", "POST", "/topics/../records", _records({"value": B64})),
    Case("topic with a slash", "POST", "/topics/a%2Fb/records", _records({"value": B64})),
    Case("topic name too long", "POST", "/topics", _json({"name": "t" * 250})),
    Case("topic name with spaces", "POST", "/topics", _json({"name": "bad name"})),
    Case("topic with 0 partitions", "POST", "/topics", _json({"name": "zero", "partitions": 0})),
    Case("unknown topic config", "POST", "/topics", _json({"name": "cfg", "config": {"x.y": "1"}})),
    Case(
        "bad retention value",
        "POST",
        "/topics",
        _json({"name": "ret", "config": {"retention.ms": "soon"}}),
    ),
    Case(
        "negative fetch offset",
        "GET",
        f"/topics/{TOPIC}/partitions/0/records",
        params=(("offset", "-1"),),
    ),
    Case(
        "overflow fetch offset",
        "GET",
        f"/topics/{TOPIC}/partitions/0/records",
        params=(("offset", str(2**64)),),
    ),
    Case(
        "fetch past the end",
        "GET",
        f"/topics/{TOPIC}/partitions/0/records",
        params=(("offset", "99"),),
    ),
    Case("fetch without offset", "GET", f"/topics/{TOPIC}/partitions/0/records"),
    Case(
        "non-numeric partition",
        "GET",
        f"/topics/{TOPIC}/partitions/x/records",
        params=(("offset", "0"),),
    ),
    Case(
        "huge max_wait_ms",
        "GET",
        f"/topics/{TOPIC}/partitions/0/records",
        params=(("offset", "0"), ("max_wait_ms", "99999999")),
    ),
    Case("group name too long", "POST", f"/groups/{'g' * 250}/members", _json({"topics": [TOPIC]})),
    Case(
        "join with unknown field", "POST", "/groups/g/members", _json({"topics": [TOPIC], "x": 1})
    ),
    Case(
        "commit to a partition the topic lacks",
        "POST",
        "/groups/g/offsets",
        _json({"offsets": [{"topic": TOPIC, "partition": 999, "offset": 0}]}),
    ),
    Case(
        "commit negative offset",
        "POST",
        "/groups/g/offsets",
        _json({"offsets": [{"topic": TOPIC, "partition": 0, "offset": -1}]}),
    ),
    Case("committed bad partitions", "GET", "/groups/g/offsets", params=(("partitions", "::"),)),
    Case(
        "reset to nowhere",
        "POST",
        "/groups/g/offsets/reset",
        _json({"topics": [TOPIC], "to": "sideways"}),
    ),
    Case("method not allowed", "PUT", f"/topics/{TOPIC}", _json({})),
)


@dataclass(frozen=True)
class Outcome:
    case: Case
    status: int
    message: str | None

    @property
    def ok(self) -> bool:
        return 400 <= self.status < 500 and bool(self.message)


def run_corpus(api_url: str) -> list[Outcome]:
    """Send every case; each one's status and the message its JSON body gave."""
    outcomes = []
    with requests.Session() as session:
        for case in CORPUS:
            response = session.request(
                case.method,
                api_url.rstrip("/") + case.path,
                data=case.body,
                headers=dict(case.headers),
                params=list(case.params),
                timeout=60,
            )
            try:
                message = response.json().get("message")
            except ValueError:
                message = None
            outcomes.append(Outcome(case, response.status_code, message))
    return outcomes
