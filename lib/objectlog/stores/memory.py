"""In-memory item stores for unit tests: the same Protocols and the same conditional-write
semantics as the DynamoDB stores (tests/contract runs one suite on both). One lock per store
makes every method atomic, as one DynamoDB single-item call is."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from objectlog.errors import ConcurrentModification, InvalidRequest, TopicExists, TopicNotFound
from objectlog.format.topics import Topic, TopicConfig
from objectlog.stores.head_rules import (
    apply_commit,
    commit_applies,
    explain_failed_commit,
    kafka_commit,
)
from objectlog.stores.idempotency import Claim, IdempotencyRecord, holds_key, landed_for
from objectlog.stores.leases import Lease
from objectlog.stores.log_start import raised_log_start
from objectlog.stores.metadata import (
    ACTIVE,
    CREATING,
    DELETING,
    Commit,
    CommitResult,
    PartitionHead,
)
from objectlog.stores.txn_marks import marked, opened


class MemoryMetadata:
    """Topics, heads and producer state in dicts (stores.metadata.MetadataStore)."""

    def __init__(self) -> None:
        self._topics: dict[str, Topic] = {}
        self._registry: set[str] = set()
        self._heads: dict[tuple[str, int], PartitionHead] = {}
        self._producer_ids = 0
        self._lock = threading.Lock()

    def ensure_table(self) -> None:
        pass

    # ---- topics ------------------------------------------------------------------------

    def put_new_topic(self, topic: Topic) -> None:
        with self._lock:
            held = self._topics.get(topic.name)
            if held is not None and held.topic_id == topic.topic_id:
                return  # a repeat of this put (stores.metadata.TopicStore)
            if held is not None:
                raise TopicExists(f"topic {topic.name!r} already exists", field="topic")
            self._topics[topic.name] = replace(topic, state=CREATING)

    def set_topic_state(self, name: str, state: str, *, expected: str | None = None) -> None:
        with self._lock:
            topic = self._topic_for_update(name, lambda t: expected is None or t.state == expected)
            self._topics[name] = replace(topic, state=state)

    def get_topic(self, name: str) -> Topic | None:
        with self._lock:
            return self._topics.get(name)

    def get_topics(self, names: Sequence[str]) -> dict[str, Topic]:
        with self._lock:
            return {name: self._topics[name] for name in names if name in self._topics}

    def update_topic_config(
        self, name: str, set_: Mapping[str, str], delete: Iterable[str]
    ) -> None:
        deleted = list(delete)
        if not set_ and not deleted:
            return
        with self._lock:
            topic = self._topic_for_update(name, lambda t: t.state == ACTIVE)
            overrides = {k: v for k, v in topic.config.overrides.items() if k not in deleted}
            overrides.update(set_)
            self._topics[name] = replace(topic, config=TopicConfig(overrides))

    def set_partition_count(self, name: str, old: int, new: int) -> None:
        with self._lock:
            topic = self._topic_for_update(
                name, lambda t: t.partitions == old and t.state == ACTIVE
            )
            self._topics[name] = replace(topic, partitions=new)

    def delete_topic_item(self, name: str) -> None:
        with self._lock:
            self._topics.pop(name, None)

    def _topic_for_update(self, name: str, holds: Callable[[Topic], bool]) -> Topic:
        topic = self._topics.get(name)
        if topic is None or not holds(topic):
            if topic is None or topic.state == DELETING:
                raise TopicNotFound(f"topic {name!r} does not exist", field="topic")
            raise ConcurrentModification(f"topic {name!r} changed concurrently; retry")
        return topic

    def register(self, name: str) -> None:
        with self._lock:
            self._registry.add(name)

    def unregister(self, name: str) -> None:
        with self._lock:
            self._registry.discard(name)

    def registered_names(self) -> list[str]:
        with self._lock:
            return sorted(self._registry)

    # ---- heads -------------------------------------------------------------------------

    def put_heads(self, topic: Topic, partitions: Iterable[int]) -> None:
        with self._lock:
            for p in partitions:
                self._heads[(topic.name, p)] = PartitionHead(
                    topic.name, p, topic.topic_id, 0, 0, 0, (), None, 0, 0, {}
                )

    def delete_heads(self, topic: str, partitions: Iterable[int]) -> None:
        with self._lock:
            for p in partitions:
                self._heads.pop((topic, p), None)

    def get_head(self, topic: str, partition: int) -> PartitionHead | None:
        with self._lock:
            return self._heads.get((topic, partition))

    def get_heads(self, topic: str, partitions: Iterable[int]) -> dict[int, PartitionHead]:
        with self._lock:
            return {p: h for p in partitions if (h := self._heads.get((topic, p))) is not None}

    def commit(self, commit: Commit) -> CommitResult:
        key = (commit.topic, commit.partition)
        if commit.kafka is not None:
            return self._kafka_commit(commit)
        with self._lock:
            head = self._heads.get(key)
            if head is None or not commit_applies(commit, head):
                return explain_failed_commit(commit, head)
            new = apply_commit(commit, head)
            self._heads[key] = new
            return CommitResult(head.next_offset, new)

    def next_producer_id(self) -> int:
        with self._lock:
            self._producer_ids += 1
            return self._producer_ids - 1

    def _kafka_commit(self, commit: Commit) -> CommitResult:
        """DynamoMetadata's Kafka commit, by the same rule (stores.metadata.kafka_commit)."""
        key = (commit.topic, commit.partition)
        with self._lock:
            result, new = kafka_commit(commit, self._heads.get(key))
            if new is not None:
                self._heads[key] = new
            return result

    def spill(
        self,
        topic: str,
        partition: int,
        *,
        expected_epoch: int,
        refs_removed: int,
        span_removed: int,
        manifest_list: str,
        object_time_ms: int,
        expired_producers: Iterable[str] = (),
    ) -> bool:
        if refs_removed <= 0:
            raise InvalidRequest("spill must remove at least one ref")
        expired = set(expired_producers)
        return self._update_head(
            topic,
            partition,
            lambda h: h.index_epoch == expected_epoch and h.gc_horizon < object_time_ms,
            lambda h: replace(
                h,
                tail=h.tail[refs_removed:],
                tail_base=h.tail_base + span_removed,
                manifest_list=manifest_list,
                index_epoch=h.index_epoch + 1,
                producers={p: s for p, s in h.producers.items() if p not in expired},
            ),
        )

    def stamp_compactor_epoch(self, topic: str, partition: int, epoch: int) -> bool:
        return self._update_head(
            topic,
            partition,
            lambda h: h.compactor_epoch is None or h.compactor_epoch <= epoch,
            lambda h: replace(h, compactor_epoch=epoch),
        )

    def swap_index(
        self,
        topic: str,
        partition: int,
        *,
        topic_id: str,
        expected_index_epoch: int,
        compactor_epoch: int,
        manifest_list: str,
        log_start_offset: int,
        object_time_ms: int,
    ) -> bool:
        return self._update_head(
            topic,
            partition,
            lambda h: (
                h.topic_id == topic_id
                and h.index_epoch == expected_index_epoch
                and h.compactor_epoch == compactor_epoch
                and h.gc_horizon < object_time_ms
                and h.log_start_offset <= log_start_offset
            ),
            lambda h: replace(
                h,
                manifest_list=manifest_list,
                log_start_offset=log_start_offset,
                index_epoch=h.index_epoch + 1,
            ),
        )

    def raise_log_start(self, topic: str, partition: int, *, topic_id: str, offset: int) -> int:
        with self._lock:
            head = self._heads.get((topic, partition))
            start, raised = raised_log_start(head, topic, partition, topic_id, offset)
            if raised is not None:
                self._heads[(topic, partition)] = raised
            return start

    def open_transaction(
        self, topic: str, partition: int, *, topic_id: str, producer: str, epoch: int
    ) -> int:
        with self._lock:
            head = self._heads.get((topic, partition))
            first, new = opened(head, topic, partition, topic_id, producer, epoch)
            if new is not None:
                self._heads[(topic, partition)] = new
            return first

    def write_marker(
        self,
        topic: str,
        partition: int,
        *,
        topic_id: str,
        producer: str,
        epoch: int,
        commit: bool,
        time_ms: int,
        first: int | None = None,
    ) -> int | None:
        with self._lock:
            head = self._heads.get((topic, partition))
            offset, new = marked(head, topic, partition, topic_id, producer, epoch, commit, time_ms)
            if new is not None:
                self._heads[(topic, partition)] = new
            return offset

    def raise_gc_horizon(self, topic: str, partition: int, horizon_ms: int) -> None:
        self._update_head(
            topic,
            partition,
            lambda h: h.gc_horizon < horizon_ms,
            lambda h: replace(h, gc_horizon=horizon_ms),
        )

    def _update_head(
        self,
        topic: str,
        partition: int,
        holds: Callable[[PartitionHead], bool],
        change: Callable[[PartitionHead], PartitionHead],
    ) -> bool:
        with self._lock:
            head = self._heads.get((topic, partition))
            if head is None or not holds(head):
                return False
            self._heads[(topic, partition)] = change(head)
            return True


