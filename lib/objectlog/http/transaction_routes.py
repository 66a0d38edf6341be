"""Kafka transactions over the HTTP API (issue 39's transactions page): the live transactional
ids, and aborting one by hand, as ``objectlog transactions`` does (services.transaction_admin)
on the transaction coordinator. Listing shows only the ids the caller may DESCRIBE (Kafka's
ListTransactions); aborting needs WRITE on the id (what its producer needs to end it).
Listing reads the transactional id registry (stores.transactions: no scan)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from objectlog.errors import InvalidRequest
from objectlog.format.acls import Operation, ResourceType
from objectlog.http.console_models import AbortOut, TransactionList, TransactionOut
from objectlog.http.routes import Services, route_guard
from objectlog.services.transaction_admin import abort, is_stuck
from objectlog.stores.transactions import Transaction, TxnState

TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID
STATES = [state.value for state in TxnState]
TransactionalId = Annotated[str, Path(min_length=1, max_length=1024)]
States = Annotated[
    str | None,
    Query(
        max_length=200,
        description=f"comma-separated states, any of {', '.join(STATES)}; none: every state",
    ),
]


def transactions_read_router(services: Services) -> Router:
    """GET /transactions: the fetch function serves it."""
    router = Router()
    guard = route_guard(services, router)

    @router.get(
        "/transactions",
        summary="List the live transactional ids (Kafka's ListTransactions), stuck ones marked",
    )
    def list_transactions(state: States = None) -> TransactionList:
        wanted = states_named(state)
        log = services.log
        found = log.transactions.list(wanted or None)
        shown = set(
            guard.visible(Operation.DESCRIBE, TRANSACTIONAL_ID, [t.transactional_id for t in found])
        )
        now = log.clock.now_ms()
        return TransactionList(
            transactions=[transaction_out(t, now) for t in found if t.transactional_id in shown]
        )

    return router


def transactions_write_router(services: Services) -> Router:
    """POST /transactions/{id}/abort: the produce function serves it."""
    router = Router()
    guard = route_guard(services, router)

    @router.post(
        "/transactions/<transactional_id>/abort",
        summary="Abort the id's open transaction and fence its producer (a new epoch)",
    )
    def abort_transaction(transactional_id: TransactionalId) -> AbortOut:
        guard.require(Operation.WRITE, TRANSACTIONAL_ID, transactional_id)
        log = services.log
        before, after = abort(log.transactions, transactional_id)
        now = log.clock.now_ms()
        return AbortOut(
            transactional_id=transactional_id,
            before=transaction_out(before, now),
            after=transaction_out(after, now),
        )

    return router


def states_named(text: str | None) -> list[TxnState]:
    """The states of a comma-separated list (InvalidRequest naming ``state`` for another)."""
    states = []
    for name in (part.strip() for part in (text or "").split(",")):
        if not name:
            continue
        if name not in STATES:
            raise InvalidRequest(f"state {name!r} is not one of {', '.join(STATES)}", field="state")
        states.append(TxnState(name))
    return states


def transaction_out(txn: Transaction, now_ms: int) -> TransactionOut:
    return TransactionOut(
        transactional_id=txn.transactional_id,
        state=txn.state.value,
        producer_id=txn.producer_id,
        producer_epoch=txn.producer_epoch,
        timeout_ms=txn.timeout_ms,
        started_ms=txn.started_ms,
        updated_ms=txn.updated_ms,
        deadline_ms=txn.deadline_ms,
        partitions=sorted(f"{tp.topic}/{tp.partition}" for tp in txn.partitions),
        groups=sorted(txn.groups),
        stuck=is_stuck(txn, now_ms),
    )
