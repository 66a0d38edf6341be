"""AIOTransactionalProducer: Kafka's transactions for asyncio programs (docs/transactions.md),
the threaded TransactionalProducer's session (clients/transaction_session.py) run on the loop.

    producer = log.producer(transactional_id="orders-enricher")
    await producer.start()
    await producer.init_transactions()
    async with producer.transaction():          # commits, or aborts on an exception
        await producer.send("enriched", b"...")
        await producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

from objectlog.aio.producer import AIOProducer, AIOProducerHost
from objectlog.clients.direct import ObjectLog
from objectlog.clients.transaction_session import (
    TransactionSession,
    TxnPhase,
    check_transactional_options,
)
from objectlog.clients.values import ConsumerGroupMetadata
from objectlog.concurrency import bridge
from objectlog.errors import ObjectLogError
from objectlog.groups import OffsetAndMetadata, TopicPartition
from objectlog.services.append import AppendOutcome, StagedFlush


class AIOTransactionalHost(AIOProducerHost, Protocol):
    def direct(self) -> ObjectLog: ...


class AIOTransactionalProducer(AIOProducer):
    def __init__(
        self,
        log: AIOTransactionalHost,
        *,
        transactional_id: str,
        transaction_timeout_ms: int = 60_000,
        **options: Any,
    ) -> None:
        """An AIOProducer with Kafka's transaction calls (TransactionalProducer's options)."""
        check_transactional_options(transactional_id, options)
        direct = log.direct()  # the coordinator's state is in the table
        super().__init__(log, **options)
        self.transactional_id = transactional_id
        self.txn = TransactionSession(
            direct.transactions, direct.groups, transactional_id, transaction_timeout_ms
        )
        self.producer_id = None  # no writes before init_transactions

    # ---- Kafka's transaction calls -------------------------------------------------------

    async def init_transactions(self) -> None:
        """Take the transactional id's next epoch (fencing older instances, aborting their
        open transaction)."""
        await bridge(self.txn.init)
        self.producer_id = self.txn.producer_id

    async def begin_transaction(self) -> None:
        await bridge(self.txn.begin)

    async def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        group_metadata: ConsumerGroupMetadata | str,
    ) -> None:
        """A consumer's offsets, committed with the transaction (CommitFailed: abort)."""
        await bridge(self.txn.send_offsets, offsets, group_metadata)

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit: returns once read_committed consumers can read it."""
        self.txn.require(TxnPhase.IN_TRANSACTION, "commit_transaction")
        await self.flush(timeout)
        await bridge(self.txn.commit)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        self.txn.check_abortable()
        await self.flush(timeout)
        await bridge(self.txn.abort)
        self.producer_id = self.txn.producer_id

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """aiokafka's ``async with producer.transaction()``: begin; commit at the end, or
        abort if the block raised (the exception goes on)."""
        await self.begin_transaction()
        try:
            yield
        except BaseException:
            await self.abort_transaction()
            raise
        await self.commit_transaction()

    # ---- the producer's hooks ------------------------------------------------------------

    def _may_send(self, call: str) -> None:
        if self.txn.phase is not TxnPhase.IN_TRANSACTION:
            self.txn.require(TxnPhase.IN_TRANSACTION, call)

    def _commit(self, staged: StagedFlush) -> list[AppendOutcome]:
        return self.txn.commit_flush(staged, super()._commit)

    def _settled(self, errors: Mapping[int, ObjectLogError]) -> None:
        self.txn.delivery_failed(errors)
