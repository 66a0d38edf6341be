"""Value types the clients answer with, shared by every transport."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Offsets:
    """A partition's earliest offset (log start) and latest (high watermark)."""

    earliest: int
    latest: int
