"""Commits that would store what is already stored cost no write (issue 38).

A waiting consumer commits the same offsets again and again (a Kafka consumer auto-commits
its positions every 5 s, changed or not: 64 partitions make 12.8 writes a second, about $21 a
month). The coordinator remembers, per offset item, what this process last stored in it and
for which committer (member and generation); a commit of exactly that (offset, metadata,
leader epoch) by that committer is answered without a write. Nothing is read for it: a read
per commit costs a fifth of the write it saves, and a write conditional on a change costs the
write unit even when its condition fails.

How an entry stays true (a stale entry may only cost a write, never skip one):

- An entry is made only by this process's own successful commit, and every other write this
  process makes to the item (a commit in flight, a failed one, release, claim, reset, fence,
  a transaction's hold or settle, a group's deletion) drops it first: ``begin`` numbers each
  write, and a commit's entry is kept only if no other write to the item began meanwhile.
- Every read of the items this process makes anyway (a heartbeat's, OffsetFetch's) drops the
  entries the items no longer match.
- Other processes: only a commit that comes through a *session* is ever skipped, and only
  when the entry was stored through that same session: a Kafka client's connection to this
  agent (kafka.groups passes the connection's id, kafka.context.CONNECTION). A client sends
  its commits over one coordinator connection at a time, so no commit of the same member can
  reach the item through another process while that connection lives: a client that
  reconnects (to this agent or another) has a new session, and its first commit writes. A
  rebalance gives the member a new generation, which the entry's committer does not match;
  a classic group takes commits from outside the group only while it is empty. The library
  Consumer (which skips unchanged auto-commits itself), the HTTP API and REST Proxy commit
  without a session: never skipped. A member's commit also skips only while the lease this
  process last renewed for it is live. Left: a transaction's offsets committed for the same
  partition through another process while the member keeps committing plainly here (a
  pipeline mixing both); ``REWRITE_AFTER_MS`` bounds how long such a commit can stand.
- A skipped commit leaves the item's commit time as it was (nothing reads it), and does not
  check again that the topic still exists.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from objectlog.errors import CommitFailed
from objectlog.groups.values import OffsetAndMetadata, fenced_message
from objectlog.stores.groups import GroupStore, OffsetItem, TopicPartition, commit_holds

REWRITE_AFTER_MS = 600_000  # an unchanged offset is written again this long after its write
ENTRIES = 100_000  # offset items remembered per process (about 200 bytes each)
LEASES = 10_000  # members whose lease this process renewed, remembered

Key = tuple[str, TopicPartition]


@dataclass(frozen=True)
class Committed:
    """What a commit stores and who commits it."""

    member_id: str | None
    generation: int
    offset: int
    metadata: str
    leader_epoch: int  # -1: none (the commit removes the item's)
    # the one ordered channel the committer commits through (a Kafka connection's id): a
    # commit is skipped only when it and the entry came through the same session
    session: str | None = None

    @classmethod
    def of(
        cls,
        value: OffsetAndMetadata,
        member_id: str | None,
        generation: int,
        leader_epoch: int,
        session: str | None = None,
    ) -> Committed:
        return cls(
            member_id, generation, value.offset, value.metadata, max(leader_epoch, -1), session
        )


@dataclass(frozen=True)
class _Entry:
    committed: Committed
    stored_ms: int


class UnchangedCommits:
    """The offsets this process stored, to answer an unchanged commit without a write."""

    def __init__(self, rewrite_after_ms: int = REWRITE_AFTER_MS) -> None:
        self.rewrite_after_ms = rewrite_after_ms
        self.skipped = 0  # commits answered without a write (for tests and benchmarks)
        self._lock = threading.Lock()
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        # key -> [number of the last write begun, commits in flight]: only keys in flight
        self._flights: dict[Key, list[int]] = {}
        self._numbers = 0  # write numbers, never reused
        self._leases: OrderedDict[tuple[str, str], int] = OrderedDict()  # -> live until (ms)

    def skips(self, group: str, tp: TopicPartition, wanted: Committed, now_ms: int) -> bool:
        """Whether the item already holds wanted, stored by this process for this committer,
        so the commit needs no write."""
        if wanted.session is None or (wanted.member_id is None and wanted.generation < 0):
            return False
        with self._lock:
            entry = self._entries.get((group, tp))
            if entry is None or entry.committed != wanted:
                return False
            if now_ms - entry.stored_ms >= self.rewrite_after_ms:
                return False
            member = wanted.member_id
            if member is not None and self._leases.get((group, member), 0) <= now_ms:
                return False  # its partitions may have moved: the lease this process renewed
            self.skipped += 1
            return True

    def begin(self, group: str, tp: TopicPartition) -> int:
        """A commit to the item starts: forget it; the number to hand to end()."""
        key = (group, tp)
        with self._lock:
            self._entries.pop(key, None)
            self._numbers += 1
            flight = self._flights.setdefault(key, [0, 0])
            flight[0], flight[1] = self._numbers, flight[1] + 1
            return self._numbers

    def end(
        self,
        group: str,
        tp: TopicPartition,
        number: int,
        committed: Committed | None,
        now_ms: int,
    ) -> None:
        """The commit begun as number ended, storing committed (None: failed or unknown).
        It is remembered only if no other write to the item began since or is in flight
        (their order on the item is not known here)."""
        key = (group, tp)
        with self._lock:
            last, in_flight = self._flights[key]
            if in_flight == 1:
                del self._flights[key]
            else:
                self._flights[key][1] = in_flight - 1
            if committed is None or last != number or in_flight != 1:
                return
            self._entries[key] = _Entry(committed, now_ms)
            self._entries.move_to_end(key)
            while len(self._entries) > ENTRIES:
                self._entries.popitem(last=False)

    @contextmanager
    def writing(self, group: str, partitions: Iterable[TopicPartition]) -> Iterator[None]:
        """Around a write other than a commit (release, claim, reset, fence, a transaction's
        hold or settle, a deletion): the items are forgotten, and a commit in flight beside
        it is not remembered."""
        numbers = [
            (TopicPartition(*tp), self.begin(group, TopicPartition(*tp))) for tp in partitions
        ]
        try:
            yield
        finally:
            for tp, number in numbers:
                self.end(group, tp, number, None, 0)

    def observe(self, group: str, items: Mapping[TopicPartition, OffsetItem]) -> None:
        """Items read: drop the entries they contradict."""
        with self._lock:
            for tp, item in items.items():
                entry = self._entries.get((group, tp))
                if entry is not None and not _holds(item, entry.committed):
                    del self._entries[(group, tp)]

    def renewed(self, group: str, member_id: str, until_ms: int) -> None:
        """This process renewed the member's lease until until_ms."""
        with self._lock:
            self._leases[(group, member_id)] = until_ms
            self._leases.move_to_end((group, member_id))
            while len(self._leases) > LEASES:
                self._leases.popitem(last=False)

    def gone(self, group: str, member_id: str) -> None:
        """The member left or was removed."""
        with self._lock:
            self._leases.pop((group, member_id), None)


def _holds(item: OffsetItem, committed: Committed) -> bool:
    """The item still holds what the commit stored, and the committer may still commit."""
    return (
        item.offset == committed.offset
        and item.metadata == committed.metadata
        and item.leader_epoch == committed.leader_epoch
        and item.pending is None
        and commit_holds(item, committed.member_id, committed.generation)
    )


def store_commits(
    store: GroupStore,
    unchanged: UnchangedCommits,
    group: str,
    commits: Mapping[TopicPartition, Committed],
    now_ms: int,
) -> None:
    """One conditional UpdateItem per commit, in partition order, remembering what landed;
    CommitFailed at the first one fenced (stores.groups.commit_holds)."""
    for tp, c in sorted(commits.items()):
        number = unchanged.begin(group, tp)
        landed = None
        try:
            old = store.commit(
                group,
                tp,
                c.offset,
                c.metadata,
                now_ms,
                member_id=c.member_id,
                generation=c.generation,
                leader_epoch=c.leader_epoch,
            )
            if old is not None:
                raise CommitFailed(fenced_message(group, tp, old, c.member_id, c.generation))
            landed = c
        finally:
            unchanged.end(group, tp, number, landed, now_ms)
