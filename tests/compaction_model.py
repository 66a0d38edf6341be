"""Model-based test of Kafka's compaction guarantees (hypothesis stateful).

Rules produce keyed records and tombstones, move the clock, and compact (merge, key
compaction, GC); an in-memory model keeps every record ever acknowledged. After every step a
reader from the log start must see: every record at the offset it was given, unchanged, in
order; the latest value of every key; every record newer than the last compaction; every
tombstone younger than delete.retention.ms. Objects live in the in-memory store behind the
same ObjectStore interface; partition heads in DynamoDB on the moto server (the moto
profile, tests/functional/test_compaction_model.py) or in the in-memory item stores (the memory
profile, tests/unit/test_compaction_model.py, no server at all).
"""

from __future__ import annotations

import uuid
from dataclasses import replace

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from objectlog import ObjectLog
from objectlog.clock import ManualClock
from objectlog.compaction.compactor import CompactionSettings
from objectlog.compaction.maintenance import run_maintenance
from objectlog.config import Config
from objectlog.stores.items import ItemStores
from objectlog.stores.objects import MemoryObjectStore

DELETE_RETENTION_MS = 5_000
KEYS = [b"a", b"b", b"c", b"d", b"e"]
SETTINGS = CompactionSettings(target_file_bytes=2 << 10, row_group_bytes=512)


class CompactedTopic(RuleBasedStateMachine):
    config: Config  # set by the test before the machine runs
    in_memory = False  # True: ItemStores.memory() instead of DynamoDB

    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock()
        suffix = uuid.uuid4().hex[:12]
        config = replace(self.config, table=f"model-{suffix}", delete_grace_ms=1_000)
        items = ItemStores.memory() if self.in_memory else None
        store = MemoryObjectStore(self.clock.now_ms)
        self.log = ObjectLog(config, store=store, items=items, clock=self.clock)
        self.log.metadata.ensure_table()
        self.log.create_topic(
            "m",
            config={
                "cleanup.policy": "compact",
                "delete.retention.ms": str(DELETE_RETENTION_MS),
            },
        )
        self.model: dict[int, tuple[bytes, bytes | None, int]] = {}
        self.compacted_below = 0  # offsets below this may have been compacted

    def teardown(self) -> None:
        self.log.close()

    @rule(
        batch=st.lists(
            st.tuples(st.sampled_from(KEYS), st.one_of(st.none(), st.binary(max_size=8))),
            min_size=1,
            max_size=6,
        )
    )
    def produce(self, batch: list[tuple[bytes, bytes | None]]) -> None:
        now = self.clock.now_ms()
        with self.log.producer(linger_ms=0) as producer:
            futures = [
                producer.send("m", value, key=key, partition=0, timestamp_ms=now)
                for key, value in batch
            ]
        for (key, value), future in zip(batch, futures, strict=True):
            self.model[future.result().offset] = (key, value, now)

    @rule(ms=st.integers(min_value=1, max_value=4_000))
    def advance_clock(self, ms: int) -> None:
        self.clock.advance(ms)

    @rule()
    def compact(self) -> None:
        head = self.log.metadata.get_head("m", 0)
        assert head is not None
        run_maintenance(self.log, ["m"], settings=SETTINGS, gc_min_age_ms=1)
        self.compacted_below = max(self.compacted_below, head.next_offset)

    @invariant()
    def a_reader_from_the_start_sees_what_kafka_promises(self) -> None:
        rows = self._read()
        offsets = [offset for offset, _, _ in rows]
        assert offsets == sorted(set(offsets))  # in order, no duplicates
        for offset, key, value in rows:  # never changed, never moved
            assert self.model[offset][:2] == (key, value)
        seen = {offset for offset, _, _ in rows}
        latest: dict[bytes, int] = {}
        for offset, (key, _, _) in sorted(self.model.items()):
            latest[key] = offset
        now = self.clock.now_ms()
        for key, offset in latest.items():
            value, stamp = self.model[offset][1], self.model[offset][2]
            young_tombstone = stamp >= now - DELETE_RETENTION_MS
            if value is not None or young_tombstone:
                assert offset in seen, f"the latest record of {key!r} (offset {offset}) is gone"
        for offset in self.model:
            if offset >= self.compacted_below:
                assert offset in seen, f"offset {offset}, newer than any compaction, is gone"

    def _read(self) -> list[tuple[int, bytes | None, bytes | None]]:
        rows = []
        offset = self.log.offsets("m", 0).earliest
        while True:
            result = self.log.fetch("m", 0, offset)
            rows += [(r.offset, r.key, r.value) for r in result.records]
            if result.next_offset >= result.high_watermark:
                return rows
            offset = result.next_offset


def run_machine(
    config: Config, *, in_memory: bool, examples: int, steps: int, derandomize: bool = True
) -> None:
    """Run the machine; derandomized (the same cases every run) unless told otherwise."""
    CompactedTopic.config = config
    CompactedTopic.in_memory = in_memory
    machine = CompactedTopic.TestCase
    machine.settings = settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=derandomize,
    )
    machine().runTest()
