"""AVRO values decoded into typed Arrow columns (schemas.typed_columns, issue 35)."""

from __future__ import annotations

import datetime as dt
import io
import json
import struct
import uuid
import warnings
from decimal import Decimal
from typing import Any

import avro.schema
import fastavro
import pyarrow as pa
import pytest

from objectlog.schemas.typed_columns import arrow_type, decode_column

UTC = dt.UTC
SCHEMA_ID = 42


def parse(schema: Any) -> avro.schema.Schema:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # avro 1.12 warns of the logical types it ignores
        return avro.schema.parse(json.dumps(schema))


def framed(schema: Any, datum: Any) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), datum)
    return struct.pack(">bI", 0, SCHEMA_ID) + out.getvalue()


def record(name: str, *fields: tuple[str, Any]) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": [{"name": n, "type": t} for n, t in fields]}


def field(name: str, kind: pa.DataType, nullable: bool = False) -> pa.Field:
    return pa.field(name, kind, nullable=nullable)


LIST = record("List", ("value", "int"), ("next", ["null", "List"]))
TREE = record("Tree", ("children", {"type": "array", "items": "Tree"}))
# A and B contain each other: both are recursive
MUTUAL = record("A", ("b", ["null", record("B", ("a", ["null", "A"]))]))
ENUM = {"type": "enum", "name": "Suit", "symbols": ["HEARTS", "SPADES"]}
FIXED = {"type": "fixed", "name": "Four", "size": 4}


def logical(kind: Any, name: str, **more: Any) -> dict[str, Any]:
    return {"type": kind, "logicalType": name, **more}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param("null", pa.null(), id="null"),
        pytest.param("boolean", pa.bool_(), id="boolean"),
        pytest.param("int", pa.int32(), id="int"),
        pytest.param("long", pa.int64(), id="long"),
        pytest.param("float", pa.float32(), id="float"),
        pytest.param("double", pa.float64(), id="double"),
        pytest.param("bytes", pa.binary(), id="bytes"),
        pytest.param("string", pa.string(), id="string"),
        pytest.param(FIXED, pa.binary(), id="fixed"),
        pytest.param(ENUM, pa.string(), id="enum"),
        pytest.param(["null", "long"], pa.int64(), id="null-union"),
        pytest.param(["long", "null"], pa.int64(), id="null-union-null-last"),
        pytest.param(["string"], pa.string(), id="single-branch-union"),
        pytest.param(["null"], pa.null(), id="only-null-union"),
        pytest.param(
            record("R", ("a", "int"), ("b", ["null", "string"]), ("c", ENUM)),
            pa.struct(
                [field("a", pa.int32()), field("b", pa.string(), True), field("c", pa.string())]
            ),
            id="record-fields-in-order",
        ),
        pytest.param(
            {"type": "error", "name": "E", "fields": [{"name": "m", "type": "string"}]},
            pa.struct([field("m", pa.string())]),
            id="error-record",
        ),
        pytest.param(
            {"type": "array", "items": "long"}, pa.list_(field("item", pa.int64())), id="array"
        ),
        pytest.param(
            {"type": "array", "items": ["null", "long"]},
            pa.list_(field("item", pa.int64(), True)),
            id="array-of-nullable",
        ),
        pytest.param(
            {"type": "map", "values": "double"},
            pa.map_(pa.string(), field("value", pa.float64())),
            id="map",
        ),
        pytest.param(
            {"type": "map", "values": {"type": "array", "items": ["null", "int"]}},
            pa.map_(pa.string(), field("value", pa.list_(field("item", pa.int32(), True)))),
            id="map-of-arrays",
        ),
        pytest.param(logical("int", "date"), pa.date32(), id="date"),
        pytest.param(logical("int", "time-millis"), pa.time32("ms"), id="time-millis"),
        pytest.param(logical("long", "time-micros"), pa.time64("us"), id="time-micros"),
        pytest.param(
            logical("long", "timestamp-millis"), pa.timestamp("ms", "UTC"), id="timestamp-millis"
        ),
        pytest.param(
            logical("long", "timestamp-micros"), pa.timestamp("us", "UTC"), id="timestamp-micros"
        ),
        pytest.param(
            logical("long", "local-timestamp-millis"), pa.timestamp("ms"), id="local-ts-millis"
        ),
        pytest.param(
            logical("long", "local-timestamp-micros"), pa.timestamp("us"), id="local-ts-micros"
        ),
        pytest.param(
            logical("bytes", "decimal", precision=10, scale=2),
            pa.decimal128(10, 2),
            id="decimal-bytes",
        ),
        pytest.param(
            {**FIXED, "logicalType": "decimal", "precision": 9, "scale": 3},
            pa.decimal128(9, 3),
            id="decimal-fixed",
        ),
        pytest.param(
            logical("bytes", "decimal", precision=5), pa.decimal128(5, 0), id="decimal-no-scale"
        ),
        pytest.param(logical("string", "uuid"), pa.string(), id="uuid"),
        pytest.param(
            ["null", logical("long", "timestamp-millis")],
            pa.timestamp("ms", "UTC"),
            id="nullable-timestamp",
        ),
        # logical types Avro ignores: the underlying type
        pytest.param(
            logical("bytes", "decimal", precision=4, scale=5), pa.binary(), id="decimal-bad-scale"
        ),
        pytest.param(
            {**FIXED, "logicalType": "decimal", "precision": 20}, pa.binary(), id="decimal-too-wide"
        ),
        pytest.param(logical("int", "time-micros"), pa.int32(), id="time-micros-on-int"),
        pytest.param(logical("long", "timestamp-nanos"), pa.int64(), id="timestamp-nanos"),
        pytest.param(logical("string", "frobnicate"), pa.string(), id="unknown-logical"),
        # what Iceberg cannot hold
        pytest.param(logical("bytes", "decimal", precision=39), pa.string(), id="decimal-over-38"),
        pytest.param(["string", "int"], pa.string(), id="union-two-branches"),
        pytest.param(["null", "string", "int"], pa.string(), id="nullable-union-two-branches"),
        pytest.param(LIST, pa.string(), id="recursive-record"),
        pytest.param(TREE, pa.string(), id="recursive-through-array"),
        pytest.param(MUTUAL, pa.string(), id="mutually-recursive"),
        pytest.param(
            record("Holder", ("id", "long"), ("list", LIST)),
            pa.struct([field("id", pa.int64()), field("list", pa.string())]),
            id="record-holding-a-recursive-one",
        ),
        pytest.param(
            record("Pair", ("a", record("P", ("x", "int"))), ("b", "P")),
            pa.struct([field(n, pa.struct([field("x", pa.int32())])) for n in "ab"]),
            id="named-type-used-twice-is-not-recursive",
        ),
    ],
)
def test_arrow_type(schema: Any, expected: pa.DataType) -> None:
    assert arrow_type(parse(schema)) == expected


