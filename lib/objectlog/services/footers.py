"""L1 footers by object key, fetched once with a suffix-range GET and kept (files never change)."""

from __future__ import annotations

import pyarrow.parquet as pq

from objectlog.cache import LruCache
from objectlog.format.l1 import FOOTER_TAIL_BYTES, parse_footer
from objectlog.stores.objects import ObjectStore


class Footers:
    """L1 footers by object key, fetched once with a suffix-range GET and kept."""

    def __init__(self, store: ObjectStore, capacity: int = 512) -> None:
        self.store = store
        self._cache: LruCache[str, pq.FileMetaData] = LruCache(capacity)

    def get(self, key: str) -> pq.FileMetaData:
        """Raises ObjectNotFound if the file is gone."""
        return self._cache.get_or_load(key, lambda: self._load(key))

    def _load(self, key: str) -> pq.FileMetaData:
        found = parse_footer(self.store.get_tail(key, FOOTER_TAIL_BYTES))
        if isinstance(found, int):
            found = parse_footer(self.store.get_tail(key, found))
        assert not isinstance(found, int)
        return found
