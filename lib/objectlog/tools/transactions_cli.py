"""``objectlog transactions``: the Kafka transaction coordinator's state from the command line,
on the table directly (ObjectLog.transactions; AWS credentials as for ``objectlog users``)."""

from __future__ import annotations

import json
from typing import Any

import click

from objectlog.clients.direct import ObjectLog
from objectlog.services.transaction_admin import abort
from objectlog.services.transactions import TransactionCoordinator
from objectlog.stores.transactions import Transaction, TxnState
from objectlog.tools.cli_errors import clear_errors

STATES = [state.value for state in TxnState]


@click.group()
def transactions() -> None:
    """Kafka transactions: list, describe, abort (docs/transactions.md)."""


def _coordinator(ctx: click.Context) -> TransactionCoordinator:
    log = ObjectLog(ctx.find_root().meta["direct_config"]())
    ctx.call_on_close(log.close)
    return log.transactions


def _row(txn: Transaction) -> dict[str, Any]:
    return {
        "transactional_id": txn.transactional_id,
        "producer_id": txn.producer_id,
        "producer_epoch": txn.producer_epoch,
        "state": txn.state.value,
        "timeout_ms": txn.timeout_ms,
        "started_ms": txn.started_ms,
        "deadline_ms": txn.deadline_ms,
        "partitions": sorted(f"{tp.topic}/{tp.partition}" for tp in txn.partitions),
        "groups": sorted(txn.groups),
    }


@transactions.command("list")
@click.option("--state", "states", multiple=True, type=click.Choice(STATES), help="repeatable")
@click.option("--json", "as_json", is_flag=True, help="one JSON document")
@click.pass_context
@clear_errors
def transactions_list(ctx: click.Context, states: tuple[str, ...], as_json: bool) -> None:
    """The live transactional ids (ListTransactions), by id."""
    found = _coordinator(ctx).list([TxnState(s) for s in states] or None)
    rows = [_row(txn) for txn in found]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        click.echo(
            f"{row['transactional_id']}  producer {row['producer_id']} epoch "
            f"{row['producer_epoch']}  {row['state']}  {len(row['partitions'])} partition(s)"
        )


@transactions.command("describe")
@click.argument("transactional_id")
@click.pass_context
@clear_errors
def transactions_describe(ctx: click.Context, transactional_id: str) -> None:
    """One transactional id's state (DescribeTransactions), as JSON."""
    click.echo(json.dumps(_row(_coordinator(ctx).describe(transactional_id)), indent=2))


@transactions.command("abort")
@click.argument("transactional_id")
@click.pass_context
@clear_errors
def transactions_abort(ctx: click.Context, transactional_id: str) -> None:
    """Abort the id's open transaction and fence its producer (a new epoch, as a new instance
    of the producer would); its records are never read committed."""
    before, after = abort(_coordinator(ctx), transactional_id)
    click.echo(
        f"{transactional_id}: was {before.state.value} at epoch {before.producer_epoch}; "
        f"now {after.state.value} at epoch {after.producer_epoch}"
    )
