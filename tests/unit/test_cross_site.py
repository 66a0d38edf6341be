"""The cross-site rule (http.cross_site): a browser's state-changing request another site started
is refused; requests that name no origin (curl, the SDKs, Kafka tools) pass."""

from __future__ import annotations

import json
from typing import Any

import pytest

from objectlog.http.cross_site import cross_site_reason, refusal

HOST = "127.0.0.1:8080"


def event(method: str, headers: dict[str, str]) -> dict[str, Any]:
    return {
        "headers": {"host": HOST, **headers},
        "requestContext": {"http": {"method": method, "path": "/topics"}},
    }


@pytest.mark.parametrize(
    ("headers", "refused"),
    [
        pytest.param({}, False, id="no-browser-headers"),
        pytest.param({"origin": f"http://{HOST}"}, False, id="same-origin"),
        pytest.param({"sec-fetch-site": "same-origin"}, False, id="fetch-site-same-origin"),
        pytest.param({"sec-fetch-site": "none"}, False, id="typed-by-the-user"),
        pytest.param({"sec-fetch-site": "cross-site"}, True, id="fetch-site-cross-site"),
        pytest.param({"origin": "https://evil.example"}, True, id="other-origin"),
        pytest.param({"origin": "http://127.0.0.1:9999"}, True, id="other-port"),
        pytest.param({"origin": "null"}, True, id="opaque-origin"),
        pytest.param(
            {"origin": f"http://{HOST}", "sec-fetch-site": "cross-site"}, True, id="either-says"
        ),
    ],
)
def test_state_changing_requests_from_another_site_are_refused(
    headers: dict[str, str], refused: bool
) -> None:
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        answer = refusal(event(method, headers))
        assert (answer is not None) == refused, (method, headers)
        if answer is not None:
            assert answer["statusCode"] == 403
            body = json.loads(answer["body"])
            assert body["error"] == "CrossSiteRequest" and method in body["message"]


def test_reads_are_never_refused() -> None:
    for headers in ({"sec-fetch-site": "cross-site"}, {"origin": "https://evil.example"}):
        assert refusal(event("GET", headers)) is None


def test_the_host_falls_back_to_api_gateways_domain_name() -> None:
    headless = {
        "headers": {"origin": "https://api.example"},
        "requestContext": {"http": {"method": "POST"}, "domainName": "api.example"},
    }
    assert refusal(headless) is None
    assert cross_site_reason({"origin": "https://API.example"}, "api.example") is None
