"""The compact function: scheduled compaction, retention and garbage collection."""

from objectlog.functions.compact import handler

__all__ = ["handler"]
