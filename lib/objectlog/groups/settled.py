"""A settled member's heartbeat reads no offset items while it commits nothing (issue 38).

A heartbeat settles the member's ownership (GroupCoordinator._settle): it claims the assigned
partitions that are free and finds the items the member owns but is no longer assigned, by
reading every offset item of the group, a BatchGetItem of one read unit per partition every
heartbeat (64 partitions at the library's 3.3 s: about $6 a month for a member that does
nothing). Once a heartbeat found the member owning exactly what it is assigned, the next
heartbeats of the same generation learn nothing from that read unless something moved; this
process remembers the settled view and answers from it while:

- the group item (read strongly consistently by every heartbeat) is still at the generation
  of the view: a rebalance, a member joining, leaving or lapsing, a topic growing, all
  rewrite it at a new generation, and with it the assignment;
- the member reports owning what the view says (``owned``, the member's own list): a member
  that lost partitions (an error, a restore) or gave some up reads again;
- the member committed nothing new and released nothing since (``forget``): a member that
  reads records and commits them reads its items at the next heartbeat, as before;
- the view was read less than ``check_ms`` (5 minutes) ago, and the read before it found the
  same (a join's or a rebalance's first read claims; the next confirms).

Why nothing is lost (the items, not this memory, enforce ownership): every commit is
conditional on the item's owner and generation (stores.groups.commit_holds), so a stale view
can never move an offset it must not. Within one generation an item's owner changes only by
a claim of the member assigned it (this one: the assignment allows no one else's), a release
by its owner (this member, through ``release``, which forgets), or a claim by a member whose
view of the group is older than the generation: it read the group item, stalled past a
rebalance, and claims from an owner its old view does not list (values.Membership). A member
that commits finds that at its next heartbeat, as before (its commit forgot the view, or
was refused for it). One that commits nothing has read nothing since its last commit: it
finds it at its next commit (refused, or forgetting the view first), whose heartbeat claims
the item back and drops the position, as after any loss, or by the read within
``check_ms``. Until then it may read records of a partition it no longer owns, as a
committing member may until its next heartbeat: records delivered twice (at least once, as
always), never skipped, since the member that took it commits only what it read and this one
resumes from the commits.

What this saves: an idle member's heartbeat reads the group item, its members' leases and
its topics (3 small reads) and writes its lease; its offset items are read every 5 minutes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass, replace

from objectlog.groups.values import Membership
from objectlog.stores.groups import GroupState, TopicPartition

CHECK_MS = 300_000  # a settled member's offset items are all read at least this often
KEPT = 10_000  # members remembered per process


@dataclass(frozen=True)
class _View:
    membership: Membership  # what the last read answered (owned == assigned)
    read_ms: int
    confirmed: bool  # the read before it found the same: answered from then on


class SettledMembers:
    """The views of members found owning exactly their assignment, per (group, member)."""

    def __init__(self, check_ms: int = CHECK_MS) -> None:
        self.check_ms = check_ms
        self.answered = 0  # heartbeats answered without reading the offset items (for tests)
        self._lock = threading.Lock()
        self._views: OrderedDict[tuple[str, str], _View] = OrderedDict()

    def view(
        self,
        state: GroupState,
        member_id: str,
        owned: Collection[TopicPartition] | None,
        now_ms: int,
    ) -> Membership | None:
        """The member's settled view when still true (above), claiming nothing; None: read
        the items."""
        key = (state.name, member_id)
        with self._lock:
            kept = self._views.get(key)
            if kept is None or not kept.confirmed:
                return None
            view = kept.membership
            if (
                view.generation != state.generation
                or tuple(sorted(state.assignment.get(member_id, ()))) != view.assigned
                or owned is None
                or tuple(sorted(TopicPartition(*tp) for tp in owned)) != view.owned
                or not 0 <= now_ms - kept.read_ms < self.check_ms
            ):
                del self._views[key]
                return None
            self.answered += 1
        return replace(view, members=tuple(sorted(state.members)), claimed=())

    def remember(self, membership: Membership, now_ms: int) -> None:
        """A join or heartbeat read the items: remember its view if the member owns what it
        is assigned, answering from it once a second read in a row found the same (the
        first read after a join or rebalance claims: the next one confirms it), else forget
        any (it is still claiming or releasing)."""
        key = (membership.group, membership.member_id)
        with self._lock:
            if membership.owned != membership.assigned:
                self._views.pop(key, None)
                return
            kept = self._views.get(key)
            same = kept is not None and _settled(kept.membership) == _settled(membership)
            self._views[key] = _View(membership, now_ms, same and not membership.claimed)
            self._views.move_to_end(key)
            while len(self._views) > KEPT:
                self._views.popitem(last=False)

    def forget(self, group: str, member_id: str | None) -> None:
        """Read the member's items at its next heartbeat (None: every member of the group);
        if they are as the view says, that read confirms it again."""
        with self._lock:
            if member_id is not None:  # a commit's: one lookup, not a scan of every view
                keys = [(group, member_id)] if (group, member_id) in self._views else []
            else:
                keys = [k for k in self._views if k[0] == group]
            for key in keys:
                self._views[key] = replace(self._views[key], confirmed=False)


def _settled(membership: Membership) -> Membership:
    """What two reads must agree on (the members are the group item's, read each time)."""
    return replace(membership, members=(), claimed=())
