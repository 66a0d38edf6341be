"""A partition head's open transactions and markers (stores.txn_marks), the same on DynamoDB
and in memory: the last stable offset, at most OPEN_TRANSACTIONS open, a marker written once
and taking one offset, heads written before transactions (issue 36)."""

from __future__ import annotations

import pytest

from objectlog.errors import ConcurrentTransactions, TopicNotFound
from objectlog.format.index import LEVEL_MARKER
from objectlog.format.txn import aborted_ranges, is_commit
from objectlog.stores.items import ItemStores
from objectlog.stores.txn_marks import OPEN_TRANSACTIONS
from tests.contract.test_store_contract import commit, created, ref, stores, topic

__all__ = ["stores"]  # the fixture, over both implementations


def open_txn(items: ItemStores, producer: str, epoch: int = 0, partition: int = 0) -> int:
    return items.metadata.open_transaction(
        "t", partition, topic_id="id-t", producer=producer, epoch=epoch
    )


def mark(items: ItemStores, producer: str, commit_: bool, epoch: int = 0) -> int | None:
    return items.metadata.write_marker(
        "t", 0, topic_id="id-t", producer=producer, epoch=epoch, commit=commit_, time_ms=99
    )


def test_open_transactions_hold_the_last_stable_offset_until_their_markers(
    stores: ItemStores,
) -> None:
    m = stores.metadata
    t = created(stores, topic())
    m.commit(commit(t, pid=None))  # offsets 0-2
    assert open_txn(stores, "k1") == 3
    assert open_txn(stores, "k1") == 3  # the same epoch again: the same first offset
    m.commit(commit(t, pid=None))  # 3-5
    assert open_txn(stores, "k2") == 6
    head = m.get_head("t", 0)
    assert head is not None and head.open_txns == {"k1": (0, 3), "k2": (0, 6)}
    assert head.last_stable_offset == 3 and head.high_watermark == 6

    assert mark(stores, "k1", False) == 6  # the abort marker takes offset 6
    assert mark(stores, "k1", False) is None  # written once
    head = m.get_head("t", 0)
    assert head is not None and head.last_stable_offset == 6 and head.high_watermark == 7
    assert mark(stores, "k2", True) == 7
    head = m.get_head("t", 0)
    assert head is not None and head.open_txns == {} and head.last_stable_offset == 8
    markers = [r for r in head.tail if r.level == LEVEL_MARKER]
    assert len(markers) == 2 and not is_commit(markers[0]) and is_commit(markers[1])
    placed = [p for p in stores.metadata.get_head("t", 0).tail]  # type: ignore[union-attr]
    assert placed  # the markers are refs like any other in the tail


def test_an_abort_marker_names_the_transactions_first_offset(stores: ItemStores) -> None:
    from objectlog.format.index import place

    m = stores.metadata
    t = created(stores, topic())
    m.commit(commit(t, pid=None))
    open_txn(stores, "k1")
    mark(stores, "k1", False)
    head = m.get_head("t", 0)
    assert head is not None
    ranges = aborted_ranges(place(head.tail_base, head.tail))
    assert [(a.producer, a.first_offset, a.marker_offset) for a in ranges] == [("k1", 3, 3)]


def test_refusals_another_epoch_open_a_full_partition_and_a_gone_topic(
    stores: ItemStores,
) -> None:
    created(stores, topic())
    open_txn(stores, "k1", epoch=1)
    with pytest.raises(ConcurrentTransactions, match="epoch 1 transaction open"):
        open_txn(stores, "k1", epoch=2)
    assert mark(stores, "k1", True, epoch=0) is None  # an older epoch's: nothing written
    for i in range(2, OPEN_TRANSACTIONS + 1):
        open_txn(stores, f"k{i}")
    with pytest.raises(ConcurrentTransactions, match="retry when one ends"):
        open_txn(stores, "k99")
    head = stores.metadata.get_head("t", 0)
    assert head is not None and len(head.open_txns) == OPEN_TRANSACTIONS
    with pytest.raises(TopicNotFound):
        stores.metadata.open_transaction("t", 0, topic_id="id-other", producer="k1", epoch=1)
    with pytest.raises(TopicNotFound):
        stores.metadata.write_marker(
            "t", 0, topic_id="id-other", producer="k1", epoch=1, commit=True, time_ms=1
        )


def test_a_newer_epochs_abort_closes_a_fenced_producers_transaction(stores: ItemStores) -> None:
    created(stores, topic())
    open_txn(stores, "k1", epoch=3)
    assert mark(stores, "k1", False, epoch=4) == 0  # the coordinator fenced epoch 3
    head = stores.metadata.get_head("t", 0)
    assert head is not None and head.open_txns == {}