class MemoryLeaseStore:
    """Lease items in a dict (stores.leases.LeaseStore)."""

    def __init__(self) -> None:
        self._leases: dict[str, Lease] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> Lease | None:
        with self._lock:
            return self._leases.get(name)

    def put(self, lease: Lease, *, seen_epoch: int | None, owner: str | None = None) -> bool:
        with self._lock:
            current = self._leases.get(lease.name)
            if seen_epoch is None:
                if current is not None:
                    return False
            elif (
                current is None
                or current.epoch != seen_epoch
                or (owner is not None and current.owner != owner)
            ):
                return False
            self._leases[lease.name] = lease
            return True


class MemoryIdempotencyStore:
    """Idempotency records in a dict (stores.idempotency.IdempotencyStore)."""

    def __init__(self) -> None:
        self._records: dict[str, IdempotencyRecord] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> IdempotencyRecord | None:
        with self._lock:
            return self._records.get(key)

    def put_if_free(self, record: IdempotencyRecord, now_ms: int) -> Claim:
        with self._lock:
            current = self._records.get(record.key)
            if current is not None and holds_key(current, now_ms):
                return Claim(holder=current)
            self._records[record.key] = replace(record, response=None, landed=None)
            return Claim(landed=landed_for(record, current))

    def release(self, key: str, landed: str) -> None:
        with self._lock:
            current = self._records.get(key)
            if current is not None:
                self._records[key] = replace(current, in_progress_expires_ms=0, landed=landed)

    def complete(self, record: IdempotencyRecord) -> None:
        with self._lock:
            current = self._records.get(record.key)
            self._records[record.key] = replace(
                record,
                in_progress_expires_ms=current.in_progress_expires_ms if current else None,
                payload_hash=record.payload_hash or (current.payload_hash if current else None),
            )

    def delete(self, key: str) -> None:
        with self._lock:
            self._records.pop(key, None)


__all__ = ["MemoryIdempotencyStore", "MemoryLeaseStore", "MemoryMetadata"]  # groups: memory_groups
