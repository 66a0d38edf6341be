"""`objectlog transactions list|describe|abort` on the table (issue 36)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from objectlog import ObjectLog
from objectlog.tools.cli import main


def test_list_describe_and_abort_a_hanging_transaction(
    log: ObjectLog, log_env: dict[str, str]
) -> None:
    log.create_topic("orders", 2)
    coordinator = log.transactions
    txn = coordinator.init_producer_id("etl", 60_000)
    coordinator.add_partitions("etl", txn.producer_id, txn.producer_epoch, [("orders", 1)])
    head = log.metadata.get_head("orders", 1)
    assert head is not None and head.open_txns  # the transaction holds partition 1's LSO

    def run(*args: str) -> str:
        result = CliRunner().invoke(main, ["transactions", *args], env=log_env)
        assert result.exit_code == 0, result.output
        return result.output

    assert "etl  producer" in run("list") and "Ongoing" in run("list", "--state", "Ongoing")
    assert run("list", "--state", "Empty").strip() == ""
    described = json.loads(run("describe", "etl"))
    assert described["state"] == "Ongoing" and described["partitions"] == ["orders/1"]
    assert "now Empty at epoch 2" in run("abort", "etl")  # aborted at 1, then bumped
    head = log.metadata.get_head("orders", 1)
    assert head is not None and not head.open_txns and head.next_offset == 1  # its marker
    missing = CliRunner().invoke(main, ["transactions", "describe", "nope"], env=log_env)
    assert missing.exit_code != 0 and "nope" in missing.output


def test_groups_describe_names_a_transaction_holding_an_offset(
    log: ObjectLog, log_env: dict[str, str]
) -> None:
    log.create_topic("orders", 1)
    producer = log.producer(transactional_id="etl", linger_ms=0)
    producer.init_transactions()  # type: ignore[attr-defined]
    producer.begin_transaction()  # type: ignore[attr-defined]
    producer.send("orders", b"x", partition=0)
    producer.send_offsets_to_transaction({("orders", 0): 0}, "g")  # type: ignore[attr-defined]

    def describe(*args: str) -> str:
        result = CliRunner().invoke(main, ["groups", "describe", "g", *args], env=log_env)
        assert result.exit_code == 0, result.output
        return result.output

    assert "PENDING-TRANSACTION" in describe() and "etl" in describe()
    rows = json.loads(describe("--json"))["partitions"]
    assert [row["pending_transaction"] for row in rows] == ["etl"]
    producer.commit_transaction()  # type: ignore[attr-defined]
    assert "PENDING-TRANSACTION" not in describe()
    producer.close()
