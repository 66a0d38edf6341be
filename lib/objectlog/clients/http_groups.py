"""The group protocol over the HTTP API: the same calls as GroupCoordinator, as requests.

Heartbeats, leaves and commits are retried on 5xx and lost answers (repeating one changes
nothing: a repeated release or commit of the same offset is a no-op). A join is not: a retried
join whose first answer was lost would add a second member, which would only lapse after its
session timeout, so a join is sent once and its error reaches the caller.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from objectlog.clients.http_session import ApiSession
from objectlog.groups.assignors import DEFAULT_STRATEGIES
from objectlog.groups.values import (
    GroupDescription,
    MemberDescription,
    Membership,
    OffsetAndMetadata,
    PartitionOffset,
)
from objectlog.stores.groups import TopicPartition


class HttpGroups:
    """Consumer groups through ``/groups`` routes of the objectlog HTTP API."""

    def __init__(self, api: ApiSession) -> None:
        self.api = api

    def join(
        self,
        group: str,
        topics: Collection[str],
        *,
        client_id: str = "objectlog",
        session_timeout_ms: int = 10_000,
        strategies: Sequence[str] = DEFAULT_STRATEGIES,
    ) -> Membership:
        body = self.api.request(
            "POST",
            f"{_group(group)}/members",
            json={
                "topics": list(topics),
                "client_id": client_id,
                "session_timeout_ms": session_timeout_ms,
                "strategies": list(strategies),
            },
        )
        return _membership(body)

    def heartbeat(
        self,
        group: str,
        member_id: str,
        *,
        owned: Collection[TopicPartition] = (),
        release: Mapping[TopicPartition, OffsetAndMetadata | None] | None = None,
    ) -> Membership:
        body = self.api.request(
            "POST",
            f"{_group(group)}/members/{quote(member_id, safe='')}/heartbeat",
            json={"owned": _refs(owned), "release": _releases(release or {})},
            retry_unsafe=True,
        )
        return _membership(body)

    def leave(
        self,
        group: str,
        member_id: str,
        *,
        release: Mapping[TopicPartition, OffsetAndMetadata | None] | None = None,
    ) -> None:
        self.api.request(
            "POST",
            f"{_group(group)}/members/{quote(member_id, safe='')}/leave",
            json={"release": _releases(release or {})},
            retry_unsafe=True,
        )

    def commit(
        self,
        group: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        *,
        member_id: str | None = None,
        generation: int = -1,
    ) -> None:
        entries = []
        for tp, value in offsets.items():
            offset, metadata = (value, "") if isinstance(value, int) else value
            entries.append(
                {"topic": tp[0], "partition": tp[1], "offset": offset, "metadata": metadata}
            )
        self.api.request(
            "POST",
            f"{_group(group)}/offsets",
            json={"member_id": member_id, "generation": generation, "offsets": entries},
            retry_unsafe=True,
        )

    def committed(
        self, group: str, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        wanted = [TopicPartition(*tp) for tp in partitions]
        if not wanted:
            return {}
        body = self.api.request(
            "GET",
            f"{_group(group)}/offsets",
            params={"partitions": ",".join(tp.encode() for tp in wanted)},
        )
        return _committed_offsets(body)

    def stable_committed(
        self, group: str, partitions: Iterable[TopicPartition]
    ) -> tuple[dict[TopicPartition, OffsetAndMetadata | None], set[TopicPartition]]:
        wanted = [TopicPartition(*tp) for tp in partitions]
        if not wanted:
            return {}, set()
        body = self.api.request(
            "GET",
            f"{_group(group)}/offsets",
            params={
                "partitions": ",".join(tp.encode() for tp in wanted),
                "require_stable": "true",
            },
        )
        return _committed_offsets(body), {TopicPartition.decode(t) for t in body["unstable"]}

    def describe(self, group: str) -> GroupDescription:
        body = self.api.request("GET", _group(group))
        return GroupDescription(
            group=body["group"],
            state=body["state"],
            generation=body["generation"],
            strategy=body["strategy"],
            members=tuple(
                MemberDescription(
                    member_id=m["member_id"],
                    client_id=m["client_id"],
                    topics=tuple(m["topics"]),
                    session_timeout_ms=m["session_timeout_ms"],
                    lease_expires_ms=m["lease_expires_ms"],
                    assigned=_partitions(m["assigned"]),
                )
                for m in body["members"]
            ),
            offsets=tuple(
                PartitionOffset(**{k: v for k, v in p.items() if k != "lag"})
                for p in body["offsets"]
            ),
        )

    def list_groups(self) -> list[str]:
        return list(self.api.request("GET", "/groups")["groups"])

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
        body = self.api.request(
            "POST",
            f"{_group(group)}/offsets/reset",
            json={
                "topics": list(topics),
                "to": to,
                "timestamp": timestamp_ms,
                "offsets": [
                    {"topic": tp[0], "partition": tp[1], "offset": offset}
                    for tp, offset in (offsets or {}).items()
                ],
                "shift_by": shift_by,
                "dry_run": dry_run,
            },
        )
        return {TopicPartition(o["topic"], o["partition"]): o["offset"] for o in body["offsets"]}

    def delete_group(self, group: str) -> None:
        self.api.request("DELETE", _group(group))


def _group(group: str) -> str:
    return f"/groups/{quote(group, safe='')}"


def _refs(partitions: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    return [{"topic": tp[0], "partition": tp[1]} for tp in sorted(partitions)]


def _releases(release: Mapping[TopicPartition, OffsetAndMetadata | None]) -> list[dict[str, Any]]:
    return [
        {
            "topic": tp[0],
            "partition": tp[1],
            "offset": None if final is None else final[0],
            "metadata": "" if final is None else final[1],
        }
        for tp, final in sorted(release.items())
    ]


def _partitions(refs: Iterable[Mapping[str, Any]]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(r["topic"], r["partition"]) for r in refs)


def _membership(body: Mapping[str, Any]) -> Membership:
    return Membership(
        group=body["group"],
        member_id=body["member_id"],
        generation=body["generation"],
        strategy=body["strategy"],
        members=tuple(body["members"]),
        assigned=_partitions(body["assigned"]),
        owned=_partitions(body["owned"]),
        claimed=_partitions(body.get("claimed", ())),
    )


def _committed_offsets(body: Mapping[str, Any]) -> dict[TopicPartition, OffsetAndMetadata | None]:
    return {
        TopicPartition(o["topic"], o["partition"]): (
            None if o["offset"] is None else OffsetAndMetadata(o["offset"], o["metadata"])
        )
        for o in body["offsets"]
    }
