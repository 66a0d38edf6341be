"""A consumer group's offsets committed in transactions (KIP-447; docs/transactions.md).

TxnOffsetCommit marks each partition's offset item pending in the transaction (``hold``: the
mark is stores.transactions.offsets_mark, written under the member's own commit condition, so
KIP-447's check and the mark are one conditional write). Completing the transaction stores
the offsets and removes the marks, or only removes them when it aborts (``settle``,
conditional on the mark: a plain commit made since stays, as in Kafka). Readers that ask for
stable offsets (Kafka's ``require_stable``) leave out the partitions a transaction that has
not ended still marks (``unstable``; ``pending`` is services.transaction_log.OffsetsPending),
so a member that takes a partition over never starts from an offset that transaction is about
to move.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from objectlog.clock import Clock
from objectlog.errors import CommitFailed
from objectlog.fan_out import fan_out
from objectlog.groups.values import fenced_message
from objectlog.stores.groups import GroupStore, OffsetItem, TopicPartition

if TYPE_CHECKING:
    from objectlog.groups.unchanged import UnchangedCommits

Pending = Callable[[str, str], bool]  # (mark, group) -> the marking transaction has not ended


class TransactionalOffsets:
    def __init__(
        self,
        store: GroupStore,
        clock: Clock,
        pending: Pending | None,
        track: Callable[[str, Iterable[str]], None],
        unchanged: UnchangedCommits,
    ) -> None:
        """track(group, topics) registers a group committed to from outside (as a commit
        with no member does: GroupCoordinator's); unchanged is told of every write."""
        self.store = store
        self.clock = clock
        self.pending = pending
        self.track = track
        self.unchanged = unchanged

    def hold(
        self,
        group: str,
        mark: str,
        partitions: Iterable[TopicPartition],
        *,
        member_id: str | None,
        generation: int,
    ) -> None:
        """Mark each partition's offset pending in the transaction (mark), where a commit by
        this member in this generation would hold: CommitFailed if it would not."""
        wanted = sorted(TopicPartition(*tp) for tp in partitions)
        if member_id is None:
            self.track(group, {tp.topic for tp in wanted})

        def hold_one(tp: TopicPartition) -> None:
            with self.unchanged.writing(group, [tp]):
                old = self.store.hold_pending(
                    group, tp, mark, member_id=member_id, generation=generation
                )
            if old is not None:
                raise CommitFailed(fenced_message(group, tp, old, member_id, generation))

        fan_out(hold_one, wanted)

    def settle(
        self,
        group: str,
        mark: str,
        offsets: Mapping[TopicPartition, tuple[int, str, int] | None],
    ) -> list[TopicPartition]:
        """End the transaction's marks: store each (offset, metadata, leader epoch) given
        (it committed: whoever owns the partition now has waited for it), or just drop the
        mark (None: it aborted). The partitions whose mark was no longer the
        transaction's (a plain commit since wins, as in Kafka)."""
        now = self.clock.now_ms()
        passed: list[TopicPartition] = []

        def settle_one(item: tuple[TopicPartition, tuple[int, str, int] | None]) -> None:
            tp, value = item
            committed = None if value is None else (*value, now)
            with self.unchanged.writing(group, [tp]):
                settled = self.store.settle_pending(group, tp, mark, committed)
            if not settled:
                passed.append(tp)

        fan_out(settle_one, sorted(offsets.items()))
        return sorted(passed)

    def unstable(
        self, group: str, items: Mapping[TopicPartition, OffsetItem]
    ) -> set[TopicPartition]:
        """The partitions whose item a transaction that has not ended marked pending."""
        return {
            tp
            for tp, item in items.items()
            if item.pending is not None
            and self.pending is not None
            and self.pending(item.pending, group)
        }
