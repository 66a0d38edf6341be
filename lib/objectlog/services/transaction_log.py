"""The log's side of a transaction (docs/transactions.md): opening it on the partitions the
coordinator adds, and its markers, through the partition heads (stores.txn_marks).

``PartitionMarkers`` is the coordinator's MarkerWriter and PartitionOpener: one conditional
UpdateItem per partition either way, idempotent, so whoever completes a decided transaction
(a retried EndTxn, the next InitProducerId, the sweep) writes each marker once. A partition
of a topic deleted since it was added is passed over: it has no head to hold a transaction.

``GroupOffsets`` is its OffsetApplier: a committed transaction's offsets go into their groups
as the committing member's generation would commit them (a later generation's commit stays,
as for any commit of a classic group), each one once more harmlessly on a repeat.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from objectlog.clock import Clock
from objectlog.errors import CommitFailed, TopicNotFound
from objectlog.groups.coordinator import GroupCoordinator, OffsetAndMetadata
from objectlog.stores.metadata import MetadataStore, kafka_producer
from objectlog.stores.transactions import TopicPartition, Transaction

TopicIds = Callable[[str], str | None]  # a topic's id, None if it does not exist
logger = logging.getLogger(__name__)


class PartitionMarkers:
    def __init__(self, metadata: MetadataStore, topic_ids: TopicIds, clock: Clock) -> None:
        self.metadata = metadata
        self.topic_ids = topic_ids
        self.clock = clock

    def open_partitions(self, txn: Transaction, partitions: Iterable[TopicPartition]) -> None:
        """Open txn on each partition's head (its first offset: the head's next offset)."""
        producer = kafka_producer(txn.producer_id)
        for topic, partition in sorted(partitions):
            topic_id = self.topic_ids(topic)
            if topic_id is None:
                raise TopicNotFound(f"topic {topic!r} does not exist")
            self.metadata.open_transaction(
                topic, partition, topic_id=topic_id, producer=producer, epoch=txn.producer_epoch
            )

    def write_markers(self, txn: Transaction, commit: bool) -> None:
        producer = kafka_producer(txn.producer_id)
        now = self.clock.now_ms()
        for topic, partition in sorted(txn.partitions):
            topic_id = self.topic_ids(topic)
            if topic_id is None:
                continue
            try:
                self.metadata.write_marker(
                    topic,
                    partition,
                    topic_id=topic_id,
                    producer=producer,
                    epoch=txn.producer_epoch,
                    commit=commit,
                    time_ms=now,
                )
            except TopicNotFound:
                continue  # deleted (or recreated) since: nothing of this transaction is left


class GroupOffsets:
    def __init__(self, groups: GroupCoordinator) -> None:
        self.groups = groups

    def apply(self, txn: Transaction) -> None:
        for group, offsets in sorted(txn.offsets.items()):
            for tp, pending in sorted(offsets.items()):
                try:
                    self.groups.commit(
                        group,
                        {tp: OffsetAndMetadata(pending.offset, pending.metadata)},
                        member_id=pending.member,
                        generation=pending.generation,
                        leader_epochs={tp: pending.leader_epoch},
                    )
                except CommitFailed as e:  # a later generation committed since: it stays
                    logger.info("transactional offset of %s not applied: %s", group, e.message)
