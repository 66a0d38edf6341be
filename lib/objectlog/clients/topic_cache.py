"""Topic metadata cached per client for a few seconds: the same rule on every transport."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from objectlog.errors import TopicNotFound
from objectlog.format.topics import Topic, validate_topic_name

TOPIC_CACHE_TTL_S = 10.0


class TopicCache:
    """Topics by name, each kept for ttl_s seconds after it was read.

    ``load`` reads a topic afresh and raises TopicNotFound when it is absent (or being
    deleted); the name is then forgotten, so the next call reads again rather than answering
    from an entry that went stale.
    """

    def __init__(
        self,
        load: Callable[[str], Topic],
        *,
        ttl_s: float = TOPIC_CACHE_TTL_S,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._load = load
        self._ttl_s = ttl_s
        self._now = now
        self._entries: dict[str, tuple[float, Topic]] = {}
        self._lock = threading.Lock()

    def get(self, name: str, *, fresh: bool = False) -> Topic:
        """The topic, from the cache unless fresh or older than the TTL. TopicNotFound,
        InvalidTopicName."""
        now = self._now()
        with self._lock:
            cached = self._entries.get(name)
        if cached and not fresh and now - cached[0] < self._ttl_s:
            return cached[1]
        try:
            topic = self._load(validate_topic_name(name))
        except TopicNotFound:
            self.forget(name)
            raise
        with self._lock:
            self._entries[name] = (now, topic)
        return topic

    def forget(self, name: str) -> None:
        with self._lock:
            self._entries.pop(name, None)
