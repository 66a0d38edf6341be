"""Who calls the Schema Registry's HTTP routes: the rules its authorizer (functions.authorize)
applies to a request's Authorization header.

Confluent's clients cannot sign SigV4; they send HTTP basic auth (``basic.auth.user.info``) or a
bearer token, so the registry's routes accept

- ``Basic base64(user:password)``, checked against objectlog's users: the SCRAM credentials the
  Kafka agent keeps (kafka.users, ``objectlog users add``), one user database for both doors.
  The principal is ``User:<name>``.
- ``Bearer <jwt>`` where an issuer is configured (http.tokens), verified against the issuer's
  keys. The principal is ``User:<sub>``.

Anything else raises NotAuthenticated: no header, another scheme, a malformed header, an unknown
user, a wrong password, a forged, expired or foreign token, or a token when no issuer is set.

A positive answer is reused for ``ttl_s`` (never past a token's ``exp``) from a bounded LRU keyed
by a SHA-256 of the header (the header itself is not kept), so a steady caller costs neither a
DynamoDB read nor a PBKDF2 derivation per request. Refusals are not cached here: API Gateway
caches both answers per header value in front of the authorizer.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from objectlog.cache import LruCache
from objectlog.clock import Clock, SystemClock
from objectlog.errors import InvalidRequest, NotAuthenticated
from objectlog.http.tokens import JwtSettings, TokenVerifier
from objectlog.kafka.users import ITERATIONS, AuthInfo, Users, password_matches

ENV_CACHE_S = "OBJECTLOG_AUTH_CACHE_S"
DEFAULT_TTL_S = 300.0
MAX_TTL_S = 3600.0  # API Gateway's own limit for its authorizer cache
CACHE_ENTRIES = 4096
BASIC, BEARER = "basic", "bearer"
# An unknown user's password is derived against this all the same, so a refusal takes as long
# whether or not the user exists (no user enumeration by timing).
_NO_USER: AuthInfo = (bytes(16), bytes(64), bytes(64), ITERATIONS)


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: ``User:<name>``, and how it proved it (basic or bearer)."""

    name: str
    method: str

    def context(self) -> dict[str, str]:
        """What the authorizer hands the route's function (requestContext.authorizer.lambda)."""
        return {"principal": self.name, "method": self.method}


@dataclass(frozen=True)
class AuthSettings:
    jwt: JwtSettings | None = None  # None: bearer tokens are refused
    ttl_s: float = DEFAULT_TTL_S  # how long a positive answer is reused (0: never)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AuthSettings:
        """OBJECTLOG_AUTH_CACHE_S and the OBJECTLOG_JWT_* variables (http.tokens); raises
        InvalidRequest for a value out of range."""
        raw = env.get(ENV_CACHE_S, "").strip()
        try:
            ttl_s = float(raw) if raw else DEFAULT_TTL_S
        except ValueError:
            ttl_s = -1.0
        if not 0 <= ttl_s <= MAX_TTL_S:
            raise InvalidRequest(
                f"{ENV_CACHE_S} must be seconds from 0 to {MAX_TTL_S:.0f}, got {raw!r}",
                field=ENV_CACHE_S,
            )
        return cls(jwt=JwtSettings.from_env(env), ttl_s=ttl_s)


class _Entry(NamedTuple):
    principal: Principal
    until_ms: int


class Authenticator:
    """Turns an Authorization header into a Principal, or raises NotAuthenticated (and
    IssuerUnavailable when a token's issuer cannot be reached)."""

    def __init__(
        self,
        users: Users,
        settings: AuthSettings | None = None,
        *,
        clock: Clock | None = None,
        tokens: TokenVerifier | None = None,
    ) -> None:
        self.users = users
        self.settings = settings or AuthSettings()
        self.clock = clock or SystemClock()
        jwt_settings = self.settings.jwt
        self.tokens = tokens or (TokenVerifier(jwt_settings) if jwt_settings else None)
        self._cache: LruCache[bytes, _Entry] = LruCache(CACHE_ENTRIES)

    def authenticate(self, header: str | None) -> Principal:
        if not header or not header.strip():
            raise NotAuthenticated("no Authorization header")
        key = hashlib.sha256(header.encode("utf-8", "surrogatepass")).digest()
        now_ms = self.clock.now_ms()
        cached = self._cache.get(key)
        if cached is not None and now_ms < cached.until_ms:
            return cached.principal
        principal, until_ms = self._check(header.strip(), now_ms)
        if until_ms > now_ms:
            self._cache.put(key, _Entry(principal, until_ms))
        return principal

    def _check(self, header: str, now_ms: int) -> tuple[Principal, int]:
        """The header's principal and until when that answer may be reused."""
        scheme, _, credentials = header.partition(" ")
        credentials = credentials.strip()
        reuse_until = now_ms + int(self.settings.ttl_s * 1000)
        if not credentials:
            raise NotAuthenticated(
                "malformed Authorization header: no credentials after the scheme"
            )
        if scheme.lower() == BASIC:
            return self._basic(credentials), reuse_until
        if scheme.lower() == BEARER:
            claims = self._bearer(credentials)
            return Principal(f"User:{claims['sub']}", BEARER), min(reuse_until, _ms(claims["exp"]))
        raise NotAuthenticated(
            f"Authorization scheme {scheme!r} is not accepted: use Basic or Bearer"
        )

    def _basic(self, credentials: str) -> Principal:
        name, password = parse_basic(credentials)
        info = self.users.auth_info(name)
        matches = password_matches(info or _NO_USER, password)
        if info is None or not matches:
            raise NotAuthenticated(f"unknown user or wrong password (user {name!r})")
        return Principal(f"User:{name}", BASIC)

    def _bearer(self, token: str) -> dict[str, Any]:
        if self.tokens is None:
            raise NotAuthenticated("bearer tokens are not accepted here: no issuer is configured")
        return self.tokens.verify(token)


def parse_basic(credentials: str) -> tuple[str, str]:
    """(user, password) of basic credentials: base64 of UTF-8 ``user:password`` (RFC 7617)."""
    try:
        decoded = base64.b64decode(credentials, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise NotAuthenticated("malformed basic credentials: not base64 of user:password") from None
    name, colon, password = decoded.partition(":")
    if not colon or not name:
        raise NotAuthenticated("malformed basic credentials: not user:password")
    return name, password


def _ms(seconds: Any) -> int:
    return int(float(seconds) * 1000)
