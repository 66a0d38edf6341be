"""The agent's transaction admin APIs (kafka/transactions_admin.py) on a log with no AWS
(memory stores, a manual clock): ListTransactions v0-1, DescribeTransactions v0 and
DescribeProducers v0, each answer encoded with kio at the version asked and decoded by a
second implementation (kafka-python's protocol classes), what a listing costs in DynamoDB
requests, and each refusal's code and log line."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import logging
from collections.abc import Collection, Mapping
from typing import Any

import pytest
from kafka.protocol.admin.transactions import (
    DescribeProducersResponse,
    DescribeTransactionsResponse,
    ListTransactionsResponse,
)
from kio.serial import entity_writer

from objectlog import ObjectLog
from objectlog.clock import ManualClock
from objectlog.config import Config
from objectlog.errors import StorageUnavailable
from objectlog.kafka.context import ApiContext, Broker
from objectlog.kafka.handlers import SUPPORTED
from objectlog.kafka.transactions_admin import TransactionsAdminApi, active_producers
from objectlog.kafka.wire import Request, build, request_schema, response_schema
from objectlog.stores.items import ItemStores
from objectlog.stores.memory_transactions import MemoryTransactionStore
from objectlog.stores.metadata import KafkaWindow, PartitionHead, ProducerState
from objectlog.stores.objects import MemoryObjectStore
from objectlog.stores.transactions import Transaction, TxnState

LIST, DESCRIBE, PRODUCERS = 66, 65, 61
DECODERS: dict[int, Any] = {
    LIST: ListTransactionsResponse,
    DESCRIBE: DescribeTransactionsResponse,
    PRODUCERS: DescribeProducersResponse,
}
TIMEOUT = 60_000


def memory_log(store: MemoryTransactionStore | None = None) -> ObjectLog:
    items = ItemStores.memory()
    if store is not None:
        items = dataclasses.replace(items, transactions=store)
    log = ObjectLog(Config(), store=MemoryObjectStore(), items=items, clock=ManualClock())
    log.create_topic("out", 2)
    log.create_topic("other", 1)
    return log


@pytest.fixture
def log() -> ObjectLog:
    return memory_log()


def ask(log: ObjectLog, api_key: int, version: int, values: Mapping[str, Any]) -> Any:
    """The API's answer, built and encoded with kio at this version, decoded by kafka-python."""
    api = TransactionsAdminApi(ApiContext(log, Broker("localhost", 9092)))
    handler = {
        LIST: api.list_transactions,
        DESCRIBE: api.describe_transactions,
        PRODUCERS: api.describe_producers,
    }[api_key]
    body = build(request_schema(api_key, version), values)
    answer = asyncio.run(handler(Request(api_key, version, 7, "test", body)))
    out = io.BytesIO()
    schema = response_schema(api_key, version)
    entity_writer(schema)(out, build(schema, answer))
    return DECODERS[api_key].decode(out.getvalue(), version=version)


def begin(log: ObjectLog, transactional_id: str, *partitions: tuple[str, int]) -> Transaction:
    """A producer of the id initialized and, with partitions, its transaction Ongoing."""
    coordinator = log.transactions
    txn = coordinator.init_producer_id(transactional_id, TIMEOUT)
    if partitions:
        txn = coordinator.add_partitions(
            transactional_id, txn.producer_id, txn.producer_epoch, partitions
        )
    return txn


def listed(answer: Any) -> list[tuple[str, int, str]]:
    return [
        (t.transactional_id, t.producer_id, t.transaction_state) for t in answer.transaction_states
    ]


def test_the_three_apis_are_offered_at_kafka_3_9s_versions() -> None:
    assert (SUPPORTED[61], SUPPORTED[65], SUPPORTED[66]) == ((0, 0), (0, 0), (0, 1))


@pytest.mark.parametrize("version", [0, 1])
def test_list_transactions_lists_every_id_with_its_state_filtered_by_state_and_producer(
    log: ObjectLog, version: int
) -> None:
    a = begin(log, "a", ("out", 0))
    b = begin(log, "b")
    assert listed(ask(log, LIST, version, {})) == [
        ("a", a.producer_id, "Ongoing"),
        ("b", b.producer_id, "Empty"),
    ]
    assert listed(ask(log, LIST, version, {"state_filters": ["Ongoing"]})) == [
        ("a", a.producer_id, "Ongoing")
    ]
    assert listed(ask(log, LIST, version, {"producer_id_filters": [b.producer_id]})) == [
        ("b", b.producer_id, "Empty")
    ]
    none = ask(log, LIST, version, {"state_filters": ["Empty"], "producer_id_filters": [-5]})
    assert (none.error_code, listed(none)) == (0, [])


