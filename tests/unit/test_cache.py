"""objectlog.cache.LruCache: bounded by entries and, with size_of, by bytes."""

from __future__ import annotations

import pytest

from objectlog.cache import LruCache


def test_the_least_recently_used_entry_goes_first() -> None:
    cache: LruCache[str, int] = LruCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # b is now the least recently used
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)


def test_a_byte_bound_evicts_by_size_and_counts_replacements_once() -> None:
    cache: LruCache[str, bytes] = LruCache(100, max_bytes=10, size_of=len)
    cache.put("a", b"xxxx")
    cache.put("b", b"yyyy")
    cache.put("a", b"zz")  # replaced: 4 bytes out, 2 in
    assert (cache.bytes, len(cache)) == (6, 2)
    cache.put("c", b"12345")  # 11 > 10: b (least recently used) goes
    assert (cache.get("b"), cache.get("a"), cache.get("c")) == (None, b"zz", b"12345")
    assert cache.bytes == 7
    cache.put("d", b"0123456789ab")  # larger than the bound: nothing, not even itself, stays
    assert (len(cache), cache.bytes) == (0, 0)


def test_a_byte_bound_needs_a_size() -> None:
    with pytest.raises(ValueError, match="together"):
        LruCache(1, max_bytes=10)
