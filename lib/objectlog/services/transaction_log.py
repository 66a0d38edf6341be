"""The log's side of a transaction (docs/transactions.md): opening it on the partitions the
coordinator adds, and its markers, through the partition heads (stores.txn_marks).

``PartitionMarkers`` is the coordinator's MarkerWriter and PartitionOpener: one conditional
UpdateItem per partition either way, idempotent, so whoever completes a decided transaction
(a retried EndTxn, the next InitProducerId, the sweep) writes each marker once. A partition
of a topic deleted since it was added is passed over: it has no head to hold a transaction.

``GroupOffsets`` is its OffsetApplier. TxnOffsetCommit marks each partition's offset item
pending in the transaction (GroupCoordinator.hold_pending, under the member's own commit
condition: KIP-447's check in the same write); completing the transaction stores the offsets
and removes the marks (commit) or only removes them (abort), conditional on the mark, so a
plain commit made since stays (as in Kafka) and a repeat writes nothing. ``OffsetsPending``
tells readers that ask for stable offsets (Kafka's require_stable) which marks still hold:
a consumer that takes over a partition waits for the transaction instead of reading an offset
the transaction is about to move (outputs produced twice).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from objectlog.cache import LruCache
from objectlog.clock import Clock
from objectlog.errors import ObjectLogError, TopicNotFound
from objectlog.fan_out import fan_out
from objectlog.groups.coordinator import GroupCoordinator
from objectlog.services.activity import TopicActivity
from objectlog.stores.metadata import MetadataStore, kafka_producer
from objectlog.stores.transactions import (
    TopicPartition,
    Transaction,
    marking_id,
    offsets_mark,
)

if TYPE_CHECKING:
    from objectlog.services.transactions import TransactionCoordinator

# A topic's id, None if it does not exist: from a short-lived cache, or read afresh (fresh)
TopicIds = Callable[[str, bool], str | None]
FIRSTS_KEPT = 10_000  # transactions' first offsets remembered per process (about 1 MB)
logger = logging.getLogger(__name__)


class PartitionMarkers:
    def __init__(
        self,
        metadata: MetadataStore,
        topic_ids: TopicIds,
        clock: Clock,
        activity: TopicActivity | None = None,
    ) -> None:
        self.metadata = metadata
        self.topic_ids = topic_ids
        self.clock = clock
        self.activity = activity
        # the first offsets this process opened transactions at, so its markers need no read
        self.firsts: LruCache[tuple[str, int, str, int], int] = LruCache(FIRSTS_KEPT)

    def open_partitions(self, txn: Transaction, partitions: Iterable[TopicPartition]) -> None:
        """Open txn on each partition's head (its first offset: the head's next offset)."""
        producer = kafka_producer(txn.producer_id)

        def open_one(tp: TopicPartition) -> None:
            def write(topic_id: str) -> None:
                first = self.metadata.open_transaction(
                    tp.topic,
                    tp.partition,
                    topic_id=topic_id,
                    producer=producer,
                    epoch=txn.producer_epoch,
                )
                self.firsts.put((tp.topic, tp.partition, producer, txn.producer_epoch), first)

            if not self._on_head(tp.topic, write):
                raise TopicNotFound(f"topic {tp.topic!r} does not exist")

        fan_out(open_one, sorted(TopicPartition(*tp) for tp in partitions))

    def write_markers(self, txn: Transaction, commit: bool) -> None:
        """A marker into each partition of txn; a partition whose topic is gone (deleted, or
        recreated since) holds nothing of it and is passed over."""
        producer = kafka_producer(txn.producer_id)
        now = self.clock.now_ms()

        def mark_one(tp: TopicPartition) -> None:
            first = self.firsts.get((tp.topic, tp.partition, producer, txn.producer_epoch))
            self._on_head(
                tp.topic,
                lambda topic_id: self.metadata.write_marker(
                    tp.topic,
                    tp.partition,
                    topic_id=topic_id,
                    producer=producer,
                    epoch=txn.producer_epoch,
                    commit=commit,
                    time_ms=now,
                    first=first,
                ),
            )

        try:
            fan_out(mark_one, sorted(txn.partitions))
        finally:  # markers move last stable offsets; if one failed, others may have landed
            if self.activity is not None:
                self.activity.committed(tp.topic for tp in txn.partitions)

    def _on_head(self, topic: str, write: Callable[[str], object]) -> bool:
        """write(topic id) with the cached id, then once more with one read afresh if the
        head knew another (the topic recreated since it was cached); False if the topic does
        not exist (or no longer holds the head)."""
        for fresh in (False, True):
            topic_id = self.topic_ids(topic, fresh)
            if topic_id is None:
                return False
            try:
                write(topic_id)
                return True
            except TopicNotFound:
                continue
        return False


class GroupOffsets:
    def __init__(self, groups: GroupCoordinator) -> None:
        self.groups = groups

    def settle(self, txn: Transaction, commit: bool) -> None:
        mark = offsets_mark(txn)
        for group, offsets in sorted(txn.offsets.items()):
            settled = {
                tp: (o.offset, o.metadata, o.leader_epoch) if commit else None
                for tp, o in offsets.items()
            }
            passed = self.groups.transactional.settle(group, mark, settled)
            if passed and commit:  # a plain commit came after the transaction's: it stays
                logger.info(
                    "transactional offsets of %s in %s not applied: committed since", passed, group
                )


class OffsetsPending:
    """GroupCoordinator's ``pending``: whether the transaction that left a mark on a group's
    offset still holds it (stores.transactions.offsets_mark): the same transaction, still
    open or decided and not complete. A decided one is completed and an expired one
    aborted first, as any call about it would, so a reader never waits on a dead agent."""

    def __init__(self, coordinator: Callable[[], TransactionCoordinator]) -> None:
        self.coordinator = coordinator

    def __call__(self, mark: str, group: str) -> bool:
        transactional_id = marking_id(mark)
        assert transactional_id is not None
        try:
            txn = self.coordinator().abort_if_expired(transactional_id)
        except ObjectLogError:  # the completion failed: the decision stands, still pending
            return True
        return (
            txn is not None and txn.state.open and group in txn.groups and offsets_mark(txn) == mark
        )
