"""What the registry workload did, operation by operation, as the registry checker reads it
(thread-safe).

Every operation records what its client was told: ok (with the version and id answered),
refused (with the error's name: nothing was applied), or unknown (a timeout, StorageUnavailable,
UnknownOutcome, a 5xx: it may or may not have been applied), and when it started and ended
(time.monotonic), so the checker can tell which operations may have come before which.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

OK = "ok"
REFUSED = "refused"  # the client was told nothing was applied
UNKNOWN = "unknown"  # the client was told the outcome is unknown
OUTCOMES = (OK, REFUSED, UNKNOWN)

REGISTER = "register"
LOOKUP = "lookup"
READ_ID = "read id"  # GET /schemas/ids/{id}: the schema an id names
SOFT_DELETE = "soft delete"
PERMANENT_DELETE = "permanent delete"
KINDS = (REGISTER, LOOKUP, READ_ID, SOFT_DELETE, PERMANENT_DELETE)

# what a registration meant to send (the checker judges the outcome, not the intent: under
# concurrency a schema meant to be incompatible may meet a latest version it fits)
SAME, COMPATIBLE, INCOMPATIBLE = "same", "compatible", "incompatible"


@dataclass(frozen=True)
class RegistryOp:
    """One operation of one client.

    ``schema`` is the text sent (register, lookup) or answered (read id); ``version`` the
    version answered (register, lookup) or the one asked to delete; ``schema_id`` the id
    answered (register, lookup) or asked for (read id). The workload registers Avro records
    without references, so a schema's text (in its stored form) is its identity.
    """

    client: str
    kind: str
    subject: str
    outcome: str
    schema: str | None = None
    version: int | None = None
    schema_id: int | None = None
    error: str | None = None
    start: float = 0.0
    end: float = 0.0
    intent: str = ""  # registrations only: SAME, COMPATIBLE or INCOMPATIBLE

    @property
    def applied(self) -> bool:
        """Whether it may have been applied (ok or unknown)."""
        return self.outcome != REFUSED


@dataclass
class RegistryHistory:
    ops: list[RegistryOp] = field(default_factory=list)
    events: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)  # injected, by kind (absent: off)
    seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, op: RegistryOp) -> None:
        with self._lock:
            self.ops.append(op)

    def count(self, event: str, n: int = 1) -> None:
        with self._lock:
            self.events[event] += n

    def outcomes(self) -> Counter[tuple[str, str]]:
        """(kind, outcome) -> operations; registrations by intent ("register compatible")."""
        return Counter((f"{op.kind} {op.intent}".strip(), op.outcome) for op in self.ops)
