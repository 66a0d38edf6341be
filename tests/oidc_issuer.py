"""An OpenID provider on loopback for the web console's sign-in (authorization code with PKCE),
as a single-page application meets Cognito, Okta or Auth0: discovery, /authorize, /token and
/keys, with CORS on the documents the page reads from its own origin.

/authorize signs ``user`` in at once (no login form: the page's side of the flow is under test,
not the provider's) and redirects to the client's redirect_uri with a code bound to the request's
code_challenge (S256 only), client_id and redirect_uri. /token exchanges that code once, for a
public client (no secret): the code_verifier must hash to the challenge, and client_id and
redirect_uri must be the authorize request's; it answers an RS256 access token whose audience is
the client, which the API's JWT authorizer (tools.gateway_auth) verifies against /keys."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.token_issuer import ServedIssuer


@dataclass(frozen=True)
class Grant:
    """What an issued code stands for."""

    client_id: str
    redirect_uri: str
    challenge: str


def s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class PkceIssuer(ServedIssuer):
    """A loopback OpenID provider; ``requests`` lists (path, parameters) as they arrived."""

    def __init__(self, user: str = "alice") -> None:
        self.user = user
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.grants: dict[str, Grant] = {}
        super().__init__(self._handler())

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "jwks_uri": f"{self.issuer}/keys",
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
        }

    def authorize(self, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        missing = {"client_id", "redirect_uri", "code_challenge", "state"} - set(query)
        if missing or query.get("response_type") != "code":
            return _json(400, {"error": "invalid_request", "missing": sorted(missing)})
        if query.get("code_challenge_method") != "S256":
            return _json(400, {"error": "invalid_request", "error_description": "S256 only"})
        code = secrets.token_urlsafe(16)
        grant = Grant(query["client_id"], query["redirect_uri"], query["code_challenge"])
        self.grants[code] = grant
        back = f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state']})}"
        return 302, {"Location": back}, b""

    def exchange(self, form: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        grant = self.grants.pop(form.get("code", ""), None)  # a code is good once
        if form.get("grant_type") != "authorization_code" or grant is None:
            return _json(400, {"error": "invalid_grant"})
        verifier = form.get("code_verifier", "")
        if s256(verifier) != grant.challenge:
            return _json(400, {"error": "invalid_grant", "error_description": "PKCE"})
        if (form.get("client_id"), form.get("redirect_uri")) != (
            grant.client_id,
            grant.redirect_uri,
        ):
            return _json(400, {"error": "invalid_grant", "error_description": "client"})
        token = self.token(self.user, aud=grant.client_id, client_id=grant.client_id)
        answer = {"access_token": token, "token_type": "Bearer", "expires_in": 600}
        return _json(200, answer | {"id_token": token})

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_OPTIONS(self) -> None:  # CORS preflight of the page's token request
                self._send(204, {"Access-Control-Allow-Headers": "Content-Type"}, b"")

            def do_GET(self) -> None:
                address = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(address.query).items()}
                issuer.requests.append((address.path, query))
                if address.path == "/authorize":
                    self._send(*issuer.authorize(query))
                elif address.path == "/.well-known/openid-configuration":
                    self._send(*_json(200, issuer.discovery()))
                elif address.path == "/keys":
                    self._send(*_json(200, issuer.jwks()))
                else:
                    self._send(*_json(404, {"error": "not found"}))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode()
                form = {k: v[-1] for k, v in parse_qs(body).items()}
                issuer.requests.append((self.path, form))
                if self.path == "/token":
                    self._send(*issuer.exchange(form))
                else:
                    self._send(*_json(404, {"error": "not found"}))

            def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
                self.send_response(status)
                self.send_header("Access-Control-Allow-Origin", "*")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        return Handler


def _json(status: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()
