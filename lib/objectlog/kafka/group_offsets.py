"""OffsetFetch on the Kafka agent: a group's committed offsets, read at a classic group's
current generation, with Kafka's ``require_stable`` (v7+; sent by read_committed consumers):
a partition whose offset a transaction still holds pending (TxnOffsetCommit's mark, KIP-447,
docs/transactions.md) is answered UNSTABLE_OFFSET_COMMIT, which clients retry, so a member
taking a partition over never starts from an offset that transaction is about to move."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from objectlog.errors import ObjectLogError
from objectlog.groups import TopicPartition
from objectlog.kafka.classic import DOCUMENT_KIND, ClassicGroup
from objectlog.kafka.context import ApiContext
from objectlog.kafka.errors import error_code
from objectlog.kafka.wire import Request
from objectlog.stores.groups import OffsetItem


class OffsetFetchApi:
    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx
        self.documents = ctx.log.items.documents

    async def offset_fetch(self, request: Request) -> dict[str, Any]:
        body = request.body
        stable = bool(getattr(body, "require_stable", False))
        if hasattr(body, "groups"):
            groups = [await self._fetched(g.group_id, g.topics, stable) for g in body.groups]
            return {"throttle_time": 0, "groups": groups}
        answer = await self._fetched(body.group_id, body.topics, stable)
        return {"throttle_time": 0, **answer}

    async def _fetched(self, group_id: str, topics: Any, stable: bool) -> dict[str, Any]:
        try:
            wanted = await self.ctx.call(self._wanted_partitions, group_id, topics)
            found = await self.ctx.call(self._committed, group_id, wanted)
            unstable = (
                await self.ctx.call(self.ctx.log.groups.transactional.unstable, group_id, found)
                if stable
                else set()
            )
        except ObjectLogError as e:
            return {"group_id": group_id, "topics": [], "error_code": error_code(e)}
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp in wanted:
            item = found.get(tp, OffsetItem())
            committed = item.offset is not None and tp not in unstable
            by_topic.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "committed_offset": item.offset if committed else -1,
                    "committed_leader_epoch": item.leader_epoch if committed else -1,
                    "metadata": item.metadata if committed else "",
                    "error_code": (
                        ErrorCode.unstable_offset_commit if tp in unstable else ErrorCode.none
                    ),
                }
            )
        return {
            "group_id": group_id,
            "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()],
            "error_code": ErrorCode.none,
        }

    def _committed(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, OffsetItem]:
        """A classic group's offsets are read at its current generation: no commit of an
        older generation lands after this read (objectlog.groups fences them)."""
        body, _ = self.documents.read(DOCUMENT_KIND, group_id)
        generation = ClassicGroup.from_json(body).generation if body is not None else 0
        return self.ctx.log.groups.committed_items(group_id, partitions, generation=generation)

    def _wanted_partitions(self, group_id: str, topics: Any) -> list[TopicPartition]:
        if topics is None:  # every partition the group has committed offsets for
            try:
                description = self.ctx.log.groups.describe(group_id)
            except ObjectLogError:
                return []
            return [
                TopicPartition(p.topic, p.partition)
                for p in description.offsets
                if p.committed is not None
            ]
        return [
            TopicPartition(topic.name, partition)
            for topic in topics
            for partition in topic.partition_indexes
        ]
