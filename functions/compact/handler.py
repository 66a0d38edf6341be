"""The compact function: scheduled compaction, retention and garbage collection."""

from objectlog.api.compact import handler

__all__ = ["handler"]
