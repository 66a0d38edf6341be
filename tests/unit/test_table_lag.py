"""How many tail refs a compaction run leaves in the head: TAIL_KEEP, fewer for a topic kept as
a table whose newest refs are older than its lag target."""

from __future__ import annotations

import re

import pytest

from objectlog.clock import ManualClock, new_ulid
from objectlog.compaction.compactor import tail_refs_kept
from objectlog.errors import InvalidConfig
from objectlog.format.index import LEVEL_L0, SegmentRef
from objectlog.format.topics import TopicConfig, validate_config
from objectlog.services.index import TAIL_KEEP


def tail(*written_ms: int) -> tuple[SegmentRef, ...]:
    """L0 refs whose object ids carry these write times (oldest first)."""
    return tuple(
        SegmentRef(LEVEL_L0, new_ulid(ManualClock(at)), 0, 100, 1, 1, 0, 0) for at in written_ms
    )


@pytest.mark.parametrize(
    ("written", "lag_ms", "kept"),
    [
        pytest.param((1, 2, 3, 4), None, TAIL_KEEP, id="no-table-keeps-the-newest-two"),
        pytest.param((1,), None, 1, id="no-table-short-tail"),
        pytest.param((), 10, 0, id="empty-tail"),
        pytest.param((995, 996, 997), 10, TAIL_KEEP, id="all-young"),
        pytest.param((980, 985, 995), 10, 1, id="only-the-newest-is-young"),
        pytest.param((980, 985, 990), 10, 0, id="all-old-spill-everything"),
        pytest.param((980, 995, 985), 10, 0, id="counts-from-the-newest-back"),
    ],
)
def test_tail_refs_kept(written: tuple[int, ...], lag_ms: int | None, kept: int) -> None:
    assert tail_refs_kept(tail(*written), now_ms=1_000, table_lag_ms=lag_ms) == kept


def test_the_table_lag_is_a_topic_config_with_the_default_compaction_interval() -> None:
    assert TopicConfig().table_lag_ms == 300_000
    config = TopicConfig(validate_config({"objectlog.table.lag.ms": "60000"}))
    assert config.table_lag_ms == 60_000
    with pytest.raises(InvalidConfig, match=re.escape("objectlog.table.lag.ms")):
        validate_config({"objectlog.table.lag.ms": "-1"})
