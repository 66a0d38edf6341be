"""A local API Gateway HTTP API: HTTP in, payload v2 events to in-process handlers, HTTP out.

Like `sam local start-api`: each request becomes the event API Gateway would send (version
2.0: routeKey, rawPath, rawQueryString, lower-cased headers, queryStringParameters,
pathParameters, requestContext, base64 body for binary content) plus a Lambda context, and the
handler's result (statusCode, headers, cookies, body, isBase64Encoded) becomes the response.
Requests that match no route go to the default target, as a `$default` route does.

A route may have a Lambda REQUEST authorizer (payload format 2.0, simple responses), run as API
Gateway runs it: 401 without calling it when an identity source header is missing or empty; else
it is invoked with the request's authorizer event, and answers 403 when it says no, 500 when it
fails; its context reaches the route's handler as ``requestContext.authorizer.lambda``.

A route may instead need IAM (SigV4) or JWT authorization, verified for real
(tools.gateway_auth): the caller reaches the handler as ``requestContext.authorizer.iam`` or
``.jwt``, or is refused with API Gateway's answer (403 and 401).
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from werkzeug.wrappers import Request
from werkzeug.wrappers import Response as WsgiResponse

from objectlog.config import DEFAULT_REGION
from objectlog.errors import InvalidRequest
from objectlog.tools.gateway_auth import (
    Authenticator,
    CredentialLookup,
    IamAuthenticator,
    JwtAuthenticator,
    Refused,
    moto_credentials,
)
from objectlog.tools.wsgi_server import BackgroundWsgiServer

if TYPE_CHECKING:
    from objectlog.http.tokens import JwtSettings

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
LAMBDA_PAYLOAD_LIMIT = 6 * 1024 * 1024
TEXT_TYPES = ("application/json", "text/", "application/xml", "application/vnd.kafka")
API_AUTH = ("iam", "jwt")  # local_api's api_auth: AWS_IAM or JWT, as the Terraform module's


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # API Gateway form: /topics/{topic}
    target: str

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}"

    def match(self, method: str, path: str) -> dict[str, str] | None:
        if method != self.method:
            return None
        names = [name.rstrip("+") for name in re.findall(r"\{([^/}]+)\}", self.path)]
        greedy = re.sub(r"\{[^/}]+\+\}", "(.+)", self.path)  # {proxy+}: the rest of the path
        pattern = "^" + re.sub(r"\{[^/}]+\}", "([^/]+)", greedy) + "$"
        found = re.match(pattern, path)
        return dict(zip(names, found.groups(), strict=True)) if found else None


@dataclass(frozen=True)
class RequestAuthorizer:
    """A route's Lambda REQUEST authorizer: the target that runs it and the headers that are its
    identity sources (``$request.header.Authorization``: authorization)."""

    target: str
    identity_headers: tuple[str, ...] = ("authorization",)


@dataclass
class LambdaContext:
    """The context fields Powertools and our handlers read."""

    function_name: str
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    timeout_s: float = 30.0
    started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:000000000000:function:{self.function_name}"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return time.strftime("%Y/%m/%d/[$LATEST]local")

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.timeout_s - (time.monotonic() - self.started)) * 1000))


def is_text(content_type: str) -> bool:
    return content_type.startswith(TEXT_TYPES) or not content_type


def build_event(
    request: Request, route: Route | None, path_parameters: dict[str, str]
) -> dict[str, Any]:
    raw_body = request.get_data()
    content_type = request.headers.get("content-type", "")
    binary = bool(raw_body) and not is_text(content_type)
    headers: dict[str, str] = {}
    for name, value in request.headers.items():
        lower = name.lower()
        headers[lower] = f"{headers[lower]},{value}" if lower in headers else value
    cookies = [c.strip() for c in headers.pop("cookie", "").split(";") if c.strip()]
    # as API Gateway adds them: what the client connected to (REST Proxy's base_uri uses them)
    headers.setdefault("x-forwarded-proto", request.scheme)
    headers.setdefault("x-forwarded-port", str(request.environ.get("SERVER_PORT", "")))
    headers.setdefault("x-forwarded-for", request.remote_addr or "127.0.0.1")
    query_pairs = parse_qsl(request.query_string.decode(), keep_blank_values=True)
    query: dict[str, str] = {}
    for name, value in query_pairs:
        query[name] = f"{query[name]},{value}" if name in query else value
    now = time.time()
    route_key = route.key if route else "$default"
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": request.path,
        "rawQueryString": request.query_string.decode(),
        "headers": headers,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": request.host,
            "domainPrefix": request.host.split(".")[0],
            "http": {
                "method": request.method,
                "path": request.path,
                "protocol": request.environ.get("SERVER_PROTOCOL", "HTTP/1.1"),
                "sourceIp": request.remote_addr or "127.0.0.1",
                "userAgent": request.headers.get("user-agent", ""),
            },
            "requestId": uuid.uuid4().hex,
            "routeKey": route_key,
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "isBase64Encoded": binary,
    }
    if cookies:
        event["cookies"] = cookies
    if query:
        event["queryStringParameters"] = query
    if path_parameters:
        event["pathParameters"] = path_parameters
    if raw_body:
        event["body"] = (
            base64.b64encode(raw_body).decode() if binary else raw_body.decode("utf-8", "replace")
        )
    return event


def authorizer_event(event: dict[str, Any], identity: list[str], route_arn: str) -> dict[str, Any]:
    """The event API Gateway sends a REQUEST authorizer (payload 2.0) for a request's event: the
    request without its body, its identity source values and the route's ARN."""
    kept = {k: v for k, v in event.items() if k not in ("body", "isBase64Encoded")}
    return {**kept, "type": "REQUEST", "routeArn": route_arn, "identitySource": identity}


