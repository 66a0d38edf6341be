"""Value types the clients answer with, shared by every transport."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from objectlog.services.isolation import end_for


@dataclass(frozen=True)
class Offsets:
    """A partition's earliest offset (log start), latest (high watermark) and last stable
    offset (where read_committed readers stop: docs/transactions.md)."""

    earliest: int
    latest: int
    last_stable: int

    def end(self, isolation_level: str) -> int:
        """Where a reader at this isolation level ends: Kafka's latest offset for it."""
        return end_for(isolation_level, self.latest, self.last_stable)


@dataclass(frozen=True)
class BatchResult:
    """Where a columnar batch (Producer.send_table) landed: per input row, its partition and
    offset."""

    topic: str
    partitions: np.ndarray
    offsets: np.ndarray


@dataclass(frozen=True)
class ConsumerGroupMetadata:
    """What send_offsets_to_transaction needs of a consumer (Kafka's ConsumerGroupMetadata):
    its group, and its member id and generation (None and -1 outside the group, as a consumer
    with assign())."""

    group_id: str
    member_id: str | None = None
    generation: int = -1
