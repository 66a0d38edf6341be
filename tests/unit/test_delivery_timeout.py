"""Producer delivery_timeout_ms (Kafka's delivery.timeout.ms): flushes that wait past it behind
a slow store fail unwritten; the flushes already being written finish."""

from __future__ import annotations

import threading
import time

import pytest

from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.errors import InvalidRequest, StorageUnavailable
from objectlog.stores.items import ItemStores
from objectlog.stores.objects import MemoryObjectStore

PUT_S = 0.4  # each object PUT takes this long


class SlowStore(MemoryObjectStore):
    def __init__(self) -> None:
        super().__init__()
        self.puts = 0
        self._count = threading.Lock()

    def _create(self, key: str, body: bytes) -> None:
        time.sleep(PUT_S)
        with self._count:
            self.puts += 1
        super()._create(key, body)


def test_flushes_waiting_past_delivery_timeout_fail_unwritten() -> None:
    store = SlowStore()
    log = ObjectLog(Config(bucket="b", table="t"), store=store, items=ItemStores.memory())
    log.create_topic("slow", partitions=1)
    # A batch holds one record: each send is a flush of its own.
    with log.producer(batch_bytes=1, linger_ms=0, delivery_timeout_ms=300) as producer:
        futures = [producer.send("slow", b"v%d" % i) for i in range(8)]
        producer.flush()
    errors = [f.exception() for f in futures]
    landed = [i for i, e in enumerate(errors) if e is None]
    expired = [i for i, e in enumerate(errors) if e is not None]
    assert landed[0] == 0 and expired, errors  # the first was written at once
    assert landed == list(range(len(landed)))  # in order: those taken before the others expired
    assert all(isinstance(errors[i], StorageUnavailable) for i in expired)
    assert "delivery_timeout_ms (300)" in str(errors[expired[0]])
    assert store.puts == len(landed)  # nothing written for an expired flush
    records = log.fetch("slow", 0, 0).records
    assert [r.value for r in records] == [b"v%d" % i for i in landed]
    assert [futures[i].result().offset for i in landed] == list(range(len(landed)))


def test_delivery_timeout_must_cover_linger() -> None:
    log = ObjectLog(
        Config(bucket="b", table="t"), store=MemoryObjectStore(), items=ItemStores.memory()
    )
    with pytest.raises(InvalidRequest, match="delivery_timeout_ms"):
        log.producer(linger_ms=500, delivery_timeout_ms=100)
