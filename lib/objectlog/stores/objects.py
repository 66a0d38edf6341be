"""Object storage: the interface the log uses (S3 in objectlog.adapters.s3), and in memory.

Every method raises objectlog errors only: ObjectExists, ObjectNotFound, StorageUnavailable,
UnknownOutcome (a put whose answer was lost).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from objectlog.errors import ObjectExists, ObjectNotFound


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    key: str
    size: int
    last_modified_ms: int


class ObjectStore(ABC):
    """Immutable objects by key: written once, read by range, deleted when unreferenced."""

    def put_if_absent(self, key: str, body: bytes) -> None:
        """Write a new object; ObjectExists if the key holds other bytes.

        A key that already holds exactly these bytes is this write landed earlier: an SDK
        retries a PUT whose answer it lost, and the retry meets the first attempt's object
        (S3 answers 412). Keys are fresh ULIDs, so no other writer makes the same bytes.
        """
        try:
            self._create(key, body)
        except ObjectExists:
            if not self._holds(key, body):
                raise

    def _holds(self, key: str, body: bytes) -> bool:
        try:
            return self.get(key) == body
        except ObjectNotFound:
            return False

    @abstractmethod
    def _create(self, key: str, body: bytes) -> None:
        """Write a new object; ObjectExists if the key is taken."""

    @abstractmethod
    def get(self, key: str) -> bytes:
        """The whole object; ObjectNotFound if absent."""

    @abstractmethod
    def get_range(self, key: str, start: int, length: int) -> bytes:
        """length bytes from start; ObjectNotFound if absent."""

    @abstractmethod
    def get_tail(self, key: str, length: int) -> bytes:
        """The last length bytes (all of it if shorter); ObjectNotFound if absent."""

    @abstractmethod
    def delete_many(self, keys: Iterable[str]) -> None:
        """Delete the keys; absent keys are not an error."""

    @abstractmethod
    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        """Objects under prefix, in key order."""


class MemoryObjectStore(ObjectStore):
    """An in-memory store for unit and model-based tests."""

    def __init__(self, clock_ms: Any = None) -> None:
        self._objects: dict[str, tuple[bytes, int]] = {}
        self._lock = threading.Lock()
        self._clock_ms = clock_ms or (lambda: 0)

    def _create(self, key: str, body: bytes) -> None:
        with self._lock:
            if key in self._objects:
                raise ObjectExists(f"{key} already exists")
            self._objects[key] = (bytes(body), int(self._clock_ms()))

    def get(self, key: str) -> bytes:
        with self._lock:
            if key not in self._objects:
                raise ObjectNotFound(f"{key}: not found")
            return self._objects[key][0]

    def get_range(self, key: str, start: int, length: int) -> bytes:
        return self.get(key)[start : start + length]

    def get_tail(self, key: str, length: int) -> bytes:
        return self.get(key)[-length:]

    def delete_many(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                self._objects.pop(key, None)

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        with self._lock:
            items = sorted((k, v) for k, v in self._objects.items() if k.startswith(prefix))
        for key, (body, modified) in items:
            yield ObjectInfo(key, len(body), modified)
