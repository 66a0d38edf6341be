"""The write path: one L0 object per flush, then one conditional UpdateItem per partition.

1. encode one Parquet slice per (topic, partition) and concatenate them into one object;
2. PutObject with If-None-Match: * under a fresh ULID key;
3. per partition, commit a ref to the head (HeadStore.commit), which assigns offsets;
4. touch the topics' activity items (services.activity: at most once a second per topic);
5. spill a head's tail into manifests when it has grown past its bound.

A head this Appender committed to last time tells it when a spill is near: the spill is then
carried (services/index.py): the flush's object ends with the new index objects, and the
partition's commit moves the refs in the same UpdateItem. If the head changed meanwhile (another
writer appended or spilled), the commit is made again without it.

Retries never duplicate: the object key is ours alone (a retried PUT that finds it taken had
landed), and a retried commit carries the same producer id and sequence, so the head answers
with the original base offset instead of appending again (without a producer id there is no
such check, so a commit whose answer was lost is reported as UnknownOutcome, not retried; and
once any attempt's outcome was unknown, so is the commit's if the retries run out). An object
that became older than a partition's GC horizon before its commit is uploaded again and the
commit retried.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc

from objectlog import concurrency
from objectlog.clock import Clock, new_ulid, ulid_time_ms
from objectlog.concurrency import Workers
from objectlog.errors import (
    HorizonPassed,
    ObjectLogError,
    SpillRaced,
    StorageUnavailable,
    UnknownOutcome,
)
from objectlog.format.index import LEVEL_L0, SegmentRef
from objectlog.format.layout import l0_key
from objectlog.format.segment import write_parquet
from objectlog.format.txn import transactional
from objectlog.services.activity import TopicActivity
from objectlog.services.flushes import (
    AppendOutcome,
    AppendStats,
    Carried,
    PartitionBatch,
    StagedFlush,
)
from objectlog.services.index import IndexStore, SpillPlan
from objectlog.stores.metadata import (
    CarriedSpill,
    Commit,
    CommitResult,
    HeadStore,
    PartitionHead,
)
from objectlog.stores.objects import ObjectStore

logger = logging.getLogger(__name__)

COMMIT_ATTEMPTS = 6
PUT_ATTEMPTS = 4
BACKOFF_S = 0.02


@dataclass(frozen=True)
class _Encoded:
    body: bytes
    refs: list[SegmentRef]
    carried: dict[int, Carried]


class Appender:
    def __init__(
        self,
        store: ObjectStore,
        metadata: HeadStore,
        index: IndexStore,
        prefix: str,
        clock: Clock,
        *,
        compression: str = "none",
        sleep: Callable[[float], None] = concurrency.sleep,
        activity: TopicActivity | None = None,
    ) -> None:
        self.store = store
        self.metadata = metadata
        self.index = index
        self.prefix = prefix
        self.clock = clock
        self.compression = compression
        self.sleep = sleep
        self.activity = activity
        self.stats = AppendStats()
        self._pool = Workers(max_workers=8, thread_name_prefix="objectlog-commit")
        self._uploads = Workers(max_workers=1, thread_name_prefix="objectlog-upload")
        self._heads: dict[tuple[str, int], PartitionHead] = {}  # the newest each commit saw
        self._heads_lock = threading.Lock()
        self._carrying: set[tuple[str, int]] = set()  # partitions a staged flush carries for
        self._solo: set[tuple[str, int]] = set()  # no other writer's commit between our last two

    def close(self) -> None:
        self._uploads.shutdown(wait=True)
        self._pool.shutdown(wait=True)

    def last_sequence(self, topic: str, partition: int, producer_id: str) -> int | None:
        """The producer's last committed sequence on the partition, as its head records it."""
        head = self.metadata.get_head(topic, partition)
        state = head.producers.get(producer_id) if head else None
        return state.sequence if state else None

    def append(
        self, batches: Sequence[PartitionBatch], producer_id: str | None
    ) -> list[AppendOutcome]:
        """Write the batches as one object and commit each partition; never raises per batch."""
        return self.commit_staged(self.stage(batches), producer_id)

    def stage(
        self,
        batches: Sequence[PartitionBatch],
        producers: Sequence[str | None] | None = None,
    ) -> StagedFlush:
        """Step 1 of append: encode the object now and upload it on this Appender's upload
        thread; never raises per batch. The caller encodes its next flush while this one's
        PUT is in flight, and commit_staged waits for the PUT. A producer stages its next
        flush while the previous one commits (sequences are assigned between the two steps,
        so they follow commit order). ``producers``, one per batch: a flush of several
        producers' batches (the Kafka agent's group commit, kafka/coalesce.py)."""
        kept = [i for i, batch in enumerate(batches) if batch.records]
        outcomes = [AppendOutcome(batches[i]) for i in kept]
        staged = StagedFlush(outcomes)
        if producers is not None:
            staged.producers = [producers[i] for i in kept]
        if not outcomes:
            return staged
        plans = self._spill_plans(outcomes)
        object_id = new_ulid(self.clock)
        key = l0_key(self.prefix, object_id)
        try:
            encoded = self._encode([o.batch for o in outcomes], key, plans)
        except BaseException:
            self._done_carrying([outcomes[i].batch for i in plans])  # no flush carries them
            raise
        staged.carried.update(encoded.carried)
        staged.upload = self._uploads.submit(self._upload_staged, staged, object_id, encoded)
        return staged

    def _upload_staged(self, staged: StagedFlush, object_id: str, encoded: _Encoded) -> None:
        try:
            self._put_new_object(l0_key(self.prefix, object_id), encoded.body)
        except ObjectLogError as e:
            for outcome in staged.outcomes:
                outcome.error = e
            self._done_carrying([staged.outcomes[i].batch for i in staged.carried])
            return
        staged.refs.extend(replace(ref, object_id=object_id) for ref in encoded.refs)
        staged.object_id = object_id

    def commit_staged(self, staged: StagedFlush, producer_id: str | None) -> list[AppendOutcome]:
        """Step 2 of append: commit each partition of a staged flush, then spill grown heads."""
        if staged.upload is not None:
            staged.upload.result()  # _upload_staged records a failed PUT in the outcomes
        outcomes, object_id = staged.outcomes, staged.object_id
        if object_id is None:
            return outcomes
        started = time.perf_counter()
        producers = staged.producers or [producer_id] * len(outcomes)

        def commit(run: list[int]) -> None:  # a partition's commits in order, each on the last
            for i in run:
                ref, carried = staged.refs[i], staged.carried.get(i)
                self._commit(outcomes[i], ref, carried, object_id, producers[i])

        runs = _partition_runs(outcomes)
        if len(runs) == 1:
            commit(runs[0])
        else:
            list(self._pool.map(commit, runs))
        self.stats.commit_s += time.perf_counter() - started
        if self.activity is not None:  # after the commits; any may have landed, answered or not
            self.activity.committed(o.batch.topic.name for o in outcomes)
        self._spill_grown_heads(outcomes)
        return outcomes

    # ---- upload ------------------------------------------------------------------------

    def _encode(
        self, batches: Sequence[PartitionBatch], key: str, plans: dict[int, SpillPlan]
    ) -> _Encoded:
        """The object's body: one Parquet slice per batch, then the spills it carries."""
        started = time.perf_counter()
        parts, refs = self._encode_slices(batches)
        position = sum(len(part) for part in parts)
        carried: dict[int, Carried] = {}
        for i, plan in plans.items():
            data, location = self.index.carry(plan, key, position)
            carried[i] = Carried(plan, location)
            parts.append(data)
            position += len(data)
        body = b"".join(parts)  # Arrow buffers joined directly: one copy of the whole object
        self.stats.encode_s += time.perf_counter() - started
        return _Encoded(body, refs, carried)

    def _encode_slices(
        self, batches: Sequence[PartitionBatch]
    ) -> tuple[list[pa.Buffer | bytes], list[SegmentRef]]:
        """One Parquet slice per batch, side by side, and a ref (object id unset) to each."""
        parts: list[pa.Buffer | bytes] = []
        refs, position = [], 0
        blobs = concurrency.offload(self._parquet_slices, batches)
        for batch, blob in zip(batches, blobs, strict=True):
            bounds = pc.min_max(batch.table.column("timestamp"))
            refs.append(
                SegmentRef(
                    level=LEVEL_L0,
                    object_id="",
                    start=position,
                    length=blob.size,
                    span=batch.records,
                    records=batch.records,
                    min_timestamp=bounds["min"].value,
                    max_timestamp=bounds["max"].value,
                )
            )
            parts.append(blob)
            position += blob.size
        return parts, refs

    def _parquet_slices(self, batches: Sequence[PartitionBatch]) -> list[pa.Buffer]:
        """The batches encoded (CPU only: off the event loop for the asyncio client)."""
        slices = []
        for batch in batches:
            sink = pa.BufferOutputStream()
            write_parquet(sink, batch.table, self.compression)
            slices.append(sink.getvalue())
        return slices

    def upload(self, batches: Sequence[PartitionBatch]) -> tuple[str, list[SegmentRef]]:
        """Write the batches as one L0 object, commit nothing: its id and one ref per batch,
        for writers whose commits happen elsewhere (the Spark sink's driver)."""
        refs: list[SegmentRef] = []
        return self._upload(batches, refs), refs

    def _upload(self, batches: Sequence[PartitionBatch], refs_out: list[SegmentRef]) -> str:
        """Encode and write the batches as one L0 object (carrying no spill), now."""
        object_id = new_ulid(self.clock)
        key = l0_key(self.prefix, object_id)
        encoded = self._encode(batches, key, {})
        self._put_new_object(key, encoded.body)
        refs_out.extend(replace(ref, object_id=object_id) for ref in encoded.refs)
        return object_id

    def _spill_plans(self, outcomes: list[AppendOutcome]) -> dict[int, SpillPlan]:
        """Spills to carry, by outcome index: for partitions whose newest known head is close
        to needing one (a spill that fails to plan is left to a later flush)."""
        plans: dict[int, SpillPlan] = {}
        for i, outcome in enumerate(outcomes):
            head = self._known_head(outcome.batch)
            if head is None or not self.index.should_carry_spill(head):
                continue
            key = (head.topic, head.partition)
            with self._heads_lock:
                # Only a writer that saw no other writer's commit between its last two: with
                # writers interleaving, a carried spill would fail its condition (a wasted
                # write); the spill made on its own serves them. One flush carries at a time.
                if key not in self._solo or key in self._carrying:
                    continue
                self._carrying.add(key)
            try:
                plan = self.index.plan_spill(head)
            except ObjectLogError as e:
                logger.warning("no spill carried for %s/%s: %s", head.topic, head.partition, e)
                plan = None
            if plan is None:
                self._done_carrying([outcome.batch])
            else:
                plans[i] = plan
        return plans

    def _put_new_object(self, key: str, body: bytes) -> None:
        started = time.perf_counter()
        for attempt in range(PUT_ATTEMPTS):
            try:
                self.store.put_if_absent(key, body)
                break
            except (UnknownOutcome, StorageUnavailable):
                if attempt == PUT_ATTEMPTS - 1:
                    raise
                self.sleep(BACKOFF_S * 2**attempt)
        self.stats.put_s += time.perf_counter() - started
        self.stats.objects_put += 1
        self.stats.bytes_put += len(body)

    # ---- commit ------------------------------------------------------------------------

    def _commit(
        self,
        outcome: AppendOutcome,
        ref: SegmentRef,
        carried: Carried | None,
        object_id: str,
        producer_id: str | None,
    ) -> None:
        try:
            self._commit_partition(outcome, ref, carried, object_id, producer_id)
        finally:
            if carried is not None:
                self._done_carrying([outcome.batch])

    def _commit_partition(
        self,
        outcome: AppendOutcome,
        ref: SegmentRef,
        carried: Carried | None,
        object_id: str,
        producer_id: str | None,
    ) -> None:
        batch = outcome.batch
        last_error: ObjectLogError | None = None
        unknown: UnknownOutcome | None = None  # an attempt that may have landed
        spill = self._carried_spill(carried, batch, producer_id)
        for attempt in range(COMMIT_ATTEMPTS):
            try:
                result = self._commit_once(batch, ref, object_id, producer_id, spill)
            except SpillRaced:
                spill = None  # the head changed since the plan: commit without the spill
                self.stats.carried_spills_raced += 1
                continue
            except HorizonPassed:
                # Our object may be deleted by GC: upload this slice again and commit that.
                self.stats.reuploads += 1
                spill = None  # the new object carries no spill
                try:
                    reuploaded: list[SegmentRef] = []
                    object_id = self._upload([batch], reuploaded)
                    ref = reuploaded[0]
                except ObjectLogError as e:
                    last_error = e
                continue
            except (UnknownOutcome, StorageUnavailable) as e:
                if isinstance(e, UnknownOutcome):
                    if producer_id is None:  # no sequence to tell a retry from a second append
                        outcome.error = e
                        return
                    unknown = e
                last_error = e
                self.stats.commit_retries += 1
                self.sleep(BACKOFF_S * 2**attempt)
                continue
            except ObjectLogError as e:
                outcome.error = e
                return
            outcome.base_offset = result.base_offset
            outcome.duplicate = result.duplicate
            outcome.error = None
            outcome.head = result.head
            if spill is not None and not result.duplicate:
                self.stats.spills += 1
                self.stats.carried_spills += 1
            if not result.duplicate:
                self._remember(result.head, result.base_offset)
            return
        if unknown is not None and last_error is not unknown:
            # Later attempts failed without an answer, but an earlier one may have landed:
            # "unavailable" would let the producer reuse the sequence for other records.
            outcome.error = UnknownOutcome(f"{unknown.message}; then: {last_error}")
        else:
            outcome.error = last_error or UnknownOutcome("commit did not complete")

    def _commit_once(
        self,
        batch: PartitionBatch,
        ref: SegmentRef,
        object_id: str,
        producer_id: str | None,
        spill: CarriedSpill | None,
    ) -> CommitResult:
        self.stats.commits += 1
        epoch = None
        if batch.transactional and batch.kafka is not None and producer_id is not None:
            ref, epoch = replace(ref, txn=transactional(producer_id)), batch.kafka.epoch
        return self.metadata.commit(
            Commit(
                topic_id=batch.topic.topic_id,
                topic=batch.topic.name,
                partition=batch.partition,
                ref=ref,
                object_time_ms=ulid_time_ms(object_id),
                producer_id=producer_id,
                sequence=batch.sequence,
                now_s=self.clock.now_ms() // 1000,
                kafka=batch.kafka,
                spill=spill,
                known_head=self._solo_head(batch),
                transaction_epoch=epoch,
            )
        )

    def _carried_spill(
        self, carried: Carried | None, batch: PartitionBatch, producer_id: str | None
    ) -> CarriedSpill | None:
        """The spill a commit carries, checked against the newest head known now."""
        if carried is None or (now := self._known_head(batch)) is None:
            return None
        return self.index.carried(carried.plan, carried.location, now, producer_id)

    def _done_carrying(self, batches: list[PartitionBatch]) -> None:
        with self._heads_lock:
            for batch in batches:
                self._carrying.discard((batch.topic.name, batch.partition))

    def _known_head(self, batch: PartitionBatch) -> PartitionHead | None:
        with self._heads_lock:
            head = self._heads.get((batch.topic.name, batch.partition))
        return head if head is not None and head.topic_id == batch.topic.topic_id else None

    def _solo_head(self, batch: PartitionBatch) -> PartitionHead | None:
        """The head our last commit left, if no other writer committed between our last two:
        likely still the head, so the commit can be made on it (head_rules.pinned_head)."""
        with self._heads_lock:
            solo = (batch.topic.name, batch.partition) in self._solo
        return self._known_head(batch) if solo else None

    def _remember(self, head: PartitionHead | None, base_offset: int) -> None:
        """Keep the newest head seen per partition (epochs and offsets only grow), and whether
        this commit followed our previous one directly (no other writer in between)."""
        if head is None:
            return
        key = (head.topic, head.partition)
        with self._heads_lock:
            known = self._heads.get(key)
            if known is not None and base_offset == known.next_offset:
                self._solo.add(key)
            else:
                self._solo.discard(key)
            if known is None or _progress(known) <= _progress(head):
                self._heads[key] = head

    def _spill_grown_heads(self, outcomes: list[AppendOutcome]) -> None:
        started = time.perf_counter()
        for head in _newest_heads(outcomes):  # one spill per partition, from its newest head
            if not self.index.needs_spill(head):
                continue
            try:
                if self.index.spill(head):
                    self.stats.spills += 1
            except ObjectLogError as e:  # the next commit will try again
                logger.warning("spill of %s/%s failed: %s", head.topic, head.partition, e)
        self.stats.spill_s += time.perf_counter() - started


def _partition_runs(outcomes: Sequence[AppendOutcome]) -> list[list[int]]:
    """The outcomes' indices grouped by partition, in order."""
    runs: dict[tuple[str, int], list[int]] = {}
    for i, outcome in enumerate(outcomes):
        runs.setdefault((outcome.batch.topic.name, outcome.batch.partition), []).append(i)
    return list(runs.values())


def _newest_heads(outcomes: Sequence[AppendOutcome]) -> list[PartitionHead]:
    """The newest head the outcomes saw of each partition (a flush of several producers'
    batches commits to a partition several times: a spill planned from an older head would
    be refused, its index object written for nothing)."""
    newest: dict[tuple[str, int], PartitionHead] = {}
    for outcome in outcomes:
        head = outcome.head
        if head is None:
            continue
        key = (head.topic, head.partition)
        known = newest.get(key)
        if known is None or _progress(known) < _progress(head):
            newest[key] = head
    return list(newest.values())


def _progress(head: PartitionHead) -> tuple[int, int]:
    """How far a head has come: index epochs and offsets only grow."""
    return head.index_epoch, head.next_offset
