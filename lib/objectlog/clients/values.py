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
