"""The Kafka agent's configuration for tests."""

from __future__ import annotations

from typing import Any

from objectlog.kafka.classic import DEV_INITIAL_REBALANCE_DELAY_MS
from objectlog.kafka.server import AgentConfig


def agent_config(**options: Any) -> AgentConfig:
    """An agent on a free port whose new groups complete their first rebalance at once, as
    `objectlog dev`'s do (a test does not wait Kafka's 3 s for every group it starts);
    options override."""
    settings: dict[str, Any] = {
        "port": 0,
        "initial_rebalance_delay_ms": DEV_INITIAL_REBALANCE_DELAY_MS,
        **options,
    }
    return AgentConfig(**settings)
