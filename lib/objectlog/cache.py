"""A small thread-safe LRU for immutable objects (manifests, decoded slices, footers)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """A small thread-safe LRU for immutable objects (manifests, decoded slices): at most
    capacity entries and, with size_of, at most max_bytes of them."""

    def __init__(
        self,
        capacity: int,
        *,
        max_bytes: int | None = None,
        size_of: Callable[[V], int] | None = None,
    ) -> None:
        if (max_bytes is None) != (size_of is None):
            raise ValueError("max_bytes and size_of go together")
        self.capacity = capacity
        self.max_bytes = max_bytes
        self.size_of = size_of
        self.bytes = 0
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_load(self, key: K, load: Callable[[], V]) -> V:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = load()
        self.put(key, value)
        return value

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            if key in self._items:
                self.bytes -= self._size(self._items[key])
            self._items[key] = value
            self._items.move_to_end(key)
            self.bytes += self._size(value)
            while len(self._items) > self.capacity or (
                self.max_bytes is not None and self.bytes > self.max_bytes and self._items
            ):
                _, evicted = self._items.popitem(last=False)
                self.bytes -= self._size(evicted)

    def __len__(self) -> int:
        return len(self._items)

    def _size(self, value: V) -> int:
        return self.size_of(value) if self.size_of is not None else 0
