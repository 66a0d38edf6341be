"""Partition assignment strategies: pure functions of the member list, as in Kafka's clients.

Each takes ``subscriptions`` (member id -> the topics it reads), ``partitions`` (topic ->
partition count) and the previous assignment, and returns member id -> partitions. The result
depends only on its arguments (members are taken in sorted id order), so every member that
computes it gets the same answer.

- ``range``: per topic, consecutive partitions; the first ``count % members`` members of the
  topic get one more (Kafka's RangeAssignor).
- ``roundrobin``: every partition of every topic in order, dealt to the subscribed members in
  turn (Kafka's RoundRobinAssignor).
- ``sticky``: as balanced as round-robin, moving as few partitions as it can from the previous
  assignment (Kafka's StickyAssignor): members keep what they held, unowned partitions go to
  the least loaded member, then partitions move from the most to the least loaded member until
  no two members differ by more than one (among those that could take each other's
  partitions).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from objectlog.errors import InconsistentGroupProtocol
from objectlog.stores.groups import MemberInfo, TopicPartition

Subscriptions = Mapping[str, Collection[str]]
Counts = Mapping[str, int]
Assignment = dict[str, list[TopicPartition]]
Previous = Mapping[str, Collection[TopicPartition]]


def range_assign(
    subscriptions: Subscriptions, partitions: Counts, previous: Previous
) -> Assignment:
    assignment: Assignment = {member: [] for member in sorted(subscriptions)}
    for topic in sorted(partitions):
        members = [m for m in sorted(subscriptions) if topic in subscriptions[m]]
        if not members:
            continue
        per_member, extra = divmod(partitions[topic], len(members))
        start = 0
        for i, member in enumerate(members):
            count = per_member + (1 if i < extra else 0)
            assignment[member] += [TopicPartition(topic, p) for p in range(start, start + count)]
            start += count
    return assignment


def roundrobin_assign(
    subscriptions: Subscriptions, partitions: Counts, previous: Previous
) -> Assignment:
    members = sorted(subscriptions)
    assignment: Assignment = {member: [] for member in members}
    if not members:
        return assignment
    turn = 0
    for tp in _all_partitions(subscriptions, partitions):
        while tp.topic not in subscriptions[members[turn % len(members)]]:
            turn += 1  # the topic has a subscriber: tp came from _all_partitions
        assignment[members[turn % len(members)]].append(tp)
        turn += 1
    return assignment


def sticky_assign(
    subscriptions: Subscriptions, partitions: Counts, previous: Previous
) -> Assignment:
    members = sorted(subscriptions)
    wanted = _all_partitions(subscriptions, partitions)
    valid = set(wanted)
    assignment: Assignment = {member: [] for member in members}
    taken: set[TopicPartition] = set()
    for member in members:
        for tp in sorted(previous.get(member, ())):
            if tp in valid and tp not in taken and tp.topic in subscriptions[member]:
                assignment[member].append(tp)
                taken.add(tp)
    for tp in wanted:
        if tp not in taken:
            eligible = [m for m in members if tp.topic in subscriptions[m]]
            least = min(eligible, key=lambda m: (len(assignment[m]), m))
            assignment[least].append(tp)
    _balance(assignment, subscriptions)
    return {member: sorted(tps) for member, tps in assignment.items()}


def _balance(assignment: Assignment, subscriptions: Subscriptions) -> None:
    """Move one partition at a time from a most loaded to a least loaded member that can
    take it, while that narrows the spread; each move lowers the sum of squared loads, so
    this ends."""
    while True:
        move = _best_move(assignment, subscriptions)
        if move is None:
            return
        source, target, tp = move
        assignment[source].remove(tp)
        assignment[target].append(tp)


def _best_move(
    assignment: Assignment, subscriptions: Subscriptions
) -> tuple[str, str, TopicPartition] | None:
    by_load = sorted(assignment, key=lambda m: (-len(assignment[m]), m))
    for source in by_load:
        for target in reversed(by_load):
            if len(assignment[source]) - len(assignment[target]) <= 1:
                break
            for tp in sorted(assignment[source], reverse=True):
                if tp.topic in subscriptions[target]:
                    return source, target, tp
    return None


def _all_partitions(subscriptions: Subscriptions, partitions: Counts) -> list[TopicPartition]:
    subscribed = {topic for topics in subscriptions.values() for topic in topics}
    return [
        TopicPartition(topic, p)
        for topic in sorted(subscribed & set(partitions))
        for p in range(partitions[topic])
    ]


DEFAULT_STRATEGIES = ("range", "sticky")  # what a member that names none supports
STRATEGIES: dict[str, Callable[[Subscriptions, Counts, Previous], Assignment]] = {
    "range": range_assign,
    "roundrobin": roundrobin_assign,
    "sticky": sticky_assign,
}


def assign(
    strategy: str,
    subscriptions: Subscriptions,
    partitions: Counts,
    previous: Previous | None = None,
) -> Assignment:
    """Member id -> its partitions under the named strategy (a key of STRATEGIES)."""
    return STRATEGIES[strategy](subscriptions, partitions, previous or {})


def choose_strategy(members: Mapping[str, MemberInfo]) -> str:
    """The first strategy, in the lowest member id's order, that every member supports."""
    common = set(STRATEGIES)
    for info in members.values():
        common &= set(info.strategies)
    if not members:
        return DEFAULT_STRATEGIES[0]
    first = members[min(members)]
    for strategy in first.strategies:
        if strategy in common:
            return strategy
    raise InconsistentGroupProtocol(
        "the members share no assignment strategy: "
        + "; ".join(f"{m}: {list(i.strategies)}" for m, i in sorted(members.items())),
        field="strategies",
    )
