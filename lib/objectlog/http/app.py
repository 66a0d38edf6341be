"""The resolvers behind each Lambda function, with errors mapped by kind, never by message.

    produce  POST/PATCH/DELETE topic routes, POST records (JSON and REST Proxy v2)
    fetch    GET routes, consumer-group routes, /docs (Swagger UI, assets from the Powertools
             package), /openapi.json, the web console (/console, http.console_routes)

A browser's cross-site POST, PUT, PATCH or DELETE is refused (403) before anything else
(http.cross_site).

A 5xx never carries a stack trace: it carries the request id, which is in the logs.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from objectlog.clients.direct import ObjectLog
from objectlog.errors import ObjectLogError
from objectlog.functions import snapstart
from objectlog.http import cross_site, rest_proxy, schema_registry
from objectlog.http.acl_routes import acls_read_router, acls_write_router
from objectlog.http.console_api import console_api_router
from objectlog.http.console_routes import console_router
from objectlog.http.group_routes import groups_router
from objectlog.http.models import FetchResponse, OffsetOut, ProduceResponse
from objectlog.http.principals import authenticated_principal
from objectlog.http.resolver import HttpApiResolver
from objectlog.http.rest_consumers import consumers_router
from objectlog.http.routes import (
    FETCH,
    PRODUCE,
    REST_PROXY_BINARY,
    ROUTES,
    Services,
    fetch_router,
    produce_router,
    topic_admin_router,
)
from objectlog.http.transaction_routes import (
    transactions_read_router,
    transactions_write_router,
)
from objectlog.telemetry import log_metrics, logger, metrics, tracer

TITLE = "objectlog HTTP API"
API_VERSION = "1.0.0"
DOCS = "/docs"


def route_pattern(path: str) -> re.Pattern[str]:
    """An API Gateway route path as a pattern: {name} is one segment, {name+} the rest."""
    greedy = re.sub(r"\{[^/]+\+\}", ".+", path)
    return re.compile("^" + re.sub(r"\{[^/]+\}", "[^/]+", greedy) + "$")


_PATTERNS = [(method, route_pattern(path)) for method, path, _ in ROUTES]


def allowed_methods(path: str) -> list[str]:
    return sorted({method for method, pattern in _PATTERNS if pattern.match(path)})


def error_response(status: int, body: dict[str, Any]) -> Response:
    return Response(status, "application/json", json.dumps(body))


def is_rest_proxy(path: str) -> bool:
    return path == rest_proxy.BASE or path.startswith(f"{rest_proxy.BASE}/")


def build_app(function: str, services: Services) -> APIGatewayHttpResolver:
    """The resolver for one function (PRODUCE or FETCH), or "all" for the whole API."""
    app = HttpApiResolver(enable_validation=True)
    if function in (PRODUCE, "all"):
        _include_produce_routes(app, services)
    if function in (FETCH, "all"):
        app.include_router(fetch_router(services))
        app.include_router(groups_router(services))
        app.include_router(rest_proxy.metadata_router(services))
        app.include_router(consumers_router(services))
        app.include_router(schema_registry.registry_router(services, writes=False))
        app.include_router(console_api_router(services))
        app.include_router(acls_read_router(services))
        app.include_router(transactions_read_router(services))
        app.include_router(console_router())
    if function == FETCH:
        # The fetch function serves the whole API's document; API Gateway sends it only the
        # GET routes, and its role may not write, so the other routes cannot run there.
        _include_produce_routes(app, services)
        _serve_docs(app)
    _map_errors(app)
    return app


def _include_produce_routes(app: APIGatewayHttpResolver, services: Services) -> None:
    app.include_router(topic_admin_router(services))
    app.include_router(produce_router(services))
    app.include_router(rest_proxy.produce_router(services))
    app.include_router(schema_registry.registry_router(services, writes=True))
    app.include_router(acls_write_router(services))
    app.include_router(transactions_write_router(services))


def _serve_docs(app: APIGatewayHttpResolver) -> None:
    swagger: list[Callable[[], Response[str]]] = []

    @app.get(DOCS, include_in_schema=False)
    def docs() -> Response[str]:
        # Powertools' enable_swagger imports its OpenAPI models (70 ms) when it is called:
        # called at the first /docs request, not in every cold start of the fetch function
        if not swagger:
            swagger.append(swagger_handler(app))
        return swagger[0]()

    @app.get("/openapi.json", include_in_schema=False)
    def openapi() -> Response[str]:
        schema = app.get_openapi_json_schema(title=TITLE, version=API_VERSION)
        return Response(200, "application/json", schema)


class _Registrar:
    """The app, except that ``get`` keeps the route's function instead of registering it."""

    def __init__(self, app: APIGatewayHttpResolver) -> None:
        self._app = app
        self.route: Callable[[], Response[str]] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._app, name)

    def get(self, *_: Any, **__: Any) -> Callable[[Callable[[], Response[str]]], Any]:
        def keep(route: Callable[[], Response[str]]) -> Callable[[], Response[str]]:
            self.route = route
            return route

        return keep


