"""Operating the transaction coordinator by hand, shared by ``objectlog transactions``
(tools.transactions_cli) and the HTTP API's /transactions routes (http.transaction_routes)."""

from __future__ import annotations

from objectlog.services.transactions import TransactionCoordinator
from objectlog.stores.transactions import Transaction


def abort(
    coordinator: TransactionCoordinator, transactional_id: str
) -> tuple[Transaction, Transaction]:
    """Abort the id's open transaction and fence its producer: a new epoch, as a new instance
    of the producer would get (InitProducerId), so its records are never read committed and
    the old instance's next request is fenced. The state before and after;
    TransactionalIdNotFound for an id the coordinator does not hold."""
    before = coordinator.describe(transactional_id)
    after = coordinator.init_producer_id(transactional_id, before.timeout_ms)
    return before, after


def is_stuck(txn: Transaction, now_ms: int) -> bool:
    """Open longer than its timeout: the sweep (services.transaction_sweep) should have
    aborted it; a console shows it for a person to abort."""
    deadline = txn.deadline_ms
    return txn.state.open and deadline is not None and now_ms > deadline
