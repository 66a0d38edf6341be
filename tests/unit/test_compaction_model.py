"""The compaction model (tests/compaction_model.py) on the in-memory stores: no server at all."""

from __future__ import annotations

from objectlog.config import Config
from tests.compaction_model import run_machine


def test_compaction_keeps_kafkas_guarantees_in_memory() -> None:
    run_machine(Config(), in_memory=True, examples=12, steps=25)
