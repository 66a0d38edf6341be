"""JSON values decoded into typed Arrow columns (schemas.typed_json, issue 35): schemas parsed
by the registry's own parser, payloads framed by hand or by confluent-kafka's JSONSerializer."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import (
    MockSchemaRegistryClient,
)
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from objectlog.schemas.parsing import schema_type
from objectlog.schemas.typed_json import arrow_type, decode_column
from objectlog.schemas.types import ParsedSchema

UTC = dt.UTC
PREFIX = b"\x00\x00\x00\x00\x2a"  # magic byte 0, schema id 42
DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema"
ADDRESS_URL = "https://example.com/address.json"
ADDRESS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def parse(schema: Any, references: Mapping[str, Any] | None = None) -> ParsedSchema:
    texts = {name: json.dumps(doc) for name, doc in (references or {}).items()}
    return schema_type("JSON").parse(json.dumps(schema), texts)


def framed(document: Any) -> bytes:
    return PREFIX + json.dumps(document, ensure_ascii=False).encode()


def field(name: str, kind: pa.DataType, nullable: bool = True) -> pa.Field:
    return pa.field(name, kind, nullable=nullable)


def obj(required: tuple[str, ...] = (), **properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


STRING, INTEGER, NUMBER = {"type": "string"}, {"type": "integer"}, {"type": "number"}
NULL = {"type": "null"}
JSON_TEXT = pa.string()  # what a JSON-string column is
LIST = obj(value=INTEGER, next={"$ref": "#"})
TREE = {
    "type": "object",
    "properties": {"id": INTEGER, "tree": {"$ref": "#/$defs/node"}},
    "$defs": {"node": obj(children={"type": "array", "items": {"$ref": "#/$defs/node"}})},
}
MUTUAL = {
    "$ref": "#/definitions/a",
    "definitions": {
        "a": obj(b={"$ref": "#/definitions/b"}),
        "b": obj(a={"$ref": "#/definitions/a"}),
    },
}
TWICE = {
    "type": "object",
    "properties": {"home": {"$ref": "#/definitions/p"}, "work": {"$ref": "#/definitions/p"}},
    "definitions": {"p": obj(("x",), x=INTEGER)},
}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param(STRING, pa.string(), id="string"),
        pytest.param(INTEGER, pa.int64(), id="integer"),
        pytest.param(NUMBER, pa.float64(), id="number"),
        pytest.param({"type": "boolean"}, pa.bool_(), id="boolean"),
        pytest.param(NULL, pa.null(), id="null"),
        pytest.param({**STRING, "format": "date-time"}, pa.timestamp("us", "UTC"), id="date-time"),
        pytest.param({**STRING, "format": "date"}, pa.date32(), id="date"),
        pytest.param({**STRING, "format": "email"}, pa.string(), id="other-format"),
        pytest.param({"type": ["string", "null"]}, pa.string(), id="nullable-type-list"),
        pytest.param({"type": ["null", "integer"]}, pa.int64(), id="null-first-type-list"),
        pytest.param({"type": ["integer", "number"]}, pa.float64(), id="integer-or-number"),
        pytest.param({"type": ["string", "integer"]}, JSON_TEXT, id="two-types"),
        pytest.param({"anyOf": [STRING, NULL]}, pa.string(), id="anyOf-null"),
        pytest.param({"oneOf": [NULL, INTEGER]}, pa.int64(), id="oneOf-null-first"),
        pytest.param({"anyOf": [STRING, INTEGER]}, JSON_TEXT, id="anyOf-two-types"),
        pytest.param({"oneOf": [STRING, INTEGER, NULL]}, JSON_TEXT, id="oneOf-two-and-null"),
        pytest.param(
            {"anyOf": [{**STRING, "maxLength": 2}, {**STRING, "format": "email"}]},
            pa.string(),
            id="anyOf-of-one-arrow-type",
        ),
        pytest.param(
            {**STRING, "anyOf": [{"minLength": 1}, {"pattern": "x"}]},
            pa.string(),
            id="anyOf-of-constraints-beside-a-type",
        ),
        pytest.param(
            {**STRING, "oneOf": [STRING, NULL]}, JSON_TEXT, id="oneOf-shapes-beside-a-type"
        ),
        pytest.param({}, JSON_TEXT, id="empty-schema"),
        pytest.param(True, JSON_TEXT, id="true-schema"),
        pytest.param(False, JSON_TEXT, id="false-schema"),
        pytest.param({"minLength": 3}, JSON_TEXT, id="constraints-only"),
        pytest.param({"enum": ["a", "b"]}, pa.string(), id="enum-of-strings"),
        pytest.param({"enum": ["a", None]}, pa.string(), id="enum-of-strings-and-null"),
        pytest.param({"enum": [1, 2]}, pa.int64(), id="enum-of-integers"),
        pytest.param({"enum": [1, 2.5]}, pa.float64(), id="enum-of-numbers"),
        pytest.param({"enum": ["a", 1]}, JSON_TEXT, id="enum-of-mixed-types"),
        pytest.param({"const": "x"}, pa.string(), id="const-string"),
        pytest.param({"const": 5}, pa.int64(), id="const-integer"),
        pytest.param({"const": True}, pa.bool_(), id="const-boolean"),
        pytest.param({"const": {"a": 1}}, JSON_TEXT, id="const-object"),
        pytest.param(
            obj(("b",), b=INTEGER, a={"type": ["string", "null"]}, c=STRING),
            pa.struct(
                [field("b", pa.int64(), False), field("a", pa.string()), field("c", pa.string())]
            ),
            id="object-properties-in-declaration-order",
        ),
        pytest.param(
            obj(("a",), a={"type": ["string", "null"]}),
            pa.struct([field("a", pa.string())]),
            id="required-but-nullable",
        ),
        pytest.param(
            {**obj(a=STRING), "additionalProperties": INTEGER, "patternProperties": {"x": {}}},
            pa.struct([field("a", pa.string())]),
            id="undeclared-properties-are-no-columns",
        ),
        pytest.param(
            {"properties": {"a": STRING}},
            pa.struct([field("a", pa.string())]),
            id="properties-imply-an-object",
        ),
        pytest.param(
            {"type": "object", "additionalProperties": NUMBER},
            pa.map_(pa.string(), field("value", pa.float64(), False)),
            id="map",
        ),
        pytest.param(
            {"type": "object", "additionalProperties": {"type": ["integer", "null"]}},
            pa.map_(pa.string(), field("value", pa.int64())),
            id="map-of-nullable",
        ),
        pytest.param({"type": "object"}, JSON_TEXT, id="open-object"),
        pytest.param({"type": "object", "properties": {}}, JSON_TEXT, id="no-properties"),
        pytest.param(
            {"type": "object", "additionalProperties": True}, JSON_TEXT, id="additional-true"
        ),
        pytest.param(
            {"type": "object", "additionalProperties": {}}, JSON_TEXT, id="additional-any"
        ),
        pytest.param(
            {"type": "object", "additionalProperties": False}, JSON_TEXT, id="closed-no-properties"
        ),
        pytest.param(
            {"type": "array", "items": STRING},
            pa.list_(field("item", pa.string(), False)),
            id="array",
        ),
        pytest.param(
            {"type": "array", "items": {"anyOf": [INTEGER, NULL]}},
            pa.list_(field("item", pa.int64())),
            id="array-of-nullable",
        ),
        pytest.param({"type": "array"}, pa.list_(field("item", JSON_TEXT)), id="array-no-items"),
        pytest.param(
            {"items": obj(a=INTEGER)},
            pa.list_(field("item", pa.struct([field("a", pa.int64())]), False)),
            id="items-imply-an-array",
        ),
        pytest.param({"type": "array", "items": [STRING, INTEGER]}, JSON_TEXT, id="tuple-draft-7"),
        pytest.param(
            {"$schema": DRAFT_2020, "type": "array", "prefixItems": [STRING]},
            JSON_TEXT,
            id="tuple-2020-12",
        ),
        pytest.param(
            {"$ref": "#/definitions/d", "definitions": {"d": {**STRING, "format": "date"}}},
            pa.date32(),
            id="ref-definitions",
        ),
        pytest.param(
            {"$schema": DRAFT_2020, "$ref": "#/$defs/d", "$defs": {"d": INTEGER}},
            pa.int64(),
            id="ref-defs-2020-12",
        ),
        pytest.param(
            {
                "$schema": DRAFT_2020,
                "$ref": "#/$defs/d",
                "description": "x",
                "$defs": {"d": STRING},
            },
            pa.string(),
            id="ref-beside-annotations",
        ),
        pytest.param(
            {"$schema": DRAFT_2020, "$ref": "#/$defs/d", "type": "string", "$defs": {"d": STRING}},
            JSON_TEXT,
            id="ref-beside-a-shape-2020-12",
        ),
        pytest.param(
            {"$ref": "#/definitions/d", "type": "object", "definitions": {"d": STRING}},
            pa.string(),
            id="ref-siblings-ignored-draft-7",
        ),
        pytest.param(
            {"allOf": [STRING, {"minLength": 1}]}, pa.string(), id="allOf-one-shape-trivial"
        ),
        pytest.param(
            {**INTEGER, "allOf": [{"minimum": 1}, {"maximum": 9}]},
            pa.int64(),
            id="allOf-of-constraints",
        ),
        pytest.param(
            {"allOf": [obj(a=STRING), obj(b=STRING)]}, JSON_TEXT, id="allOf-two-shapes-not-merged"
        ),
        pytest.param(LIST, JSON_TEXT, id="recursive-root"),
        pytest.param(
            TREE,
            pa.struct([field("id", pa.int64()), field("tree", JSON_TEXT)]),
            id="recursive-definition-wherever-it-appears",
        ),
        pytest.param(MUTUAL, JSON_TEXT, id="mutually-recursive"),
        pytest.param(
            TWICE,
            pa.struct(
                [field(n, pa.struct([field("x", pa.int64(), False)])) for n in ("home", "work")]
            ),
            id="definition-used-twice-is-not-recursive",
        ),
        pytest.param(
            {"$ref": "#/definitions/a", "definitions": {"a": {"$ref": "#/definitions/a"}}},
            JSON_TEXT,
            id="ref-loop-without-data",
        ),
    ],
)
def test_arrow_type(schema: Any, expected: pa.DataType) -> None:
    assert arrow_type(parse(schema)) == expected


def test_a_reference_to_another_registered_schema_is_resolved() -> None:
    person = obj(name=STRING, home={"$ref": ADDRESS_URL})
    parsed = parse(person, {ADDRESS_URL: ADDRESS})
    city = pa.struct([field("city", pa.string(), False)])
    assert arrow_type(parsed) == pa.struct([field("name", pa.string()), field("home", city)])
    typed, reasons = decode_column(pa.array([framed({"home": {"city": "Oslo"}})]), parsed)
    assert typed.to_pylist() == [{"name": None, "home": {"city": "Oslo"}}]
    assert reasons.to_pylist() == [None]


NESTED = {
    **obj(at={"type": ["string", "null"], "format": "date-time"}, n={"$ref": "#/$defs/n"}),
    "$defs": {"n": {"type": "object", "additionalProperties": {"type": "array", "items": NUMBER}}},
}


@pytest.mark.parametrize(
    ("schema", "document", "expected"),
    [
        pytest.param(STRING, "héllo", "héllo", id="string"),
        pytest.param(INTEGER, -(2**63), -(2**63), id="integer"),
        pytest.param(INTEGER, 3.0, 3, id="integral-number-is-an-integer"),
        pytest.param(NUMBER, 7, 7.0, id="number-from-integer"),
        pytest.param(NUMBER, -0.25, -0.25, id="number"),
        pytest.param({"type": "boolean"}, False, False, id="boolean"),
        pytest.param(NULL, None, None, id="null"),
        pytest.param({"type": ["string", "null"]}, None, None, id="nullable-null"),
        pytest.param({"anyOf": [INTEGER, NULL]}, 4, 4, id="anyOf-nullable"),
        pytest.param(
            {**STRING, "format": "date-time"},
            "2024-05-01T12:00:00.1234567+02:00",
            dt.datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC),
            id="date-time-to-utc-microseconds",
        ),
        pytest.param(
            {**STRING, "format": "date-time"},
            "1969-12-31t23:59:59z",
            dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC),
            id="date-time-lower-case",
        ),
        pytest.param({**STRING, "format": "date"}, "2024-02-29", dt.date(2024, 2, 29), id="date"),
        pytest.param({"enum": ["a", "b"]}, "b", "b", id="enum"),
        pytest.param({"const": 5}, 5, 5, id="const"),
        pytest.param(
            obj(("a",), a=INTEGER, b={"type": ["string", "null"]}, c=STRING),
            {"a": 1, "b": None, "extra": "kept in the raw value only"},
            {"a": 1, "b": None, "c": None},
            id="struct",
        ),
        pytest.param(
            {"type": "object", "additionalProperties": INTEGER},
            {"x": 1, "y": 2},
            [("x", 1), ("y", 2)],
            id="map",
        ),
        pytest.param(
            {"type": "array", "items": {"type": ["integer", "null"]}},
            [1, None],
            [1, None],
            id="list",
        ),
        pytest.param({"type": "object"}, {"é": [1, None]}, '{"é":[1,null]}', id="open-object-json"),
        pytest.param({"type": "array"}, [{"a": 1}, "x"], ['{"a":1}', '"x"'], id="items-json"),
        pytest.param({"anyOf": [STRING, INTEGER]}, 5, "5", id="union-json-integer"),
        pytest.param({"anyOf": [STRING, INTEGER]}, "5", '"5"', id="union-json-string"),
        pytest.param({}, None, None, id="any-null-is-null"),
        pytest.param(
            LIST,
            {"value": 1, "next": {"value": 2}},
            '{"value":1,"next":{"value":2}}',
            id="recursive-json",
        ),
        pytest.param(
            NESTED,
            {"at": "2024-01-01T00:00:00Z", "n": {"k": [1.5]}},
            {"at": dt.datetime(2024, 1, 1, tzinfo=UTC), "n": [("k", [1.5])]},
            id="nested-conversions",
        ),
    ],
)
def test_decode_round_trip(schema: Any, document: Any, expected: Any) -> None:
    parsed = parse(schema)
    typed, reasons = decode_column(pa.array([framed(document), None], pa.binary()), parsed)
    assert typed.type == arrow_type(parsed)
    assert typed.to_pylist() == [expected, None]
    assert reasons.to_pylist() == [None, None]


PERSON = obj(
    ("name",),
    name=STRING,
    age=INTEGER,
    born={**STRING, "format": "date"},
    seen={**STRING, "format": "date-time"},
    tags={"type": "array", "items": obj(("k",), k=STRING)},
)


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        pytest.param(b'{"name": "x"}', "not framed", id="no-prefix"),
        pytest.param(b"\x01\0\0\0\x2a{}", "not framed", id="magic-byte-1"),
        pytest.param(b"\0\0\0", "not framed", id="shorter-than-prefix"),
        pytest.param(PREFIX + b'{"name": "\xff"}', "not UTF-8", id="not-utf-8"),
        pytest.param(PREFIX + b'{"name": ', "not JSON", id="bad-json"),
        pytest.param(PREFIX + b'{"name": "x", "age": NaN}', "NaN is not JSON", id="nan"),
        pytest.param(PREFIX + b'{"name": "x", "age": 1e400}', "out of range", id="huge-number"),
        pytest.param(PREFIX + b"[" * 100_000, "nested too deeply", id="too-deep"),
        pytest.param(framed({"name": "x", "age": "12"}),
                     "a string where the schema wants an integer (at #/age)", id="string-for-int"),
        pytest.param(framed({"name": "x", "age": 1.5}),
                     "a number where the schema wants an integer (at #/age)",
                     id="fraction-for-int"),
        pytest.param(framed({"name": "x", "age": True}),
                     "a boolean where the schema wants an integer", id="boolean-for-int"),
        pytest.param(framed({"name": "x", "age": 2**63}), "outside int64's range (at #/age)",
                     id="int64-overflow"),
        pytest.param(framed({"name": None}), "null where the schema wants a string (at #/name)",
                     id="null-for-string"),
        pytest.param(framed({"name": "x", "age": None}), "null where the schema wants an integer",
                     id="null-for-optional-int"),
        pytest.param(framed({"age": 3}), "the required property 'name' is missing (at #)",
                     id="required-missing"),
        pytest.param(framed(["name"]), "an array where the schema wants an object (at #)",
                     id="array-for-object"),
        pytest.param(framed(None), "null where the schema wants an object (at #)",
                     id="null-document"),
        pytest.param(framed({"name": "x", "seen": "2024-05-01T12:00:00"}),
                     "not an RFC 3339 date-time with its offset (at #/seen)", id="no-offset"),
        pytest.param(framed({"name": "x", "seen": "2024-05-01T25:00:00Z"}),
                     "not a valid date-time (at #/seen)", id="hour-25"),
        pytest.param(framed({"name": "x", "born": "2023-02-29"}), "not a valid date (at #/born)",
                     id="no-such-day"),
        pytest.param(framed({"name": "x", "born": "20240501"}), "not an RFC 3339 full-date",
                     id="basic-date-format"),
        pytest.param(framed({"name": "x", "tags": [{"k": "a"}, {"k": 1}]}),
                     "an integer where the schema wants a string (at #/tags/1/k)",
                     id="nested-path"),
        pytest.param(PREFIX + b'{"name": "\\ud800"}', "does not fit", id="lone-surrogate"),
    ],
)  # fmt: skip
def test_an_undecodable_row_is_null_with_a_reason(payload: bytes, reason: str) -> None:
    good = framed({"name": "ann"})
    column = pa.array([good, payload, None, good], pa.binary())
    typed, reasons = decode_column(column, parse(PERSON))
    ann = {"name": "ann", "age": None, "born": None, "seen": None, "tags": None}
    assert typed.to_pylist() == [ann, None, None, ann]
    got = reasons.to_pylist()
    assert got[0] is None and got[2] is None and got[3] is None
    assert reason in got[1]


def test_confluents_serializer_writes_what_decodes() -> None:
    schema = obj(("id",), id=INTEGER, at={**STRING, "format": "date-time"})
    client = MockSchemaRegistryClient({"url": "mock://"})
    serialize = JSONSerializer(json.dumps(schema), client)
    written = serialize({"id": 7, "at": "2024-05-01T12:00:00Z"},
                        SerializationContext("t", MessageField.VALUE))  # fmt: skip
    typed, reasons = decode_column(pa.array([written]), parse(schema))
    assert typed.to_pylist() == [{"id": 7, "at": dt.datetime(2024, 5, 1, 12, tzinfo=UTC)}]
    assert reasons.to_pylist() == [None]


def test_a_reader_type_fills_the_fields_the_writer_lacks_with_null() -> None:
    writer = obj(("name",), name=STRING, age=INTEGER, gone=STRING)
    reader = pa.struct([field("name", pa.string()), field("age", pa.int64()),
                        field("email", pa.string())])  # fmt: skip
    column = pa.chunked_array(
        [[framed({"name": "bo", "age": 4, "gone": "x"})], [None]], pa.binary()
    )
    typed, reasons = decode_column(column, parse(writer), reader)
    assert typed.type == reader
    assert typed.to_pylist() == [{"name": "bo", "age": 4, "email": None}, None]
    assert reasons.to_pylist() == [None, None]


def test_a_value_the_reader_type_cannot_hold_is_null_with_a_reason() -> None:
    writer = obj(n=INTEGER)
    column = pa.array([framed({"n": 2**40}), framed({"n": 1})], pa.binary())
    typed, reasons = decode_column(column, parse(writer), pa.struct([field("n", pa.int32())]))
    assert typed.to_pylist() == [None, {"n": 1}]
    first, second = reasons.to_pylist()
    assert first is not None and "does not fit" in first
    assert second is None