def route_arn(event: dict[str, Any]) -> str:
    """arn:aws:execute-api:<region>:<account>:<api>/<stage>/<method><path>, as API Gateway names
    the route a request took."""
    context = event["requestContext"]
    return (
        f"arn:aws:execute-api:us-east-1:{context['accountId']}:{context['apiId']}/"
        f"{context['stage']}/{context['http']['method']}{event['rawPath']}"
    )


def to_response(result: dict[str, Any] | Any) -> WsgiResponse:
    if not isinstance(result, dict) or "statusCode" not in result:
        # payload v2 lets a function return a bare JSON value: 200 with it as the body
        return WsgiResponse(json.dumps(result), 200, content_type="application/json")
    body = result.get("body") or ""
    data = base64.b64decode(body) if result.get("isBase64Encoded") else body.encode()
    response = WsgiResponse(data, result["statusCode"])
    for name, value in (result.get("headers") or {}).items():
        response.headers[name] = str(value)
    for name, values in (result.get("multiValueHeaders") or {}).items():
        for value in values:
            response.headers.add(name, str(value))
    for cookie in result.get("cookies") or []:
        response.headers.add("Set-Cookie", cookie)
    return response


def json_error(status: int, message: str) -> WsgiResponse:
    return WsgiResponse(json.dumps({"message": message}), status, content_type="application/json")


class Refusal(WsgiResponse):
    """API Gateway's answer to a request its route's authorizer refused; the reason goes to the
    gateway's request log only."""

    def __init__(self, refused: Refused) -> None:
        body = json.dumps({"message": refused.message})
        super().__init__(body, refused.status, content_type="application/json")
        self.headers.update(refused.headers)
        self.reason = refused.reason


PRINCIPAL_HEADER = "x-objectlog-principal"


def dev_principal(event: dict[str, Any]) -> dict[str, str] | WsgiResponse | None:
    """The Lambda authorizer context objectlog dev's principal header stands for: None without
    the header, 400 for a value that is not ``User:<name>``."""
    value = event["headers"].get(PRINCIPAL_HEADER)
    if value is None:
        return None
    if not value.startswith("User:") or len(value) == len("User:"):
        return json_error(400, f"{PRINCIPAL_HEADER} must be User:<name>, not {value!r}")
    return {"principal": value, "method": "dev-header"}


