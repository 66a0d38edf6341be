"""Every ACL binding, held in memory and refreshed with bounded staleness (issue 37, DESIGN.md
section 17): the bindings that could apply to a resource answer from an index, so a check
costs no request.

Staleness: a change made through any agent (or the CLI) is enforced by every process within
``refresh_s`` (default REFRESH_S, 5 s) plus one reload. A lookup checks the store's version
item when ``refresh_s`` has passed since the last check (one GetItem), and reloads every
binding (stores.acls: one GetItem of the registry and one BatchGetItem per 100 resources)
only when the version moved. The version is read before the bindings, and a change bumps it
after its writes, so a reload never keeps a version newer than the bindings it read. The
process that made a change calls ``invalidate()`` and sees it at its next lookup.

Cost in steady state (no change): one GetItem of a few bytes (1 strongly consistent read unit)
per ``refresh_s`` per process, nothing per request: 30 days / 5 s = 518,400 reads a month,
$0.065 a process at DynamoDB on-demand's $0.125 per million read units (bench/run.py's
price), and the checks happen only while lookups do (an idle process reads nothing).

When a check or a reload fails retriably (StorageUnavailable, UnknownOutcome), the process
keeps answering from the bindings it has, as a Kafka broker keeps its ACLs while ZooKeeper is
away, logs a warning, and tries again after ``refresh_s``; the staleness bound holds again from
the next success. Until the first load succeeds, a lookup raises.

The index: per resource type, LITERAL bindings by name (the ``*`` name among them) and
PREFIXED bindings by prefix, with the prefix lengths present, so a lookup is a few dict reads
(one per distinct prefix length no longer than the name) whatever the number of bindings.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from objectlog.clock import Clock
from objectlog.concurrency import Lock
from objectlog.errors import ObjectLogError
from objectlog.format.acls import WILDCARD, AclBinding, PatternType, ResourceType
from objectlog.stores.acls import AclStore

log = logging.getLogger(__name__)

REFRESH_S = 5.0  # the documented staleness of ACLs (docs/security.md)


@dataclass(frozen=True)
class _TypeIndex:
    literal: dict[str, tuple[AclBinding, ...]] = field(default_factory=dict)
    prefixed: dict[str, tuple[AclBinding, ...]] = field(default_factory=dict)
    prefix_lengths: tuple[int, ...] = ()  # ascending
    every: tuple[AclBinding, ...] = ()

    def lookup(self, name: str) -> tuple[AclBinding, ...]:
        found = self.literal.get(name, ())
        if name != WILDCARD:
            found += self.literal.get(WILDCARD, ())
        for length in self.prefix_lengths:
            if length > len(name):
                break
            found += self.prefixed.get(name[:length], ())
        return found


def build_index(bindings: Iterable[AclBinding]) -> dict[ResourceType, _TypeIndex]:
    literal: dict[ResourceType, dict[str, list[AclBinding]]] = defaultdict(
        lambda: defaultdict(list)
    )
    prefixed: dict[ResourceType, dict[str, list[AclBinding]]] = defaultdict(
        lambda: defaultdict(list)
    )
    types: set[ResourceType] = set()
    for b in bindings:
        kind = literal if b.pattern_type is PatternType.LITERAL else prefixed
        kind[b.resource_type][b.resource_name].append(b)
        types.add(b.resource_type)
    return {
        t: _TypeIndex(
            literal={n: tuple(bs) for n, bs in literal[t].items()},
            prefixed={p: tuple(bs) for p, bs in prefixed[t].items()},
            prefix_lengths=tuple(sorted({len(p) for p in prefixed[t]})),
            every=tuple(
                sorted(b for bs in (*literal[t].values(), *prefixed[t].values()) for b in bs)
            ),
        )
        for t in types
    }


class AclCache:
    """The bindings of one store, for one process; thread-safe. ``checks`` and ``reloads``
    count the version reads and the full reloads (stores.acls gives their requests)."""

    def __init__(self, store: AclStore, clock: Clock, refresh_s: float = REFRESH_S) -> None:
        if refresh_s < 0:
            raise ValueError(f"refresh_s {refresh_s} is negative")
        self.store = store
        self.clock = clock
        self.refresh_ms = int(refresh_s * 1000)
        self.checks = 0
        self.reloads = 0
        self._lock = Lock()
        self._index: dict[ResourceType, _TypeIndex] | None = None
        self._version = -1
        self._next_check_ms = 0

    def bindings_for(self, resource_type: ResourceType, name: str) -> tuple[AclBinding, ...]:
        """The bindings that could apply to the resource, of any principal, host, operation:
        LITERAL ones of its name or of ``*``, PREFIXED ones of a prefix of its name.
        Empty means no ACL is found for it (``allow.everyone.if.no.acl.found`` decides)."""
        index = self._current().get(resource_type)
        return () if index is None else index.lookup(name)

    def bindings_of_type(self, resource_type: ResourceType) -> tuple[AclBinding, ...]:
        """Every binding on resources of the type, sorted (KIP-679 asks whether a principal
        may WRITE any topic)."""
        index = self._current().get(resource_type)
        return () if index is None else index.every

    def invalidate(self) -> None:
        """Check the version at the next lookup (the process that changed the ACLs)."""
        with self._lock:
            self._next_check_ms = 0

    def due(self) -> bool:
        """Whether the next lookup would read the store (the first load, or a check due)."""
        return self._index is None or self._due(self.clock.now_ms())

    def refresh_if_due(self) -> bool:
        """Check the version if refresh_s has passed, reload on a change; True if reloaded.
        A lookup calls it; a process may also call it from a timer, off its request path."""
        before = self.reloads
        self._current()
        return self.reloads > before

    def _due(self, now_ms: int) -> bool:
        # a clock set back by more than the interval must not stop the checks
        return not self._next_check_ms - self.refresh_ms <= now_ms < self._next_check_ms

    def _current(self) -> dict[ResourceType, _TypeIndex]:
        index = self._index
        if index is not None and not self._due(self.clock.now_ms()):
            return index
        # Once loaded, a lookup that meets another thread's check answers from what is held.
        if index is not None and not self._lock.acquire(blocking=False):
            return index
        if index is None:
            self._lock.acquire()
        try:
            now = self.clock.now_ms()
            if self._index is not None and not self._due(now):
                return self._index
            self._next_check_ms = now + self.refresh_ms
            try:
                self._check()
            except ObjectLogError as e:
                if self._index is None or not e.retriable:
                    self._next_check_ms = 0
                    raise
                log.warning("ACLs not refreshed, answering from version %d: %s", self._version, e)
            assert self._index is not None
            return self._index
        finally:
            self._lock.release()

    def _check(self) -> None:
        self.checks += 1
        version = self.store.version()  # before the bindings: see the module docstring
        if version == self._version and self._index is not None:
            return
        bindings = self.store.list()
        self.reloads += 1
        self._index = build_index(bindings)
        log.info("ACLs reloaded: version %d, %d bindings", version, len(bindings))
        self._version = version