def swagger_handler(app: APIGatewayHttpResolver) -> Callable[[], Response[str]]:
    """Powertools' Swagger UI route for app (enable_swagger's, unchanged), not registered:
    app's own /docs route calls it (_serve_docs)."""
    registrar = _Registrar(app)
    enable = APIGatewayHttpResolver.enable_swagger
    enable(registrar, path=DOCS, title=TITLE, version=API_VERSION)  # type: ignore[arg-type]
    if registrar.route is None:  # a Powertools that no longer registers through get
        raise RuntimeError("Powertools' enable_swagger registered no route")
    return registrar.route


def _map_errors(app: APIGatewayHttpResolver) -> None:
    @app.exception_handler(ObjectLogError)
    def objectlog_error(error: ObjectLogError) -> Response:
        status = error.kind.http_status
        if status >= 500:
            logger.warning("request failed", extra={"error": error.to_dict()})
        if is_rest_proxy(app.current_event.path):
            code = rest_proxy.error_code(error)
            return error_response(status, rest_proxy.error_body(status, error.message, code))
        if schema_registry.is_schema_registry(app.current_event.path):
            status, code = schema_registry.error_status(error)
            return error_response(status, schema_registry.error_body(status, error.message, code))
        if status >= 500:
            return error_response(status, error.to_dict() | {"request_id": _request_id(app)})
        return error_response(status, error.to_dict())

    @app.exception_handler(RequestValidationError)
    def invalid_request(error: RequestValidationError) -> Response:
        problems = error.errors()
        first = problems[0] if problems else {}
        location = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        status = 422 if first.get("type") != "json_invalid" else 400
        message = f"{location or 'request'}: {first.get('msg', 'invalid')}"
        if is_rest_proxy(app.current_event.path):
            code = rest_proxy.INVALID_REQUEST if status == 422 else status
            return error_response(status, rest_proxy.error_body(status, message, code))
        return error_response(
            status,
            {
                "error": "InvalidRequest",
                "message": message,
                "field": location or None,
                "problems": [
                    {"field": ".".join(str(p) for p in e.get("loc", ())), "message": e.get("msg")}
                    for e in problems[:20]
                ],
            },
        )

    @app.exception_handler(RequestUnsupportedContentType)
    def unsupported_content_type(_: RequestUnsupportedContentType) -> Response:
        return error_response(
            415,
            {
                "error": "UnsupportedContentType",
                "message": "this route takes Content-Type application/json",
                "field": "content-type",
            },
        )

    @app.not_found
    def not_found(_: Exception) -> Response:
        path = app.current_event.path
        if schema_registry.is_schema_registry(path):  # its routes are greedy: every method
            message = f"no route for {app.current_event.http_method} {path}"
            return error_response(404, schema_registry.error_body(404, message))
        allowed = allowed_methods(path)
        if allowed:
            status, error = 405, "MethodNotAllowed"
            message = f"{app.current_event.http_method} is not allowed on {path}"
        else:
            status, error, message = 404, "NotFound", f"no route for {path}"
        if is_rest_proxy(path):
            response = error_response(status, rest_proxy.error_body(status, message))
        else:
            response = error_response(status, {"error": error, "message": message})
        if allowed:
            response.headers["Allow"] = ", ".join(allowed)
        return response

    @app.exception_handler(Exception)
    def unexpected(error: Exception) -> Response:
        request_id = _request_id(app)
        logger.exception("unhandled error", extra={"request_id": request_id})
        message = f"internal error (request id {request_id})"
        if is_rest_proxy(app.current_event.path):
            return error_response(500, rest_proxy.error_body(500, message))
        if schema_registry.is_schema_registry(app.current_event.path):
            return error_response(500, schema_registry.error_body(500, message, 50001))
        return error_response(
            500, {"error": "InternalError", "message": "internal error", "request_id": request_id}
        )


def _request_id(app: APIGatewayHttpResolver) -> str:
    context = getattr(app, "lambda_context", None)
    return str(
        getattr(context, "aws_request_id", "") or app.current_event.request_context.request_id
    )


ACCEPTED_BODY_TYPES = ("application/json", REST_PROXY_BINARY)