class LocalGateway:
    """Routes HTTP requests to handlers by (method, path), as API Gateway's HTTP API does."""

    def __init__(
        self,
        routes: Iterable[Route],
        targets: dict[str, Handler],
        default_target: str | None = None,
        timeout_s: float = 30.0,
        request_log: Callable[[str], None] | None = None,
        authorizers: Mapping[str, RequestAuthorizer] | None = None,
        authenticators: Mapping[str, Authenticator] | None = None,
        principal_header: bool = False,
    ) -> None:
        """request_log: called with one line per request (method, path, status, ms);
        authorizers: by route key ("$default" included), the routes' Lambda authorizers;
        authenticators: by route key, the routes' IAM or JWT authorization; principal_header
        (objectlog dev only): a route neither guards takes its caller's principal from
        PRINCIPAL_HEADER, as if an authorizer had named it (API Gateway has no such thing)."""
        self.routes = list(routes)
        self.targets = targets
        self.default_target = default_target
        self.timeout_s = timeout_s
        self.request_log = request_log
        self.authorizers = dict(authorizers or {})
        self.authenticators = dict(authenticators or {})
        self.principal_header = principal_header
        self._server = BackgroundWsgiServer("local-gateway")

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        started = time.perf_counter()
        request = Request(environ)
        response = self.dispatch(request)
        if self.request_log is not None:
            elapsed_ms = (time.perf_counter() - started) * 1000
            why = f" ({response.reason})" if isinstance(response, Refusal) else ""
            self.request_log(
                f"api {request.method} {request.full_path.rstrip('?')} "
                f"{response.status_code} {elapsed_ms:.1f} ms{why}"
            )
        return response(environ, start_response)

    def dispatch(self, request: Request) -> WsgiResponse:
        if request.content_length and request.content_length > LAMBDA_PAYLOAD_LIMIT:
            return json_error(413, "Request Entity Too Large")
        route, parameters = self._route(request.method, request.path)
        target = route.target if route else self.default_target
        if target is None:
            return json_error(404, "Not Found")
        event = build_event(request, route, parameters)
        authenticator = self.authenticators.get(route.key if route else "$default")
        if authenticator is not None:
            try:
                event["requestContext"]["authorizer"] = authenticator.authenticate(request)
            except Refused as e:
                return Refusal(e)
        authorizer = self.authorizers.get(route.key if route else "$default")
        if authorizer is not None:
            refused = self._authorize(authorizer, event)
            if refused is not None:
                return refused
        elif authenticator is None and self.principal_header:
            named = dev_principal(event)
            if isinstance(named, WsgiResponse):
                return named
            if named is not None:
                event["requestContext"]["authorizer"] = {"lambda": named}
        context = LambdaContext(function_name=target, timeout_s=self.timeout_s)
        try:
            return to_response(self.targets[target](event, context))
        except Exception:  # what API Gateway answers when the integration fails
            return json_error(500, "Internal Server Error")

    def _authorize(
        self, authorizer: RequestAuthorizer, event: dict[str, Any]
    ) -> WsgiResponse | None:
        """Run the route's authorizer as API Gateway does: None when it allows the request
        (its context then in the event), else API Gateway's answer."""
        identity = [event["headers"].get(name, "") for name in authorizer.identity_headers]
        if not all(value.strip() for value in identity):
            return json_error(401, "Unauthorized")
        context = LambdaContext(function_name=authorizer.target, timeout_s=self.timeout_s)
        request = authorizer_event(event, identity, route_arn(event))
        try:
            answer = self.targets[authorizer.target](request, context)
        except Exception:  # an authorizer that fails: API Gateway answers 500
            return json_error(500, "Internal Server Error")
        if not isinstance(answer, dict) or not isinstance(answer.get("isAuthorized"), bool):
            return json_error(500, "Internal Server Error")
        if not answer["isAuthorized"]:
            return json_error(403, "Forbidden")
        event["requestContext"]["authorizer"] = {"lambda": dict(answer.get("context") or {})}
        return None

    def _route(self, method: str, path: str) -> tuple[Route | None, dict[str, str]]:
        for route in self.routes:
            parameters = route.match(method, path)
            if parameters is not None:
                return route, parameters
        return None, {}

    # ---- serving -----------------------------------------------------------------------

    def start(self, host: str = "127.0.0.1", port: int = 8080) -> str:
        port = self._server.start(self, host, port)
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self._server.stop()


