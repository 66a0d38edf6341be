"""The compact function: scheduled compaction, retention and garbage collection."""

from objectlog.compaction.function import handler

__all__ = ["handler"]
