"""Bearer tokens (JWTs) from an OpenID Connect issuer, verified for real with PyJWT: the signature
against the issuer's published keys (its JWKS, fetched once and cached), then ``iss``, ``aud``,
``exp`` and ``nbf``; a token needs ``sub`` (the principal), ``exp``, ``iss`` and ``aud``.

Where the keys are: ``OBJECTLOG_JWT_JWKS_URL`` when set; otherwise the ``jwks_uri`` that
``<issuer>/.well-known/openid-configuration`` names (OpenID Connect Discovery), or
``<issuer>/.well-known/jwks.json`` (Cognito's place) when discovery does not answer.

Only asymmetric algorithms are accepted: the issuer holds the private key, so nobody who merely
knows the public keys (or the JWKS URL) can sign a token; ``none`` and HMAC never verify.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jwt

from objectlog.errors import InvalidRequest, IssuerUnavailable, NotAuthenticated

ENV_ISSUER = "OBJECTLOG_JWT_ISSUER"
ENV_AUDIENCE = "OBJECTLOG_JWT_AUDIENCE"  # one or more, comma-separated
ENV_JWKS_URL = "OBJECTLOG_JWT_JWKS_URL"
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
REQUIRED_CLAIMS = ("sub", "exp", "iss", "aud")
LEEWAY_S = 30  # clock skew allowed on exp and nbf
FETCH_TIMEOUT_S = 5.0
KEYS_LIFESPAN_S = 3600  # the JWKS is fetched again after this, or at once for an unknown kid
DISCOVERY_PATH = "/.well-known/openid-configuration"
JWKS_PATH = "/.well-known/jwks.json"

FetchJson = Callable[[str], Any]


@dataclass(frozen=True)
class JwtSettings:
    """Which tokens are accepted: issued by issuer, for one of audience."""

    issuer: str
    audience: tuple[str, ...]
    jwks_url: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> JwtSettings | None:
        """The settings the environment gives, or None when it configures no issuer (then
        every bearer token is refused). Raises InvalidRequest for half a configuration."""
        issuer = env.get(ENV_ISSUER, "").strip()  # as the tokens' iss spells it
        audience = tuple(a.strip() for a in env.get(ENV_AUDIENCE, "").split(",") if a.strip())
        jwks_url = env.get(ENV_JWKS_URL, "").strip() or None
        if not (issuer or audience or jwks_url):
            return None
        if not issuer or not audience:
            raise InvalidRequest(
                f"bearer tokens need both {ENV_ISSUER} and {ENV_AUDIENCE} (got issuer "
                f"{issuer or '(none)'}, audience {', '.join(audience) or '(none)'})",
                field=ENV_AUDIENCE if issuer else ENV_ISSUER,
            )
        if not issuer.startswith(("https://", "http://")):
            raise InvalidRequest(f"{ENV_ISSUER} must be a URL, got {issuer!r}", field=ENV_ISSUER)
        return cls(issuer, audience, jwks_url)


def fetch_json(url: str) -> Any:
    """GET url and parse its JSON body (the discovery document)."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S) as response:
        return json.load(response)


class TokenVerifier:
    """Verifies bearer tokens of one issuer; the issuer's keys are cached in this process."""

    def __init__(self, settings: JwtSettings, *, fetch: FetchJson = fetch_json) -> None:
        self.settings = settings
        self._fetch = fetch
        self._keys: jwt.PyJWKClient | None = None
        self._lock = threading.Lock()

    def verify(self, token: str) -> dict[str, Any]:
        """The token's claims. Raises NotAuthenticated for a token that is malformed, signed
        by another key, expired, not yet valid, or for another issuer or audience, and
        IssuerUnavailable when the issuer's keys cannot be fetched."""
        key = self._signing_key(token)
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=list(ALGORITHMS),
                audience=list(self.settings.audience),
                issuer=self.settings.issuer,
                leeway=LEEWAY_S,
                options={"require": list(REQUIRED_CLAIMS)},
            )
        except jwt.InvalidTokenError as e:
            raise NotAuthenticated(f"bearer token refused: {e}") from None
        if not isinstance(claims["sub"], str) or not claims["sub"]:
            raise NotAuthenticated("bearer token refused: its sub is not a name")
        return claims

    def _signing_key(self, token: str) -> jwt.PyJWK:
        try:
            return self._key_client().get_signing_key_from_jwt(token)
        except jwt.PyJWKClientConnectionError as e:
            raise IssuerUnavailable(f"the issuer's keys could not be fetched: {e}") from None
        except (jwt.PyJWKClientError, jwt.DecodeError) as e:
            raise NotAuthenticated(f"bearer token refused: {e}") from None

    def _key_client(self) -> jwt.PyJWKClient:
        with self._lock:
            if self._keys is None:
                self._keys = jwt.PyJWKClient(
                    self._jwks_url(),
                    cache_keys=False,  # the whole set is cached (lifespan), by kid
                    cache_jwk_set=True,
                    lifespan=KEYS_LIFESPAN_S,
                    timeout=FETCH_TIMEOUT_S,
                )
            return self._keys

    def _jwks_url(self) -> str:
        """The configured JWKS URL, the one discovery names, or the conventional one. An
        unreachable issuer raises IssuerUnavailable (and is asked again next time)."""
        if self.settings.jwks_url:
            return self.settings.jwks_url
        base = self.settings.issuer.rstrip("/")
        try:
            document = self._fetch(base + DISCOVERY_PATH)
        except (urllib.error.HTTPError, ValueError):  # it answered: no discovery document
            document = None
        except OSError as e:
            raise IssuerUnavailable(f"the issuer {base} could not be reached: {e}") from None
        found = document.get("jwks_uri") if isinstance(document, dict) else None
        return found if isinstance(found, str) and found else base + JWKS_PATH
