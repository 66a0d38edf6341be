"""The Schema Registry's wire prefix read for a whole column (format.schema_ids)."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from objectlog.format.schema_ids import framed_ids


@pytest.mark.parametrize(
    ("value", "schema_id", "is_framed"),
    [
        pytest.param(struct.pack(">bI", 0, 7) + b"payload", 7, True, id="framed"),
        pytest.param(struct.pack(">bI", 0, 2**31 - 1), 2**31 - 1, True, id="prefix-only"),
        pytest.param(struct.pack(">bI", 1, 7) + b"x", None, False, id="magic-byte-1"),
        pytest.param(b"\x00\x00\x00\x07", None, False, id="four-bytes"),
        pytest.param(b"", None, False, id="empty"),
        pytest.param(b'{"json": true}', None, False, id="json"),
    ],
)
def test_each_value_is_read_alone_and_in_a_column(
    value: bytes, schema_id: int | None, is_framed: bool
) -> None:
    column = pa.array([b"\x01noise", value, None], pa.binary())
    for given in (column, column.slice(1), pa.chunked_array([column[:1], column[1:]])):
        ids, framed, null = framed_ids(given)
        at = 1 if len(given) == 3 else 0
        assert (bool(framed[at]), bool(null[at]), bool(null[-1])) == (is_framed, False, True)
        assert not framed[-1]
        if is_framed:
            assert ids[at] == schema_id
