"""Kafka's classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) as a state
that any agent reads and replaces whole, conditional on its version (stores.documents), so
members connected to different agents meet in one group.

The transitions are pure functions of (state, request, now): a rebalance starts when a member
joins, changes its protocols, leaves or lets its session lapse; it completes when every member
has rejoined for the next generation or the rebalance timeout has passed (members that did not
rejoin are dropped); the leader's SyncGroup stores every member's assignment as Kafka sends
it, opaque bytes, and the group is Stable. Member ids are Kafka's: <client id>-<uuid>, handed
out with MEMBER_ID_REQUIRED (JoinGroup v4+) before the member may join; the group keeps them
as pending until they join or a session timeout passes. A JoinGroup naming any other member id
the group does not know (a member the group dropped) is refused with UNKNOWN_MEMBER_ID, as
Kafka's coordinator refuses it: the client then knows it lost its partitions and joins anew,
instead of carrying positions from its old membership into the new one.

A group that was Empty delays its first rebalance, as Kafka's group.initial.rebalance.delay.ms
does (KIP-134): the join completes once the delay has passed with no new member joining, each
new member extending it by another delay, up to the rebalance timeout. Members starting
together then share the first generation instead of one rebalance each.

A member waiting on the group is alive, as in Kafka's coordinator, since clients do not
heartbeat while they wait: one whose JoinGroup waits for the others (bounded by the rebalance
timeout), or whose SyncGroup waits for the leader's. A member that has its JoinGroup answer but
has not sent SyncGroup has a session from the moment the join completed, so a leader that never
assigns is dropped and the group rebalances without it.
"""

from __future__ import annotations

import base64
import json
import struct
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from kio.schema.consumer_protocol_subscription.v0.data import ConsumerProtocolSubscription
from kio.serial import entity_reader
from kio.serial.errors import DecodeError

DOCUMENT_KIND = "kafka-group"  # the stores.documents kind a classic group is kept under
# Kafka's group.initial.rebalance.delay.ms: the broker's default (the agent's), and the 0 that
# Kafka's shipped server.properties sets for development (`objectlog dev`'s).
INITIAL_REBALANCE_DELAY_MS = 3_000
DEV_INITIAL_REBALANCE_DELAY_MS = 0
SUBSCRIPTION_VERSION_SIZE = 2  # a member's ConsumerProtocolSubscription opens with its version
_SUBSCRIPTION_READER = entity_reader(ConsumerProtocolSubscription)
DELAY_FIELDS = ("delay_until_ms", "delay_step_ms", "delay_left_ms", "joined_in_delay")
EMPTY, PREPARING, COMPLETING, STABLE = (
    "Empty",
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
)


@dataclass
class Member:
    member_id: str
    client_id: str
    instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: list[tuple[str, str]]  # (name, base64 metadata), in the member's preference
    joined: int  # the generation it has joined for
    seen_ms: int
    assignment: str | None = None  # base64, set by the leader's SyncGroup
    synced: int = 0  # the generation of its last SyncGroup

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return base64.b64decode(data)
        return b""