def test_unknown_state_filters_are_answered_and_logged_and_kafkas_other_states_match_nothing(
    log: ObjectLog, caplog: pytest.LogCaptureFixture
) -> None:
    begin(log, "a", ("out", 0))
    requests = log.items.transactions.requests  # type: ignore[attr-defined]
    before = sum(requests.values())
    with caplog.at_level(logging.INFO, "objectlog.kafka.transactions_admin"):
        answer = ask(log, LIST, 1, {"state_filters": ["Running", "Dead"]})
    assert (answer.error_code, answer.unknown_state_filters, listed(answer)) == (0, ["Running"], [])
    assert sum(requests.values()) == before  # no state asked for exists: nothing read
    assert "state filters ['Running'] name no transaction state" in caplog.text
    mixed = ask(log, LIST, 1, {"state_filters": ["Ongoing", "Running"]})
    assert (mixed.unknown_state_filters, [t[0] for t in listed(mixed)]) == (["Running"], ["a"])


def test_the_duration_filter_lists_open_transactions_running_longer(log: ObjectLog) -> None:
    clock = log.clock
    assert isinstance(clock, ManualClock)
    begin(log, "old", ("out", 0))
    clock.advance(5_000)
    begin(log, "new", ("out", 1))
    begin(log, "idle")  # Empty: not running, whatever the filter
    clock.advance(1_000)
    ids = [t[0] for t in listed(ask(log, LIST, 1, {"duration_filter": 1_000}))]
    assert ids == ["old"]  # "new" has run exactly 1000 ms: not longer
    assert [t[0] for t in listed(ask(log, LIST, 1, {"duration_filter": 999}))] == ["new", "old"]
    assert len(listed(ask(log, LIST, 1, {"duration_filter": -1}))) == 3


def test_a_listing_reads_the_registry_and_one_batch_per_hundred_ids() -> None:
    store = MemoryTransactionStore()
    log = memory_log(store)
    for n in range(150):
        begin(log, f"id-{n:03}")
    store.requests.clear()
    assert len(listed(ask(log, LIST, 1, {}))) == 150
    assert +store.requests == {"GetItem": 1, "BatchGetItem": 2}


class UnavailableStore(MemoryTransactionStore):
    """The table refusing reads, as a throttled or unreachable DynamoDB does."""

    def get(self, transactional_id: str) -> Transaction | None:
        raise StorageUnavailable("DynamoDB is unavailable")

    def list(
        self, states: Collection[TxnState] | None = None, limit: int | None = None
    ) -> list[Transaction]:
        raise StorageUnavailable("DynamoDB is unavailable")


