"""The web console: one page (index.html) at /console and at every deeper page path (the page
routes itself with the History API, so each page is a bookmarkable URL), and its static files
at /console/static/<file>, from the package objectlog.console.

Every answer carries a Content-Security-Policy with no inline script and no eval: record keys,
values and headers are attacker-controlled, the page only ever writes them as text, and the
policy is the second line of defence should it not.

/console/config.json tells the page how its user signs in: nobody locally; on AWS (the Terraform
module's var.console, with its JWT authorizer) at the issuer, by authorization code with PKCE
(static/auth.js), whose origins the policy's connect-src then names (its discovery document and
token endpoint are the only requests the page sends elsewhere).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from objectlog import console  # imported, not named: the Lambda layer follows imports

BASE = "/console"
STATIC = f"{BASE}/static"
# The page's routes in API Gateway's form: public on AWS (a bookmarked URL carries no token;
# the page holds no data), as infra/terraform/modules/objectlog/api.tf routes them, and in the
# local gateway (tools.gateway.local_api).
ROUTE_KEYS = ("GET /console", "GET /console/{proxy+}")
ENV_CLIENT_ID = "OBJECTLOG_CONSOLE_CLIENT_ID"
ENV_SCOPES = "OBJECTLOG_CONSOLE_SCOPES"
ENV_ISSUER = "OBJECTLOG_JWT_ISSUER"
ENV_AUTHORIZATION_ENDPOINT = "OBJECTLOG_CONSOLE_AUTHORIZATION_ENDPOINT"
ENV_TOKEN_ENDPOINT = "OBJECTLOG_CONSOLE_TOKEN_ENDPOINT"
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".md": "text/markdown; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}
# a static file's name: letters, digits, dots, dashes and underscores in at most two
# segments (vendor/x.js), never "..": nothing outside the static folder can be named
_NAME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def is_console(path: str) -> bool:
    return path == BASE or path.startswith(f"{BASE}/")


def console_router() -> Router:
    router = Router()

    @router.get(BASE, include_in_schema=False)
    def console_page() -> Response[str]:
        return page()

    @router.get(f"{BASE}/config.json", include_in_schema=False)
    def console_config() -> Response[str]:
        settings = sign_in_settings(os.environ)
        headers = security_headers(settings) | {"Cache-Control": "no-store"}
        return Response(200, "application/json", json.dumps(settings), headers)

    @router.get(f"{STATIC}/<name>", include_in_schema=False)
    def static_file(name: str) -> Response[str]:
        return asset(name)

    @router.get(f"{STATIC}/<folder>/<name>", include_in_schema=False)
    def static_file_in_folder(folder: str, name: str) -> Response[str]:
        return asset(f"{folder}/{name}")

    @router.get(f"{BASE}/(?!static/).+", include_in_schema=False)
    def deep_link() -> Response[str]:
        # a page's own URL (/console/topics/orders): the same page, which routes itself
        return page()

    return router


def sign_in_settings(environ: Mapping[str, str]) -> dict[str, Any]:
    """How the page's user signs in: {"auth": "none"}, or at the OIDC issuer when a console
    client is configured (Terraform's var.console sets these on the fetch function)."""
    client_id = environ.get(ENV_CLIENT_ID, "").strip()
    issuer = environ.get(ENV_ISSUER, "").strip()
    if not client_id or not issuer:
        return {"auth": "none"}
    settings: dict[str, Any] = {
        "auth": "oidc",
        "issuer": issuer,
        "client_id": client_id,
        "scopes": environ.get(ENV_SCOPES, "openid").split(),
    }
    for key, name in (
        ("authorization_endpoint", ENV_AUTHORIZATION_ENDPOINT),
        ("token_endpoint", ENV_TOKEN_ENDPOINT),
    ):
        if environ.get(name):
            settings[key] = environ[name]
    return settings


def security_headers(settings: Mapping[str, Any]) -> dict[str, str]:
    """SECURITY_HEADERS, with the issuer's origins in connect-src when the user signs in there
    (its discovery document and its token endpoint are fetched by the page)."""
    urls = [settings.get(k) for k in ("issuer", "token_endpoint", "authorization_endpoint")]
    origins = sorted({_origin(url) for url in urls if url})
    if not origins:
        return dict(SECURITY_HEADERS)
    policy = CONTENT_SECURITY_POLICY.replace(
        "connect-src 'self'", " ".join(["connect-src 'self'", *origins])
    )
    return SECURITY_HEADERS | {"Content-Security-Policy": policy}


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def page() -> Response[str]:
    return asset("index.html")


def asset(name: str) -> Response[str]:
    """A static file by name, with its Content-Type; a name that is not one is a 404."""
    suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
    text = static_text(name) if _safe_name(name) and suffix in CONTENT_TYPES else None
    headers = security_headers(sign_in_settings(os.environ))
    if text is None:
        body = {"error": "NotFound", "message": f"no console file {name}"}
        return Response(404, "application/json", json.dumps(body), headers)
    return Response(200, CONTENT_TYPES[suffix], text, headers)


def _safe_name(name: str) -> bool:
    parts = name.split("/")
    return len(parts) <= 2 and all(
        part and not part.startswith(".") and set(part) <= _NAME_CHARACTERS for part in parts
    )


@cache
def static_text(name: str) -> str | None:
    """A static file's text, read once per process from the installed package; None if the
    package has no such file."""
    path = resources.files(console).joinpath("static", *name.split("/"))
    return path.read_text(encoding="utf-8") if path.is_file() else None
