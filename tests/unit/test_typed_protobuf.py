"""PROTOBUF values decoded into typed Arrow columns (schemas.typed_protobuf, issue 35):
schemas parsed by the registry's own parser (protoc), messages built from its descriptors and
framed by hand or by confluent-kafka's ProtobufSerializer."""

from __future__ import annotations

import datetime as dt
import functools
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import (
    MockSchemaRegistryClient,
)
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from objectlog.schemas.parsing import schema_type
from objectlog.schemas.protobuf_messages import ProtobufMessages
from objectlog.schemas.typed_protobuf import arrow_type, decode_column
from objectlog.schemas.types import ParsedSchema

UTC = dt.UTC
PREFIX = b"\x00\x00\x00\x00\x2a"  # magic byte 0, schema id 42
FIRST = b"\x00"  # the message indexes [0]
WRAPPERS = ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")
EVERYTHING = (
    """syntax = "proto3";
package shop;
import "google/protobuf/empty.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Everything {
  string id = 40;  // declared first, numbered last: columns keep declaration order
  int32 i32 = 1; sint32 s32 = 2; sfixed32 sf32 = 3;
  int64 i64 = 4; sint64 s64 = 5; sfixed64 sf64 = 6;
  uint32 u32 = 7; fixed32 f32 = 8; uint64 u64 = 9; fixed64 f64 = 10;
  float fl = 11; double db = 12; bool flag = 13; string text = 14; bytes raw = 15;
  Suit suit = 16;
  repeated int64 numbers = 17; repeated Suit suits = 18; repeated Line lines = 19;
  map<string, int32> counts = 20; map<uint64, Line> by_number = 21;
  Line line = 22;
  google.protobuf.Timestamp at = 23; repeated google.protobuf.Timestamp times = 24;
"""
    + "".join(
        f"  google.protobuf.{name}Value w_{name.lower()} = {25 + i};\n"
        for i, name in enumerate(WRAPPERS)
    )
    + """  optional string nick = 34;
  oneof choice { string word = 35; int64 count = 36; Line picked = 37; }
  google.protobuf.Struct doc = 38;
  google.protobuf.Empty nothing = 39;
  Node tree = 41;
  map<string, Node> forest = 42;
  message Line { int32 qty = 1; string sku = 2; }
}
enum Suit { HEARTS = 0; SPADES = 1; }
message Node { repeated Node children = 1; string name = 2; }
message Refund { string order = 1; }
"""
)
RECURSIVE = """syntax = "proto3";
message Tree { string name = 1; repeated Tree children = 2; }
"""
PROTO2 = """syntax = "proto2";
message Old { required string id = 1; optional int32 n = 2 [default = 5]; optional Old.In in = 3;
  message In { optional bool b = 1; } }
"""
NO_MESSAGE = 'syntax = "proto3";\nenum Lonely { ZERO = 0; }\n'


@functools.cache
def parse(text: str) -> ParsedSchema:
    return schema_type("PROTOBUF").parse(text, {})


@functools.cache
def message_class(text: str, indexes: tuple[int, ...] = (0,)) -> Any:
    return ProtobufMessages(parse(text)).message_class(indexes)


def framed(message: Any, indexes: bytes = FIRST) -> bytes:
    return PREFIX + indexes + message.SerializeToString()


def indexes(*path: int) -> bytes:
    """Message indexes as the wire format writes them: zigzag varints (each under 64 here)."""
    return bytes([2 * len(path), *(2 * index for index in path)])


@dataclass(frozen=True)
class Json:
    """Expected JSON text: equal to a string holding the same JSON (its key order aside:
    json_format prints set fields before the defaults)."""

    value: Any

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and json.loads(other) == self.value


def field(name: str, kind: pa.DataType, nullable: bool = True) -> pa.Field:
    return pa.field(name, kind, nullable=nullable)


def required(name: str, kind: pa.DataType) -> pa.Field:
    return pa.field(name, kind, nullable=False)