def local_api(
    log_factory: Callable[[], Any],
    request_log: Callable[[str], None] | None = None,
    *,
    registry_auth: bool = False,
    api_auth: str | None = None,
    credentials: CredentialLookup | None = None,
    jwt_settings: JwtSettings | None = None,
    region: str = DEFAULT_REGION,
    principal_header: bool = False,
) -> LocalGateway:
    """The objectlog API served from this process's produce and fetch handlers, its routes
    guarded as the Terraform module guards them (infra/terraform/modules/objectlog/api.tf).

    registry_auth: the Schema Registry's routes run the authorize function first, as deployed
    (basic auth against the log's users; bearer tokens where OBJECTLOG_JWT_* configure an
    issuer). api_auth: every other route, and $default, needs "iam" (SigV4 of a key that
    credentials knows, by default one the embedded endpoint in this process issued, scoped to
    region) or "jwt" (a bearer token of jwt_settings, by default OBJECTLOG_JWT_*); None: open.
    principal_header: objectlog dev's stand-in for an authorizer on routes without one
    (LocalGateway). Raises InvalidRequest for an unknown api_auth or "jwt" without an issuer."""
    from objectlog.http import console_routes
    from objectlog.http.app import lambda_handler
    from objectlog.http.routes import FETCH, PRODUCE, ROUTES
    from objectlog.http.schema_registry import is_schema_registry

    targets = {
        PRODUCE: lambda_handler(PRODUCE, log_factory),
        FETCH: lambda_handler(FETCH, log_factory),
    }
    # the console's page is public, as deployed: its API calls carry the user's credentials
    page = [Route(m, p, FETCH) for m, p in (k.split(" ") for k in console_routes.ROUTE_KEYS)]
    routes = [Route(m, p, t) for m, p, t in ROUTES] + page
    registry = [r for r in routes if is_schema_registry(r.path)]
    authorizers: dict[str, RequestAuthorizer] = {}
    if registry_auth:
        from objectlog.functions.authorize import FUNCTION, authorizer_handler

        targets[FUNCTION] = authorizer_handler(lambda: log_factory().items.documents)
        authorizers = {r.key: RequestAuthorizer(FUNCTION) for r in registry}
    authenticators: dict[str, Authenticator] = {}
    if api_auth is not None:
        authenticator = api_authenticator(api_auth, credentials, jwt_settings, region)
        guarded = [r.key for r in routes if r not in registry + page] + ["$default"]
        authenticators = dict.fromkeys(guarded, authenticator)
    return LocalGateway(
        routes,
        targets,
        default_target=FETCH,
        request_log=request_log,
        authorizers=authorizers,
        authenticators=authenticators,
        principal_header=principal_header,
    )


def api_authenticator(
    api_auth: str,
    credentials: CredentialLookup | None,
    jwt_settings: JwtSettings | None,
    region: str,
) -> Authenticator:
    """The IAM or JWT authorization local_api's api_auth names."""
    if api_auth == "iam":
        return IamAuthenticator(credentials or moto_credentials, region)
    if api_auth != "jwt":
        raise InvalidRequest(f"api_auth is one of {', '.join(API_AUTH)}, not {api_auth!r}")
    from objectlog.http.tokens import ENV_AUDIENCE, ENV_ISSUER, JwtSettings, TokenVerifier

    settings = jwt_settings or JwtSettings.from_env(os.environ)
    if settings is None:
        raise InvalidRequest(
            f"JWT authorization needs an issuer: set {ENV_ISSUER} and {ENV_AUDIENCE}",
            field=ENV_ISSUER,
        )
    return JwtAuthenticator(TokenVerifier(settings))
