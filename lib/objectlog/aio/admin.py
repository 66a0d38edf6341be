"""AIOAdminClient: the asyncio client's admin calls beyond AIOObjectLog's topics, configs and
offsets: consumer groups (list, describe, committed offsets, reset, delete) and ACLs (create,
list, delete, with Kafka's filters). The threaded client's own services, awaited on the loop.

    admin = log.admin()
    await admin.list_groups()
    await admin.reset_offsets("billing", ["events"], to="earliest", dry_run=True)
    await admin.create_acls([AclBinding(ResourceType.TOPIC, "events", PatternType.LITERAL,
                                        "User:alice", "*", Operation.READ, Permission.ALLOW)])
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Protocol

from objectlog.clients.contract import LogClient
from objectlog.clients.direct import ObjectLog
from objectlog.concurrency import bridge
from objectlog.format.acls import AclBinding, AclFilter
from objectlog.groups.values import GroupDescription, OffsetAndMetadata
from objectlog.services.acl_admin import selected
from objectlog.services.authorization import matches
from objectlog.stores.acls import AclCreation
from objectlog.stores.groups import TopicPartition


class AIOAdminHost(Protocol):
    @property
    def sync_log(self) -> LogClient: ...

    def direct(self) -> ObjectLog: ...


class AIOAdminClient:
    def __init__(self, log: AIOAdminHost) -> None:
        self._log = log.sync_log
        self._host = log  # ACLs are kept in the table: the direct transport only

    # ---- consumer groups ---------------------------------------------------------------

    async def list_groups(self) -> list[str]:
        return await bridge(self._log.groups.list_groups)

    async def describe_group(self, group: str) -> GroupDescription:
        """Members, assignment, committed offsets and lag (GroupNotFound)."""
        return await bridge(self._log.groups.describe, group)

    async def committed_offsets(
        self, group: str, partitions: Iterable[TopicPartition | tuple[str, int]]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        wanted = [TopicPartition(*tp) for tp in partitions]
        return await bridge(self._log.groups.committed, group, wanted)

    async def reset_offsets(
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
        """kafka-consumer-groups.sh --reset-offsets, for an empty group (GroupNotEmpty)."""
        return await bridge(
            self._log.groups.reset_offsets,
            group,
            topics,
            to=to,
            timestamp_ms=timestamp_ms,
            offsets=offsets,
            shift_by=shift_by,
            dry_run=dry_run,
        )

    async def delete_group(self, group: str) -> None:
        await bridge(self._log.groups.delete_group, group)

    # ---- ACLs --------------------------------------------------------------------------

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[AclCreation]:
        """Store each binding (kept if there already); one answer per binding."""
        return await bridge(self._host.direct().items.acls.create, list(bindings))

    async def describe_acls(self, *filters: AclFilter) -> list[AclBinding]:
        """The bindings some filter selects (all of them without a filter), sorted."""
        return await bridge(selected, self._host.direct().items.acls, list(filters))

    async def delete_acls(self, *filters: AclFilter) -> list[list[AclBinding]]:
        """Remove what each filter matches; per filter, the bindings it removed."""
        return await bridge(self._host.direct().items.acls.delete, list(filters), matches)
