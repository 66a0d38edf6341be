"""A test token issuer: an RSA signing key, its JWKS and signed tokens; ``LoopbackIssuer`` also
serves the OpenID discovery document and the JWKS over HTTP on loopback, counting requests."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

AUDIENCE = "objectlog-registry"


class TokenIssuer:
    """Signs tokens for issuer with a key of its own (each instance a different key)."""

    def __init__(self, issuer: str = "https://issuer.test", kid: str = "test-key") -> None:
        self.issuer = issuer
        self.kid = kid
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def jwks(self) -> dict[str, Any]:
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [public | {"kid": self.kid, "alg": "RS256", "use": "sig"}]}

    def token(self, sub: str = "alice", *, expires_in_s: int = 600, **claims: Any) -> str:
        """A token signed with this issuer's key; claims override iss, aud, exp and sub."""
        now = int(time.time())
        body = {"iss": self.issuer, "aud": AUDIENCE, "sub": sub, "iat": now}
        body["exp"] = now + expires_in_s
        return jwt.encode(body | claims, self.key, algorithm="RS256", headers={"kid": self.kid})


class ServedIssuer(TokenIssuer):
    """A TokenIssuer whose issuer URL is a loopback HTTP server answering with handler, served
    between ``with``'s enter and exit."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        super().__init__(f"http://127.0.0.1:{self.server.server_port}")
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)


class LoopbackIssuer(ServedIssuer):
    """A TokenIssuer whose issuer URL is a loopback HTTP server serving
    ``/.well-known/openid-configuration`` (naming ``/keys``) and ``/keys`` (the JWKS)."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                issuer.requests.append(self.path)
                documents = {
                    "/.well-known/openid-configuration": {
                        "issuer": issuer.issuer,
                        "jwks_uri": f"{issuer.issuer}/keys",
                    },
                    "/keys": issuer.jwks(),
                }
                found = documents.get(self.path)
                body = json.dumps(found or {"error": "not found"}).encode()
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        super().__init__(Handler)
