"""The library's transactional producer (docs/transactions.md): Kafka's transactional API over
the same coordinator, heads and markers the Kafka agent uses, so a library producer and a Kafka
client are the same kind of transactional producer to the log and to each other.

    producer = log.producer(transactional_id="orders-enricher")
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("enriched", value=...)
    producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
    producer.commit_transaction()      # or abort_transaction()

``init_transactions`` takes the transactional id's next epoch (KIP-360's InitProducerId),
fencing any older instance and aborting its open transaction. The producer then writes as a
Kafka producer of that id: its producer key is ``k<producer id>``, each partition batch carries
Kafka sequences (one per record, from 0 in each epoch) and is tagged transactional, and the
first batch of a transaction to a partition is preceded by AddPartitionsToTxn (the coordinator
opens the transaction on the partition's head, and the head refuses a transactional batch
outside it: KIP-890 part 1). ``send_offsets_to_transaction`` is AddOffsetsToTxn then
TxnOffsetCommit, checked against the consumer's membership as KIP-447 checks it, in the write
that marks the offsets pending (read_committed consumers taking the partitions over wait for
the transaction to end).
``commit_transaction`` flushes, then EndTxn: it returns once every partition holds its marker,
so the transaction is readable by read_committed consumers when it returns.

Errors: a record that fails inside a transaction makes it abortable (commit_transaction raises
InvalidTxnState naming the failure; abort_transaction works). A fenced producer
(TransactionalIdFenced, ProducerFenced) can only be closed. After an abort that followed a
failure whose outcome is unknown, the producer bumps its own epoch (KIP-360), so sequences
start again from 0 and no batch of the aborted transaction can land later.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import pyarrow as pa

from objectlog.clients.delivery import Delivery, RecordFuture
from objectlog.clients.flushing import ProducerHost
from objectlog.clients.producer import Producer
from objectlog.clients.transaction_session import (
    TransactionSession,
    TxnPhase,
    check_transactional_options,
)
from objectlog.clients.values import BatchResult, ConsumerGroupMetadata
from objectlog.errors import ObjectLogError
from objectlog.groups import OffsetAndMetadata, TopicPartition
from objectlog.groups.coordinator import GroupCoordinator
from objectlog.services.append import AppendOutcome, StagedFlush
from objectlog.services.transactions import TransactionCoordinator


class TransactionalHost(ProducerHost, Protocol):
    """What a transactional producer needs of its log (ObjectLog): its coordinators."""

    @property
    def transactions(self) -> TransactionCoordinator: ...

    @property
    def groups(self) -> GroupCoordinator: ...


class TransactionalProducer(Producer):
    def __init__(
        self,
        log: TransactionalHost,
        *,
        transactional_id: str,
        transaction_timeout_ms: int = 60_000,
        **options: Any,
    ) -> None:
        """A Producer with Kafka's transaction calls. ``transaction_timeout_ms`` (Kafka's
        ``transaction.timeout.ms``): a transaction open longer is aborted by the coordinator
        and this producer fenced. Idempotence cannot be turned off, as in Kafka."""
        check_transactional_options(transactional_id, options)
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.txn = TransactionSession(
            log.transactions, log.groups, transactional_id, transaction_timeout_ms
        )
        super().__init__(log, **options)
        self.producer_id = None  # no writes before init_transactions

    # ---- Kafka's transaction calls -------------------------------------------------------

    def init_transactions(self) -> None:
        """Take the transactional id's next epoch (fencing older instances, aborting their
        open transaction); the producer is then ready to begin one."""
        self.txn.init()
        self.producer_id = self.txn.producer_id

    def begin_transaction(self) -> None:
        self.txn.begin()

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        group_metadata: ConsumerGroupMetadata | str,
    ) -> None:
        """Commit a consumer's offsets in this transaction: applied to its group when the
        transaction commits, never before, and dropped if it aborts. group_metadata is the
        consumer's ``group_metadata()`` (or a group id, for offsets committed from outside the
        group). Raises CommitFailed when the consumer no longer owns a partition in its
        generation (KIP-447): the transaction must then abort."""
        self.txn.send_offsets(offsets, group_metadata)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit: returns once the transaction is readable. InvalidTxnState if a
        record of it failed (abort it instead)."""
        self.txn.require(TxnPhase.IN_TRANSACTION, "commit_transaction")
        self.flush(timeout)
        self.txn.commit()

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort: what was sent in the transaction is never read by read_committed consumers
        and its offsets never reach the group."""
        self.txn.check_abortable()
        self.flush(timeout)
        self.txn.abort()
        self.producer_id = self.txn.producer_id

    # ---- sending -------------------------------------------------------------------------

    def send(self, topic: str, *args: Any, **kwargs: Any) -> RecordFuture:
        if self.txn.phase is not TxnPhase.IN_TRANSACTION:
            self.txn.require(TxnPhase.IN_TRANSACTION, "send")
        return super().send(topic, *args, **kwargs)

    def send_table(self, topic: str, table: pa.Table, partition: int | None = None) -> BatchResult:
        self.txn.require(TxnPhase.IN_TRANSACTION, "send_table")
        try:
            return super().send_table(topic, table, partition)
        except ObjectLogError as e:
            self.txn.fail(e)
            raise

    def _commit(self, staged: StagedFlush) -> list[AppendOutcome]:
        return self.txn.commit_flush(staged, super()._commit)

    def _settle_delivery(self, delivery: Delivery) -> None:
        self.txn.delivery_failed(delivery.errors)
        super()._settle_delivery(delivery)