def test_the_head_stays_small_with_every_transaction_open(stores: ItemStores) -> None:
    """OPEN_TRANSACTIONS open beside 16 full idempotent-producer windows: the head item stays
    under 2 KiB (DynamoDB bills it per KiB written on every commit)."""
    from objectlog.stores.metadata import Commit, KafkaSequence

    m = stores.metadata
    t = created(stores, topic())
    known = m.get_head("t", 0)
    for p in range(16):
        for batch in range(5):
            kafka = KafkaSequence(epoch=0, first=batch * 3, last=batch * 3 + 2)
            sent = Commit(
                t.topic_id,
                t.name,
                0,
                ref(records=3),
                1000,
                f"k{1000 + p}",
                batch * 3 + 2,
                now_s=7,
                kafka=kafka,
                known_head=known,
            )
            known = m.commit(sent).head  # on the head it knows: no read, a short answer
    for i in range(OPEN_TRANSACTIONS):
        open_txn(stores, f"k{100_000 + i}", epoch=32_000)
    head = m.get_head("t", 0)
    assert head is not None and len(head.open_txns) == OPEN_TRANSACTIONS
    if head.item_bytes:  # DynamoDB's billed size (the in-memory store does not know it)
        tail_bytes = sum(len(r.encode()) + 3 for r in head.tail)  # the tail spills to manifests
        assert head.item_bytes - tail_bytes < 2048, head.item_bytes


def test_a_head_written_before_transactions_gets_its_maps(stores: ItemStores) -> None:
    created(stores, topic())
    table = getattr(stores.metadata, "table", None)
    if table is not None:  # DynamoDB: take the maps away, as a head written before them
        from objectlog.stores.dynamo_metadata import head_key

        table.update(head_key("t", 0), "REMOVE oe, ot", repeatable=True)
    assert open_txn(stores, "k1") == 0
    head = stores.metadata.get_head("t", 0)
    assert head is not None and head.open_txns == {"k1": (0, 0)}


def test_a_transactional_batch_lands_only_inside_its_open_transaction(stores: ItemStores) -> None:
    """KIP-890 part 1: no transactional batch outside its transaction, so none can hang a
    partition's last stable offset; its retry after the marker is still a duplicate."""
    from dataclasses import replace

    from objectlog.errors import InvalidTxnState
    from objectlog.format.txn import transactional
    from objectlog.stores.metadata import Commit, KafkaSequence

    m = stores.metadata
    t = created(stores, topic())

    def batch(first: int, epoch: int = 0) -> Commit:
        return Commit(
            t.topic_id,
            t.name,
            0,
            replace(ref(records=2), txn=transactional("k5")),
            1000,
            "k5",
            first + 1,
            now_s=7,
            kafka=KafkaSequence(epoch, first, first + 1),
            transaction_epoch=epoch,
        )

    with pytest.raises(InvalidTxnState, match="needs its partition added"):
        m.commit(batch(0))
    head = m.get_head("t", 0)
    assert head is not None and head.next_offset == 0  # nothing stored
    open_txn(stores, "k5")
    landed = m.commit(batch(0))
    assert landed.base_offset == 0
    with pytest.raises(InvalidTxnState):  # another epoch's transaction is not this one
        m.commit(batch(0, epoch=1))
    mark(stores, "k5", True)
    assert m.commit(batch(0)).duplicate  # a retry after the commit marker: its first answer
    with pytest.raises(InvalidTxnState):  # the next batch needs a new transaction
        m.commit(batch(2))


def test_a_marker_at_the_first_offset_its_caller_knows_or_a_wrong_one(stores: ItemStores) -> None:
    """write_marker's first hint (the offset open_transaction answered): right, the marker is
    written as without it; wrong, or for a transaction no longer open, the head decides."""
    from objectlog.format.index import place

    m = stores.metadata
    t = created(stores, topic())
    m.commit(commit(t, pid=None))  # 0-2
    first = open_txn(stores, "k1")
    assert open_txn(stores, "k2") == first == 3

    def hinted(producer: str, at: int) -> int | None:
        return m.write_marker(
            "t", 0, topic_id="id-t", producer=producer, epoch=0, commit=False, time_ms=9, first=at
        )

    assert hinted("k1", first) == 3
    assert hinted("k2", 99) == 4  # wrong: read from the head, the same marker
    assert hinted("k2", first) is None  # written already
    head = m.get_head("t", 0)
    assert head is not None and head.open_txns == {} and head.high_watermark == 5
    ranges = aborted_ranges(place(head.tail_base, head.tail))
    assert [(a.producer, a.first_offset) for a in ranges] == [("k1", 3), ("k2", 3)]
