"""schemas.typed_values: how writer schemas' types merge into a table's column, how decoded
columns conform to it, and what rows a schema the column cannot take get (issue 35)."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pytest

from objectlog.format.schema_ids import framed_ids
from objectlog.schemas.parsing import SchemaInput
from objectlog.schemas.registry import SchemaRegistry
from objectlog.schemas.typed_values import (
    DECODED,
    ERROR,
    SCHEMA_ID,
    TypedValues,
    conform,
    iceberg_ready,
    merge_types,
)
from objectlog.stores.items import ItemStores

S = pa.string()
I32, I64, F32, F64 = pa.int32(), pa.int64(), pa.float32(), pa.float64()


def struct(**fields: pa.DataType) -> pa.DataType:
    return pa.struct([pa.field(name, kind) for name, kind in fields.items()])


MERGES: list[tuple[str, pa.DataType, pa.DataType, pa.DataType | str]] = [
    ("same", S, S, S),
    ("int widens to long", I32, I64, I64),
    ("long takes an int", I64, I32, I64),
    ("float widens to double", F32, F64, F64),
    ("decimal precision widens", pa.decimal128(5, 2), pa.decimal128(9, 2), pa.decimal128(9, 2)),
    ("decimal scale change", pa.decimal128(5, 2), pa.decimal128(5, 3), "decimal128(5, 3)"),
    ("string to long", S, I64, "int64 where the table has string"),
    ("fields appended", struct(a=I32), struct(b=S, a=I32), struct(a=I32, b=S)),
    ("a dropped field stays", struct(a=I32, b=S), struct(a=I32), struct(a=I32, b=S)),
    ("nested widening", struct(a=struct(x=I32)), struct(a=struct(x=I64)), struct(a=struct(x=I64))),
    ("a field's type changed", struct(a=S), struct(a=I64), "field 'a': int64 where the table"),
    ("list items", pa.list_(I32), pa.list_(I64), pa.list_(I64)),
    ("map values", pa.map_(S, I32), pa.map_(S, I64), pa.map_(S, I64)),
    ("map keys", pa.map_(S, I32), pa.map_(I64, I32), "map keys int64"),
]


@pytest.mark.parametrize(
    ("table", "writer", "expected"),
    [case[1:] for case in MERGES],
    ids=[case[0] for case in MERGES],
)
def test_merge_types(table: pa.DataType, writer: pa.DataType, expected: Any) -> None:
    merged = merge_types(table, writer)
    if isinstance(expected, str):
        assert isinstance(merged, str) and merged.startswith(expected)
    else:
        assert merged == expected


def test_iceberg_ready_makes_fields_optional_and_times_microseconds() -> None:
    natural = pa.struct(
        [
            pa.field("at", pa.timestamp("ms", tz="UTC"), nullable=False),
            pa.field("t", pa.time32("ms"), nullable=False),
            pa.field("n", pa.null()),
            pa.field("l", pa.list_(pa.field("item", I32, nullable=False))),
        ]
    )
    ready = iceberg_ready(natural)
    assert all(f.nullable for f in ready)
    assert ready.field("at").type == pa.timestamp("us", tz="UTC")
    assert ready.field("t").type == pa.time64("us") and ready.field("n").type == S
    assert ready.field("l").type.value_field.nullable


def test_conform_fills_missing_fields_drops_extra_ones_and_keeps_nulls() -> None:
    array = pa.array(
        [{"a": 1, "gone": "x", "l": [1, 2]}, None, {"a": 3, "gone": "y", "l": None}],
        struct(a=I32, gone=S, l=pa.list_(I32)),
    )
    target = struct(a=I64, l=pa.list_(pa.field("element", I64)), added=S)
    conformed = conform(array.slice(1), target)
    assert conformed.type == target
    assert conformed.to_pylist() == [None, {"a": 3, "l": None, "added": None}]
    assert conform(array, target).to_pylist()[0] == {"a": 1, "l": [1, 2], "added": None}


V1 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
V2_NONE = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}]}


def framed(schema_id: int, schema: dict[str, Any], datum: Any) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), datum)
    return b"\x00" + schema_id.to_bytes(4, "big") + out.getvalue()


@pytest.fixture
def registry() -> SchemaRegistry:
    items = ItemStores.memory()
    return SchemaRegistry(items.schemas, items.documents)


def test_a_schema_the_column_cannot_take_leaves_its_rows_null_with_the_reason(
    registry: SchemaRegistry,
) -> None:
    v1 = registry.register("t-value", SchemaInput(json.dumps(V1))).schema.id
    registry.settings.set_compatibility("t-value", "NONE")
    v2 = registry.register("t-value", SchemaInput(json.dumps(V2_NONE))).schema.id
    values = pa.array([framed(v1, V1, {"a": 7}), framed(v2, V2_NONE, {"a": "x"}), None])
    ids, is_framed, _ = framed_ids(values)
    typed = TypedValues(registry)
    target = typed.target(None, ids[is_framed])
    assert target == struct(a=I32)  # v2's change is left out: the column keeps v1's type
    columns = typed.columns(values, ids, is_framed, target)
    assert columns[DECODED].to_pylist() == [{"a": 7}, None, None]
    assert columns[SCHEMA_ID].to_pylist() == [v1, v2, None]
    errors = columns[ERROR].to_pylist()
    assert errors[0] is None and errors[2] is None
    assert errors[1] == f"schema {v2} does not fit the table's column: field 'a': string " + (
        "where the table has int32"
    )


def test_schemas_are_read_once_per_id(registry: SchemaRegistry) -> None:
    v1 = registry.register("t-value", SchemaInput(json.dumps(V1))).schema.id
    typed = TypedValues(registry)
    reads = []
    schema_by_id = registry.schema_by_id
    registry.schema_by_id = lambda *a, **k: reads.append(a) or schema_by_id(*a, **k)  # type: ignore[method-assign]
    values = pa.array([framed(v1, V1, {"a": n}) for n in range(100)])
    ids, is_framed, _ = framed_ids(values)
    for _ in range(3):
        typed.columns(values, ids, is_framed, typed.target(None, ids))
    assert len(reads) == 1
    assert np.array_equal(ids, np.full(100, v1))
