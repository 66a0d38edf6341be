"""Value types the clients answer with, shared by every transport."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Offsets:
    """A partition's earliest offset (log start) and latest (high watermark)."""

    earliest: int
    latest: int


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