@pytest.mark.parametrize(
    ("schema", "datum", "expected"),
    [
        pytest.param("boolean", True, True, id="boolean"),
        pytest.param("int", -(2**31), -(2**31), id="int"),
        pytest.param("long", 2**62, 2**62, id="long"),
        pytest.param("float", 1.5, 1.5, id="float"),
        pytest.param("double", -0.25, -0.25, id="double"),
        pytest.param("bytes", b"\x00\xff", b"\x00\xff", id="bytes"),
        pytest.param("string", "héllo", "héllo", id="string"),
        pytest.param(FIXED, b"abcd", b"abcd", id="fixed"),
        pytest.param(ENUM, "SPADES", "SPADES", id="enum"),
        pytest.param(["null", "long"], 7, 7, id="null-union"),
        pytest.param(
            record("R", ("a", "int"), ("b", ["null", "string"])),
            {"a": 1, "b": None},
            {"a": 1, "b": None},
            id="record",
        ),
        pytest.param({"type": "array", "items": "long"}, [1, 2], [1, 2], id="array"),
        pytest.param(
            {"type": "map", "values": "int"}, {"x": 1, "y": 2}, [("x", 1), ("y", 2)], id="map"
        ),
        pytest.param(logical("int", "date"), dt.date(2024, 2, 29), dt.date(2024, 2, 29), id="date"),
        pytest.param(
            logical("int", "time-millis"),
            dt.time(13, 5, 1, 123000),
            dt.time(13, 5, 1, 123000),
            id="time-millis",
        ),
        pytest.param(
            logical("long", "time-micros"),
            dt.time(0, 0, 0, 7),
            dt.time(0, 0, 0, 7),
            id="time-micros",
        ),
        pytest.param(
            logical("long", "timestamp-millis"),
            dt.datetime(2024, 5, 1, 12, 0, 0, 5000, tzinfo=UTC),
            dt.datetime(2024, 5, 1, 12, 0, 0, 5000, tzinfo=UTC),
            id="timestamp-millis",
        ),
        pytest.param(
            logical("long", "timestamp-micros"),
            dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            id="timestamp-micros-before-epoch",
        ),
        pytest.param(
            logical("long", "local-timestamp-millis"),
            dt.datetime(2024, 5, 1, 12, 0, 0, 5000),
            dt.datetime(2024, 5, 1, 12, 0, 0, 5000),
            id="local-ts-millis",
        ),
        pytest.param(
            logical("long", "local-timestamp-micros"),
            dt.datetime(2024, 5, 1, 12, 0, 0, 7),
            dt.datetime(2024, 5, 1, 12, 0, 0, 7),
            id="local-ts-micros",
        ),
        pytest.param(
            logical("bytes", "decimal", precision=10, scale=2),
            Decimal("-12345.67"),
            Decimal("-12345.67"),
            id="decimal-bytes",
        ),
        pytest.param(
            {**FIXED, "logicalType": "decimal", "precision": 9, "scale": 3},
            Decimal("1.5"),
            Decimal("1.500"),
            id="decimal-fixed",
        ),
        pytest.param(
            logical("bytes", "decimal", precision=40, scale=1),
            Decimal("1" * 39 + ".5"),
            "1" * 39 + ".5",
            id="decimal-over-38-as-text",
        ),
        pytest.param(
            logical("bytes", "decimal", precision=40, scale=9),
            Decimal("-0.000000001"),
            "-0.000000001",
            id="decimal-over-38-small-as-plain-text",
        ),
        pytest.param(
            logical("string", "uuid"),
            uuid.UUID(int=1),
            "00000000-0000-0000-0000-000000000001",
            id="uuid",
        ),
        pytest.param(["string", "int"], 5, "5", id="union-json-int"),
        pytest.param(["string", "int"], "five", '"five"', id="union-json-string"),
        pytest.param(["null", "bytes", "int"], b"\x00\xff", '"AP8="', id="union-json-base64"),
        pytest.param(["double", "string"], float("nan"), '"NaN"', id="union-json-nan"),
        pytest.param(
            ["null", "string", logical("long", "timestamp-millis")],
            dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
            "1000",
            id="union-json-logical-as-underlying",
        ),
        pytest.param(
            LIST,
            {"value": 1, "next": {"value": 2, "next": None}},
            '{"value":1,"next":{"value":2,"next":null}}',
            id="recursive-json",
        ),
        pytest.param(
            record(
                "Deep",
                (
                    "m",
                    {
                        "type": "map",
                        "values": {
                            "type": "array",
                            "items": [
                                "null",
                                logical("bytes", "decimal", precision=4, scale=1),
                            ],
                        },
                    },
                ),
                ("u", ["null", "int", "string"]),
            ),
            {"m": {"k": [Decimal("1.5"), None]}, "u": "x"},
            {"m": [("k", [Decimal("1.5"), None])], "u": '"x"'},
            id="nested-conversions",
        ),
    ],
)
def test_decode_round_trip(schema: Any, datum: Any, expected: Any) -> None:
    writer = parse(schema)
    typed, reasons = decode_column(pa.array([framed(schema, datum), None], pa.binary()), writer)
    assert typed.type == arrow_type(writer)
    assert typed.to_pylist() == [expected, None]
    assert reasons.to_pylist() == [None, None]


