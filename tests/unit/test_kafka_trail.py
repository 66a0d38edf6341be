"""tools.verify.kafka_trail: kafka-python's lines on where members start reading, kept."""

from __future__ import annotations

import logging

from objectlog.tools.verify.kafka_trail import MEMBER_LOG, KafkaClientTrail


def test_the_trail_keeps_where_members_start_and_restores_the_loggers() -> None:
    coordinator = logging.getLogger("kafka.coordinator.consumer")
    level, propagate = coordinator.level, coordinator.propagate
    with KafkaClientTrail() as trail:
        coordinator.debug("Setting offset for partition %s to the committed offset %s", "t-1", 252)
        coordinator.debug("Sending heartbeat")  # not about positions: left out
        MEMBER_LOG.debug("%s assigned %s", "kafka-0-1", [1, 2])
    logging.getLogger("kafka.coordinator.consumer").debug("committed offset after the run")
    assert len(trail.lines) == 2
    assert trail.lines[0].endswith("Setting offset for partition t-1 to the committed offset 252")
    assert trail.lines[1].endswith("kafka-0-1 assigned [1, 2]")
    assert (coordinator.level, coordinator.propagate) == (level, propagate)
    assert trail not in coordinator.handlers
