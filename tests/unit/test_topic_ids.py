"""Kafka topic ids to names (kafka.topic_ids.TopicNames), behind Fetch v13+, Metadata by id and
DeleteTopics v6+: resolved ids cost no listing (before, every Fetch v13+ listed every topic);
an unknown id lists again at most once a second; a deleted topic's id, and the old id of a
topic created again, resolve to nothing; a topic deleted while the topics are listed is
skipped (it failed the whole Fetch: librdkafka's suite saw the connection closed)."""

from __future__ import annotations

import uuid

import pytest

from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.kafka.topic_ids import TopicNames, topic_uuid
from objectlog.stores.items import ItemStores
from objectlog.stores.objects import MemoryObjectStore


class CountingLog(ObjectLog):
    """The log, counting its listings; extra_names are listed but do not exist."""

    listings = 0
    extra_names: tuple[str, ...] = ()

    def list_topics(self) -> list[str]:
        self.listings += 1
        return super().list_topics() + list(self.extra_names)


@pytest.fixture
def log() -> CountingLog:
    return CountingLog(Config(), store=MemoryObjectStore(), items=ItemStores.memory())


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_resolved_id_lists_nothing_again(log: CountingLog) -> None:
    orders = topic_uuid(log.create_topic("orders").topic_id)
    names = TopicNames(log)
    assert names.resolve([orders]) == {orders: "orders"}
    for _ in range(100):  # a consumer's fetches
        assert names.resolve([orders]) == {orders: "orders"}
    assert log.listings == 1


def test_an_unknown_id_lists_again_at_most_once_a_second(log: CountingLog) -> None:
    clock = Clock()
    names = TopicNames(log, now=clock)
    unknown = uuid.uuid4()
    for _ in range(10):
        assert names.resolve([unknown]) == {}
    assert log.listings == 1
    created = topic_uuid(log.create_topic("late").topic_id)
    assert names.resolve([created]) == {}  # within the second: not listed again
    clock.now += 1.5
    assert names.resolve([created]) == {created: "late"}
    assert log.listings == 2


def test_deleted_and_recreated_topics_ids(log: CountingLog) -> None:
    clock = Clock()
    names = TopicNames(log, now=clock)
    old = topic_uuid(log.create_topic("events").topic_id)
    assert names.resolve([old]) == {old: "events"}
    log.delete_topic("events")
    assert names.resolve([old]) == {}
    new = topic_uuid(log.create_topic("events").topic_id)
    clock.now += 1.5
    assert names.resolve([old, new]) == {new: "events"}


def test_a_topic_deleted_while_listing_is_skipped(log: CountingLog) -> None:
    kept = topic_uuid(log.create_topic("kept").topic_id)
    log.extra_names = ("gone",)  # listed, but deleted before it is read
    assert TopicNames(log).resolve([kept, uuid.uuid4()]) == {kept: "kept"}