@dataclass
class ClassicGroup:
    generation: int = 0
    phase: str = EMPTY
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    deadline_ms: int = 0  # PreparingRebalance: when members that did not rejoin are dropped
    completed_ms: int = 0  # when the last join completed (the JoinGroup answers' time)
    # The initial rebalance delay of a group that was Empty (0: none under way): the join
    # completes at delay_until_ms unless a member joined since it was set, which extends it by
    # delay_step_ms while delay_left_ms (the rebalance timeout's rest) lasts.
    delay_until_ms: int = 0
    delay_step_ms: int = 0
    delay_left_ms: int = 0
    joined_in_delay: bool = False
    members: dict[str, Member] = field(default_factory=dict)
    pending: dict[str, int] = field(default_factory=dict)  # member id handed out -> expiry ms

    def to_json(self) -> str:
        """The group document; without the initial delay's fields while none is under way, so
        that agents from before the delay still read it during a rolling upgrade."""
        raw = asdict(self)
        if not self.delay_until_ms:
            for name in DELAY_FIELDS:
                del raw[name]
        return json.dumps(raw, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> ClassicGroup:
        if text is None:
            return cls()
        raw: dict[str, Any] = json.loads(text)
        members = {
            key: Member(**{**value, "protocols": [tuple(p) for p in value["protocols"]]})
            for key, value in raw.pop("members").items()
        }
        return cls(**raw, members=members)


def subscribed_topics(group: ClassicGroup) -> frozenset[str]:
    """The topics a consumer group's members subscribe to, read from their metadata for the
    group's protocol (ConsumerProtocolSubscription: a version, then the topics in every
    version); a member whose metadata cannot be read subscribes to nothing known."""
    topics: set[str] = set()
    for member in group.members.values():
        data = member.metadata(group.protocol or "")
        try:
            subscription, _ = _SUBSCRIPTION_READER(data, SUBSCRIPTION_VERSION_SIZE)
        except (DecodeError, ValueError, struct.error):
            continue
        topics.update(subscription.topics)
    return frozenset(topics)


def new_member_id(client_id: str) -> str:
    return f"{client_id or 'member'}-{uuid.uuid4()}"


def encode(data: bytes) -> str:
    return base64.b64encode(data).decode()


# ---- transitions (each mutates the state it is given) ----------------------------------


def expire(group: ClassicGroup, now_ms: int) -> bool:
    """Drop members whose session lapsed, pending member ids never used, and finish a
    rebalance past its deadline; True if anything changed."""
    lapsed = [m for m in group.members.values() if session_lapsed(group, m, now_ms)]
    for member in lapsed:
        del group.members[member.member_id]
    unused = [member_id for member_id, until in group.pending.items() if until < now_ms]
    for member_id in unused:
        del group.pending[member_id]
    changed = bool(lapsed or unused)
    if lapsed and group.phase in (STABLE, COMPLETING):
        start_rebalance(group, now_ms)
    if group.phase == PREPARING and group.delay_until_ms:  # from Empty: all members joined
        if now_ms < group.delay_until_ms:
            return changed
        if extend_initial_delay(group, now_ms):
            return True
    if group.phase == PREPARING and (now_ms >= group.deadline_ms or all_joined(group)):
        for member in [m for m in group.members.values() if m.joined <= group.generation]:
            del group.members[member.member_id]
        complete_join(group, now_ms)
        changed = True
    return changed


def session_lapsed(group: ClassicGroup, member: Member, now_ms: int) -> bool:
    """Whether the member's session has lapsed; never while it waits on the group."""
    if group.phase == PREPARING and member.joined > group.generation:
        return False  # its JoinGroup waits for the others
    if group.phase == COMPLETING and member.synced == group.generation:
        return False  # its SyncGroup waits for the leader's
    return max(member.seen_ms, group.completed_ms) + member.session_timeout_ms < now_ms


def start_rebalance(group: ClassicGroup, now_ms: int, initial_delay_ms: int = 0) -> None:
    """Prepare a rebalance; one that starts from Empty waits initial_delay_ms first."""
    if not group.members:
        group.generation += 1
        group.phase, group.leader, group.protocol = EMPTY, None, None
        end_initial_delay(group)
        return
    timeout = max(m.rebalance_timeout_ms for m in group.members.values())
    if group.phase == EMPTY and initial_delay_ms > 0:
        group.delay_until_ms = now_ms + initial_delay_ms
        group.delay_step_ms = initial_delay_ms
        group.delay_left_ms = max(timeout - initial_delay_ms, 0)
        group.joined_in_delay = False
    group.phase = PREPARING
    group.deadline_ms = now_ms + timeout


def extend_initial_delay(group: ClassicGroup, now_ms: int) -> bool:
    """At the end of an initial delay: wait another delay if a member joined during this one
    and the rebalance timeout has time left (Kafka's InitialDelayedJoin)."""
    if not group.joined_in_delay or group.delay_left_ms <= 0:
        return False
    step = min(group.delay_step_ms, group.delay_left_ms)
    group.delay_until_ms = now_ms + step
    group.delay_left_ms -= step
    group.joined_in_delay = False
    return True


def end_initial_delay(group: ClassicGroup) -> None:
    group.delay_until_ms = group.delay_step_ms = group.delay_left_ms = 0
    group.joined_in_delay = False


def all_joined(group: ClassicGroup) -> bool:
    return all(m.joined > group.generation for m in group.members.values())


def complete_join(group: ClassicGroup, now_ms: int) -> None:
    group.generation += 1
    group.completed_ms = now_ms
    end_initial_delay(group)
    for member in group.members.values():
        member.assignment = None
    if not group.members:
        group.phase, group.leader, group.protocol = EMPTY, None, None
        return
    group.phase = COMPLETING
    if group.leader not in group.members:
        group.leader = next(iter(group.members))
    group.protocol = choose_protocol(group)


def choose_protocol(group: ClassicGroup) -> str | None:
    """The first of the leader's protocols that every member offers."""
    assert group.leader is not None
    offered = [{name for name, _ in m.protocols} for m in group.members.values()]
    for name, _ in group.members[group.leader].protocols:
        if all(name in names for names in offered):
            return name
    return None


def hand_out(group: ClassicGroup, member_id: str, session_timeout_ms: int, now_ms: int) -> None:
    """A member id given with MEMBER_ID_REQUIRED: pending until it joins, or a session."""
    group.pending[member_id] = now_ms + session_timeout_ms


def admits(group: ClassicGroup, member_id: str) -> bool:
    """Whether a JoinGroup naming member_id may proceed: a member, or a pending member id."""
    return member_id in group.members or member_id in group.pending


def join(group: ClassicGroup, member: Member, now_ms: int, initial_delay_ms: int = 0) -> None:
    """A JoinGroup: the member joins for the next generation (a rebalance starts unless one is
    under way, after initial_delay_ms if the group was Empty); a known member rejoining
    unchanged keeps the generation while it completes, and while Stable unless it is the
    leader (Kafka's coordinator answers the same)."""
    known = group.members.get(member.member_id)
    unchanged = known is not None and known.protocols == member.protocols
    settled = group.phase == COMPLETING or (
        group.phase == STABLE and member.member_id != group.leader
    )
    if unchanged and settled:  # a repeated join (a client that timed out): the same answer
        assert known is not None
        known.seen_ms = now_ms
        return
    member.joined = group.generation + 1
    member.seen_ms = now_ms
    group.pending.pop(member.member_id, None)
    group.members[member.member_id] = member
    if group.phase != PREPARING:
        start_rebalance(group, now_ms, initial_delay_ms)
    elif known is None and group.delay_until_ms:
        group.joined_in_delay = True
    if all_joined(group) and not group.delay_until_ms:
        complete_join(group, now_ms)


def join_result(group: ClassicGroup, member_id: str) -> list[Member] | None:
    """A completed JoinGroup's answer: the members of the generation it joined (the leader
    is told them), or None if the group dropped the member. A rebalance another member started
    since does not void it: Kafka's coordinator answered when the join completed, and the
    member learns of the next rebalance from its SyncGroup (REBALANCE_IN_PROGRESS)."""
    if member_id not in group.members:
        return None
    return [m for m in group.members.values() if m.joined <= group.generation]


def leave(group: ClassicGroup, member_ids: list[str], now_ms: int) -> list[str]:
    """Remove members; the ones the group did not know are returned."""
    unknown = [m for m in member_ids if m not in group.members]
    for member_id in member_ids:
        group.members.pop(member_id, None)
    if len(unknown) < len(member_ids):
        start_rebalance(group, now_ms)
        if group.phase == PREPARING and all_joined(group) and not group.delay_until_ms:
            complete_join(group, now_ms)
    return unknown


def sync(group: ClassicGroup, leader_id: str, assignments: dict[str, bytes]) -> None:
    """The leader's SyncGroup: every member's assignment (empty for any it left out)."""
    assert leader_id == group.leader
    for member_id, member in group.members.items():
        member.assignment = encode(assignments.get(member_id, b""))
    group.phase = STABLE
