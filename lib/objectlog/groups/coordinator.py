"""Consumer groups without a coordinator process: every member runs the protocol itself.

Membership lives in the group item; a change (join, leave, an expired lease found by anyone,
new partitions) rewrites it at generation + 1 with a new assignment, conditional on the
generation it read, so concurrent changes serialize. The assignment is a target: a partition
moves to its new member only when that member claims the partition's offset item, and it may
claim it only from no owner or from an owner that is no longer in the group. A live previous
owner learns of the move on its next heartbeat, commits (or drops) its position and releases
the item, so revoked partitions are settled before they move (Kafka's cooperative protocol).
A commit is one conditional UpdateItem on the offset item: owner and generation must match,
so a zombie member's commit is rejected; one that would store what is stored is not written
(groups.unchanged).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from objectlog.clock import Clock
from objectlog.errors import (
    ConcurrentModification,
    GroupNotEmpty,
    GroupNotFound,
    InvalidRequest,
    TopicNotFound,
    UnknownMemberId,
    UnknownPartition,
)
from objectlog.format.topics import Topic, check_partition
from objectlog.groups.assignors import DEFAULT_STRATEGIES, assign, choose_strategy
from objectlog.groups.resets import ResetTo, reset_target
from objectlog.groups.settled import SettledMembers
from objectlog.groups.transactional_offsets import TransactionalOffsets
from objectlog.groups.unchanged import Committed, UnchangedCommits, store_commits
from objectlog.groups.values import (
    GroupDescription,
    MemberDescription,
    Membership,
    OffsetAndMetadata,
    PartitionOffset,
    all_partitions,
    committed_offsets,
    covers,
    group_phase,
    member_info,
    offset_value,
    partition_heads,
    subscribed_topics,
    validate_group_name,
)
from objectlog.stores.groups import GroupState, GroupStore, MemberInfo, OffsetItem, TopicPartition
from objectlog.stores.metadata import ACTIVE, MetadataStore
from objectlog.stores.transactions import marking_id

REBALANCE_ATTEMPTS = 20


class GroupCoordinator:
    """The group protocol over DynamoDB, run by whichever member (or admin) calls it."""

    def __init__(
        self,
        metadata: MetadataStore,
        store: GroupStore,
        clock: Clock,
        offset_for_time: Callable[[str, int, int], int | None],
        pending: Callable[[str, str], bool] | None = None,
    ) -> None:
        """pending: groups.transactional_offsets' check of a transaction's marks."""
        self.metadata = metadata
        self.store = store
        self.clock = clock
        self.offset_for_time = offset_for_time  # ObjectLog.offset_for_time
        self.unchanged = UnchangedCommits()  # every write to an offset item goes past it
        self.transactional = TransactionalOffsets(
            store, clock, pending, self._track, self.unchanged
        )
        self._tracked: set[tuple[str, str]] = set()
        self.settled = SettledMembers()  # a settled member's heartbeat reads no offset item

    # ---- membership --------------------------------------------------------------------

    def join(
        self,
        group: str,
        topics: Collection[str],
        *,
        client_id: str = "objectlog",
        session_timeout_ms: int = 10_000,
        strategies: Sequence[str] = DEFAULT_STRATEGIES,
        member_id: str | None = None,
    ) -> Membership:
        """Join as a new member (with the member id given, as KIP-848 clients choose their
        own, or a new one); the group rebalances at the next generation."""
        validate_group_name(group)
        info = member_info(topics, client_id, session_timeout_ms, strategies)
        self._require_topics(info.topics)
        member_id = member_id or f"{client_id}-{uuid.uuid4()}"
        now = self.clock.now_ms()
        self.store.put_member(group, member_id, now, session_timeout_ms)
        try:
            state = self._rebalance(group, add=(member_id, info))
        except BaseException:
            self.store.delete_members(group, [member_id])
            raise
        self.store.register(group)
        self.unchanged.renewed(group, member_id, now + session_timeout_ms)
        return self._settle(state, member_id)

    def heartbeat(
        self,
        group: str,
        member_id: str,
        *,
        owned: Collection[TopicPartition] = (),
        release: Mapping[TopicPartition, OffsetAndMetadata | None] | None = None,
    ) -> Membership:
        """Renew the member's lease, expire lapsed members, release what the member gave up
        (storing its final offset when given) and claim assigned partitions that are free.
        The offset items, not ``owned`` (what the member believes it holds), say what it owns.
        Raises UnknownMemberId when the member is no longer in the group: join again."""
        validate_group_name(group)
        self.unchanged.gone(group, member_id)  # until renewed below
        now = self.clock.now_ms()
        if not self.store.renew_member(group, member_id, now):
            raise UnknownMemberId(f"member {member_id} is not in group {group}: join again")
        state = self._rebalance(group)
        if member_id not in state.members:
            self.store.delete_members(group, [member_id])
            raise UnknownMemberId(f"member {member_id} was removed from group {group}: join again")
        self.unchanged.renewed(group, member_id, now + state.members[member_id].session_timeout_ms)
        if release:
            self.settled.forget(group, member_id)
        self._release(group, member_id, release or {})
        view = self._settle(state, member_id, owned)
        if view.claimed and member_id not in self.store.get_group(group).members:  # paused
            self._release(group, member_id, dict.fromkeys(view.claimed))  # claimed back, stale
            self.unchanged.gone(group, member_id)
            raise UnknownMemberId(f"member {member_id} was removed from group {group} meanwhile")
        return view

    def leave(
        self,
        group: str,
        member_id: str,
        *,
        release: Mapping[TopicPartition, OffsetAndMetadata | None] | None = None,
    ) -> None:
        """Leave the group: release its partitions (with final offsets if given), rebalance."""
        validate_group_name(group)
        self.unchanged.gone(group, member_id)
        state = self.store.get_group(group)
        self._release(group, member_id, release or {})
        still_held = state.assignment.get(member_id, ())
        if still_held:
            _, items = self.store.read(group, [], still_held)
            held = {tp: None for tp, item in items.items() if item.owner == member_id}
            self._release(group, member_id, held)
        self._rebalance(group, remove=member_id)
        self.store.delete_members(group, [member_id])

    # ---- offsets -----------------------------------------------------------------------

    def commit(
        self,
        group: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        *,
        member_id: str | None = None,
        generation: int = -1,
        leader_epochs: Mapping[TopicPartition, int] | None = None,
        session: str | None = None,
    ) -> None:
        """Store committed offsets: by the member that owns each partition in its generation,
        or (member_id None) by a consumer outside the group while no member owns them.

        Any offset of a partition that exists is kept, past the high watermark or below the log
        start, as in Kafka, with ``leader_epochs`` (Kafka's committed_leader_epoch). A commit
        of what this process last stored there through the same session (a Kafka connection) is not
        written (groups.unchanged). Raises CommitFailed when fenced.
        """
        validate_group_name(group)
        epochs, now = leader_epochs or {}, self.clock.now_ms()
        wanted = {
            TopicPartition(*tp): Committed.of(
                offset_value(v), member_id, generation, epochs.get(tp, -1), session
            )
            for tp, v in offsets.items()
        }
        todo = {tp: c for tp, c in wanted.items() if not self.unchanged.skips(group, tp, c, now)}
        self._check_partitions(todo)
        if member_id is None:
            self._track(group, {tp.topic for tp in wanted})
        if todo:  # something new: the member's next heartbeat reads its items (groups.settled)
            self.settled.forget(group, member_id)
        store_commits(self.store, self.unchanged, group, todo, now)

    def stable_committed(
        self, group: str, partitions: Iterable[TopicPartition], *, generation: int = 0
    ) -> tuple[dict[TopicPartition, OffsetAndMetadata | None], set[TopicPartition]]:
        """committed(), less the partitions whose offset a transaction that has not ended
        holds pending, answered apart (Kafka's require_stable: UNSTABLE_OFFSET_COMMIT)."""
        items = self.committed_items(group, partitions, generation=generation)
        unstable = self.transactional.unstable(group, items)
        return committed_offsets(items, unstable), unstable

    def committed(
        self, group: str, partitions: Iterable[TopicPartition], *, generation: int = 0
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The committed offsets (committed_items, for a consumer)."""
        return committed_offsets(
            self.committed_items(group, partitions, generation=generation), set()
        )

    def committed_items(
        self, group: str, partitions: Iterable[TopicPartition], *, generation: int = 0
    ) -> dict[TopicPartition, OffsetItem]:
        """The offset items. With a generation (a classic Kafka group's OffsetFetch), no older
        generation's commit lands after this read (each item is fenced first), as a broker
        checks and appends a commit under the group's lock (docs/kafka.md)."""
        validate_group_name(group)
        _, items = self.store.read(group, [], [TopicPartition(*tp) for tp in partitions])
        self.unchanged.observe(group, items)
        for tp, item in items.items():
            if generation > 0 and item.owner is None and item.owner_generation < generation:
                with self.unchanged.writing(group, [tp]):
                    items[tp] = self.store.fence(group, tp, generation)
        return items

    # ---- admin -------------------------------------------------------------------------

    def list_groups(self) -> list[str]:
        return self.store.group_names()

    def describe(self, group: str) -> GroupDescription:
        validate_group_name(group)
        state = self.store.get_group(group)
        if not state.exists:
            raise GroupNotFound(f"group {group!r} does not exist", field="group")
        counts = self._partition_counts(state.topics | subscribed_topics(state.members))
        partitions = all_partitions(counts)
        expiries, items = self.store.read(group, state.members, partitions)
        heads = partition_heads(self.metadata, partitions)
        members = tuple(
            MemberDescription(
                member_id=m,
                client_id=info.client_id,
                topics=info.topics,
                session_timeout_ms=info.session_timeout_ms,
                lease_expires_ms=expiries.get(m, 0),
                assigned=state.assignment.get(m, ()),
            )
            for m, info in sorted(state.members.items())
        )
        offsets = tuple(
            PartitionOffset(
                topic=tp.topic,
                partition=tp.partition,
                committed=items[tp].offset,
                metadata=items[tp].metadata,
                log_start_offset=heads[tp].log_start_offset,
                high_watermark=heads[tp].next_offset,
                owner=items[tp].owner if items[tp].owner in state.members else None,
                pending_transaction=marking_id(items[tp].pending),
            )
            for tp in partitions
            if tp in heads
        )
        return GroupDescription(
            group, group_phase(state, items), state.generation, state.strategy, members, offsets
        )

    def reset_offsets(
        self,
        group: str,
        topics: Collection[str],
        *,
        to: str = "earliest",
        timestamp_ms: int | None = None,
        offsets: Mapping[TopicPartition, int] | None = None,
        shift_by: int | None = None,
        dry_run: bool = False,
    ) -> dict[TopicPartition, int]:
        """Move the group's offsets, as ``kafka-consumer-groups.sh --reset-offsets`` does.

        ``to`` is one of earliest, latest, timestamp (with timestamp_ms), offset (explicit
        ``offsets``, clamped to each log's range) or current (with shift_by). Only while the
        group has no live members. Returns the new offsets (not stored when dry_run).
        """
        validate_group_name(group)
        state = self._rebalance(group)
        if state.members:
            raise GroupNotEmpty(
                f"group {group!r} has {len(state.members)} live member(s); stop them, or wait "
                "for their sessions to lapse, before resetting its offsets"
            )
        targets = self._reset_targets(group, topics, ResetTo(to, timestamp_ms, offsets, shift_by))
        if dry_run:
            return targets
        self._track(group, {tp.topic for tp in targets})
        now = self.clock.now_ms()
        for tp, offset in sorted(targets.items()):
            with self.unchanged.writing(group, [tp]):
                reset = self.store.reset(group, tp, offset, now, state.generation)
            if not reset:
                raise GroupNotEmpty(f"a member joined group {group!r} during the reset")
        return targets

    def delete_group(self, group: str) -> None:
        """Delete an empty group and its committed offsets."""
        validate_group_name(group)
        state = self._rebalance(group)
        if not state.exists:
            raise GroupNotFound(f"group {group!r} does not exist", field="group")
        if state.members:
            raise GroupNotEmpty(f"group {group!r} has {len(state.members)} live member(s)")
        partitions = all_partitions(self._partition_counts(state.topics))
        with self.unchanged.writing(group, partitions):
            self.store.delete_offsets(group, partitions)
        if not self.store.delete_group_item(group, state.generation):
            raise ConcurrentModification(f"group {group!r} changed during the delete; retry")
        self.store.unregister(group)
        self._tracked = {t for t in self._tracked if t[0] != group}

    # ---- the protocol ------------------------------------------------------------------

    def _rebalance(
        self,
        group: str,
        *,
        add: tuple[str, MemberInfo] | None = None,
        remove: str | None = None,
    ) -> GroupState:
        """Bring the group item up to date: add or remove a member, drop lapsed members,
        cover new partitions. A no-op (no write) when nothing changed."""
        for _ in range(REBALANCE_ATTEMPTS):
            state = self.store.get_group(group)
            if not state.exists and add is None:
                return state  # only a join creates a group
            expiries, _ = self.store.read(group, state.members, [])
            now = self.clock.now_ms()
            members = {
                m: info
                for m, info in state.members.items()
                if expiries.get(m, -1) >= now and m != remove
            }
            if add is not None:
                members[add[0]] = add[1]
            counts = self._partition_counts(subscribed_topics(members))
            if state.exists and members == state.members and covers(state, counts):
                return state
            new = self._next_state(state, members, counts, now)
            if self.store.replace_group(new, previous=state):
                lapsed = set(state.members) - set(members) - {remove}
                if lapsed:
                    self.store.delete_members(group, lapsed)
                return new
        raise ConcurrentModification(f"group {group!r} kept changing; retry")

    @staticmethod
    def _next_state(
        state: GroupState, members: dict[str, MemberInfo], counts: dict[str, int], now: int
    ) -> GroupState:
        strategy = choose_strategy(members)
        assignment = assign(
            strategy,
            {m: info.topics for m, info in members.items()},
            counts,
            previous=state.assignment,
        )
        return GroupState(
            name=state.name,
            generation=state.generation + 1,
            members=members,
            assignment={m: tuple(tps) for m, tps in assignment.items()},
            strategy=strategy if members else state.strategy,
            topics=state.topics | subscribed_topics(members),
            changed_ms=now,
            exists=True,
        )

    def _settle(
        self, state: GroupState, member_id: str, owned: Collection[TopicPartition] | None = None
    ) -> Membership:
        """Claim the member's assigned partitions that no live member holds, and find the
        ones it holds but is no longer assigned (it must release them): one BatchGetItem of
        the group's offset items, unless the member is settled (groups.settled). The member's
        own list (owned) alone is not trusted: an answer lost after a claim leaves a member
        holding items it does not know of. The answer names what this call claimed: a member
        must not keep positions for those."""
        now = self.clock.now_ms()
        known = self.settled.view(state, member_id, owned, now)
        if known is not None:
            return known
        assigned = state.assignment.get(member_id, ())
        everything = sorted({tp for tps in state.assignment.values() for tp in tps})
        _, items = self.store.read(state.name, [], everything)
        self.unchanged.observe(state.name, items)
        holding = {tp for tp in assigned if self._holds(state, member_id, tp, items[tp])}
        stray = {tp for tp, item in items.items() if item.owner == member_id} - set(assigned)
        view = Membership(
            group=state.name,
            member_id=member_id,
            generation=state.generation,
            strategy=state.strategy or DEFAULT_STRATEGIES[0],
            members=tuple(sorted(state.members)),
            assigned=tuple(sorted(assigned)),
            owned=tuple(sorted(holding | stray)),
            claimed=tuple(sorted(tp for tp in holding if items[tp].owner != member_id)),
        )
        self.settled.remember(view, now)
        return view

    def _holds(
        self, state: GroupState, member_id: str, tp: TopicPartition, item: OffsetItem
    ) -> bool:
        if item.owner == member_id:
            return True
        if item.owner is not None and item.owner in state.members:
            return False  # its previous owner has not released it yet
        with self.unchanged.writing(state.name, [tp]):
            claimed = self.store.claim(state.name, tp, member_id, state.generation, item.owner)
        if claimed:
            return True
        _, items = self.store.read(state.name, [], [tp])  # a repeated claim of ours fails too
        return items[tp].owner == member_id

    def _release(
        self,
        group: str,
        member_id: str,
        release: Mapping[TopicPartition, OffsetAndMetadata | None],
    ) -> None:
        now = self.clock.now_ms()
        for tp, final in sorted(release.items()):
            stored = None if final is None else (final.offset, final.metadata, now)
            with self.unchanged.writing(group, [tp]):
                self.store.release(group, TopicPartition(*tp), member_id, stored)

    # ---- helpers -----------------------------------------------------------------------

    def _require_topics(self, topics: Collection[str]) -> None:
        missing = sorted(set(topics) - set(self._partition_counts(topics)))
        if missing:
            raise TopicNotFound(f"topic(s) {', '.join(missing)} do not exist", field="topics")

    def _partition_counts(self, topics: Collection[str]) -> dict[str, int]:
        return {name: t.partitions for name, t in self._active_topics(topics).items()}

    def _active_topics(self, topics: Collection[str]) -> dict[str, Topic]:
        found = self.metadata.get_topics(sorted(topics)) if topics else {}
        return {name: t for name, t in found.items() if t.state == ACTIVE}

    def _check_partitions(self, partitions: Collection[TopicPartition]) -> None:
        """Check every offset's partition exists before storing any. The offset itself may be
        any (offset_value refuses a negative one), as Kafka's coordinator accepts it: a commit
        past the high watermark (AdminClient.alterConsumerGroupOffsets, a group reset ahead of
        the producers) is kept, and a consumer resuming there waits for the records."""
        topics = self._active_topics({tp.topic for tp in partitions})
        for tp in partitions:
            if tp.topic not in topics:
                raise TopicNotFound(f"topic {tp.topic!r} does not exist", field="topic")
            check_partition(topics[tp.topic], tp.partition)

    def _reset_targets(
        self, group: str, topics: Collection[str], reset: ResetTo
    ) -> dict[TopicPartition, int]:
        if isinstance(topics, str) or not topics:
            raise InvalidRequest("topics must be a non-empty list of topic names", field="topics")
        self._require_topics(topics)
        partitions = all_partitions(self._partition_counts(topics))
        if reset.to == "offset":
            if not reset.offsets:
                raise InvalidRequest("to=offset needs offsets", field="offsets")
            partitions = sorted(TopicPartition(*tp) for tp in reset.offsets)
        heads = partition_heads(self.metadata, partitions)
        current = self.committed(group, partitions) if reset.to == "current" else {}
        targets: dict[TopicPartition, int] = {}
        for tp in partitions:
            head = heads.get(tp)
            if head is None:
                raise UnknownPartition(f"there is no partition {tp.topic}/{tp.partition}")
            wanted = reset_target(tp, head, reset, current, self.offset_for_time)
            targets[tp] = min(max(wanted, head.log_start_offset), head.next_offset)
        return targets

    def _track(self, group: str, topics: Iterable[str]) -> None:
        new = sorted(t for t in topics if (group, t) not in self._tracked)
        if new:
            self.store.register(group)
            self.store.track_topics(group, new)
            self._tracked.update((group, t) for t in new)
