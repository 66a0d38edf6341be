"""KIP-848's consumer group protocol (ConsumerGroupHeartbeat) on objectlog's own groups.

The protocol and objectlog's groups have the same shape: the server assigns (objectlog's
assignors: KIP-848's "uniform" is objectlog's sticky, "range" its range), members heartbeat
with the partitions they own, and a partition moves only once its previous owner has given
it up. A heartbeat renews the member, releases what it no longer owns and is no longer
assigned, claims what is assigned and free, and answers with the partitions the member may
consume now: assigned and claimed. The member epoch is the group's generation. A member that
reports a partition the heartbeat had to claim again (it lost it unnoticed, to a member with a
stale view) is removed and answered FENCED_MEMBER_EPOCH: it rejoins from the commits. A
heartbeat whose partitions are null ("unchanged since the last heartbeat") is checked against
the partitions the member last reported to this agent.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from typing import Any

from kio.schema.errors import ErrorCode

from objectlog.cache import LruCache
from objectlog.errors import ObjectLogError
from objectlog.groups import Membership, TopicPartition
from objectlog.kafka.classic import DOCUMENT_KIND
from objectlog.kafka.context import ApiContext, topic_uuid
from objectlog.kafka.errors import error_code
from objectlog.kafka.wire import Request

LEAVE_EPOCHS = (-1, -2)  # leave; a static member's temporary leave
HEARTBEAT_INTERVAL_MS = 2_000
SESSION_TIMEOUT_MS = 45_000  # Kafka's group.consumer.session.timeout.ms default
ASSIGNORS = {"uniform": "sticky", "range": "range"}
REPORTS_KEPT = 10_000  # members whose last reported partitions an agent remembers


class ConsumerProtocolApi:
    def __init__(self, ctx: ApiContext, session_timeout_ms: int = SESSION_TIMEOUT_MS) -> None:
        self.ctx = ctx
        self.session_timeout_ms = session_timeout_ms
        # (group, member) -> the partitions its last heartbeat with them reported owning
        self._last_reported: LruCache[tuple[str, str], frozenset[TopicPartition]] = LruCache(
            REPORTS_KEPT
        )

    async def consumer_group_heartbeat(self, request: Request) -> dict[str, Any]:
        body = request.body
        try:
            return await self.ctx.call(self._heartbeat, body, request.client_id or "")
        except ObjectLogError as e:
            return {
                "throttle_time": 0,
                "error_code": error_code(e),
                "error_message": str(e),
                "member_id": body.member_id,
                "member_epoch": body.member_epoch,
                "heartbeat_interval": HEARTBEAT_INTERVAL_MS,
                "assignment": None,
            }

    def _heartbeat(self, body: Any, client_id: str) -> dict[str, Any]:
        groups = self.ctx.log.groups
        if self.ctx.log.items.documents.read(DOCUMENT_KIND, body.group_id)[0] is not None:
            return _answer(body, ErrorCode.inconsistent_group_protocol)
        if body.member_epoch in LEAVE_EPOCHS:
            groups.leave(body.group_id, body.member_id)
            self._owns_nothing(body.group_id, body.member_id)
            return {**_answer(body, ErrorCode.none), "member_epoch": body.member_epoch}
        if body.member_epoch == 0:
            strategy = ASSIGNORS.get(body.server_assignor or "uniform", "sticky")
            membership = groups.join(
                body.group_id,
                body.subscribed_topic_names or (),
                client_id=client_id,
                session_timeout_ms=self.session_timeout_ms,
                strategies=(strategy,),
                member_id=body.member_id or None,  # v1: the client chose it (KIP-1082)
            )
            self._owns_nothing(body.group_id, membership.member_id)
        else:
            reported = self._reported(body.topic_partitions)
            membership = self._renewed(body, reported)
            member = (body.group_id, body.member_id)
            if reported is not None:  # null: unchanged since the last report
                self._last_reported.put(member, frozenset(reported))
            owned = self._last_reported.get(member)  # None: no report seen by this agent
            if owned and set(membership.claimed) & owned:
                # It held them, lost them unnoticed and got them back: its positions are stale.
                # Kafka's answer to a member whose partitions are lost: rejoin from the commits.
                groups.leave(body.group_id, body.member_id)
                self._owns_nothing(body.group_id, body.member_id)
                return _answer(body, ErrorCode.fenced_member_epoch)
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "error_message": None,
            "member_id": membership.member_id,
            "member_epoch": membership.generation,
            "heartbeat_interval": HEARTBEAT_INTERVAL_MS,
            "assignment": {"topic_partitions": self._assignment(membership)},
        }

    def _renewed(self, body: Any, owned: set[TopicPartition] | None) -> Membership:
        groups = self.ctx.log.groups
        membership = groups.heartbeat(body.group_id, body.member_id, owned=owned or ())
        if owned is None:  # unchanged since the last heartbeat: nothing given up
            return membership
        given_up = set(membership.owned) - owned - set(membership.assigned)
        if not given_up:
            return membership
        release: dict[TopicPartition, Any] = dict.fromkeys(given_up)
        again = groups.heartbeat(body.group_id, body.member_id, owned=owned, release=release)
        return replace(again, claimed=tuple(sorted({*membership.claimed, *again.claimed})))

    def _owns_nothing(self, group_id: str, member_id: str) -> None:
        """A member that joined, left or was fenced holds no partition until it reports some."""
        self._last_reported.put((group_id, member_id), frozenset())

    def _reported(self, topic_partitions: Any) -> set[TopicPartition] | None:
        if topic_partitions is None:
            return None
        names = {topic_uuid(self.ctx.log.topic(n).topic_id): n for n in self.ctx.log.list_topics()}
        return {
            TopicPartition(names[t.topic_id], p)
            for t in topic_partitions
            if t.topic_id in names
            for p in t.partitions
        }

    def _assignment(self, membership: Membership) -> list[dict[str, Any]]:
        """What the member may consume now: assigned and claimed, by topic id."""
        ready: Collection[TopicPartition] = set(membership.owned) & set(membership.assigned)
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(ready):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        return [
            {"topic_id": topic_uuid(self.ctx.log.topic(name).topic_id), "partitions": parts}
            for name, parts in by_topic.items()
        ]


def _answer(body: Any, code: ErrorCode) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "error_code": code,
        "error_message": None,
        "member_id": body.member_id,
        "member_epoch": body.member_epoch,
        "heartbeat_interval": HEARTBEAT_INTERVAL_MS,
        "assignment": None,
    }
