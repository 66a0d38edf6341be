"""The ActivityStore contract, held by the DynamoDB store (on the embedded endpoint) and the
in-memory one alike: a touch adds one to its topic's counter and to no other, a read (which
may lag on DynamoDB: eventually consistent) comes to show every touch."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from objectlog.stores.activity import ActivityStore, MemoryActivityStore
from objectlog.stores.items import ItemStores
from tests.aio_stores import dynamodb_items

pytestmark = pytest.mark.emulators


@pytest.fixture(params=["memory", "dynamodb", "dynamodb-aio"])
def store(request: pytest.FixtureRequest) -> Iterator[ActivityStore]:
    if request.param == "memory":
        yield MemoryActivityStore()
        return
    yield dynamodb_items(request, "contract")[0].activity


def settled(store: ActivityStore, topic: str, expected: int, within_s: float = 5.0) -> int:
    """The counter once it shows ``expected`` (eventually consistent reads may lag)."""
    deadline = time.monotonic() + within_s
    while (value := store.read(topic)) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


def test_an_untouched_topic_reads_zero(store: ActivityStore) -> None:
    assert store.read("never") == 0


def test_each_touch_adds_one_to_its_own_topic(store: ActivityStore) -> None:
    for _ in range(3):
        store.touch("a")
    store.touch("b")
    assert settled(store, "a", 3) == 3
    assert settled(store, "b", 1) == 1


def test_concurrent_touches_all_count(store: ActivityStore) -> None:
    def touch() -> None:
        for _ in range(5):
            store.touch("busy")

    threads = [threading.Thread(target=touch) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert settled(store, "busy", 20) == 20


def test_items_registers_the_store() -> None:
    assert isinstance(ItemStores.memory().activity, MemoryActivityStore)
