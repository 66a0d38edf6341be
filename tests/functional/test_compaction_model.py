"""The compaction model (tests/compaction_model.py) with partition heads in DynamoDB."""

from __future__ import annotations

import pytest

from objectlog.config import Config
from tests.compaction_model import run_machine


def test_compaction_keeps_kafkas_guarantees(log_config: Config) -> None:
    run_machine(log_config, in_memory=False, examples=12, steps=25)


@pytest.mark.slow
def test_compaction_keeps_kafkas_guarantees_long(log_config: Config) -> None:
    run_machine(log_config, in_memory=False, examples=200, steps=50, derandomize=False)
