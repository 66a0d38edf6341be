"""Spills write one object: the manifest list, holding the newest manifest inline (issue 18)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from objectlog.clock import ManualClock
from objectlog.format.index import Manifest, ManifestEntry, ManifestList, SegmentRef
from objectlog.format.topics import Topic, TopicConfig
from objectlog.services import index as index_module
from objectlog.services.index import IndexStore
from objectlog.stores.memory import MemoryMetadata
from objectlog.stores.metadata import Commit
from objectlog.stores.objects import MemoryObjectStore

TOPIC = Topic("t", "tid", 1, TopicConfig({}), 0)


class CountingStore(MemoryObjectStore):
    def __init__(self) -> None:
        super().__init__()
        self.puts: list[str] = []

    def put_if_absent(self, key: str, body: bytes) -> None:
        self.puts.append(key)
        super().put_if_absent(key, body)


def ref(i: int) -> SegmentRef:
    return SegmentRef(0, f"o{i}", 0, 10, 3, 3, 1000 + i, 1000 + i)


def grow(index: IndexStore, metadata: MemoryMetadata, commits: int) -> None:
    """Commit refs one by one, spilling as the Appender does."""
    for i in range(commits):
        result = metadata.commit(Commit("tid", "t", 0, ref(i), 10**15, None, 0, 0))
        if index.needs_spill(result.head):
            assert index.spill(result.head)


@pytest.fixture
def stores() -> tuple[IndexStore, MemoryMetadata, CountingStore]:
    store, metadata = CountingStore(), MemoryMetadata()
    metadata.put_new_topic(TOPIC)
    metadata.put_heads(TOPIC, [0])
    return IndexStore(store, metadata, "", ManualClock(start_ms=5000)), metadata, store


def test_an_inline_entry_round_trips_through_json() -> None:
    sealed = Manifest(0, (ref(0), ref(1)))
    open_ = Manifest(6, (ref(2), ref(3), ref(4)))
    listing = ManifestList((ManifestEntry.summarize("m1", sealed), ManifestEntry.holding(open_)))
    again = ManifestList.from_json(listing.to_json())
    assert again == listing
    assert again.entries[0].manifest is None
    assert again.entries[1].manifest == open_
    assert again.entries[1].key == "" and again.entries[1].end_offset == 15


def test_a_spill_writes_one_object_and_every_ref_stays_placed(
    stores: tuple[IndexStore, MemoryMetadata, CountingStore],
) -> None:
    index, metadata, store = stores
    grow(index, metadata, 100)
    head = metadata.get_head("t", 0)
    assert head is not None and index.spills == 6
    assert len(store.puts) == index.spills  # the lists only: no manifest objects
    assert all("/l-" in key for key in store.puts)
    listing = index.manifest_list(head.manifest_list or "")
    assert [entry.key for entry in listing.entries] == [""]
    placed = list(index.all_placed_refs(head))
    assert [p.ref.object_id for p in placed] == [f"o{i}" for i in range(100)]
    assert [p.base_offset for p in placed] == list(range(0, 300, 3))


def test_a_full_inline_manifest_is_written_out_and_a_new_one_starts(
    stores: tuple[IndexStore, MemoryMetadata, CountingStore],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(index_module, "MANIFEST_MAX_REFS", 40)
    index, metadata, store = stores
    grow(index, metadata, 100)
    head = metadata.get_head("t", 0)
    assert head is not None
    manifests = [key for key in store.puts if "/m-" in key]
    assert len(store.puts) == index.spills + len(manifests)
    listing = index.manifest_list(head.manifest_list or "")
    assert [bool(entry.key) for entry in listing.entries] == [True, True, False]
    assert [entry.key for entry in listing.entries[:2]] == manifests
    assert all(entry.refs <= 40 for entry in listing.entries)
    placed = list(index.all_placed_refs(head))
    assert [p.ref.object_id for p in placed] == [f"o{i}" for i in range(100)]
    for offset in (0, 44, 45, 150, 299):
        first = next(index.placed_refs(head, offset))
        assert first.base_offset <= offset < first.end_offset


def test_a_spill_onto_a_layout_1_list_starts_an_inline_manifest_after_it(
    stores: tuple[IndexStore, MemoryMetadata, CountingStore],
) -> None:
    """A list whose entries all name manifest objects (before issue 18) is kept as it is."""
    index, metadata, store = stores
    old = Manifest(0, tuple(ref(i) for i in range(15)))
    store.put_if_absent("m-old", old.to_json())
    listing = ManifestList((ManifestEntry.summarize("m-old", old),))
    store.put_if_absent("l-old", listing.to_json())
    head = metadata.get_head("t", 0)
    assert head is not None
    metadata._heads[("t", 0)] = head.__class__("t", 0, "tid", 45, 0, 45, (), "l-old", 1, 0, {})
    grow(index, metadata, 17)  # one spill
    head = metadata.get_head("t", 0)
    assert head is not None and index.spills == 1
    entries = index.manifest_list(head.manifest_list or "").entries
    assert [entry.key for entry in entries] == ["m-old", ""]
    assert entries[1].base_offset == 45
    assert len(list(index.all_placed_refs(head))) == 15 + 17


def test_a_spill_expires_the_least_recently_used_producers_a_few_at_a_time(
    stores: tuple[IndexStore, MemoryMetadata, CountingStore],
) -> None:
    """Producers past the cap leave over several spills, oldest first: each spill's
    UpdateExpression stays small (DynamoDB's 4 KB limit; moto fails at about 150 paths)."""
    index, metadata, _ = stores
    joined = index_module.PRODUCER_CAP + 20
    for i in range(joined):  # producer p<i> last used at second i
        metadata.commit(Commit("tid", "t", 0, ref(i), 10**15, f"p{i:02d}", 1, i))
    head = metadata.get_head("t", 0)
    assert head is not None and len(head.producers) == joined
    expired = index.expired_producers(head)
    assert expired == [f"p{i:02d}" for i in range(index_module.EXPIRED_PER_SPILL)]
    assert index.spill(head)
    head = metadata.get_head("t", 0)
    assert head is not None and len(head.producers) == joined - index_module.EXPIRED_PER_SPILL


def test_a_head_large_with_producers_carries_a_spill_only_when_it_saves_a_write_unit(
    stores: tuple[IndexStore, MemoryMetadata, CountingStore],
) -> None:
    index, metadata, _ = stores
    grow(index, metadata, 3)
    head = metadata.get_head("t", 0)
    assert head is not None and len(head.tail) == 3
    crowded = replace(head, item_bytes=5000)  # 48 producers' windows: a spill moves 1 ref
    assert not index.should_carry_spill(crowded)
    at_the_edge = replace(head, item_bytes=1000)  # the next commit would pass 1 KiB
    assert index.should_carry_spill(at_the_edge)
    assert not index.should_carry_spill(replace(head, item_bytes=500))
    assert index.should_carry_spill(replace(head, tail=head.tail * 3))  # 9 refs
