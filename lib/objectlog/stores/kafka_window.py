"""A Kafka producer's window in a DynamoDB head item: one list attribute per producer.

    ps.<pid>w = [epoch, batches, last sequence, last use (s), f0, b0, f1, b1, ..., f4, b4]

Batch i (counting from 0) lives in slot i mod 5 as its first sequence and base offset, so a
commit that knows the batch count writes its slot by index, conditional on that count, the
epoch and the last sequence, in the same UpdateItem that appends the ref (the base offset is
the head's ``next`` before it moves). One list keeps a producer at about 100 bytes of the head.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from objectlog.adapters.dynamodb import DynamoTable, Written
from objectlog.errors import StorageUnavailable, TopicNotFound
from objectlog.stores.head_commit import head_commit
from objectlog.stores.head_rules import (
    APPLY,
    INIT,
    check_carried_spill,
    explain_failed_commit,
    kafka_verdict,
)
from objectlog.stores.metadata import (
    KAFKA_WINDOW,
    Commit,
    CommitResult,
    KafkaWindow,
    PartitionHead,
    ProducerState,
)

SUFFIX = "w"
EPOCH, BATCHES, LAST, USED, SLOTS = 0, 1, 2, 3, 4
EMPTY = -1
KAFKA_COMMIT_TRIES = 4  # a stale batch count, a window to start, then the commit


def window_attribute(pid: str) -> str:
    return f"{pid}{SUFFIX}"


def parse_window(raw: Sequence[Any]) -> ProducerState:
    values = [int(v) for v in raw]
    batches = values[BATCHES]
    recent = tuple(
        (values[SLOTS + 2 * (i % KAFKA_WINDOW)], values[SLOTS + 2 * (i % KAFKA_WINDOW) + 1])
        for i in range(max(0, batches - KAFKA_WINDOW), batches)
    )
    newest_base = recent[-1][1] if recent else EMPTY
    return ProducerState(
        values[LAST], newest_base, values[USED], KafkaWindow(values[EPOCH], batches, recent)
    )


def window_values(state: ProducerState) -> list[int]:
    """The list parse_window read state from: the stored window, slot for slot."""
    window = state.window
    assert window is not None
    slots = [EMPTY] * (2 * KAFKA_WINDOW)
    first_batch = window.batches - len(window.recent)
    for i, (first, base) in enumerate(window.recent, start=first_batch):
        slot = 2 * (i % KAFKA_WINDOW)
        slots[slot], slots[slot + 1] = first, base
    return [window.epoch, window.batches, state.sequence, state.last_use_s, *slots]


def parse_windows(ps: Mapping[str, Any]) -> dict[str, ProducerState]:
    return {
        key[: -len(SUFFIX)]: parse_window(value)
        for key, value in ps.items()
        if key.endswith(SUFFIX) and isinstance(value, list)
    }


def fresh_window(commit: Commit) -> list[int]:
    """A window for a new producer epoch: nothing committed, last sequence just before the
    batch's first (a producer whose state expired resumes where it is, as KIP-360 allows)."""
    assert commit.kafka is not None
    header = [commit.kafka.epoch, 0, commit.kafka.first - 1, commit.now_s]
    return header + [EMPTY] * (2 * KAFKA_WINDOW)


def append_expression(commit: Commit, batches: int) -> tuple[list[str], str, dict[str, Any]]:
    """SET clauses, the condition and the values that record the batch as number ``batches``
    (the ref's own clauses are the caller's)."""
    assert commit.kafka is not None
    slot = SLOTS + 2 * (batches % KAFKA_WINDOW)
    sets = [
        f"ps.#kw[{BATCHES}] = :kn",
        f"ps.#kw[{LAST}] = :klast",
        f"ps.#kw[{USED}] = :now",
        f"ps.#kw[{slot}] = :kfirst",
        f"ps.#kw[{slot + 1}] = #next",
    ]
    condition = (
        f"ps.#kw[{EPOCH}] = :kepoch AND ps.#kw[{BATCHES}] = :kseen AND ps.#kw[{LAST}] = :kprev"
    )
    values = {
        ":kn": batches + 1,
        ":klast": commit.kafka.last,
        ":now": commit.now_s,
        ":kfirst": commit.kafka.first,
        ":kepoch": commit.kafka.epoch,
        ":kseen": batches,
        ":kprev": commit.kafka.first - 1,
    }
    return sets, condition, values