LINE = pa.struct([required("qty", pa.int32()), required("sku", pa.string())])
TIMESTAMP = pa.timestamp("us", "UTC")
U64 = pa.decimal128(20, 0)
EVERYTHING_FIELDS = [
    required("id", pa.string()),
    required("i32", pa.int32()),
    required("s32", pa.int32()),
    required("sf32", pa.int32()),
    required("i64", pa.int64()),
    required("s64", pa.int64()),
    required("sf64", pa.int64()),
    required("u32", pa.int64()),
    required("f32", pa.int64()),
    required("u64", U64),
    required("f64", U64),
    required("fl", pa.float32()),
    required("db", pa.float64()),
    required("flag", pa.bool_()),
    required("text", pa.string()),
    required("raw", pa.binary()),
    required("suit", pa.string()),
    required("numbers", pa.list_(required("item", pa.int64()))),
    required("suits", pa.list_(required("item", pa.string()))),
    required("lines", pa.list_(required("item", LINE))),
    required("counts", pa.map_(pa.string(), required("value", pa.int32()))),
    required("by_number", pa.map_(U64, required("value", LINE))),
    field("line", LINE),
    field("at", TIMESTAMP),
    required("times", pa.list_(required("item", TIMESTAMP))),
    field("w_double", pa.float64()),
    field("w_float", pa.float32()),
    field("w_int64", pa.int64()),
    field("w_uint64", U64),
    field("w_int32", pa.int32()),
    field("w_uint32", pa.int64()),
    field("w_bool", pa.bool_()),
    field("w_string", pa.string()),
    field("w_bytes", pa.binary()),
    field("nick", pa.string()),
    field("choice", pa.string()),
    field("doc", pa.string()),
    field("nothing", pa.string()),
    field("tree", pa.string()),
    required("forest", pa.map_(pa.string(), required("value", pa.string()))),
]


@pytest.mark.parametrize(
    "expected", [pytest.param(f, id=f.name) for f in EVERYTHING_FIELDS]
)  # fmt: skip
def test_arrow_type_of_each_field(expected: pa.Field) -> None:
    kind = arrow_type(parse(EVERYTHING))
    assert kind.field(expected.name) == expected


def test_fields_keep_declaration_order_and_a_oneof_is_one_column() -> None:
    assert arrow_type(parse(EVERYTHING)) == pa.struct(EVERYTHING_FIELDS)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(RECURSIVE, pa.string(), id="recursive-root-is-json"),
        pytest.param(
            PROTO2,
            pa.struct([required("id", pa.string()), required("n", pa.int32()),
                       field("in", pa.struct([required("b", pa.bool_())]))]),
            id="proto2",
        ),
        pytest.param(NO_MESSAGE, pa.null(), id="no-message"),
    ],
)  # fmt: skip
def test_arrow_type_of_other_schemas(text: str, expected: pa.DataType) -> None:
    assert arrow_type(parse(text)) == expected


def everything(**fields: Any) -> Any:
    return message_class(EVERYTHING)(**fields)


