"""The TransactionStore contract, held by the DynamoDB store (on the embedded endpoint) and the
in-memory one alike, down to the DynamoDB requests each call sends."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from objectlog.errors import TransactionTooLarge
from objectlog.stores.dynamo_transactions import DynamoTransactionStore, transaction_key
from objectlog.stores.groups import TopicPartition
from objectlog.stores.memory_transactions import MemoryTransactionStore
from objectlog.stores.transactions import (
    MAX_ITEM_BYTES,
    MAX_PARTITIONS,
    PendingOffset,
    Transaction,
    TransactionStore,
    TxnState,
    check_bounds,
    item_bytes,
)
from tests.aio_stores import OnLoop, dynamodb_items


@dataclass
class Subject:
    store: TransactionStore
    requests: Counter[str]  # the DynamoDB requests sent (or, in memory, that would be)
    remove: Callable[[str], None]  # what the table's TTL does to an expired item


@pytest.fixture(params=["memory", "dynamodb", "dynamodb-aio"])
def subject(request: pytest.FixtureRequest) -> Iterator[Subject]:
    if request.param == "memory":
        memory = MemoryTransactionStore()
        yield Subject(memory, memory.requests, memory.remove)
        return
    bridged, items = dynamodb_items(request, "txns")
    store = items.transactions
    assert isinstance(store, DynamoTransactionStore)
    sent: Counter[str] = Counter()
    store.table.client.meta.events.register(
        "before-call.dynamodb", lambda model, **_: sent.update((model.name,))
    )
    drop = lambda i: store.table.delete(transaction_key(i))  # noqa: E731
    if isinstance(bridged.transactions, OnLoop):
        drop = bridged.transactions.bridged(drop)
    yield Subject(bridged.transactions, sent, drop)  # type: ignore[arg-type]


def txn(transactional_id: str = "app-1", version: int = 1, **changes: object) -> Transaction:
    record = Transaction(
        transactional_id,
        producer_id=7,
        producer_epoch=3,
        state=TxnState.EMPTY,
        timeout_ms=60_000,
        updated_ms=1_000,
        version=version,
        expires_at_s=605_000,
        last_producer_id=7,
        last_producer_epoch=2,
    )
    return dataclasses.replace(record, **changes)


ONGOING = {
    "state": TxnState.ONGOING,
    "started_ms": 0,  # a falsy start is kept too
    "expires_at_s": None,
    "partitions": frozenset({TopicPartition("orders", 0), TopicPartition("a.b-c_d", 11)}),
    "groups": frozenset({"g1", "grüppe"}),
    "offsets": {
        "g1": {TopicPartition("in", 3): PendingOffset(42, 5, "m€ta")},
        "grüppe": {TopicPartition("in", 0): PendingOffset(0)},
    },
}


def test_an_item_is_written_once_and_read_back_whole(subject: Subject) -> None:
    store = subject.store
    assert store.get("app-1") is None
    ongoing = txn(**ONGOING)
    assert store.put_new(ongoing)
    assert not store.put_new(txn(producer_id=8))
    assert store.get("app-1") == ongoing
    assert ongoing.deadline_ms == 60_000


def test_an_empty_transaction_keeps_no_sets_and_no_start(subject: Subject) -> None:
    assert subject.store.put_new(txn("a/b c#d"))
    assert subject.store.get("a/b c#d") == txn("a/b c#d")


def test_a_replace_lands_only_on_the_version_it_read(subject: Subject) -> None:
    store = subject.store
    assert not store.replace(txn(version=2), 1)  # nothing to replace
    store.put_new(txn())
    assert store.replace(txn(version=2, **ONGOING), 1)
    assert not store.replace(txn(version=2, producer_epoch=9), 1)  # a writer that read v1 late
    assert not store.replace(txn(version=4), 3)
    assert store.get("app-1") == txn(version=2, **ONGOING)


def test_a_write_carries_the_version_after_its_condition(subject: Subject) -> None:
    with pytest.raises(ValueError):
        subject.store.put_new(txn(version=2))
    subject.store.put_new(txn())
    with pytest.raises(ValueError):
        subject.store.replace(txn(version=3), 1)


def test_the_listing_reads_the_registry_filters_and_forgets_removed_ids(subject: Subject) -> None:
    store = subject.store
    for name in ("c", "a", "b"):
        store.put_new(txn(name))
    store.replace(txn("b", version=2, **ONGOING), 1)
    assert [t.transactional_id for t in store.list()] == ["a", "b", "c"]
    assert [t.transactional_id for t in store.list(states={TxnState.ONGOING})] == ["b"]
    assert [t.transactional_id for t in store.list(limit=2)] == ["a", "b"]
    subject.remove("a")
    subject.requests.clear()
    assert [t.transactional_id for t in store.list()] == ["b", "c"]
    assert subject.requests == Counter(GetItem=2, BatchGetItem=1, UpdateItem=1)  # one prune
    subject.requests.clear()
    assert [t.transactional_id for t in store.list()] == ["b", "c"]
    assert subject.requests == Counter(GetItem=1, BatchGetItem=1)
    store.put_new(txn("a"))  # the id again, after its item expired
    assert [t.transactional_id for t in store.list()] == ["a", "b", "c"]


def test_each_call_sends_the_requests_the_protocol_states(subject: Subject) -> None:
    store, sent = subject.store, subject.requests
    sent.clear()
    store.get("app-1")
    assert sent == Counter(GetItem=1)
    sent.clear()
    store.put_new(txn())
    assert sent == Counter(UpdateItem=2, PutItem=1)  # the registry before and after
    sent.clear()
    store.put_new(txn())
    assert sent == Counter(UpdateItem=1, PutItem=1)
    sent.clear()
    store.replace(txn(version=2), 1)
    assert sent == Counter(PutItem=1)


def test_the_largest_transaction_the_bounds_allow_fits_in_an_item(subject: Subject) -> None:
    """MAX_PARTITIONS partitions of the longest topic names Kafka allows and pending offsets
    filling the rest up to MAX_ITEM_BYTES: DynamoDB (400 KB an item) takes it, and one byte
    more is refused before any write."""
    topic = "t" * 249
    partitions = frozenset(TopicPartition(topic, p) for p in range(MAX_PARTITIONS))
    base = txn(**{**ONGOING, "partitions": partitions, "offsets": {}})
    pending = {"g1": {TopicPartition(topic, 0): PendingOffset(1, 1, "")}}
    room = MAX_ITEM_BYTES - item_bytes(dataclasses.replace(base, offsets=pending))
    pending["g1"][TopicPartition(topic, 0)] = PendingOffset(1, 1, "x" * room)
    big = dataclasses.replace(base, offsets=pending)
    assert item_bytes(big) == MAX_ITEM_BYTES
    check_bounds(big)
    assert subject.store.put_new(big)
    assert subject.store.get("app-1") == big
    pending["g1"][TopicPartition(topic, 0)] = PendingOffset(1, 1, "x" * (room + 1))
    with pytest.raises(TransactionTooLarge):
        check_bounds(dataclasses.replace(base, offsets=pending))