class KafkaCommits:
    """DynamoMetadata's commits of Kafka producers' batches (its ``commit`` hands them here)."""

    table: DynamoTable

    def get_head(self, topic: str, partition: int) -> PartitionHead | None:
        raise NotImplementedError

    def _parse_head(self, topic: str, partition: int, item: Mapping[str, Any]) -> PartitionHead:
        raise NotImplementedError

    def _head_key(self, commit: Commit) -> dict[str, str]:
        raise NotImplementedError

    def _head_as_it_was(self, commit: Commit, failed: Written) -> PartitionHead | None:
        raise NotImplementedError

    def _kafka_commit(self, commit: Commit, failed: Written | None = None) -> CommitResult:
        """A Kafka producer's batch: its window started if the head holds none for its epoch,
        then the ref appended and the window advanced in one conditional UpdateItem. `failed`:
        a write of it on the head the agent knew that failed, whose answer is the head as it is
        (so a retry or a fenced epoch is told apart without another write)."""
        assert commit.kafka is not None
        seen = commit.kafka.batches_seen
        for _ in range(KAFKA_COMMIT_TRIES):
            if failed is None and seen is not None:
                written = self._kafka_append(commit, seen)
                if written.applied:
                    assert written.item is not None
                    after = self._parse_head(commit.topic, commit.partition, written.item)
                    return CommitResult(after.next_offset - commit.ref.span, after)
                failed = written
            if failed is None:
                head = self.get_head(commit.topic, commit.partition)
            else:
                head, failed = self._head_as_it_was(commit, failed), None
            verdict = self._kafka_position(commit, head)
            if isinstance(verdict, CommitResult):
                return verdict
            seen = verdict
        raise StorageUnavailable(
            f"the window of producer {commit.producer_id} on {commit.topic}/{commit.partition} "
            "kept changing"
        )

    def _kafka_position(self, commit: Commit, head: PartitionHead | None) -> CommitResult | int:
        """A duplicate's result, or the window's batch count to commit the batch at (after
        starting the window when the rule says INIT); raises the rule's errors."""
        if head is None or head.topic_id != commit.topic_id:
            raise TopicNotFound(f"topic {commit.topic!r} partition {commit.partition} is gone")
        if head.gc_horizon >= commit.object_time_ms:
            explain_failed_commit(replace(commit, kafka=None, producer_id=None), head)
        verdict = kafka_verdict(commit, head)
        if isinstance(verdict, CommitResult):
            return verdict
        check_carried_spill(commit, head)  # before a window is started for it
        if verdict == INIT:
            return self._start_kafka_window(commit)
        state = head.producers[commit.producer_id or ""]
        assert verdict == APPLY and state.window is not None
        return state.window.batches

    def _start_kafka_window(self, commit: Commit) -> int:
        assert commit.kafka is not None and commit.producer_id is not None
        self.table.update(
            self._head_key(commit),
            "SET ps.#kw = :window",
            condition="tid = :tid AND (attribute_not_exists(ps.#kw) OR ps.#kw[0] < :kepoch)",
            names={"#kw": window_attribute(commit.producer_id)},
            values={
                ":window": fresh_window(commit),
                ":tid": commit.topic_id,
                ":kepoch": commit.kafka.epoch,
            },
            repeatable=True,  # the same window again, or a newer one: either way no harm
            what="UpdateItem head (Kafka producer window)",
        )
        return 0

    def _kafka_append_on(self, commit: Commit, known: PartitionHead) -> Written:
        """_kafka_append on the head the writer knows (head_rules.pinned_head): at its window's
        batch count, pinned on it, answering nothing."""
        window = known.producers[commit.producer_id or ""].window
        assert window is not None
        return self._kafka_append(commit, window.batches, known)

    def _kafka_append(
        self, commit: Commit, batches: int, known: PartitionHead | None = None
    ) -> Written:
        """The ref appended (the base copied from the old ``next`` first), the window's slot
        written, ``next`` moved; and the spill the commit carries, if any, in the same write.
        Pinned on the known head if given (HeadCommit.pin), and then answering nothing."""
        assert commit.producer_id is not None
        window_sets, window_condition, window_values = append_expression(commit, batches)
        update = head_commit(commit)
        update.names["#kw"] = window_attribute(commit.producer_id)
        update.values.update(window_values)
        update.condition += f" AND {window_condition}"
        if known is not None:
            update.pin(known)
        return self.table.update(
            self._head_key(commit),
            update.expression(window_sets),
            condition=update.condition,
            names=update.names,
            values=update.values,
            returns="NONE" if known is not None else "ALL_NEW",
            repeatable=False,
            what="UpdateItem head (commit)",
        )
