"""The HTTP API's session: requests (SigV4-signed off loopback), safe retries, and the
library's typed errors rebuilt from the API's JSON error bodies."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import requests

from objectlog import concurrency, errors
from objectlog.adapters.sigv4 import BearerToken, SigV4
from objectlog.config import DEFAULT_REGION
from objectlog.errors import ObjectLogError, StorageUnavailable, UnknownOutcome

ATTEMPTS = 5
BACKOFF_S = 0.05
STATUS_ERRORS: dict[int, type[ObjectLogError]] = {
    400: errors.InvalidRequest,
    404: errors.TopicNotFound,
    409: errors.ConcurrentModification,
    413: errors.RecordTooLarge,
    415: errors.UnsupportedContentType,
}


def error_from(response: requests.Response) -> ObjectLogError:
    """Rebuild the library's error from the API's JSON error body."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    message = str(body.get("message") or response.reason or response.status_code)
    name = str(body.get("error", ""))
    if response.status_code == 416 or name == "OffsetOutOfRange":
        return errors.OffsetOutOfRange(
            message,
            log_start_offset=int(body.get("log_start_offset", 0)),
            high_watermark=int(body.get("high_watermark", 0)),
        )
    known = getattr(errors, name, None)
    if (
        isinstance(known, type)
        and issubclass(known, ObjectLogError)
        and known is not errors.OffsetOutOfRange
    ):
        return known(message, field=body.get("field"))
    if response.status_code >= 500:
        return StorageUnavailable(f"{message} (request id {body.get('request_id', '?')})")
    return STATUS_ERRORS.get(response.status_code, errors.InvalidRequest)(
        message, field=body.get("field")
    )


class ApiSession:
    """Requests to one objectlog HTTP API, decoded; errors raised as the library's."""

    def __init__(
        self,
        api_url: str,
        *,
        sign: bool | None = None,
        region: str = DEFAULT_REGION,
        timeout_s: float = 30.0,
        token: str | Callable[[], str] | None = None,
        http: Any = None,
    ) -> None:
        """Requests are SigV4-signed unless the API is on loopback (or sign= says), or carry
        ``token`` as a bearer token (the JWT authorizer). ``http``: what sends them, as
        requests.Session.request does (the asyncio client's aiohttp session)."""
        self.base = api_url.rstrip("/")
        self.timeout_s = timeout_s
        host = urlsplit(self.base).hostname or ""
        self.auth: requests.auth.AuthBase | None = None
        if token is not None:
            self.auth = BearerToken(token)
        elif (
            sign
            if sign is not None
            else not (host.startswith("127.") or host in ("localhost", "::1"))
        ):
            self.auth = SigV4(region)
        if http is None:
            http = requests.Session()
            http.auth = self.auth  # an application's own calls through it are signed too
        self.http = http

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        retry_unsafe: bool = False,
    ) -> Any:
        """Send and decode; retries what is safe to retry (reads, and writes with a key)."""
        safe = method == "GET" or retry_unsafe
        last: ObjectLogError | None = None
        for attempt in range(ATTEMPTS if safe else 1):
            try:
                response = self.http.request(
                    method,
                    self.base + path,
                    json=json,
                    params=params,
                    headers=headers,
                    timeout=self.timeout_s,
                    auth=self.auth,
                )
            except requests.ConnectionError as e:
                last = StorageUnavailable(f"{method} {path}: cannot connect: {e}")
            except requests.Timeout as e:
                last = (StorageUnavailable if method == "GET" else UnknownOutcome)(
                    f"{method} {path}: {e}"
                )
            else:
                if response.status_code < 400:
                    return response.json() if response.content else None
                last = error_from(response)
                if response.status_code < 500:
                    raise last
            concurrency.sleep(BACKOFF_S * 2**attempt)
        if method != "GET" and isinstance(last, StorageUnavailable) and safe:
            last = UnknownOutcome(
                f"{method} {path}: no answer after {ATTEMPTS} attempts: {last.message}"
            )
        assert last is not None
        raise last

    def close(self) -> None:
        self.http.close()