def test_an_unavailable_table_is_coordinator_not_available(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = memory_log(UnavailableStore())
    with caplog.at_level(logging.INFO):
        answer = ask(log, LIST, 0, {})
        described = ask(log, DESCRIBE, 0, {"transactional_ids": ["a"]})
    assert (answer.error_code, listed(answer)) == (15, [])  # COORDINATOR_NOT_AVAILABLE
    assert described.transaction_states[0].error_code == 15
    assert "ListTransactions refused with coordinator_not_available" in caplog.text
    assert "DescribeTransactions for transactional id 'a' refused" in caplog.text


def test_describe_transactions_answers_an_open_transactions_partitions_and_start(
    log: ObjectLog,
) -> None:
    started = log.clock.now_ms()
    txn = begin(log, "a", ("out", 1), ("other", 0), ("out", 0))
    (state,) = ask(log, DESCRIBE, 0, {"transactional_ids": ["a"]}).transaction_states
    assert (state.error_code, state.transactional_id, state.transaction_state) == (
        0,
        "a",
        "Ongoing",
    )
    assert (state.producer_id, state.producer_epoch) == (txn.producer_id, txn.producer_epoch)
    assert (state.transaction_timeout_ms, state.transaction_start_time_ms) == (TIMEOUT, started)
    assert [(t.topic, t.partitions) for t in state.topics] == [("other", [0]), ("out", [0, 1])]
    log.transactions.end_txn("a", txn.producer_id, txn.producer_epoch, True)
    (done,) = ask(log, DESCRIBE, 0, {"transactional_ids": ["a"]}).transaction_states
    assert (done.transaction_state, done.transaction_start_time_ms, done.topics) == (
        "CompleteCommit",
        -1,
        [],
    )


def test_describe_transactions_of_unknown_ids_is_transactional_id_not_found_logged(
    log: ObjectLog, caplog: pytest.LogCaptureFixture
) -> None:
    begin(log, "a")
    with caplog.at_level(logging.WARNING):
        answer = ask(log, DESCRIBE, 0, {"transactional_ids": ["nope", "a", ""]})
    codes = [(s.transactional_id, s.error_code) for s in answer.transaction_states]
    assert codes == [("nope", 105), ("a", 0), ("", 105)]  # TRANSACTIONAL_ID_NOT_FOUND
    assert "for transactional id 'nope' refused (TransactionalIdNotFound)" in caplog.text
    assert "for transactional id '' refused (InvalidRequest): the transactional id is empty" in (
        caplog.text
    )
    assert ask(log, DESCRIBE, 0, {"transactional_ids": []}).transaction_states == []


def test_describe_producers_shows_an_open_transactions_first_offset(log: ObjectLog) -> None:
    with log.producer() as producer:  # objectlog's own producer: not a Kafka one, left out
        for n in range(3):
            producer.send("out", b"v%d" % n, partition=0)
    txn = begin(log, "a", ("out", 0))
    answer = ask(log, PRODUCERS, 0, {"topics": [{"name": "out", "partition_indexes": [0, 1]}]})
    (topic,) = answer.topics
    zero, one = topic.partitions
    assert (zero.partition_index, zero.error_code, one.error_code) == (0, 0, 0)
    (row,) = zero.active_producers
    assert (row.producer_id, row.producer_epoch, row.current_txn_start_offset) == (
        txn.producer_id,
        txn.producer_epoch,
        3,
    )
    assert (row.last_sequence, row.last_timestamp, row.coordinator_epoch) == (-1, -1, -1)
    assert one.active_producers == []
    log.transactions.end_txn("a", txn.producer_id, txn.producer_epoch, False)
    after = ask(log, PRODUCERS, 0, {"topics": [{"name": "out", "partition_indexes": [0]}]})
    assert after.topics[0].partitions[0].active_producers == []


def test_describe_producers_of_unknown_topics_and_partitions_is_refused_with_reason(
    log: ObjectLog, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "objectlog.kafka.transactions_admin"):
        answer = ask(
            log,
            PRODUCERS,
            0,
            {
                "topics": [
                    {"name": "out", "partition_indexes": [2, 0, -1]},
                    {"name": "missing", "partition_indexes": [0]},
                ]
            },
        )
    out, missing = answer.topics
    assert [(p.partition_index, p.error_code) for p in out.partitions] == [(2, 3), (0, 0), (-1, 3)]
    assert out.partitions[0].error_message == "topic 'out' has 2 partitions, none numbered 2"
    assert (missing.partitions[0].error_code, missing.partitions[0].error_message) == (
        3,
        "topic 'missing' does not exist",
    )
    assert "DescribeProducers of out/2 refused: topic 'out' has 2 partitions" in caplog.text
    assert "DescribeProducers of missing/0 refused" in caplog.text


def test_a_heads_rows_are_its_kafka_producers_windows_and_open_transactions() -> None:
    head = PartitionHead(
        "out",
        0,
        "tid",
        next_offset=40,
        log_start_offset=0,
        tail_base=0,
        tail=(),
        manifest_list=None,
        index_epoch=0,
        gc_horizon=0,
        producers={
            "k7": ProducerState(9, 30, 1_700_000_123, KafkaWindow(2, 3, ((0, 10), (5, 30)))),
            "k8": ProducerState(4, 20, 1_700_000_100, KafkaWindow(0, 1, ((0, 20),))),
            "a1b2c3d4e5": ProducerState(12, 35, 1_700_000_120),  # objectlog's own producer
        },
        open_txns={"k7": (2, 30), "k9": (1, 38)},  # k9: added, nothing written yet
    )
    assert active_producers(head) == [
        {
            "producer_id": 7,
            "producer_epoch": 2,
            "last_sequence": 9,
            "last_timestamp": 1_700_000_123_000,
            "coordinator_epoch": -1,
            "current_txn_start_offset": 30,
        },
        {
            "producer_id": 8,
            "producer_epoch": 0,
            "last_sequence": 4,
            "last_timestamp": 1_700_000_100_000,
            "coordinator_epoch": -1,
            "current_txn_start_offset": -1,
        },
        {
            "producer_id": 9,
            "producer_epoch": 1,
            "last_sequence": -1,
            "last_timestamp": -1,
            "coordinator_epoch": -1,
            "current_txn_start_offset": 38,
        },
    ]
