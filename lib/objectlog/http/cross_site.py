"""Cross-site request safety for the whole API: a browser's state-changing request that another
site started is refused (403), before anything else looks at it.

A browser says where a request comes from: ``Sec-Fetch-Site`` (``cross-site`` when another site
started it) and ``Origin`` (the page's scheme, host and port). A form or a script on another
site can make a logged-in browser POST to the API (the web console's users, by bearer token on
AWS); such a request names another site in one of the two headers, and is refused. Clients that
send neither header (curl, the SDKs, the Kafka tools, the Lambda invocations of tests) are
unaffected: nothing here needs them to change.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def refusal(event: dict[str, Any]) -> dict[str, Any] | None:
    """The 403 answer (Lambda proxy result) for a cross-site state-changing request, or None."""
    method = str((event.get("requestContext") or {}).get("http", {}).get("method", "")).upper()
    if method not in STATE_CHANGING:
        return None
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    reason = cross_site_reason(headers, _host(event, headers))
    if reason is None:
        return None
    body = {"error": "CrossSiteRequest", "message": f"{method} refused: {reason}"}
    return {
        "statusCode": 403,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def cross_site_reason(headers: dict[str, str], host: str) -> str | None:
    """Why a request with these (lower-cased) headers, sent to host, is cross-site; None if it
    is not (or says nothing about where it comes from)."""
    if headers.get("sec-fetch-site", "").strip().lower() == "cross-site":
        return "Sec-Fetch-Site says another site sent it (cross-site)"
    origin = headers.get("origin")
    if origin is None:
        return None
    origin_host = urlsplit(origin.strip()).netloc.lower() if origin.strip() != "null" else ""
    if not origin_host or origin_host != host.lower():
        return f"Origin {origin!r} is not this API's host {host!r}"
    return None


def _host(event: dict[str, Any], headers: dict[str, str]) -> str:
    """The host the request was sent to: its Host header, else API Gateway's domain name."""
    return headers.get("host") or str((event.get("requestContext") or {}).get("domainName", ""))
