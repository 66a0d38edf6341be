"""The embedded AWS endpoint: moto's server app, one request at a time.

moto's threaded server handles requests concurrently without making a conditional write
atomic: measured, 8 threads x 40 conditional UpdateItems on one item lost 11 updates and
handed out 9 overlapping offset ranges. Serializing every request through one lock makes
DynamoDB conditions and S3 ``If-None-Match`` behave as they do on AWS (320/320, no overlap),
so a concurrency test measures objectlog, not moto.
"""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from objectlog.tools.emulators.processes import free_port  # re-exported for the tests
from objectlog.tools.persistence import (
    DurableState,
    Request,
    changes_state,
    read_body,
    request_service,
)
from objectlog.tools.wsgi_server import BackgroundWsgiServer

__all__ = ["EmbeddedAWS", "SerializedApp", "free_port", "start_dev_process"]

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class SerializedApp:
    """A WSGI app that runs the wrapped app for one request at a time, body included; with a
    DurableState, each successful S3 or DynamoDB write is journaled before it is answered."""

    def __init__(self, app: WsgiApp, state: DurableState | None = None) -> None:
        self._app = app
        self._state = state
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        with self._lock:
            if self._state is None or not changes_state(environ):
                return self._run(environ, start_response)
            body = read_body(environ)
            status: list[str] = []

            def recording(code: str, headers: Any, exc_info: Any = None) -> Any:
                status.append(code)
                return start_response(code, headers, exc_info)

            answer = self._run(environ, recording)
            if status and status[-1].startswith("2"):
                self._state.record(Request.of(environ, body))
            return answer

    def _run(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        result = self._app(environ, start_response)
        try:
            return [b"".join(result)]
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()

    def close(self) -> None:
        """Checkpoint the durable state (if any), waiting for the request in progress."""
        if self._state is not None:
            with self._lock:
                self._state.close()


class ForwardingApp:
    """DynamoDB requests (X-Amz-Target DynamoDB_*) go to another endpoint (DynamoDB Local),
    byte for byte, outside any lock; everything else to the wrapped app. So one endpoint
    serves S3 from moto and DynamoDB from DynamoDB Local, as LocalStack serves both."""

    def __init__(self, app: WsgiApp, dynamodb_url: str) -> None:
        self._app = app
        self._target = urlsplit(dynamodb_url)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if not str(environ.get("HTTP_X_AMZ_TARGET", "")).startswith("DynamoDB_"):
            return self._app(environ, start_response)
        request = Request.of(environ, read_body(environ))
        hop_by_hop = ("Host", "Connection", "Content-Length")
        headers = {k: v for k, v in request.headers.items() if k not in hop_by_hop}
        connection = http.client.HTTPConnection(
            self._target.hostname or "127.0.0.1", self._target.port, timeout=60
        )
        try:
            connection.request("POST", "/", body=request.body, headers=headers)
            response = connection.getresponse()
            payload = response.read()
            passed = [
                (k, v)
                for k, v in response.getheaders()
                if k.lower() not in ("connection", "transfer-encoding", "content-length")
            ]
        finally:
            connection.close()
        passed.append(("Content-Length", str(len(payload))))
        start_response(f"{response.status} {response.reason}", passed)
        return [payload]


RequestLog = Callable[[str], None]


class LoggedApp:
    """One line per request: time, service and operation, status, milliseconds."""

    def __init__(self, app: WsgiApp, log: RequestLog) -> None:
        self._app = app
        self._log = log

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        started = time.perf_counter()
        status: list[str] = []

        def recording(code: str, headers: Any, exc_info: Any = None) -> Any:
            status.append(code.split(" ", 1)[0])
            return start_response(code, headers, exc_info)

        result = self._app(environ, recording)
        elapsed_ms = (time.perf_counter() - started) * 1000
        code = status[-1] if status else "-"
        self._log(f"aws {describe_request(environ)} {code} {elapsed_ms:.1f} ms")
        return result


def describe_request(environ: dict[str, Any]) -> str:
    """``dynamodb UpdateItem``, ``s3 PUT /bucket/key``: what a request to the endpoint is."""
    target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
    if target.startswith("DynamoDB_"):
        return f"dynamodb {target.rpartition('.')[2]}"
    service = request_service(environ) or "aws"
    return f"{service} {environ.get('REQUEST_METHOD')} {environ.get('PATH_INFO', '/')}"


class EmbeddedAWS:
    """moto server on loopback, in a background thread of this process, serialized unless
    told otherwise (serialize=False: for S3 beside DynamoDB Local, which needs no lock)."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 4566,
        *,
        serialize: bool = True,
        data_dir: Path | None = None,
        dynamodb_url: str | None = None,
        request_log: RequestLog | None = None,
    ) -> None:
        """data_dir: keep S3 and DynamoDB state there (tools.persistence; serialized).
        dynamodb_url: forward DynamoDB requests there (DynamoDB Local) instead of to moto.
        request_log: called with one line per request."""
        self.host = host
        self.port = port
        self.serialize = serialize or data_dir is not None
        self.data_dir = data_dir
        self.dynamodb_url = dynamodb_url
        self.request_log = request_log
        self.replayed = 0  # journaled requests replayed at start (data_dir only)
        self._server: BackgroundWsgiServer | None = None
        self._app: SerializedApp | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> EmbeddedAWS:
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )

        moto_app = DomainDispatcherApplication(create_backend_app)
        app: Any = moto_app
        if self.serialize:
            state = None
            if self.data_dir is not None:
                state = DurableState(self.data_dir, moto_app)
                self.replayed = state.restore()
            app = self._app = SerializedApp(moto_app, state)
        if self.dynamodb_url is not None:
            app = ForwardingApp(app, self.dynamodb_url)
        if self.request_log is not None:
            app = LoggedApp(app, self.request_log)
        self._server = BackgroundWsgiServer("embedded-aws", MotoRequestHandler)
        self.port = self._server.start(app, self.host, self.port)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
        if self._app is not None:
            self._app.close()
        self._server = self._app = None

    def __enter__(self) -> EmbeddedAWS:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_dev_process(
    port: int,
    api_port: int,
    *options: str,
    kafka_port: int = 0,
    environment: dict[str, str] | None = None,
) -> subprocess.Popen[str]:
    """``objectlog dev`` in a process of its own (its own GIL), printing its banner on stdout;
    options go to ``objectlog dev`` (``--in-memory``, ``--data-dir DIR``, ...). No Kafka agent
    unless kafka_port is given (9092 may be taken by a `make run`). environment: variables
    added to its environment (``OBJECTLOG_JWT_ISSUER``, say).

    AWS_ENDPOINT_URL* are dropped from its environment: it is the endpoint. So is
    POWERTOOLS_METRICS_DISABLED (the tests' own): the command decides, as from a shell.
    """
    inherited = {k: v for k, v in os.environ.items() if k != "POWERTOOLS_METRICS_DISABLED"}
    env = {k: v for k, v in inherited.items() if not k.startswith("AWS_ENDPOINT_URL")}
    env.update(PYTHONUNBUFFERED="1", **(environment or {}))
    command = [sys.executable, "-m", "objectlog.tools.cli", "dev", "--port", str(port)]
    return subprocess.Popen(
        [*command, "--api-port", str(api_port), "--kafka-port", str(kafka_port), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
