"""kafka-python's own account of where the verify's Kafka members start reading.

A "committed backwards" or "skipped" anomaly in the Kafka group means a member read from an
offset other than the group's committed one. kafka-python says at DEBUG which committed offset
it took for a partition, and when it reset a position; the members say (``MEMBER_LOG``) which
partitions each was assigned. objectlog's own Consumer members say there too what each was
assigned, gave up or lost ("objectlog member ..."), for an anomaly in their group. The trail
keeps those lines only (bounded), with their time and thread, so a failed verdict can be traced
to the answer a member acted on.
"""

from __future__ import annotations

import collections
import logging
import time
from types import TracebackType

MEMBER_LOG = logging.getLogger("objectlog.verify.kafka")
SOURCES = ("kafka.coordinator.consumer", "kafka.consumer.fetcher", MEMBER_LOG.name)
# What kafka-python says when it takes a committed offset, moves a position on its own, or
# changes a member's assignment (not its per-fetch "for assigned partition" lines).
KEPT = (
    "committed offset",
    "Resetting offset",
    "out of range",
    "newly assigned partitions",
    "previously assigned partitions",
    "no longer assigned",
)
LIMIT = 400


class KafkaClientTrail(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: collections.deque[str] = collections.deque(maxlen=LIMIT)
        self._saved: list[tuple[logging.Logger, int, bool]] = []
        self._passed_on: dict[str, int] = {}  # logger -> the level it let through before

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.name == MEMBER_LOG.name or any(kept in message for kept in KEPT):
            at = time.strftime("%H:%M:%S", time.localtime(record.created))
            self.lines.append(f"{at}.{int(record.msecs):03d} {record.threadName}: {message}")
        if record.levelno >= self._passed_on.get(record.name, logging.WARNING):
            parent = logging.getLogger(record.name).parent
            if parent is not None:
                parent.handle(record)  # what propagation would have done (warnings and errors)

    def __enter__(self) -> KafkaClientTrail:
        """Listen at DEBUG. These loggers stop propagating for the duration, so the DEBUG flood
        does not reach the root handlers (a test's captured log); the trail passes on what
        they let through before (kafka-python's warnings and errors)."""
        for name in SOURCES:
            logger = logging.getLogger(name)
            self._saved.append((logger, logger.level, logger.propagate))
            self._passed_on[name] = logger.getEffectiveLevel()
            logger.setLevel(logging.DEBUG)
            logger.propagate = False
            logger.addHandler(self)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for logger, level, propagate in self._saved:
            logger.removeHandler(self)
            logger.setLevel(level)
            logger.propagate = propagate
        self._saved.clear()
        self._passed_on.clear()
