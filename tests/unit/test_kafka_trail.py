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


def test_warnings_still_reach_the_root_handlers_and_fetch_chatter_is_left_out() -> None:
    fetcher = logging.getLogger("kafka.consumer.fetcher")
    heard: list[str] = []

    class Listening(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            heard.append(record.getMessage())

    root = logging.getLogger()
    listening = Listening(logging.DEBUG)
    root.addHandler(listening)
    try:
        with KafkaClientTrail() as trail:
            fetcher.debug("Returning fetched records at offset 5 for assigned partition t-0")
            fetcher.debug("Resetting offset for partition t-0 to offset 0.")
            fetcher.warning("Fetch to node 1 failed: Cancelled")
    finally:
        root.removeHandler(listening)
    assert [line.split(": ", 1)[1] for line in trail.lines] == [
        "Resetting offset for partition t-0 to offset 0."
    ]
    assert heard == ["Fetch to node 1 failed: Cancelled"]  # not the DEBUG lines
