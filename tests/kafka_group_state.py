"""The state of a classic Kafka group as the agents keep it, for failure messages."""

from __future__ import annotations

from objectlog import ObjectLog
from objectlog.kafka.classic import DOCUMENT_KIND, ClassicGroup


def group_state(log: ObjectLog, group_id: str) -> str:
    """Generation, phase, leader, and each member's joined and synced generations and whether
    it has an assignment."""
    body, _ = log.items.documents.read(DOCUMENT_KIND, group_id)
    group = ClassicGroup.from_json(body)
    members = "; ".join(
        f"...{m.member_id[-8:]} joined {m.joined} synced {m.synced} "
        f"assignment {'set' if m.assignment else 'none'}"
        for m in group.members.values()
    )
    leader = (group.leader or "none")[-8:]
    return f"generation {group.generation} {group.phase}, leader ...{leader}: {members}"
