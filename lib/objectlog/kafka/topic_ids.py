"""Kafka topic ids to topic names, for requests that name topics by id (Fetch v13+, Metadata
v10+, DeleteTopics v6+).

A topic's id is its ULID (context.topic_uuid): it never changes and never names another topic,
so an id once resolved stays resolved, and a Fetch in steady state reads nothing to resolve its
ids. Only an id not seen yet lists the topics again, at most once a second, so a client asking
for an unknown id does not read the registry with every request. Each answer is checked against
the name's current topic (the library's topic cache): a deleted topic's id, or the old id of a
topic deleted and created again, resolves to nothing (Kafka's UNKNOWN_TOPIC_ID).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable

from ulid import ULID

from objectlog.clients.direct import ObjectLog
from objectlog.errors import TopicNotFound

RELOAD_EVERY_S = 1.0


def topic_uuid(topic_id: str) -> uuid.UUID:
    """Kafka's topic id for a topic: its ULID's 128 bits, one to one."""
    return uuid.UUID(bytes=ULID.from_str(topic_id).bytes)


class TopicNames:
    def __init__(
        self,
        log: ObjectLog,
        *,
        reload_every_s: float = RELOAD_EVERY_S,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = log
        self._reload_every_s = reload_every_s
        self._now = now
        self._names: dict[uuid.UUID, str] = {}
        self._reloaded_at: float | None = None
        self._lock = threading.Lock()

    def resolve(self, ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, str]:
        """The names of the ids that name an existing topic (the others are left out)."""
        wanted = set(ids)
        if wanted - self._names.keys():
            self._reload()
        resolved = {}
        for topic_id in wanted:
            name = self._names.get(topic_id)
            if name is not None and self._current_id(name) == topic_id:
                resolved[topic_id] = name
        return resolved

    def _current_id(self, name: str) -> uuid.UUID | None:
        try:
            return topic_uuid(self._log.topic(name).topic_id)
        except TopicNotFound:
            return None

    def _reload(self) -> None:
        with self._lock:
            now = self._now()
            if self._reloaded_at is not None and now - self._reloaded_at < self._reload_every_s:
                return
            self._reloaded_at = now
        for name in self._log.list_topics():
            topic_id = self._current_id(name)  # a topic deleted since the listing: None
            if topic_id is not None:
                self._names[topic_id] = name
