"""What every Kafka API handler shares: the log, the broker it advertises, worker threads."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

from objectlog.clients.direct import ObjectLog
from objectlog.format.acls import ANONYMOUS
from objectlog.kafka.topic_ids import TopicNames
from objectlog.kafka.topic_ids import topic_uuid as topic_uuid  # where handlers find it
from objectlog.services.access import OFF as access_off
from objectlog.services.access import AccessControl, AccessSettings, Emit

T = TypeVar("T")

# The principal of the connection the request being answered came on, for the request's own
# task (each request is answered in a task of its own, which copies its connection's
# context): ``User:<SCRAM user>``, or User:ANONYMOUS on a connection that did not
# authenticate. The server sets it before a handler runs (principal_of).
PRINCIPAL: ContextVar[str] = ContextVar("objectlog_kafka_principal", default=ANONYMOUS)


# The id of the connection the request being answered came on (server.py sets it): the
# session whose repeated, unchanged offset commits groups.unchanged may answer without a write.
CONNECTION: ContextVar[str | None] = ContextVar("objectlog_kafka_connection", default=None)


def request_connection() -> str | None:
    """The id of the connection the request being answered came on (None outside one)."""
    return CONNECTION.get()


def principal_of(user: str | None) -> str:
    """A connection's principal from its authenticated SCRAM user (None: unauthenticated)."""
    return ANONYMOUS if user is None else f"User:{user}"


def request_principal() -> str:
    """The principal of the request being answered (PRINCIPAL)."""
    return PRINCIPAL.get()


@dataclass(frozen=True)
class Broker:
    """What the agent advertises: one broker, at the load balancer's address."""

    host: str
    port: int
    node_id: int = 1
    cluster_id: str = "objectlog"
    # The agent's own settings, as a broker's static configs report them (DescribeConfigs):
    # where it listens, its listener's security protocol, its initial rebalance delay.
    listen_host: str = ""
    listen_port: int = 0
    security_protocol: str = "PLAINTEXT"
    initial_rebalance_delay_ms: int = 3000

    def listener(self, host: str, port: int) -> str:
        """A listener as Kafka's listeners and advertised.listeners write it."""
        return f"{self.security_protocol}://{host}:{port}"

    def leads(self, partition: int) -> dict[str, Any]:
        """A partition as Metadata and DescribeTopicPartitions report it: this broker its
        leader and only replica, in sync (no eligible or offline replicas: there are none)."""
        return {
            "error_code": ErrorCode.none,
            "partition_index": partition,
            "leader_id": self.node_id,
            "leader_epoch": 0,
            "replica_nodes": [self.node_id],
            "isr_nodes": [self.node_id],
            "eligible_leader_replicas": [],
            "last_known_elr": [],
            "offline_replicas": [],
        }

    def as_node(self) -> dict[str, Any]:
        return {"node_id": self.node_id, "host": self.host, "port": self.port, "rack": None}


@dataclass
class ApiContext:
    log: ObjectLog
    broker: Broker
    access_settings: AccessSettings = access_off
    refusals_to: Emit | None = None  # where refusals' EMF lines go (services.access)
    topic_names: TopicNames = field(init=False)
    # The agent's authorization: its ACLs are loaded at the first decision, not before (none
    # with authorization off); kafka.acls invalidates them after each change it makes.
    access: AccessControl = field(init=False)

    def __post_init__(self) -> None:
        self.topic_names = TopicNames(self.log)
        self.access = AccessControl(
            self.log.items.acls,
            self.log.clock,
            self.access_settings,
            door="kafka",
            emit=self.refusals_to,
        )

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        """A library call (synchronous) on a worker thread, never on the event loop."""
        return await asyncio.to_thread(function, *args)

    async def names_by_id(self, ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, str]:
        """The names of the topic ids that name an existing topic (kafka.topic_ids)."""
        return await self.call(self.topic_names.resolve, list(ids))
