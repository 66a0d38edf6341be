"""The transaction sweep through the compact function's entry point, on DynamoDB (moto): an
abandoned transaction is aborted and its partitions' last stable offset reaches the high
watermark, a leftover head entry is closed, the report and EMF metrics count both, and a sweep
with nothing to do costs the registry read plus one BatchGetItem per 100 ids."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

import pytest

from objectlog import ObjectLog
from objectlog.functions.compact import compact_handler
from objectlog.stores.dynamo_transactions import REGISTRY_KEY, DynamoTransactionStore, to_item
from objectlog.stores.metadata import kafka_producer
from objectlog.stores.transactions import Transaction, TxnState
from objectlog.telemetry import metrics
from tests.functional import test_compact_function as cf
from tests.functional import test_read_committed as rc

TOPIC = rc.TOPIC  # rc.write writes to its partition 0


@pytest.fixture
def connect_env(log_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """ObjectLog.connect() (what the function calls) reaches this test's bucket and table."""
    for name, value in log_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OBJECTLOG_PREFIX", raising=False)


def lso(log: ObjectLog, partition: int) -> tuple[int, int]:
    head = log.metadata.get_head(TOPIC, partition)
    assert head is not None
    return head.last_stable_offset, head.high_watermark


def test_a_run_aborts_an_abandoned_transaction_and_closes_a_leftover(
    log: ObjectLog, connect_env: None, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    log.create_topic(TOPIC, 2)
    coord = log.transactions
    rc.write(log, [b"before"])
    abandoned = coord.init_producer_id("abandoned", 300)
    coord.add_partitions("abandoned", abandoned.producer_id, 0, [(TOPIC, 0), (TOPIC, 1)])
    rc.write(log, [b"t-1", b"t-2"], kafka_producer(abandoned.producer_id))
    done = coord.init_producer_id("done", 60_000)
    coord.add_partitions("done", done.producer_id, 0, [(TOPIC, 0)])
    coord.end_txn("done", done.producer_id, 0, commit=True)
    log.metadata.open_transaction(  # its AddPartitionsToTxn head write, landing late
        TOPIC,
        1,
        topic_id=log.topic(TOPIC).topic_id,
        producer=kafka_producer(done.producer_id),
        epoch=0,
    )
    assert lso(log, 0) == (1, 4) and lso(log, 1) == (0, 0)
    metrics.clear_metrics()  # what earlier tests recorded while metrics were disabled
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    handler = compact_handler()
    time.sleep(0.35)  # past the abandoned transaction's deadline
    capsys.readouterr()

    summary = handler(cf.scheduled_event(), cf.context())

    assert summary["finished"] and summary["transactions"] == {
        "listed": 2,
        "aborted": 1,
        "completed": 0,
        "entries_closed": 1,
        "entries_adopted": 0,
        "failed": 0,
        "failures": [],
    }
    assert lso(log, 0) == (5, 5) and lso(log, 1) == (2, 2)  # one marker, two in partition 1
    assert rc.read(log, "read_committed") == [(0, b"before")]
    fenced = coord.describe("abandoned")
    assert (fenced.state, fenced.producer_epoch) == (TxnState.COMPLETE_ABORT, 1)
    assert coord.describe("done").producer_epoch == 0  # a leftover's abort fences nobody
    [doc] = [json.loads(x) for x in capsys.readouterr().out.splitlines() if '"_aws"' in x]
    assert doc["transactions_aborted"] == [1] and doc["txn_entries_closed"] == [1]
    assert doc["transactions_completed"] == [0] and doc["txn_sweep_failures"] == [0]
    handler.services.close()  # type: ignore[attr-defined]


def transaction_requests(log: ObjectLog) -> Counter[str]:
    """The DynamoDB requests on transaction items and the registry (pk txns, txn#<id>)."""
    sent: Counter[str] = Counter()

    def keys(params: dict[str, Any]) -> list[str]:
        if "RequestItems" in params:
            return [k["pk"]["S"] for t in params["RequestItems"].values() for k in t["Keys"]]
        key = params.get("Key") or params.get("Item") or {}
        return [key["pk"]["S"]] if "pk" in key else []

    def counted(params: dict[str, Any], model: Any, **_: Any) -> None:
        if any(pk == "txns" or pk.startswith("txn#") for pk in keys(params)):
            sent[model.name] += 1

    events = log.metadata.client.meta.events  # type: ignore[attr-defined]
    events.register("before-parameter-build.dynamodb", counted)
    return sent


def test_a_sweep_with_nothing_to_do_costs_the_registry_and_a_batch_per_100_ids(
    log: ObjectLog, connect_env: None
) -> None:
    log.create_topic(TOPIC, 2)
    store = log.items.transactions
    assert isinstance(store, DynamoTransactionStore)
    idle = [  # settled: nothing to do; written as put_new writes them, in batches (quicker)
        Transaction(f"idle-{i:03}", 1000 + i, 0, TxnState.COMPLETE_COMMIT, 60_000, version=1)
        for i in range(100)
    ]
    store.table.put({**REGISTRY_KEY, "names": {t.transactional_id for t in idle}})
    store.table.batch_write(puts=[to_item(t) for t in idle])
    live = log.transactions.init_producer_id("live", 60_000)  # a live entry: kept
    log.transactions.add_partitions("live", live.producer_id, 0, [(TOPIC, 0)])
    rc.write(log, [b"t-1"], kafka_producer(live.producer_id))
    counters: list[Counter[str]] = []

    def connect() -> ObjectLog:  # as the function's own, counting what it sends
        connected = ObjectLog.connect()
        counters.append(transaction_requests(connected))
        return connected

    handler = compact_handler(log_factory=connect)

    summary = handler(cf.scheduled_event(), cf.context())

    assert summary["transactions"]["listed"] == 101
    assert {k: v for k, v in summary["transactions"].items() if k != "listed"} == {
        "aborted": 0,
        "completed": 0,
        "entries_closed": 0,
        "entries_adopted": 0,
        "failed": 0,
        "failures": [],
    }
    [requests] = counters
    assert requests == Counter(GetItem=1, BatchGetItem=2)  # 101 ids: two batches
    assert lso(log, 0) == (0, 1)
    handler.services.close()  # type: ignore[attr-defined]
