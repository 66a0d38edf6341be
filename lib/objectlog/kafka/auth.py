"""SASL on one connection: SaslHandshake then SaslAuthenticate, SCRAM-SHA-512 (RFC 7677).

When the agent requires authentication, a connection may send only ApiVersions, SaslHandshake
and SaslAuthenticate until SCRAM succeeds; anything else closes it. A wrong password answers
SASL_AUTHENTICATION_FAILED, and the connection is closed after that answer, as Kafka does.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode
from scramp import ScramException, ScramMechanism

from objectlog.kafka.users import MECHANISM, Users
from objectlog.kafka.wire import Request

SASL_HANDSHAKE, SASL_AUTHENTICATE, API_VERSIONS = 17, 36, 18
AUTHENTICATE_REQUESTS_FROM = 1  # SaslHandshake v1+: the tokens travel in SaslAuthenticate
BEFORE_AUTHENTICATION = frozenset({API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE})


class ConnectionAuth:
    """One connection's SASL state."""

    def __init__(self, users: Users | None) -> None:
        self.users = users  # None: no authentication required
        self.authenticated = users is None
        self.failed = False
        self.user: str | None = None
        self._server: Any = None

    def allows(self, api_key: int) -> bool:
        return self.authenticated or api_key in BEFORE_AUTHENTICATION

    def handshake(self, request: Request) -> dict[str, Any]:
        offered = [MECHANISM] if self.users is not None else []
        if request.api_version < AUTHENTICATE_REQUESTS_FROM:
            # v0 would send the SASL tokens unframed (clients before Kafka 1.0). It is in
            # ApiVersions because librdkafka 2.10 (tested) enables SASL only if v0 is offered,
            # and then uses v1, as every client tested does.
            self.failed = True
            return {"error_code": ErrorCode.unsupported_version, "mechanisms": offered}
        if request.body.mechanism not in offered:
            return {"error_code": ErrorCode.unsupported_sasl_mechanism, "mechanisms": offered}
        assert self.users is not None
        users = self.users
        self._server = ScramMechanism(MECHANISM).make_server(self._auth_info(users))
        return {"error_code": ErrorCode.none, "mechanisms": offered}

    def authenticate(self, request: Request) -> dict[str, Any]:
        """The next SCRAM step: the server-first message, then the server-final one."""
        server = self._server
        if server is None:
            self.failed = True
            return _refused(ErrorCode.illegal_sasl_state, "SaslHandshake first")
        message = bytes(request.body.auth_bytes).decode()
        try:
            if self.user is None:
                self.user = _user_of(message)
                server.set_client_first(message)
                return _answer(server.get_server_first())
            server.set_client_final(message)
        except ScramException as e:
            self.failed = True
            return _refused(ErrorCode.sasl_authentication_failed, f"authentication failed: {e}")
        self.authenticated = True
        return _answer(server.get_server_final())

    @staticmethod
    def _auth_info(users: Users) -> Any:
        def lookup(name: str) -> Any:
            found = users.auth_info(name)
            if found is None:
                raise ScramException("unknown user")
            return found

        return lookup


def _user_of(client_first: str) -> str:
    """The user a SCRAM client-first message names ("n,,n=<user>,r=<nonce>")."""
    for part in client_first.split(","):
        if part.startswith("n="):
            return part[2:].replace("=2C", ",").replace("=3D", "=")
    return ""


def _answer(message: str) -> dict[str, Any]:
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "auth_bytes": message.encode(),
        "session_lifetime": 0,
    }


def _refused(code: ErrorCode, message: str) -> dict[str, Any]:
    return {"error_code": code, "error_message": message, "auth_bytes": b"", "session_lifetime": 0}
