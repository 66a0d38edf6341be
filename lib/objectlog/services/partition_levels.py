"""How a partition's index splits between levels (issue 39's topic page): the L0 objects not
yet compacted and the L1 files, counted from the refs of its index.

Cost: the head's tail, its manifest list and every manifest object of the partition (each an
S3 GET, cached by the IndexStore: lists and manifests are immutable), so one partition is
walked at a time (GET /topics/{t}/partitions/{p}/details), never a whole topic's at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from objectlog.format.index import LEVEL_L0, LEVEL_L1, LEVEL_MARKER
from objectlog.services.index import IndexStore
from objectlog.stores.metadata import PartitionHead

LEVEL_NAMES = {LEVEL_L0: "l0", LEVEL_L1: "l1", LEVEL_MARKER: "markers"}


@dataclass
class LevelTotals:
    """The refs of one level: how many, the bytes they cover, the records they hold, and
    how many distinct objects hold them (an L1 file is cut into several refs)."""

    refs: int = 0
    bytes: int = 0
    records: int = 0
    objects: set[str] = field(default_factory=set)


def level_split(index: IndexStore, head: PartitionHead) -> dict[str, LevelTotals]:
    """The partition's held refs (from its log start) per level: l0, l1, markers."""
    totals = {name: LevelTotals() for name in LEVEL_NAMES.values()}
    for placed in index.all_placed_refs(head):
        ref = placed.ref
        level = totals[LEVEL_NAMES.get(ref.level, "l0")]
        level.refs += 1
        level.bytes += ref.length
        level.records += ref.records
        if ref.has_object:
            level.objects.add(ref.object_id)
    return totals