@pytest.mark.parametrize(
    ("fields", "column", "expected"),
    [
        pytest.param({"id": "o-1"}, "id", "o-1", id="string"),
        pytest.param({"i32": -(2**31)}, "i32", -(2**31), id="int32"),
        pytest.param({"s32": -5}, "s32", -5, id="sint32"),
        pytest.param({"sf32": 7}, "sf32", 7, id="sfixed32"),
        pytest.param({"i64": 2**62}, "i64", 2**62, id="int64"),
        pytest.param({"s64": -(2**63)}, "s64", -(2**63), id="sint64"),
        pytest.param({"sf64": -1}, "sf64", -1, id="sfixed64"),
        pytest.param({"u32": 2**32 - 1}, "u32", 2**32 - 1, id="uint32"),
        pytest.param({"f32": 2**31}, "f32", 2**31, id="fixed32"),
        pytest.param({"u64": 2**64 - 1}, "u64", Decimal(2**64 - 1), id="uint64-past-int64"),
        pytest.param({"f64": 3}, "f64", Decimal(3), id="fixed64"),
        pytest.param({"fl": 1.5}, "fl", 1.5, id="float"),
        pytest.param({"db": -0.25}, "db", -0.25, id="double"),
        pytest.param({"flag": True}, "flag", True, id="bool"),
        pytest.param({"raw": b"\x00\xff"}, "raw", b"\x00\xff", id="bytes"),
        pytest.param({"suit": 1}, "suit", "SPADES", id="enum-name"),
        pytest.param({"suit": 7}, "suit", "7", id="enum-unknown-number"),
        pytest.param({"numbers": [3, 1]}, "numbers", [3, 1], id="repeated"),
        pytest.param({"suits": [1, 0]}, "suits", ["SPADES", "HEARTS"], id="repeated-enum"),
        pytest.param({"lines": [{"qty": 2}]}, "lines", [{"qty": 2, "sku": ""}],
                     id="repeated-message"),
        pytest.param({"counts": {"a": 1}}, "counts", [("a", 1)], id="map"),
        pytest.param({"by_number": {2**64 - 1: {"sku": "x"}}}, "by_number",
                     [(Decimal(2**64 - 1), {"qty": 0, "sku": "x"})], id="map-of-messages"),
        pytest.param({"line": {"qty": 3}}, "line", {"qty": 3, "sku": ""}, id="message"),
        pytest.param({"line": {}}, "line", {"qty": 0, "sku": ""}, id="message-set-empty"),
        pytest.param({"at": {"seconds": 1, "nanos": 1_500}}, "at",
                     dt.datetime(1970, 1, 1, 0, 0, 1, 1, tzinfo=UTC), id="timestamp-micros"),
        pytest.param({"at": {"seconds": -1}}, "at",
                     dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC), id="before-epoch"),
        pytest.param({"times": [{"seconds": 0}]}, "times",
                     [dt.datetime(1970, 1, 1, tzinfo=UTC)], id="repeated-timestamp"),
        pytest.param({"w_double": {"value": 0.5}}, "w_double", 0.5, id="double-value"),
        pytest.param({"w_float": {"value": 2.5}}, "w_float", 2.5, id="float-value"),
        pytest.param({"w_int64": {"value": -9}}, "w_int64", -9, id="int64-value"),
        pytest.param({"w_uint64": {"value": 2**64 - 1}}, "w_uint64", Decimal(2**64 - 1),
                     id="uint64-value"),
        pytest.param({"w_int32": {"value": 0}}, "w_int32", 0, id="int32-value-set-to-zero"),
        pytest.param({"w_uint32": {"value": 2**32 - 1}}, "w_uint32", 2**32 - 1,
                     id="uint32-value"),
        pytest.param({"w_bool": {"value": False}}, "w_bool", False, id="bool-value"),
        pytest.param({"w_string": {"value": ""}}, "w_string", "", id="string-value-empty"),
        pytest.param({"w_bytes": {"value": b"\x01"}}, "w_bytes", b"\x01", id="bytes-value"),
        pytest.param({"nick": ""}, "nick", "", id="optional-set-to-default"),
        pytest.param({"nick": "ada"}, "nick", "ada", id="optional"),
        pytest.param({"word": "hé"}, "choice", '{"word":"hé"}', id="oneof-string"),
        pytest.param({"count": 0}, "choice", '{"count":"0"}', id="oneof-int64-as-json-string"),
        pytest.param({"picked": {"qty": 1}}, "choice", '{"picked":{"qty":1,"sku":""}}',
                     id="oneof-message"),
        pytest.param({"doc": {"a": [None, 1]}}, "doc", '{"a":[null,1.0]}', id="struct-as-json"),
        pytest.param({"nothing": {}}, "nothing", "{}", id="empty-message-as-json"),
        pytest.param({"tree": {"name": "r", "children": [{"name": "k"}]}}, "tree",
                     Json({"name": "r", "children": [{"name": "k", "children": []}]}),
                     id="recursive-message-as-json"),
        pytest.param({"forest": {"f": {"name": "n"}}}, "forest",
                     [("f", Json({"name": "n", "children": []}))], id="map-of-recursive"),
    ],
)  # fmt: skip
def test_decode_round_trip(fields: dict[str, Any], column: str, expected: Any) -> None:
    parsed = parse(EVERYTHING)
    typed, reasons = decode_column(pa.array([framed(everything(**fields)), None]), parsed)
    assert typed.type == arrow_type(parsed)
    row, null = typed.to_pylist()
    assert (row[column], null) == (expected, None)
    assert reasons.to_pylist() == [None, None]


UNSET = {
    "id": "",
    "i64": 0,
    "u64": Decimal(0),
    "fl": 0.0,
    "flag": False,
    "raw": b"",
    "suit": "HEARTS",
    "numbers": [],
    "counts": [],
    "line": None,
    "at": None,
    "w_int32": None,
    "nick": None,
    "choice": None,
    "doc": None,
    "nothing": None,
    "tree": None,
}


@pytest.mark.parametrize(("column", "expected"), UNSET.items(), ids=list(UNSET))
def test_unset_fields_are_defaults_or_null(column: str, expected: Any) -> None:
    typed, _ = decode_column(pa.array([framed(everything())]), parse(EVERYTHING))
    assert typed.to_pylist()[0][column] == expected


def test_a_recursive_first_message_is_its_json() -> None:
    tree = message_class(RECURSIVE)(name="r", children=[{"name": "k"}])
    typed, reasons = decode_column(pa.array([framed(tree)]), parse(RECURSIVE))
    assert typed.to_pylist() == [Json({"name": "r", "children": [{"name": "k", "children": []}]})]
    assert reasons.to_pylist() == [None]


def test_proto2_optional_scalars_read_as_their_defaults() -> None:
    old = message_class(PROTO2)(id="x")
    typed, _ = decode_column(pa.array([framed(old)]), parse(PROTO2))
    assert typed.to_pylist() == [{"id": "x", "n": 5, "in": None}]


