"""What every Kafka API handler shares: the log, the broker it advertises, worker threads."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ulid import ULID

from objectlog.clients.direct import ObjectLog

T = TypeVar("T")


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

    def as_node(self) -> dict[str, Any]:
        return {"node_id": self.node_id, "host": self.host, "port": self.port, "rack": None}


def topic_uuid(topic_id: str) -> uuid.UUID:
    """Kafka's topic id for a topic: its ULID's 128 bits, one to one."""
    return uuid.UUID(bytes=ULID.from_str(topic_id).bytes)


@dataclass
class ApiContext:
    log: ObjectLog
    broker: Broker

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        """A library call (synchronous) on a worker thread, never on the event loop."""
        return await asyncio.to_thread(function, *args)

    async def names_by_id(self) -> dict[uuid.UUID, str]:
        def load() -> dict[uuid.UUID, str]:
            names = self.log.list_topics()
            return {topic_uuid(self.log.topic(n).topic_id): n for n in names}

        return await self.call(load)
