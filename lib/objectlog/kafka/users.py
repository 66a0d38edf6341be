"""Kafka agent users for SASL/SCRAM-SHA-512: salted and hashed, never the password.

All users live in one versioned document (stores.documents, kind ``kafka-users``): for each,
SCRAM's salt, stored key, server key and iteration count (RFC 5802), as scramp derives them.
`objectlog users add|delete|list` manages them; agents read them at each authentication, so a
change applies to the next connection on every agent. The Schema Registry's HTTP routes check
basic auth against the same users (``password_matches``; http.authentication): one user
database for both doors.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from scramp import ScramException, ScramMechanism
from scramp.utils import saslprep

from objectlog.errors import ConcurrentModification, InvalidRequest
from objectlog.stores.documents import DocumentStore

MECHANISM = "SCRAM-SHA-512"
ITERATIONS = 8192
KIND, NAME = "kafka-users", "all"
HASH = "sha512"  # SCRAM-SHA-512's H and HMAC
WRITE_TRIES = 5

AuthInfo = tuple[bytes, bytes, bytes, int]  # salt, stored key, server key, iterations


class Users:
    def __init__(self, documents: DocumentStore) -> None:
        self.documents = documents

    def _read(self) -> tuple[dict[str, list[Any]], int]:
        body, version = self.documents.read(KIND, NAME)
        return (json.loads(body) if body else {}), version

    def names(self) -> list[str]:
        return sorted(self._read()[0])

    def auth_info(self, name: str) -> AuthInfo | None:
        entry = self._read()[0].get(name)
        if entry is None:
            return None
        salt, stored, server, iterations = entry
        return _bytes(salt), _bytes(stored), _bytes(server), int(iterations)

    def add(self, name: str, password: str) -> None:
        """Add the user, or set a new password for it."""
        if not name or "," in name or "=" in name:
            raise InvalidRequest(f"bad user name {name!r}: no commas or '=' (SCRAM)", field="name")
        if not password:
            raise InvalidRequest("the password must not be empty", field="password")
        salt, stored, server, iterations = ScramMechanism(MECHANISM).make_auth_info(
            password, iteration_count=ITERATIONS
        )
        entry = [_text(salt), _text(stored), _text(server), iterations]
        self._change(lambda users: users.__setitem__(name, entry))

    def delete(self, name: str) -> bool:
        """Delete the user; False if there was none of that name."""
        return bool(self._change(lambda users: users.pop(name, None) is not None))

    def _change(self, change: Any) -> Any:
        for _ in range(WRITE_TRIES):
            users, version = self._read()
            result = change(users)
            if self.documents.write(KIND, NAME, json.dumps(users), seen=version):
                return result
        raise ConcurrentModification("the users changed meanwhile; try again")


def password_matches(info: AuthInfo, password: str) -> bool:
    """Whether password is the one info was made from, as a SCRAM server would conclude: derive
    SaltedPassword = PBKDF2-HMAC-SHA-512(password, stored salt, stored iterations), then
    StoredKey = H(HMAC(SaltedPassword, "Client Key")) (RFC 5802), compared in constant time.
    The password is prepared as scramp prepared it (SASLprep); one it refuses matches nothing."""
    salt, stored_key, _, iterations = info
    try:
        prepared = saslprep(password).encode()
    except ScramException:
        return False
    salted = hashlib.pbkdf2_hmac(HASH, prepared, salt, iterations)
    client_key = hmac.digest(salted, b"Client Key", HASH)
    return hmac.compare_digest(hashlib.new(HASH, client_key).digest(), stored_key)


def _text(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _bytes(text: str) -> bytes:
    return base64.b64decode(text)