PERSON = record("Person", ("name", "string"), ("age", "int"))


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        pytest.param(lambda good: good[:-2], "cut short", id="truncated"),
        pytest.param(lambda good: good[5:], "not framed", id="no-prefix"),
        pytest.param(lambda good: b"\x01" + good[1:], "not framed", id="magic-byte-1"),
        pytest.param(lambda good: good[:4], "not framed", id="shorter-than-prefix"),
        pytest.param(lambda good: good + b"\x02", "1 bytes after", id="trailing-bytes"),
    ],
)
def test_an_undecodable_row_is_null_with_a_reason(bad: Any, reason: str) -> None:
    good = framed(PERSON, {"name": "ann", "age": 30})
    column = pa.array([good, bad(good), None, good], pa.binary())
    typed, reasons = decode_column(column, parse(PERSON))
    assert typed.to_pylist() == [{"name": "ann", "age": 30}, None, None, {"name": "ann", "age": 30}]
    got = reasons.to_pylist()
    assert got[0] is None and got[2] is None and got[3] is None
    assert reason in got[1]


def test_a_reader_type_fills_the_fields_the_writer_lacks_with_null() -> None:
    reader = pa.struct(
        [
            field("name", pa.string()),
            field("age", pa.int64()),  # promoted, as Avro's resolution allows
            field("email", pa.string(), True),
        ]
    )
    column = pa.chunked_array([[framed(PERSON, {"name": "bo", "age": 4})], [None]], pa.binary())
    typed, reasons = decode_column(column, parse(PERSON), reader)
    assert typed.type == reader
    assert typed.to_pylist() == [{"name": "bo", "age": 4, "email": None}, None]
    assert reasons.to_pylist() == [None, None]


def test_a_value_the_reader_type_cannot_hold_is_null_with_a_reason() -> None:
    writer = record("N", ("n", "long"))
    column = pa.array([framed(writer, {"n": 2**40}), framed(writer, {"n": 1})], pa.binary())
    typed, reasons = decode_column(column, parse(writer), pa.struct([field("n", pa.int32())]))
    assert typed.to_pylist() == [None, {"n": 1}]
    first, second = reasons.to_pylist()
    assert first is not None and "does not fit" in first
    assert second is None