# Line's index among Everything's nested messages (the maps' entries, declared at their fields,
# are nested messages before it)
LINE = [m.name for m in parse(EVERYTHING).parsed.message_type[0].nested_type].index("Line")


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        pytest.param(b"\x0a\x02o1", "not framed", id="no-prefix"),
        pytest.param(b"\x01\0\0\0\x2a\0", "not framed", id="magic-byte-1"),
        pytest.param(PREFIX, "message indexes are cut short", id="no-indexes"),
        pytest.param(PREFIX + b"\x02\x80", "message indexes are cut short", id="cut-indexes"),
        pytest.param(PREFIX + FIRST + b"\x0a\x05ab", "Protobuf cannot parse its message",
                     id="truncated-message"),
        pytest.param(PREFIX + FIRST + b"\xff\xff\xff", "Protobuf cannot parse", id="garbage"),
        pytest.param(PREFIX + indexes(2) + b"\x0a\x02o1",
                     "it is a shop.Refund (message indexes [2]), not the column's message "
                     "shop.Everything", id="another-message"),
        pytest.param(PREFIX + indexes(0, LINE) + b"\x08\x01",
                     f"it is a shop.Everything.Line (message indexes [0, {LINE}])",
                     id="nested-message"),
        pytest.param(PREFIX + indexes(5), "message indexes [5] name no message", id="no-such"),
        pytest.param(framed(everything(at={"seconds": 253_402_300_800})),
                     "google.protobuf.Timestamp outside its range", id="timestamp-past-9999"),
        pytest.param(PREFIX + FIRST + b"\xc2\x02\x01\xff", "Protobuf cannot parse",
                     id="string-not-utf-8"),
    ],
)  # fmt: skip
def test_an_undecodable_row_is_null_with_a_reason(payload: bytes, reason: str) -> None:
    good = framed(everything(id="ann"))
    column = pa.array([good, payload, None, good], pa.binary())
    typed, reasons = decode_column(column, parse(EVERYTHING))
    rows = typed.to_pylist()
    assert rows[0]["id"] == rows[3]["id"] == "ann"
    assert rows[1:3] == [None, None]
    got = reasons.to_pylist()
    assert got[0] is None and got[2] is None and got[3] is None
    assert reason in got[1]


def test_a_schema_without_messages_decodes_nothing() -> None:
    typed, reasons = decode_column(pa.array([PREFIX + FIRST, None]), parse(NO_MESSAGE))
    assert typed.to_pylist() == [None, None]
    assert reasons.to_pylist() == ["the schema defines no message", None]


def test_confluents_serializer_writes_what_decodes() -> None:
    client = MockSchemaRegistryClient({"url": "mock://"})
    context = SerializationContext("t", MessageField.VALUE)
    serializer_config = {"use.deprecated.format": False}
    first = ProtobufSerializer(message_class(EVERYTHING), client, serializer_config)
    refund_class = message_class(EVERYTHING, (2,))
    refund = ProtobufSerializer(refund_class, client, serializer_config)
    column = pa.array([first(everything(id="o-1", i64=5), context),
                       refund(refund_class(order="o-1"), context)])  # fmt: skip
    typed, reasons = decode_column(column, parse(EVERYTHING))
    row, other = typed.to_pylist()
    assert (row["id"], row["i64"], other) == ("o-1", 5, None)
    assert reasons.to_pylist()[0] is None
    assert "it is a shop.Refund (message indexes [2])" in reasons.to_pylist()[1]


def test_a_reader_type_fills_the_fields_the_writer_lacks_with_null() -> None:
    reader = pa.struct([field("id", pa.string()), field("i64", pa.int64()),
                        field("added", pa.string())])  # fmt: skip
    column = pa.chunked_array([[framed(everything(id="x", i64=3))], [None]], pa.binary())
    typed, reasons = decode_column(column, parse(EVERYTHING), reader)
    assert typed.type == reader
    assert typed.to_pylist() == [{"id": "x", "i64": 3, "added": None}, None]
    assert reasons.to_pylist() == [None, None]


def test_a_value_the_reader_type_cannot_hold_is_null_with_a_reason() -> None:
    reader = pa.struct([field("i64", pa.int32())])
    column = pa.array([framed(everything(i64=2**40)), framed(everything(i64=1))])
    typed, reasons = decode_column(column, parse(EVERYTHING), reader)
    assert typed.to_pylist() == [None, {"i64": 1}]
    first, second = reasons.to_pylist()
    assert first is not None and "does not fit" in first
    assert second is None
