"""A consumer shaped like Kafka's: subscribe (group) or assign, poll, commit, seek, pause.

poll() heartbeats and auto-commits, so the time between two polls must stay under the session
timeout (Kafka's max.poll.interval.ms, folded into one setting). With enable_auto_commit, poll()
commits the positions of the records the previous poll returned, so a record is committed only
once the application asked for more: at least once, as in Kafka. Records are fetched ahead on a
background thread while the application processes (clients.fetch_ahead; fetch_ahead_bytes=0
fetches in poll() instead), and poll_table() returns them as one Arrow table, without a Python
object per record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Protocol

import pyarrow as pa

from objectlog import concurrency
from objectlog.clients.arguments import check_isolation_level
from objectlog.clients.consumer_state import ConsumerState
from objectlog.clients.fetch_ahead import FetchAhead, FetchFailed, first_rows, rows_within
from objectlog.clients.values import ConsumerGroupMetadata, Offsets
from objectlog.concurrency import RLock
from objectlog.errors import (
    InvalidRequest,
    ObjectLogError,
    OffsetOutOfRange,
    UnknownMemberId,
    UnstableOffsetCommit,
)
from objectlog.format.records import Record
from objectlog.format.segment import SCHEMA
from objectlog.format.topics import Topic
from objectlog.groups.assignors import DEFAULT_STRATEGIES
from objectlog.groups.values import (
    GroupDescription,
    Membership,
    OffsetAndMetadata,
    validate_group_name,
)
from objectlog.services.fetch import FetchRequest, FetchResult
from objectlog.services.isolation import READ_COMMITTED, READ_UNCOMMITTED
from objectlog.stores.groups import TopicPartition

AUTO_OFFSET_RESETS = ("earliest", "latest", "none")
POLL_BACKOFF_START_S = 0.01
POLL_BACKOFF_MAX_S = 0.1
# How long a caught-up partition may go unfetched while the application polls (Kafka's
# fetch.max.wait.ms; its default there is 500 ms, answered early by the broker when records
# arrive; here the wait is the latency a record can add, so the default is short).
DEFAULT_FETCH_MAX_WAIT_MS = 100
CLAIM_RETRY_S = 0.1  # while an assigned partition waits for its previous owner to release it
UNSTABLE_RETRY_S = 0.2  # while a transaction holds a partition's committed offset pending

logger = logging.getLogger(__name__)

Rebalance = Callable[[set[TopicPartition]], None]


class Groups(Protocol):
    """The group protocol a member runs: GroupCoordinator (direct) or HttpGroups (the API).

    Every call raises InvalidRequest for a malformed group id or argument.
    """

    def join(
        self,
        group: str,
        topics: Collection[str],
        *,
        client_id: str = ...,
        session_timeout_ms: int = ...,
        strategies: Sequence[str] = ...,
    ) -> Membership:
        """Join as a new member (the group rebalances). TopicNotFound for a topic that does not
        exist; InconsistentGroupProtocol when the members share no strategy."""
        ...

    def heartbeat(
        self,
        group: str,
        member_id: str,
        *,
        owned: Collection[TopicPartition] = ...,
        release: Mapping[TopicPartition, OffsetAndMetadata | None] | None = ...,
    ) -> Membership:
        """Renew the lease, release partitions given up (with final offsets) and claim free
        assigned ones. UnknownMemberId when the member is no longer in the group."""
        ...

    def leave(
        self,
        group: str,
        member_id: str,
        *,
        release: Mapping[TopicPartition, OffsetAndMetadata | None] | None = ...,
    ) -> None:
        """Leave, releasing the member's partitions (with final offsets if given)."""
        ...

    def commit(
        self,
        group: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        *,
        member_id: str | None = ...,
        generation: int = ...,
    ) -> None:
        """Store offsets, all or none. CommitFailed when the member does not own a partition
        in that generation; TopicNotFound, UnknownPartition; OffsetOutOfRange past the high
        watermark."""
        ...

    def committed(
        self, group: str, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The committed offset of each partition, None where there is none."""
        ...

    def stable_committed(
        self, group: str, partitions: Iterable[TopicPartition]
    ) -> tuple[dict[TopicPartition, OffsetAndMetadata | None], set[TopicPartition]]:
        """committed(), but for the partitions whose offset a transaction holds pending,
        answered apart (Kafka's require_stable; docs/transactions.md)."""
        ...

    def describe(self, group: str) -> GroupDescription:
        """Members, assignments, committed offsets and lag. GroupNotFound."""
        ...

    def list_groups(self) -> list[str]:
        """The names of every group, sorted."""
        ...


class ConsumerHost(Protocol):
    """What a Consumer needs of its log: the part of the LogClient contract it uses."""

    @property
    def groups(self) -> Groups: ...

    def fetch_many(self, requests: Sequence[FetchRequest]) -> list[FetchResult]: ...

    def offsets(self, topic: str, partition: int) -> Offsets: ...

    def topic(self, name: str, *, fresh: bool = False) -> Topic: ...


class NoOffsetForPartition(InvalidRequest):
    """auto_offset_reset is none and the partition has no committed (or a stale) offset."""


class Consumer:
    """Reads topics as a member of a group (subscribe) or from chosen partitions (assign)."""

    def __init__(
        self,
        log: ConsumerHost,
        *,
        group: str | None = None,
        topics: Iterable[str] | None = None,
        auto_offset_reset: str = "latest",
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5000,
        session_timeout_ms: int = 10_000,
        heartbeat_interval_ms: int | None = None,
        strategies: Sequence[str] = DEFAULT_STRATEGIES,
        client_id: str = "objectlog",
        max_poll_records: int = 500,
        max_partition_fetch_bytes: int = 1 << 20,
        fetch_ahead_bytes: int | None = None,
        fetch_max_wait_ms: int = DEFAULT_FETCH_MAX_WAIT_MS,
        isolation_level: str = READ_UNCOMMITTED,
        on_assign: Rebalance | None = None,
        on_revoke: Rebalance | None = None,
        on_lost: Rebalance | None = None,
    ) -> None:
        if group is not None:
            validate_group_name(group)
        if auto_offset_reset not in AUTO_OFFSET_RESETS:
            raise InvalidRequest(
                f"auto_offset_reset must be one of {list(AUTO_OFFSET_RESETS)}, "
                f"got {auto_offset_reset!r}",
                field="auto_offset_reset",
            )
        for name, value in (
            ("max_poll_records", max_poll_records),
            ("max_partition_fetch_bytes", max_partition_fetch_bytes),
            ("session_timeout_ms", session_timeout_ms),
            ("auto_commit_interval_ms", auto_commit_interval_ms),
            ("fetch_max_wait_ms", fetch_max_wait_ms),
        ):
            if type(value) is not int or value <= 0:
                raise InvalidRequest(f"{name} must be a positive integer", field=name)
        check_isolation_level(isolation_level)
        if fetch_ahead_bytes is None:
            fetch_ahead_bytes = max_partition_fetch_bytes
        if type(fetch_ahead_bytes) is not int or fetch_ahead_bytes < 0:
            raise InvalidRequest(
                "fetch_ahead_bytes must be a non-negative integer", field="fetch_ahead_bytes"
            )
        self.log = log
        self.group = group
        self.auto_offset_reset = auto_offset_reset
        self.enable_auto_commit = enable_auto_commit and group is not None
        self.auto_commit_interval_s = auto_commit_interval_ms / 1000
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_s = (heartbeat_interval_ms or session_timeout_ms // 3) / 1000
        self.strategies = tuple(strategies)
        self.client_id = client_id
        self.max_poll_records = max_poll_records
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.fetch_max_wait_s = fetch_max_wait_ms / 1000
        self.on_assign, self.on_revoke, self.on_lost = on_assign, on_revoke, on_lost
        self._subscription: tuple[str, ...] | None = None
        self._membership: Membership | None = None
        self._owned: set[TopicPartition] = set()
        self._positions: dict[TopicPartition, int] = {}
        self._paused: set[TopicPartition] = set()
        self._committed_positions: dict[TopicPartition, int] = {}
        self._unstable_until: dict[TopicPartition, float] = {}  # when to ask again
        self._next_heartbeat = 0.0
        self._next_auto_commit = time.monotonic() + self.auto_commit_interval_s
        self._rotation = 0
        self._ahead = FetchAhead(
            log.fetch_many,
            request_bytes=max_partition_fetch_bytes,
            limit_bytes=fetch_ahead_bytes,
            background=fetch_ahead_bytes > 0,
            tail_wait_s=self.fetch_max_wait_s,
            isolation=isolation_level,  # read_committed: docs/transactions.md
            activity=getattr(log, "activity", None),  # idle at the tail (services.activity)
        )
        self.isolation_level = isolation_level
        self._closed = False
        # Held by a poll's group upkeep and take, a commit and close: the asyncio client runs
        # them concurrently (a commit while a poll waits); a rebalance callback may commit.
        self._state_lock = RLock()
        if topics is not None:
            self.subscribe(topics)

    # ---- subscription and assignment ---------------------------------------------------

    def subscribe(self, topics: Iterable[str]) -> None:
        """Consume topics as a member of the group (joined on the next poll)."""
        names = [topics] if isinstance(topics, str) else list(topics)
        if self.group is None:
            raise InvalidRequest("subscribe needs a group; use assign() without one", field="group")
        if not names:
            raise InvalidRequest("subscribe needs at least one topic", field="topics")
        if self._subscription is None and self._owned:
            raise InvalidRequest("this consumer uses assign(); unsubscribe() first")
        if self._membership is not None and tuple(sorted(names)) != self._subscription:
            self._leave()
        self._subscription = tuple(sorted(set(names)))

    def unsubscribe(self) -> None:
        """Leave the group (committing first with auto-commit) or drop a manual assignment."""
        if self._membership is not None:
            self._leave()
        self._subscription = None
        self._drop(set(self._owned))

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Consume exactly these partitions, outside any group membership."""
        if self._subscription is not None:
            raise InvalidRequest("this consumer is subscribed; unsubscribe() before assign()")
        wanted = {TopicPartition(*tp) for tp in partitions}
        for tp in wanted:
            count = self.log.topic(tp.topic).partitions
            if not 0 <= tp.partition < count:
                raise InvalidRequest(
                    f"topic {tp.topic!r} has {count} partitions; there is no partition "
                    f"{tp.partition}",
                    field="partition",
                )
        self._drop(self._owned - wanted)
        self._owned = wanted

    def assignment(self) -> set[TopicPartition]:
        """The partitions this consumer reads now."""
        return set(self._owned)

    def subscription(self) -> tuple[str, ...]:
        """The topics subscribed to, sorted (none with assign() or after unsubscribe())."""
        return self._subscription or ()

    @property
    def member_id(self) -> str | None:
        return self._membership.member_id if self._membership else None

    @property
    def generation(self) -> int:
        return self._membership.generation if self._membership else -1

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This consumer's group, member id and generation, for a transactional producer's
        send_offsets_to_transaction (Kafka's consumer.groupMetadata())."""
        if self.group is None:
            raise InvalidRequest("group_metadata needs a group", field="group")
        return ConsumerGroupMetadata(self.group, self.member_id, self.generation)

    # ---- poll --------------------------------------------------------------------------

    def poll(
        self, timeout: float = 1.0, max_records: int | None = None, max_bytes: int | None = None
    ) -> list[Record]:
        """Records from the assigned partitions; waits up to timeout seconds for some.

        max_bytes bounds the keys and values returned (at least one record is, as in Kafka).
        """
        return [
            record for result in self._poll(timeout, max_records, max_bytes) for record in result
        ]

    def poll_table(
        self, timeout: float = 1.0, max_records: int | None = None, max_bytes: int | None = None
    ) -> pa.Table:
        """What poll() returns, as one Arrow table with the segment schema's columns (key,
        value, topic, partition, offset, timestamp, timestamp_type, headers): no Python object
        per record."""
        taken = self._poll(timeout, max_records, max_bytes)
        return pa.concat_tables([r.table for r in taken]) if taken else SCHEMA.empty_table()

    def _poll(
        self, timeout: float, max_records: int | None, max_bytes: int | None
    ) -> list[FetchResult]:
        self._check_open()
        limit = max_records or self.max_poll_records
        deadline = time.monotonic() + max(0.0, timeout)
        backoff = POLL_BACKOFF_START_S
        while True:
            with self._state_lock:
                self._maintain()
                taken = self._take(limit, max_bytes)
            now = time.monotonic()
            if taken or now >= deadline:
                return taken
            wake = min(deadline, now + backoff)
            if self._membership is not None:  # not a busy loop: no heartbeat is due otherwise
                wake = min(wake, self._next_heartbeat)
            self._ahead.wait(max(0.0, wake - now))
            backoff = min(backoff * 2, max(POLL_BACKOFF_MAX_S, self.fetch_max_wait_s))

    def _take(self, limit: int, max_bytes: int | None) -> list[FetchResult]:
        """Up to limit records (and max_bytes of keys and values) from what was fetched,
        partitions in rotation so none starves when limits cut; positions move past them."""
        partitions = sorted(tp for tp in self._owned if tp not in self._paused)
        self._fill(partitions)
        if not partitions:
            return []
        start = self._rotation % len(partitions)
        self._rotation += 1
        taken: list[FetchResult] = []
        rows, budget = 0, max_bytes
        for tp in partitions[start:] + partitions[:start]:
            while rows < limit and (result := self._ahead.peek(tp)) is not None:
                table = result.table
                count, used = rows_within(table, limit - rows, budget, at_least_one=not rows)
                if count == 0 and table.num_rows:
                    break  # the byte budget is spent
                if count < table.num_rows:
                    position = table.column("offset")[count - 1].as_py() + 1
                else:  # past compaction gaps too
                    position = max(result.next_offset, self._positions[tp])
                self._ahead.advance(tp, count, position)
                self._positions[tp] = position
                if count:
                    taken.append(first_rows(result, count))
                rows += count
                budget = None if budget is None else budget - used
                if count < table.num_rows:
                    break
        return taken

    def _fill(self, partitions: list[TopicPartition]) -> None:
        """Tell the fetch-ahead what is read and where; fetch here without its thread."""
        self._ensure_positions(partitions)
        self._ahead.track(self._positions_of(partitions))
        try:
            self._ahead.fill()
        except FetchFailed as failed:
            if not isinstance(failed.error, OffsetOutOfRange):
                raise failed.error from None
            self._reset_out_of_range([tp for tp in failed.partitions if tp in self._positions])
            self._ahead.track(self._positions_of(partitions))
            try:
                self._ahead.fill()
            except FetchFailed as again:
                raise again.error from None

    def _positions_of(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The positions of those that have one (not those waiting for a transaction)."""
        return {tp: self._positions[tp] for tp in partitions if tp in self._positions}

    # ---- positions ---------------------------------------------------------------------

    def position(self, partition: TopicPartition | tuple[str, int], timeout: float = 60.0) -> int:
        """The offset of the next record poll() will return from the partition. A
        read_committed consumer waits while a transaction holds the partition's committed
        offset pending, up to timeout (then UnstableOffsetCommit, retriable)."""
        tp = self._owned_partition(partition)
        deadline = time.monotonic() + timeout
        self._ensure_positions([tp])
        while tp not in self._positions:
            if time.monotonic() >= deadline:
                raise UnstableOffsetCommit(
                    f"{tp.topic}/{tp.partition}: a transaction still holds the committed "
                    f"offset of group {self.group!r} pending after {timeout} s"
                )
            concurrency.sleep(UNSTABLE_RETRY_S)
            self._ensure_positions([tp])
        return self._positions[tp]

    def seek(self, partition: TopicPartition | tuple[str, int], offset: int) -> None:
        tp = self._owned_partition(partition)
        if type(offset) is not int or offset < 0:
            raise InvalidRequest(f"offset must be a non-negative integer, got {offset!r}")
        self._positions[tp] = offset

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        for tp in self._targets(partitions):
            self._positions[tp] = self.log.offsets(*tp).earliest

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        for tp in self._targets(partitions):
            self._positions[tp] = self.log.offsets(*tp).end(self.isolation_level)

    def pause(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        self._paused |= {self._owned_partition(tp) for tp in partitions}

    def resume(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        self._paused -= {TopicPartition(*tp) for tp in partitions}

    def paused(self) -> set[TopicPartition]:
        return set(self._paused & self._owned)

    def _ensure_positions(self, partitions: Sequence[TopicPartition]) -> None:
        """A position for each partition: its committed offset, else auto_offset_reset's.
        A read_committed consumer leaves a partition whose offset a transaction holds
        pending without one until the transaction ends (as Kafka's consumer asks for stable
        offsets), so it never reads from an offset that transaction is about to move."""
        now = time.monotonic()
        missing = [
            tp
            for tp in partitions
            if tp not in self._positions and self._unstable_until.get(tp, 0.0) <= now
        ]
        if not missing or self.group is None:
            committed: dict[TopicPartition, OffsetAndMetadata | None] = {}
        elif self.isolation_level == READ_COMMITTED:
            committed, unstable = self.log.groups.stable_committed(self.group, missing)
            self._unstable_until.update(dict.fromkeys(unstable, now + UNSTABLE_RETRY_S))
            missing = [tp for tp in missing if tp not in unstable]
        else:
            committed = self.log.groups.committed(self.group, missing)
        for tp in missing:
            value = committed.get(tp)
            if value is not None:
                self._positions[tp] = value.offset
                self._committed_positions[tp] = value.offset
            else:
                self._positions[tp] = self._reset_position(tp, "has no committed offset")

    def _reset_out_of_range(self, partitions: Sequence[TopicPartition]) -> None:
        for tp in partitions:
            offsets = self.log.offsets(*tp)
            if not offsets.earliest <= self._positions[tp] <= offsets.latest:
                self._positions[tp] = self._reset_position(
                    tp,
                    f"is at offset {self._positions[tp]}, out of range "
                    f"[{offsets.earliest}, {offsets.latest}]",
                )

    def _reset_position(self, tp: TopicPartition, why: str) -> int:
        if self.auto_offset_reset == "none":
            raise NoOffsetForPartition(
                f"{tp.topic}/{tp.partition} {why} and auto_offset_reset is none"
            )
        offsets = self.log.offsets(*tp)
        if self.auto_offset_reset == "earliest":
            return offsets.earliest
        return offsets.end(self.isolation_level)  # Kafka's latest for the isolation level

    # ---- commits -----------------------------------------------------------------------

    def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None
    ) -> None:
        """Commit offsets (by default the position of every owned partition), synchronously.

        Raises CommitFailed when the group rebalanced and this member no longer owns a
        partition; the next poll rejoins or picks up the new assignment.
        """
        self._check_open()
        if self.group is None:
            raise InvalidRequest("commit needs a group", field="group")
        with self._state_lock:
            self._commit(self._current_positions() if offsets is None else dict(offsets))

    def _commit(self, wanted: dict[TopicPartition, OffsetAndMetadata | int]) -> None:
        assert self.group is not None
        if not wanted:
            return
        try:
            if self._subscription is not None:
                if self._membership is None:
                    raise InvalidRequest("not a member yet: poll() joins the group first")
                self.log.groups.commit(
                    self.group,
                    wanted,
                    member_id=self._membership.member_id,
                    generation=self._membership.generation,
                )
            else:
                self.log.groups.commit(self.group, wanted)
        except ObjectLogError:
            self._next_heartbeat = 0.0  # learn about the rebalance at once
            raise
        for tp, value in wanted.items():
            offset = value if isinstance(value, int) else value[0]
            self._committed_positions[TopicPartition(*tp)] = offset

    def committed(
        self, partitions: Iterable[TopicPartition | tuple[str, int]]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        if self.group is None:
            raise InvalidRequest("committed offsets need a group", field="group")
        return self.log.groups.committed(self.group, [TopicPartition(*tp) for tp in partitions])

    def _current_positions(self) -> dict[TopicPartition, OffsetAndMetadata | int]:
        return {tp: self._positions[tp] for tp in sorted(self._owned) if tp in self._positions}

    def _auto_commit(self) -> None:
        changed = {
            tp: offset
            for tp, offset in self._current_positions().items()
            if self._committed_positions.get(tp) != offset
        }
        self._next_auto_commit = time.monotonic() + self.auto_commit_interval_s
        if changed:
            try:
                self._commit(changed)
            except ObjectLogError as e:  # fenced or unavailable: the next owner re-reads them
                logger.warning("auto-commit of group %s failed: %s", self.group, e)

    # ---- group membership --------------------------------------------------------------

    def _maintain(self) -> None:
        if self._subscription is not None:
            if self._membership is None:
                self._join()
            elif time.monotonic() >= self._next_heartbeat:
                self._heartbeat()
        if self.enable_auto_commit and time.monotonic() >= self._next_auto_commit:
            self._auto_commit()

    def _join(self) -> None:
        assert self.group is not None and self._subscription is not None
        membership = self.log.groups.join(
            self.group,
            self._subscription,
            client_id=self.client_id,
            session_timeout_ms=self.session_timeout_ms,
            strategies=self.strategies,
        )
        self._apply(membership)

    def _heartbeat(self) -> None:
        assert self.group is not None and self._membership is not None
        try:
            membership = self.log.groups.heartbeat(
                self.group, self._membership.member_id, owned=sorted(self._owned)
            )
        except UnknownMemberId:
            self._membership = None
            self._lose(set(self._owned))
            self._join()
            return
        self._apply(membership)

    def _apply(self, membership: Membership) -> None:
        """Settle a new view: revoke what moved away, drop what was lost, take what came."""
        assert self.group is not None
        claimed = set(membership.claimed)
        revoked = (self._owned | set(membership.owned)) - set(membership.assigned)
        if revoked:
            if self.on_revoke is not None:
                self.on_revoke(set(revoked))
            finals: dict[TopicPartition, OffsetAndMetadata | None] = {
                tp: self._final_offset(tp) for tp in revoked
            }
            try:
                membership = self.log.groups.heartbeat(
                    self.group,
                    membership.member_id,
                    owned=sorted(self._owned - revoked),
                    release=finals,
                )
            except UnknownMemberId:  # removed meanwhile (its session lapsed): rejoin next poll
                self._membership = None
                self._lose(set(self._owned))
                return
            finally:
                # Given up whatever the answer: a release that applied with its answer lost
                # must not leave the old positions here for when the partitions come back.
                # A release that did not apply shows them as still ours on the next heartbeat.
                self._drop(revoked)
            claimed |= set(membership.claimed)
        # Claimed now but held before: lost meanwhile without notice (another member's stale
        # view took it, and gave it back); the position kept here is older than its commits.
        self._lose((self._owned - set(membership.owned)) | (self._owned & claimed))
        added = set(membership.owned) - self._owned
        self._owned |= added
        self._membership = membership
        pending = set(membership.assigned) != set(membership.owned)
        interval = (
            min(self.heartbeat_interval_s, CLAIM_RETRY_S) if pending else self.heartbeat_interval_s
        )
        self._next_heartbeat = time.monotonic() + interval
        if added and self.on_assign is not None:
            self.on_assign(set(added))

    def _final_offset(self, tp: TopicPartition) -> OffsetAndMetadata | None:
        """What to store when giving a partition up: the position, with auto-commit."""
        position = self._positions.get(tp)
        if not self.enable_auto_commit or position is None:
            return None
        if self._committed_positions.get(tp) == position:
            return None
        return OffsetAndMetadata(position)

    def _lose(self, lost: set[TopicPartition]) -> None:
        """Partitions taken over by another member: drop them without committing."""
        if not lost:
            return
        callback = self.on_lost or self.on_revoke
        if callback is not None:
            callback(set(lost))
        self._drop(lost)

    def _drop(self, partitions: set[TopicPartition]) -> None:
        self._owned -= partitions
        self._paused -= partitions
        for tp in partitions:
            self._positions.pop(tp, None)
            self._committed_positions.pop(tp, None)

    def _leave(self) -> None:
        assert self.group is not None and self._membership is not None
        owned = set(self._owned)
        if self.on_revoke is not None and owned:
            self.on_revoke(owned)
        finals = {tp: self._final_offset(tp) for tp in owned}
        try:
            self.log.groups.leave(self.group, self._membership.member_id, release=finals)
        finally:
            self._membership = None
            self._drop(owned)

    # ---- state kept outside the process -------------------------------------------------

    def state(self) -> ConsumerState:
        """What this consumer carries between polls (restore() takes it back)."""
        return ConsumerState(
            subscription=self._subscription,
            membership=self._membership,
            owned=frozenset(self._owned),
            positions=dict(self._positions),
            paused=frozenset(self._paused),
            committed=dict(self._committed_positions),
            heartbeat_due_ms=_wall_ms(self._next_heartbeat),
            auto_commit_due_ms=_wall_ms(self._next_auto_commit),
        )

    def restore(self, state: ConsumerState) -> None:
        """Continue where the consumer that gave this state stopped (in any process)."""
        self._subscription = state.subscription
        self._membership = state.membership
        self._owned = set(state.owned)
        self._positions = dict(state.positions)
        self._paused = set(state.paused)
        self._committed_positions = dict(state.committed)
        self._next_heartbeat = _monotonic_s(state.heartbeat_due_ms)
        self._next_auto_commit = _monotonic_s(state.auto_commit_due_ms)
        self._ahead.clear()

    # ---- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """Leave the group (its partitions move at once, with auto-commit's final commit)."""
        if self._closed:
            return
        try:
            with self._state_lock:  # after a commit or poll in flight (the asyncio client)
                if self._membership is not None:
                    self._leave()
                elif self.enable_auto_commit and self._owned:
                    self._auto_commit()
        finally:
            self._closed = True
            self._ahead.close()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidRequest("the consumer is closed")

    def _owned_partition(self, partition: TopicPartition | tuple[str, int]) -> TopicPartition:
        tp = TopicPartition(*partition)
        if tp not in self._owned:
            raise InvalidRequest(
                f"{tp.topic}/{tp.partition} is not assigned to this consumer", field="partition"
            )
        return tp

    def _targets(self, partitions: Iterable[TopicPartition] | None) -> list[TopicPartition]:
        if partitions is None:
            return sorted(self._owned)
        return [self._owned_partition(tp) for tp in partitions]


def record_bytes(record: Record) -> int:
    """What max_bytes counts of a record: its key and value."""
    return len(record.key or b"") + len(record.value or b"")


def _wall_ms(monotonic_s: float) -> int:
    return int((time.time() + monotonic_s - time.monotonic()) * 1000)


def _monotonic_s(wall_ms: int) -> float:
    return time.monotonic() + wall_ms / 1000 - time.time()
