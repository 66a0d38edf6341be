"""Group APIs: FindCoordinator, the classic protocol (kafka.classic), OffsetCommit and
OffsetFetch.

Every agent is the coordinator of every group (it advertises one broker). A classic group's
state is a versioned document in the table: each request reads it, applies its transition and
writes it back conditional on the version it read, retrying on a conflict; JoinGroup and
SyncGroup wait for the other members by reading it again until the rebalance completes, so
members on different agents meet. Offsets are objectlog's group offsets; a commit names the
generation and member it comes from and is refused when they are not the group's.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

from objectlog.errors import CommitFailed, ObjectLogError
from objectlog.groups import OffsetAndMetadata, TopicPartition
from objectlog.kafka import classic
from objectlog.kafka.classic import (
    COMPLETING,
    DOCUMENT_KIND,
    PREPARING,
    STABLE,
    ClassicGroup,
    Member,
)
from objectlog.kafka.context import ApiContext, request_connection
from objectlog.kafka.errors import error_code
from objectlog.kafka.group_offsets import OffsetFetchApi
from objectlog.kafka.wakeups import Wakeups
from objectlog.kafka.wire import Request
from objectlog.stores.documents import ABSENT

T = TypeVar("T")
logger = logging.getLogger(__name__)
WRITE_TRIES = 20
WAIT_S = (0.02, 0.25)  # a waiting JoinGroup or SyncGroup reads the group again this often
MEMBER_ID_REQUIRED_FROM = 4  # JoinGroup version
RENEW_SHARE = 0.2  # a heartbeat writes the member's session when older than this share


class GroupError(Exception):
    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


class GroupsApi:
    def __init__(self, ctx: ApiContext, initial_rebalance_delay_ms: int) -> None:
        self.ctx = ctx
        self.documents = ctx.log.items.documents
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms  # classic.start_rebalance
        self.wakeups = Wakeups()  # this agent's waiters, woken by its own writes
        self.offsets = OffsetFetchApi(ctx)
        self._loop: asyncio.AbstractEventLoop | None = None  # the waiters' (set when waiting)

    # ---- the group document ------------------------------------------------------------

    def _now(self) -> int:
        return self.ctx.log.clock.now_ms()

    def _read(self, group_id: str) -> tuple[ClassicGroup, int]:
        try:
            body, version = self.documents.read(DOCUMENT_KIND, group_id)
        except ObjectLogError as e:  # the client retries, as with an unavailable coordinator
            raise GroupError(ErrorCode.coordinator_not_available) from e
        return ClassicGroup.from_json(body), version

    def _update(
        self,
        group_id: str,
        change: Callable[[ClassicGroup, int], T],
        read: tuple[ClassicGroup, int] | None = None,
    ) -> T:
        """Apply change(group, now) and store the group, retrying on a concurrent write; the
        expiry of lapsed members and overdue rebalances comes first, as every reader sees it.
        A write whose answer was lost may have landed: the client retries, and every change
        is one a retry finds already made. ``read``: the group as just read, for the first
        try."""
        for _ in range(WRITE_TRIES):
            group, version = read or self._read(group_id)
            read = None
            before = _summary(group)
            now = self._now()
            classic.expire(group, now)
            result = change(group, now)
            try:
                written = self.documents.write(
                    DOCUMENT_KIND, group_id, group.to_json(), seen=version
                )
                if written and version == ABSENT:
                    self.ctx.log.items.groups.register(group_id)
            except ObjectLogError as e:
                raise GroupError(ErrorCode.coordinator_not_available) from e
            if written:
                if _summary(group) != before:
                    logger.info("group %s: %s (was %s)", group_id, _summary(group), before)
                self._wake(group_id)
                return result
        raise GroupError(ErrorCode.coordinator_load_in_progress)

    def _wake(self, group_id: str) -> None:
        """Wake this agent's waiters on the group (from a worker thread)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self.wakeups.wake, group_id)

    def _observe(self, group_id: str, read: tuple[ClassicGroup, int] | None = None) -> ClassicGroup:
        """The group as it is now (or as just read), expiries applied (and stored when they
        changed it)."""
        group, _ = read or self._read(group_id)
        if classic.expire(group, self._now()):
            return self._update(group_id, lambda g, now: g)
        return group

    async def _wait_for(
        self, group_id: str, ready: Callable[[ClassicGroup], bool], timeout_ms: int
    ) -> ClassicGroup:
        """The group once ready(group), or as it is at the deadline: read again when this
        agent changes it (at once) or another may have (every WAIT_S, backing off)."""
        self._loop = asyncio.get_running_loop()
        deadline = time.monotonic() + timeout_ms / 1000
        pause = WAIT_S[0]
        while True:
            changed = self.wakeups.watch(group_id)
            group = await self.ctx.call(self._observe, group_id)
            if ready(group) or time.monotonic() >= deadline:
                return group
            woken = await self.wakeups.until_woken(changed, pause)
            pause = WAIT_S[0] if woken else min(pause * 2, WAIT_S[1])

    # ---- FindCoordinator -----------------------------------------------------------------

    async def find_coordinator(self, request: Request) -> dict[str, Any]:
        body = request.body
        keys = getattr(body, "coordinator_keys", None) or (getattr(body, "key", ""),)
        node = self.ctx.broker.as_node()
        coordinators = [{"key": key, **node, "error_code": ErrorCode.none} for key in keys]
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            **{k: v for k, v in node.items() if k != "rack"},
            "coordinators": coordinators,
        }

    # ---- JoinGroup, SyncGroup, Heartbeat, LeaveGroup -----------------------------------

    async def join_group(self, request: Request) -> dict[str, Any]:
        body = request.body
        member_id = body.member_id
        named = bool(member_id)  # a member id the group must know (a member, or pending)
        session_timeout_ms = int(body.session_timeout.total_seconds() * 1000)
        if not named:
            member_id = classic.new_member_id(request.client_id or "")
            if request.api_version >= MEMBER_ID_REQUIRED_FROM:  # the client joins again
                try:
                    await self.ctx.call(
                        self._update,
                        body.group_id,
                        lambda g, now: classic.hand_out(g, member_id, session_timeout_ms, now),
                    )
                except GroupError as e:
                    return _join_answer(e.code, member_id="")
                return _join_answer(ErrorCode.member_id_required, member_id=member_id)
        rebalance_timeout = getattr(body, "rebalance_timeout", body.session_timeout)
        member = Member(
            member_id=member_id,
            client_id=request.client_id or "",
            instance_id=getattr(body, "group_instance_id", None),
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=int(rebalance_timeout.total_seconds() * 1000),
            protocols=[(p.name, classic.encode(p.metadata)) for p in body.protocols],
            joined=0,
            seen_ms=0,
        )

        def joined(group: ClassicGroup, now: int) -> int:
            if named and not classic.admits(group, member_id):  # dropped, or never handed out
                raise GroupError(ErrorCode.unknown_member_id)
            if group.protocol_type not in (None, body.protocol_type) and group.members:
                raise GroupError(ErrorCode.inconsistent_group_protocol)
            group.protocol_type = body.protocol_type
            classic.join(group, member, now, self.initial_rebalance_delay_ms)
            return group.members[member_id].joined

        try:
            generation = await self.ctx.call(self._update, body.group_id, joined)
            group = await self._wait_for(
                body.group_id,
                lambda g: member_id not in g.members or g.generation >= generation,
                max(member.rebalance_timeout_ms, self.initial_rebalance_delay_ms) + 5_000,
            )
        except GroupError as e:
            return _join_answer(e.code, member_id=member_id)
        generation_members = classic.join_result(group, member_id)
        if generation_members is None:
            return _join_answer(ErrorCode.unknown_member_id, member_id=member_id)
        if group.protocol is None:
            return _join_answer(ErrorCode.inconsistent_group_protocol, member_id=member_id)
        members = []
        if member_id == group.leader:
            members = [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.instance_id,
                    "metadata": m.metadata(group.protocol),
                }
                for m in generation_members
            ]
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "generation_id": group.generation,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol,
            "leader": group.leader or "",
            "member_id": member_id,
            "members": members,
        }

    async def sync_group(self, request: Request) -> dict[str, Any]:
        body = request.body

        def synced(group: ClassicGroup, now: int) -> None:
            member = _checked_member(group, body.member_id, body.generation_id)
            member.seen_ms, member.synced = now, body.generation_id
            if group.phase == PREPARING:
                raise GroupError(ErrorCode.rebalance_in_progress)
            if body.member_id == group.leader and group.phase == COMPLETING:
                classic.sync(
                    group, body.member_id, {a.member_id: a.assignment for a in body.assignments}
                )

        try:
            await self.ctx.call(self._update, body.group_id, synced)
            group = await self._wait_for(
                body.group_id,
                lambda g: g.phase != COMPLETING or g.generation != body.generation_id,
                60_000,
            )
            member = _checked_member(group, body.member_id, body.generation_id)
            if group.phase != STABLE or member.assignment is None:
                raise GroupError(ErrorCode.rebalance_in_progress)
        except GroupError as e:
            return {"throttle_time": 0, "error_code": e.code, "assignment": b""}
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol,
            "assignment": base64.b64decode(member.assignment),
        }

    async def heartbeat(self, request: Request) -> dict[str, Any]:
        try:
            code = await self.ctx.call(self._beat, request.body)
        except GroupError as e:
            code = e.code
        return {"throttle_time": 0, "error_code": code}

    def _beat(self, body: Any) -> ErrorCode:
        """Renew the member's session in the group's document; a stable group's member whose
        stored session is younger than RENEW_SHARE of its timeout is answered from the read
        alone (Kafka's clients beat every 3 s of a 45 s session: a write every third beat,
        not every one). A member that stops beating lapses up to that share early (from 36 s
        after its last beat, at 45 s), never late; one that beats never nears it."""
        read = self._read(body.group_id)
        group, now = ClassicGroup.from_json(read[0].to_json()), self._now()
        if not classic.expire(group, now) and group.phase == STABLE:
            member = _checked_member(group, body.member_id, body.generation_id)
            if now - member.seen_ms < member.session_timeout_ms * RENEW_SHARE:
                return ErrorCode.none

        def beat(group: ClassicGroup, now: int) -> ErrorCode:
            member = _checked_member(group, body.member_id, body.generation_id)
            member.seen_ms = now
            return ErrorCode.rebalance_in_progress if group.phase == PREPARING else ErrorCode.none

        return self._update(body.group_id, beat, read)

    async def leave_group(self, request: Request) -> dict[str, Any]:
        body = request.body
        leaving = (
            [m.member_id for m in body.members] if hasattr(body, "members") else [body.member_id]
        )
        try:
            unknown = await self.ctx.call(
                self._update, body.group_id, lambda g, now: classic.leave(g, leaving, now)
            )
        except GroupError as e:
            return {"throttle_time": 0, "error_code": e.code, "members": []}
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.unknown_member_id
            if len(unknown) == len(leaving) and not hasattr(body, "members")
            else ErrorCode.none,
            "members": [
                {
                    "member_id": m,
                    "group_instance_id": None,
                    "error_code": ErrorCode.unknown_member_id if m in unknown else ErrorCode.none,
                }
                for m in leaving
            ],
        }

    # ---- OffsetCommit, OffsetFetch -------------------------------------------------------

    async def offset_commit(self, request: Request) -> dict[str, Any]:
        body = request.body
        generation = getattr(body, "generation_id_or_member_epoch", None)
        if generation is None:
            generation = getattr(body, "generation_id", -1)
        offsets = {
            TopicPartition(topic.name, p.partition_index): OffsetAndMetadata(
                p.committed_offset, p.committed_metadata or ""
            )
            for topic in body.topics
            for p in topic.partitions
        }
        leader_epochs = {  # v6+: kept beside the offset, answered by OffsetFetch
            TopicPartition(topic.name, p.partition_index): p.committed_leader_epoch
            for topic in body.topics
            for p in topic.partitions
            if getattr(p, "committed_leader_epoch", -1) >= 0
        }
        errors = await self.ctx.call(
            self._commit, body.group_id, body.member_id, generation, offsets, leader_epochs
        )
        return {
            "throttle_time": 0,
            "topics": [
                {
                    "name": topic.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "error_code": errors.get(
                                TopicPartition(topic.name, p.partition_index), ErrorCode.none
                            ),
                        }
                        for p in topic.partitions
                    ],
                }
                for topic in body.topics
            ],
        }

    def _commit(
        self,
        group_id: str,
        member_id: str,
        generation: int,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        leader_epochs: dict[TopicPartition, int],
    ) -> dict[TopicPartition, ErrorCode]:
        """Each partition's error (none when stored). A classic group's member is checked
        against the group's document; a KIP-848 member's commit is fenced by objectlog's
        offset items (the member must own the partition at its epoch)."""
        body, version = self.documents.read(DOCUMENT_KIND, group_id)  # one read for both
        native = body is None and bool(member_id)
        if not native:
            try:
                read = (ClassicGroup.from_json(body), version)
                code = self._commit_check(group_id, member_id, generation, read)
            except GroupError as e:
                code = e.code
            if code != ErrorCode.none:
                return dict.fromkeys(offsets, code)
        errors = {}
        for tp, value in offsets.items():  # one at a time: one bad partition fails alone
            try:
                if native:
                    self.ctx.log.groups.commit(
                        group_id,
                        {tp: value},
                        member_id=member_id,
                        generation=generation,
                        leader_epochs=leader_epochs,
                    )
                else:  # fenced in the item too: a later generation's commit stays
                    self.ctx.log.groups.commit(
                        group_id,
                        {tp: value},
                        generation=generation,
                        leader_epochs=leader_epochs,
                        # an unchanged offset through this connection is not written again
                        session=request_connection() if generation >= 0 else None,
                    )
            except CommitFailed:
                errors[tp] = (
                    ErrorCode.stale_member_epoch if native else ErrorCode.illegal_generation
                )
            except ObjectLogError as e:
                errors[tp] = error_code(e)
        return errors

    def member_check(
        self,
        group_id: str,
        member_id: str | None,
        generation: int,
        mark: str,
        partitions: Sequence[TopicPartition],
    ) -> ErrorCode:
        """KIP-447's check of a TxnOffsetCommit's member (kafka/transactions.py), which marks
        the partitions' offsets pending in the transaction (mark) as it passes: a classic
        group's member in its generation (its document), then the offset items as a classic
        commit fences them; a KIP-848 member must own each partition at its epoch, as its
        OffsetCommit must. member_id None: a commit that names no member (Kafka does not
        check it)."""
        classic = self.documents.read(DOCUMENT_KIND, group_id)[0] is not None
        native = bool(member_id) and not classic  # a KIP-848 member (member_id "" is classic's)
        if member_id is not None and not native:
            try:
                code = self._commit_check(group_id, member_id, generation)
            except GroupError as e:
                code = e.code
            if code != ErrorCode.none:
                return code
        try:
            self.ctx.log.groups.transactional.hold(
                group_id,
                mark,
                partitions,
                member_id=member_id if native else None,
                generation=generation if member_id is not None else -1,
            )
        except CommitFailed:
            return ErrorCode.illegal_generation
        return ErrorCode.none

    def _commit_check(
        self,
        group_id: str,
        member_id: str,
        generation: int,
        read: tuple[ClassicGroup, int] | None = None,
    ) -> ErrorCode:
        """Kafka's fencing: a commit from outside the group (generation -1, no member) only
        while the group has no members; else the member must be in the group's generation.
        ``read``: the group's document as just read."""
        group = self._observe(group_id, read)
        if generation < 0 and not member_id:
            return ErrorCode.none if not group.members else ErrorCode.unknown_member_id
        try:
            _checked_member(group, member_id, generation)
        except GroupError as e:
            return e.code
        if group.phase == COMPLETING:
            return ErrorCode.rebalance_in_progress
        return ErrorCode.none

    async def offset_fetch(self, request: Request) -> dict[str, Any]:
        return await self.offsets.offset_fetch(request)


def _summary(group: ClassicGroup) -> str:
    """The group's generation, phase and members, for the log."""
    return f"generation {group.generation} {group.phase} members {sorted(group.members)}"


def _checked_member(group: ClassicGroup, member_id: str, generation: int) -> Member:
    member = group.members.get(member_id)
    if member is None:
        raise GroupError(ErrorCode.unknown_member_id)
    if generation != group.generation:
        raise GroupError(ErrorCode.illegal_generation)
    return member


def _join_answer(code: ErrorCode, *, member_id: str) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "error_code": code,
        "generation_id": -1,
        "protocol_name": None,
        "leader": "",
        "member_id": member_id,
        "members": [],
    }
