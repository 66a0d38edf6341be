"""ObjectLog.topic_or_create, the one rule behind auto-created topics on every door: created
with num_partitions and the default configs where auto_create_topics is on, refused where it
is off; a creation another process is finishing answers that process's topic."""

from __future__ import annotations

import threading

import pytest

from objectlog import ObjectLog
from objectlog.clients import direct
from objectlog.clock import SystemClock, new_ulid
from objectlog.config import Config
from objectlog.errors import InvalidTopicName, TopicNotFound
from objectlog.format.topics import Topic, TopicConfig
from objectlog.stores.items import ItemStores
from objectlog.stores.metadata import ACTIVE
from objectlog.stores.objects import MemoryObjectStore


def memory_log(**settings: object) -> ObjectLog:
    config = Config(**settings)  # type: ignore[arg-type]
    return ObjectLog(config, store=MemoryObjectStore(), items=ItemStores.memory())


def test_off_it_refuses_and_creates_nothing() -> None:
    log = memory_log()
    with pytest.raises(TopicNotFound):
        log.topic_or_create("events")
    assert log.list_topics() == []


def test_on_it_creates_with_num_partitions_and_default_configs() -> None:
    log = memory_log(auto_create_topics=True, num_partitions=4)
    topic = log.topic_or_create("events")
    assert (topic.partitions, dict(topic.config.overrides)) == (4, {})
    assert log.list_topics() == ["events"]
    assert log.topic_or_create("events").topic_id == topic.topic_id  # found, not made again


def test_an_invalid_name_is_refused() -> None:
    log = memory_log(auto_create_topics=True)
    with pytest.raises(InvalidTopicName):
        log.topic_or_create("no spaces")
    assert log.list_topics() == []


def begin_creating(log: ObjectLog, name: str) -> Topic:
    """What another process's create_topic has done when it has only put the topic item."""
    topic = Topic(name, new_ulid(SystemClock()), 2, TopicConfig(), 0)
    log.metadata.put_new_topic(topic)
    return topic


def finish_creating(log: ObjectLog, topic: Topic) -> None:
    log.metadata.put_heads(topic, range(topic.partitions))
    log.metadata.set_topic_state(topic.name, ACTIVE)
    log.metadata.register(topic.name)


def test_a_creation_raced_by_another_process_answers_its_topic() -> None:
    log = memory_log(auto_create_topics=True, num_partitions=5)
    theirs = begin_creating(log, "events")
    later = threading.Timer(0.1, finish_creating, (log, theirs))
    later.start()
    found = log.topic_or_create("events")
    later.join()
    assert (found.topic_id, found.partitions) == (theirs.topic_id, 2)


def test_a_creation_never_finished_elsewhere_is_not_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(direct, "AUTO_CREATE_WAITS_S", (0.01, 0.01))
    log = memory_log(auto_create_topics=True)
    begin_creating(log, "events")
    with pytest.raises(TopicNotFound):
        log.topic_or_create("events")