def unsupported_body(event: dict[str, Any]) -> dict[str, Any] | None:
    """A 415 for a body this API cannot take, before Powertools' validation parses it.

    The API takes JSON (and the REST Proxy's binary JSON); Powertools would otherwise try
    form or multipart parsing and fail with a 500 on a malformed content type.
    """
    if not event.get("body"):
        return None
    media_type = rest_proxy.media_type((event.get("headers") or {}).get("content-type"))
    path = str(event.get("rawPath") or "")
    if schema_registry.is_schema_registry(path):
        if media_type in schema_registry.REQUEST_TYPES or not media_type:
            return None
        message = f"Content-Type {media_type} is not a Schema Registry media type"
        return _lambda_json(415, schema_registry.error_body(415, message))
    if is_rest_proxy(path):
        # REST Proxy's routes take its own media types; its produce routes then pick the
        # embedded formats they accept, refusing the schema formats with REST Proxy's 415.
        if media_type in rest_proxy.REQUEST_TYPES or media_type.startswith(
            "application/vnd.kafka."
        ):
            return None
        message = f"Content-Type {media_type or '(none)'} is not a REST Proxy v2 media type"
        return _lambda_json(415, rest_proxy.error_body(415, message))
    if media_type in ACCEPTED_BODY_TYPES:
        return None
    return _lambda_json(
        415,
        {
            "error": "UnsupportedContentType",
            "message": f"Content-Type {media_type or '(none)'} is not accepted; "
            "send application/json",
            "field": "content-type",
        },
    )


def _lambda_json(status: int, body: dict[str, Any]) -> dict[str, Any]:
    """A JSON answer in the Lambda proxy result shape."""
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def lambda_handler(
    function: str, log_factory: Callable[[], ObjectLog] = ObjectLog.connect
) -> Callable[..., Any]:
    """A Lambda entry point: Powertools logging (correlation id), EMF metrics and tracing."""
    services = Services(log_factory)
    app = build_app(function, services)

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
    @log_metrics
    @tracer.capture_lambda_handler
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        metrics.add_metadata(key="function", value=function)
        started = time.perf_counter()
        # the caller the route's authorizer named (http.principals), on every log line
        principal = authenticated_principal(event)
        logger.append_keys(principal=principal)
        if schema_registry.is_schema_registry(str(event.get("rawPath") or "")):
            event = {**event, "rawPath": schema_registry.routable_path(event["rawPath"])}
            schema_registry.log_change(event, principal)
        result = cross_site.refusal(event) or unsupported_body(event) or app.resolve(event, context)
        metrics.add_metric(name="requests", unit=MetricUnit.Count, value=1)
        metrics.add_metric(
            name="latency",
            unit=MetricUnit.Milliseconds,
            value=(time.perf_counter() - started) * 1000,
        )
        if result.get("statusCode", 200) >= 500:
            metrics.add_metric(name="errors", unit=MetricUnit.Count, value=1)
        return result

    def prepare() -> None:
        """Lambda's init phase, before a SnapStart snapshot: build what the first request
        would, with no request sent (functions.snapstart)."""
        services.prepare()
        snapstart.warm_arrow()
        warm_resolver(app, function)

    snapstart.register(prepare, snapstart.restored)
    handler.app = app  # type: ignore[attr-defined]
    handler.services = services  # type: ignore[attr-defined]
    handler.prepare = prepare  # type: ignore[attr-defined]
    return handler


def warm_event(method: str, path: str, query: str = "", body: str | None = None) -> dict[str, Any]:
    """A request validation refuses (422) before it reaches the route (warm_resolver)."""
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "queryStringParameters": dict(p.split("=", 1) for p in query.split("&") if p),
        "headers": {"content-type": "application/json"},
        "requestContext": {
            "stage": "$default",
            "requestId": "warm",
            "http": {"method": method, "path": path},
        },
        "body": body,
        "isBase64Encoded": False,
    }


# Each function's main route: a request its validation refuses (a produce without records, a
# fetch from offset -1), and the models its answer is built from (http.models builds a model
# at first use: the other routes' models are built when those routes are first called).
WARM: dict[str, tuple[dict[str, Any], tuple[type[BaseModel], ...]]] = {
    PRODUCE: (
        warm_event("POST", "/topics/warm/records", body="{}"),
        (ProduceResponse, OffsetOut),
    ),
    FETCH: (
        warm_event("GET", "/topics/warm/partitions/0/records", query="offset=-1"),
        (FetchResponse,),
    ),
}


def warm_resolver(app: APIGatewayHttpResolver, function: str = PRODUCE) -> None:
    """Resolve a request to the function's main route that the validation refuses (422), so
    that Powertools and pydantic build their validators and the route's parameters before the
    first real request, then build the models of its answer; nothing reaches a route, so
    nothing is sent."""
    event, models = WARM.get(function, WARM[PRODUCE])
    app.resolve(event, LambdaContext())
    for model in models:
        model.model_rebuild()
