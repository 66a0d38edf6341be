"""The JSON schema type: parsing (drafts, meta-schema errors, $refs and references), its stored
and normalized forms, and Confluent's compatibility change kinds, each read both ways."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import (
    MockSchemaRegistryClient,
)
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from objectlog.errors import InvalidSchema
from objectlog.schemas.json_schemas import JsonDocument, JsonSchemaType
from objectlog.schemas.types import JSON, ParsedSchema

D4 = "http://json-schema.org/draft-04/schema#"
D6 = "http://json-schema.org/draft-06/schema#"
D7 = "http://json-schema.org/draft-07/schema#"
D2019 = "https://json-schema.org/draft/2019-09/schema"
D2020 = "https://json-schema.org/draft/2020-12/schema"
JSON_SCHEMA = JsonSchemaType()
STR, INT, NUM, NULL = ({"type": name} for name in ("string", "integer", "number", "null"))


def parse(schema: Any, references: dict[str, Any] | None = None) -> ParsedSchema:
    texts = {name: json.dumps(ref) for name, ref in (references or {}).items()}
    return JSON_SCHEMA.parse(json.dumps(schema), texts)


def string(**keywords: Any) -> dict[str, Any]:
    return {"type": "string", **keywords}


def number(**keywords: Any) -> dict[str, Any]:
    return {"type": "number", **keywords}


def array(**keywords: Any) -> dict[str, Any]:
    return {"type": "array", **keywords}


def obj(properties: dict[str, Any], **keywords: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, **keywords}


def closed(properties: dict[str, Any], **keywords: Any) -> dict[str, Any]:
    return obj(properties, additionalProperties=False, **keywords)


def draft(uri: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": uri, **schema}


def tree(value: dict[str, Any]) -> dict[str, Any]:
    """A recursive schema: a node holds a value and a list of nodes."""
    children = array(items={"$ref": "#/definitions/node"})
    return {
        "definitions": {"node": obj({"value": value, "children": children})},
        "$ref": "#/definitions/node",
    }


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param(draft(D4, {"maximum": 5, "exclusiveMaximum": True}), id="draft-04"),
        pytest.param(draft(D6, {"type": "integer", "exclusiveMaximum": 5}), id="draft-06"),
        pytest.param(draft(D7, {"if": STR, "then": {"minLength": 1}}), id="draft-07"),
        pytest.param(draft(D7.rstrip("#"), STR), id="draft-07-without-hash"),
        pytest.param(draft(D2019, {"dependentRequired": {"a": ["b"]}}), id="2019-09"),
        pytest.param(draft(D2020, {"prefixItems": [STR], "items": False}), id="2020-12"),
        pytest.param(closed({}), id="no-schema-is-draft-07"),
        pytest.param(True, id="true"),
        pytest.param(False, id="false"),
        pytest.param(
            {"definitions": {"a": STR}, "properties": {"x": {"$ref": "#/definitions/a"}}},
            id="local-ref",
        ),
        pytest.param(
            draft(D2020, {"$defs": {"a": string(**{"$anchor": "s"})}, "$ref": "#s"}),
            id="anchor-ref",
        ),
        pytest.param(
            {
                "$id": "http://example.com/r.json",
                "definitions": {"a": STR},
                "$ref": "#/definitions/a",
            },
            id="ref-under-id",
        ),
    ],
)
def test_parse_accepts_each_dialect(schema: Any) -> None:
    parsed = parse(schema)

    assert parsed.schema_type == JSON
    assert isinstance(parsed.parsed, JsonDocument)
    assert parsed.parsed.root.schema == schema


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        pytest.param('{"type": "string"', "the schema is not valid JSON: Expecting", id="bad-json"),
        pytest.param('{"maximum": NaN}', "NaN is not JSON", id="nan"),
        pytest.param('{"maximum": 1e400}', "1e400 is out of range", id="overflowing-number"),
        pytest.param('{"title": "\\ud800"}', "surrogates not allowed", id="lone-surrogate"),
        pytest.param('["string"]', "an object or a boolean, not an array", id="array"),
        pytest.param('"string"', "an object or a boolean, not a string", id="string"),
        pytest.param("3", "an object or a boolean, not a number or null", id="number"),
        pytest.param(
            {"type": "strin"},
            "'strin' is not valid under any of the given schemas (at #/type, draft-07)",
            id="bad-type",
        ),
        pytest.param(
            {"properties": {"a": {"minLength": -1}}},
            "-1 is less than the minimum of 0 (at #/properties/a/minLength",
            id="bad-nested-keyword",
        ),
        pytest.param({"pattern": "(["}, "'([' is not a 'regex'", id="bad-regex"),
        pytest.param(draft(D4, {"exclusiveMaximum": 5}), "5 is not of type 'boolean'", id="d4-ex"),
        pytest.param(
            draft(D6, {"exclusiveMaximum": True}), "True is not of type 'number'", id="d6-ex"
        ),
        pytest.param(
            draft(D2020, {"items": [{}]}),
            "[{}] is not of type 'object', 'boolean' (at #/items, 2020-12)",
            id="2020-12-items-list",
        ),
        pytest.param(
            {"$schema": "http://json-schema.org/draft-03/schema#"}, "unsupported $schema", id="d3"
        ),
        pytest.param(
            {"$schema": "https://example.com/mine"},
            "unsupported $schema 'https://example.com/mine'",
            id="unknown-dialect",
        ),
        pytest.param(
            {"$ref": "#/definitions/missing"},
            "unresolvable $ref '#/definitions/missing' at #",
            id="broken-local-ref",
        ),
        pytest.param(
            {"properties": {"a": {"$ref": "address.json"}}},
            "unresolvable $ref 'address.json' at #/properties/a",
            id="missing-reference",
        ),
        pytest.param('{"not":' * 5000 + "{}" + "}" * 5000, "nested too deeply", id="too-deep"),
    ],
)
def test_parse_refuses_with_the_reason(schema: Any, message: str) -> None:
    text = schema if isinstance(schema, str) else json.dumps(schema)
    with pytest.raises(InvalidSchema) as refused:
        JSON_SCHEMA.parse(text, {})

    assert message in refused.value.message


ADDRESS = obj({"zip": STR, "country": {"$ref": "country.json"}}, definitions={"code": STR})
COUNTRY = string(maxLength=2)
BOTH = {"address.json": ADDRESS, "country.json": COUNTRY}


@pytest.mark.parametrize(
    ("schema", "references"),
    [
        pytest.param({"$ref": "address.json"}, BOTH, id="by-name"),
        pytest.param({"$ref": "address.json#/definitions/code"}, BOTH, id="into-definitions"),
        pytest.param(
            {"$id": "http://example.com/order.json", "properties": {"a": {"$ref": "address.json"}}},
            {
                "http://example.com/address.json": ADDRESS,
                "http://example.com/country.json": COUNTRY,
            },
            id="relative-to-id",
        ),
        pytest.param(
            {"$ref": "d4.json"},
            {"d4.json": draft(D4, {"maximum": 3, "exclusiveMaximum": True})},
            id="reference-of-another-draft",
        ),
    ],
)
def test_references_resolve_by_name(schema: Any, references: dict[str, Any]) -> None:
    parsed = parse(schema, references)

    assert isinstance(parsed.parsed, JsonDocument)
    assert set(parsed.parsed.references) == set(references)


@pytest.mark.parametrize(
    ("references", "message"),
    [
        pytest.param(
            {"address.json": json.dumps(ADDRESS)},
            "unresolvable $ref 'country.json' at #/properties/country in reference 'address.json'",
            id="reference-of-reference-missing",
        ),
        pytest.param({"address.json": "{"}, "reference 'address.json' is not valid JSON", id="bad"),
    ],
)
def test_references_that_do_not_resolve_are_refused(
    references: dict[str, str], message: str
) -> None:
    with pytest.raises(InvalidSchema) as refused:
        JSON_SCHEMA.parse(json.dumps({"$ref": "address.json"}), references)

    assert message in refused.value.message


@pytest.mark.parametrize(
    ("text", "canonical", "normalized"),
    [
        pytest.param(
            '{ "type" : "object",\n "properties": {"b": {"type": "string"}, "a": {}} }',
            '{"type":"object","properties":{"b":{"type":"string"},"a":{}}}',
            '{"properties":{"a":{},"b":{"type":"string"}},"type":"object"}',
            id="whitespace-and-key-order",
        ),
        pytest.param(
            '{"enum": ["é", "\\u00e9", 1E2], "title": "Prix"}',
            '{"enum":["é","é",100.0],"title":"Prix"}',
            '{"enum":["é","é",100.0],"title":"Prix"}',
            id="unicode-and-numbers",
        ),
        pytest.param(
            '{"required": ["b", "a"]}',
            '{"required":["b","a"]}',
            '{"required":["b","a"]}',
            id="arrays",
        ),
        pytest.param(" true ", "true", "true", id="boolean"),
    ],
)
def test_canonical_and_normalized_forms(text: str, canonical: str, normalized: str) -> None:
    parsed = JSON_SCHEMA.parse(text, {})

    assert (parsed.canonical, parsed.normalized) == (canonical, normalized)


def test_normalized_form_is_equal_for_reordered_keys() -> None:
    one = parse({"type": "object", "properties": {"a": STR, "b": INT}})
    other = parse({"properties": {"b": INT, "a": STR}, "type": "object"})

    assert one.canonical != other.canonical
    assert one.normalized == other.normalized


def test_a_schema_confluent_kafkas_json_serializer_registers_parses() -> None:
    client = MockSchemaRegistryClient({"url": "mock://"})
    address = json.dumps(obj({"zip": STR}, required=["zip"]))
    client.register_schema("address", Schema(address, "JSON"))
    payment = json.dumps(
        draft(D7, {"title": "Payment", **obj({"amount": NUM, "to": {"$ref": "address.json"}})})
    )
    reference = SchemaReference("address.json", "address", 1)
    serializer = JSONSerializer(Schema(payment, "JSON", [reference]), client)

    serializer(
        {"amount": 1.5, "to": {"zip": "75001"}}, SerializationContext("pay", MessageField.VALUE)
    )
    registered = client.get_latest_version("pay-value").schema
    parsed = JSON_SCHEMA.parse(registered.schema_str, {"address.json": address})

    assert registered.references == [reference]
    assert json.loads(parsed.canonical) == json.loads(payment)


def change(
    old: Any, new: Any, new_reads_old: list[str], old_reads_new: list[str], kind: str
) -> Any:
    """A change from old to new, and the problems (fragments of messages; none: compatible)
    when new reads old's data (backward) and when old reads new's (forward)."""
    return pytest.param(old, new, new_reads_old, old_reads_new, id=kind)


TYPE_CHANGES = [
    change(INT, NUM, [], ["#: type narrowed from number to integer"], "integer-to-number"),
    change(NUM, STR, ["#: type changed from number to string"], ["from string to number"], "type"),
    change(
        STR,
        {"type": ["string", "null"]},
        [],
        ["type narrowed from [null, string] to string"],
        "type-added-to-list",
    ),
    change({}, STR, ["type narrowed from any type to string"], [], "type-added"),
    change({"enum": ["a", "b"]}, STR, [], ['#: enum added: only ["a", "b"] accepted'], "enum-type"),
    change(True, STR, ["#: type narrowed from any type to string"], [], "true-accepts-everything"),
    change(STR, False, ["#: the reader's schema is false"], [], "false-writes-nothing"),
]
VALUE_CHANGES = [
    change({"enum": ["a", "b"]}, {"enum": ["a", "b", "c"]}, [], ['enum narrowed: ["c"]'], "enum+"),
    change(
        {"enum": ["a", "b"]}, {"enum": ["a", "c"]}, ['narrowed: ["b"]'], ['narrowed: ["c"]'], "enum"
    ),
    change(
        {"const": "a"},
        {"const": "b"},
        ['const changed from "a" to "b"'],
        ['const changed from "b" to "a"'],
        "const-changed",
    ),
    change({"const": "a"}, {"enum": ["a", "b"]}, [], ['#: const narrowed: ["b"]'], "const-to-enum"),
    change({"enum": [1, 2]}, {"enum": [1.0, 2.0]}, [], [], "numbers-equal-as-json"),
    change(
        {"enum": [True]}, {"enum": [1]}, ["narrowed: [true]"], ["narrowed: [1]"], "true-is-not-1"
    ),
]
STRING_CHANGES = [
    change(
        string(maxLength=9), string(maxLength=5), ["#: maxLength decreased from 9 to 5"], [], "max"
    ),
    change(STR, string(maxLength=5), ["#: maxLength added: 5"], [], "maxLength-added"),
    change(
        string(minLength=1), string(minLength=3), ["minLength increased from 1 to 3"], [], "min"
    ),
    change(STR, string(pattern="^a"), ["pattern added: '^a'"], [], "pattern-added"),
    change(
        string(pattern="^a"),
        string(pattern="^b"),
        ["pattern changed from '^a' to '^b'"],
        ["pattern changed from '^b' to '^a'"],
        "pattern-changed",
    ),
    change(string(format="date"), string(format="email"), ["format changed"], ["format"], "format"),
    change(
        {"type": ["string", "integer"], "maxLength": 3},
        {"type": "integer", "maxLength": 2},
        ["#: type narrowed from [string, integer] to integer"],
        [],
        "string-keywords-only-for-strings",
    ),
]
NUMBER_CHANGES = [
    change(
        number(maximum=200), number(maximum=100), ["maximum decreased from 200 to 100"], [], "max"
    ),
    change(number(minimum=0), number(minimum=5), ["#: minimum increased from 0 to 5"], [], "min"),
    change(NUM, number(exclusiveMinimum=0), ["exclusiveMinimum added: 0"], [], "exclusive-added"),
    change(
        {"maximum": 10},
        {"exclusiveMaximum": 10},
        ["exclusiveMaximum decreased from maximum 10 to 10"],
        [],
        "maximum-made-exclusive",
    ),
    change(
        {"type": "integer", "exclusiveMaximum": 10},
        {"type": "integer", "maximum": 9},
        [],
        [],
        "integer-bounds-are-whole-numbers",
    ),
    change(
        draft(D4, {"maximum": 10}),
        draft(D4, {"maximum": 10, "exclusiveMaximum": True}),
        ["#: maximum decreased from 10 to 10"],
        [],
        "draft-04-exclusive-flag",
    ),
    change(
        {"multipleOf": 10}, {"multipleOf": 5}, [], ["multipleOf expanded from 5 to 10"], "reduced"
    ),
    change(
        {"multipleOf": 4}, {"multipleOf": 6}, ["changed from 4 to 6"], ["from 6 to 4"], "multiple"
    ),
    change(
        {"multipleOf": 0.3}, {"multipleOf": 0.1}, [], ["multipleOf expanded"], "decimal-multiple"
    ),
    change(NUM, number(multipleOf=0.5), ["#: multipleOf added: 0.5"], [], "multipleOf-added"),
    change(INT, number(multipleOf=0.5), [], ["type narrowed"], "integers-are-multiples-of-0.5"),
]
OBJECT_CHANGES = [
    change(
        obj({"a": STR, "b": STR}),
        obj({"a": STR, "b": STR}, required=["b"]),
        ["#: property 'b' became required without a default"],
        [],
        "required-added",
    ),
    change(
        obj({"b": STR}), obj({"b": string(default="x")}, required=["b"]), [], [], "required-default"
    ),
    change(
        closed({"a": STR}),
        closed({"a": STR, "b": STR}, required=["b"]),
        ["property 'b' became required"],
        ["#/properties/b: property was removed from a closed content model"],
        "required-property-added-to-closed-model",
    ),
    change(
        obj({"a": STR}),
        obj({"a": STR, "b": STR}),
        ["#/properties/b: property added to an open content model"],
        [],
        "property-added-to-open-model",
    ),
    change(obj({"a": STR}), obj({"a": STR, "b": {}}), [], [], "empty-property-added-to-open-model"),
    change(
        closed({"a": STR}),
        closed({"a": STR, "b": STR}),
        [],
        ["#/properties/b: property was removed from a closed content model"],
        "optional-property-added-to-closed-model",
    ),
    change(closed({"a": STR, "b": False}), closed({"a": STR}), [], [], "false-removed-from-closed"),
    change(
        obj({"a": STR}, additionalProperties=STR),
        obj({"a": STR, "b": STR}, additionalProperties=STR),
        [],
        [],
        "property-covered-by-partially-open-model",
    ),
    change(
        obj({"a": STR}, additionalProperties=STR),
        obj({"a": STR, "b": INT}, additionalProperties=STR),
        ["#/properties/b: type changed from string to integer"],
        ["#/properties/b: type changed from integer to string"],
        "property-not-covered-by-partially-open-model",
    ),
    change(
        closed({}, patternProperties={"^s_": STR}),
        closed({"s_x": STR, "n": INT}, patternProperties={"^s_": STR}),
        [],
        ["#/properties/n: property was removed from a closed content model"],
        "patternProperties-cover-a-property",
    ),
    change(
        closed({}, patternProperties={"^s_": STR}),
        closed({"s_x": INT}, patternProperties={"^s_": STR}),
        ["#/properties/s_x: type changed from string to integer"],
        [],
        "patternProperties-do-not-cover-a-property",
    ),
    change(
        obj({"a": STR}),
        closed({"a": STR}),
        ["#/additionalProperties: additional properties are no longer allowed"],
        [],
        "additionalProperties-made-false",
    ),
    change(
        obj({}, additionalProperties={"type": ["string", "integer"]}),
        obj({}, additionalProperties=STR),
        ["#/additionalProperties: type narrowed from [string, integer] to string"],
        [],
        "additionalProperties-narrowed",
    ),
    change(
        obj({}),
        obj({}, additionalProperties=STR),
        ["#/additionalProperties: type narrowed from any type to string"],
        [],
        "additionalProperties-schema-added",
    ),
    change(
        obj({}),
        obj({}, patternProperties={"^x": STR}),
        ["#/patternProperties/^x: type narrowed from any type to string"],
        [],
        "patternProperties-added",
    ),
    change(
        obj({}, maxProperties=5), obj({}, maxProperties=3), ["from 5 to 3"], [], "maxProperties"
    ),
    change(obj({}), obj({}, minProperties=1), ["#: minProperties added: 1"], [], "minProperties"),
    change(
        obj({}),
        obj({}, propertyNames={"maxLength": 3}),
        ["#/propertyNames: maxLength added: 3"],
        [],
        "propertyNames-added",
    ),
    change(obj({}), obj({}, propertyNames=STR), [], [], "names-are-strings"),
]
DEPENDENCY_CHANGES = [
    change(
        obj({}),
        obj({}, dependencies={"a": ["b"]}),
        ["#: dependencies added: 'a' now requires ['b']"],
        [],
        "dependency-array-added",
    ),
    change(
        obj({}, dependencies={"a": ["b"]}),
        obj({}, dependencies={"a": ["b", "c"]}),
        ["'a' now requires ['c']"],
        [],
        "dependency-array-extended",
    ),
    change(
        obj({}, required=["c"]),
        obj({}, dependencies={"a": ["c"]}),
        [],
        ["property 'c' became required"],
        "dependency-already-required",
    ),
    change(
        closed({"b": STR}),
        closed({"b": STR}, dependencies={"a": ["b"]}),
        [],
        [],
        "dependency-on-a-property-never-written",
    ),
    change(
        draft(D2019, {"type": "object"}),
        draft(D2019, {"type": "object", "dependentRequired": {"a": ["b"]}}),
        ["#: dependentRequired added: 'a' now requires ['b']"],
        [],
        "dependentRequired-added",
    ),
    change(
        obj({}),
        obj({}, dependencies={"a": {"required": ["b"]}}),
        ["#/dependencies/a: property 'b' became required"],
        [],
        "dependency-schema-added",
    ),
    change(
        draft(D2020, obj({}, dependentSchemas={"a": obj({"b": INT})})),
        draft(D2020, obj({}, dependentSchemas={"a": obj({"b": NUM})})),
        [],
        ["#/dependentSchemas/a/properties/b: type narrowed from number to integer"],
        "dependentSchemas-changed",
    ),
]
ARRAY_CHANGES = [
    change(array(items=INT), array(items=NUM), [], ["#/items: type narrowed"], "items-changed"),
    change(array(), array(maxItems=3), ["#: maxItems added: 3"], [], "maxItems-added"),
    change(
        array(minItems=1), array(minItems=2), ["minItems increased from 1 to 2"], [], "minItems"
    ),
    change(array(), array(uniqueItems=True), ["#: uniqueItems added"], [], "uniqueItems-added"),
    change(array(maxItems=1), array(maxItems=1, uniqueItems=True), [], [], "unique-of-one-item"),
    change(
        array(items=[STR]),
        array(items=[STR, INT]),
        ["#/items/1: item added to an open content model"],
        [],
        "item-added-to-open-model",
    ),
    change(array(items=[STR]), array(items=[STR, {}]), [], [], "empty-item-added-to-open-model"),
    change(
        array(items=[STR], additionalItems=False),
        array(items=[STR, INT], additionalItems=False),
        [],
        ["#/additionalItems: items from position 1 are no longer allowed"],
        "item-added-to-closed-model",
    ),
    change(
        array(items=[STR], additionalItems=INT),
        array(items=[STR, INT], additionalItems=INT),
        [],
        [],
        "item-covered-by-partially-open-model",
    ),
    change(
        array(items=[STR], additionalItems=INT),
        array(items=[STR, STR], additionalItems=INT),
        ["#/items/1: type changed from integer to string"],
        ["#/additionalItems: type changed from string to integer"],
        "item-not-covered-by-partially-open-model",
    ),
    change(
        array(items=[STR, STR], additionalItems=False),
        array(items=STR),
        [],
        ["#/additionalItems: items from position 2 are no longer allowed"],
        "tuple-to-list",
    ),
    change(
        draft(D2020, {"prefixItems": [STR], "items": False}),
        draft(D2020, {"prefixItems": [STR, INT], "items": False}),
        [],
        ["#/items: items from position 1 are no longer allowed"],
        "prefixItems-added-to-closed-model",
    ),
    change(array(), array(contains=STR), ["#: contains cannot be judged"], [], "contains-added"),
]
COMBINED_CHANGES = [
    change(STR, {"oneOf": [NULL, STR]}, [], ["#: type changed from null to string"], "oneOf-wrap"),
    change(STR, {"anyOf": [STR, INT]}, [], ["type changed from integer to string"], "anyOf-wrap"),
    change(
        {"anyOf": [STR, INT]},
        {"anyOf": [STR, INT, NULL]},
        [],
        ["#: no alternative of anyOf accepts all the writer's data"],
        "anyOf-extended",
    ),
    change(
        {"oneOf": [STR, INT]},
        {"oneOf": [STR, INT, NULL]},
        [],
        ["#: no alternative of oneOf accepts all the writer's data"],
        "oneOf-extended-with-disjoint-alternatives",
    ),
    change(
        {"oneOf": [obj({"a": STR})]},
        {"oneOf": [obj({"a": STR}), {"type": "object"}]},
        ["#/oneOf/1: may also accept the writer's data, which oneOf then refuses"],
        ["#/oneOf/0/properties/a: property added to an open content model"],
        "oneOf-extended-with-overlapping-alternatives",
    ),
    change(
        obj({"kind": {"const": "a"}}, required=["kind"]),
        {
            "oneOf": [
                obj({"kind": {"const": "a"}}, required=["kind"]),
                obj({"kind": {"const": "b"}}, required=["kind"]),
            ]
        },
        [],
        ['#/properties/kind: const changed from "b" to "a"'],
        "oneOf-with-a-discriminator",
    ),
    change(
        {"allOf": [STR]}, {"allOf": [STR, {"maxLength": 5}]}, ["#/allOf/1: maxLength"], [], "and+"
    ),
    change(
        {"allOf": [STR, {"maxLength": 5}]},
        {"anyOf": [STR, {"maxLength": 5}]},
        [],
        ["#/allOf/0: type narrowed from any type to string"],
        "allOf-to-anyOf",
    ),
    change(
        {"anyOf": [STR, {"maxLength": 5}]},
        {"oneOf": [STR, {"maxLength": 5}]},
        ["may also accept the writer's data"],
        [],
        "anyOf-to-oneOf",
    ),
    change(
        {"not": {"type": ["string", "null"]}},
        {"not": STR},
        [],
        ["#: not forbids data the writer may write"],
        "not-narrowed",
    ),
    change(INT, {"type": "integer", "not": {"const": 0}}, ["#: not forbids data"], [], "not-added"),
    change(
        INT, {"not": STR}, [], ["type narrowed from any type to integer"], "not-of-another-type"
    ),
]
REF_CHANGES = [
    change(
        {"definitions": {"a": INT}, **obj({"x": {"$ref": "#/definitions/a"}})},
        {"definitions": {"a": NUM}, **obj({"x": {"$ref": "#/definitions/a"}})},
        [],
        ["#/properties/x: type narrowed from number to integer"],
        "local-definition-followed",
    ),
    change(
        tree(INT),
        tree(NUM),
        [],
        ["#/properties/value: type narrowed from number to integer"],
        "recursive-definition",
    ),
    change(
        draft(D2019, {"$defs": {"s": STR}, "$ref": "#/$defs/s"}),
        draft(D2019, {"$defs": {"s": STR}, "$ref": "#/$defs/s", "maxLength": 5}),
        ["#: maxLength added: 5"],
        [],
        "2019-09-ref-siblings-apply",
    ),
    change(
        {"definitions": {"s": STR}, "$ref": "#/definitions/s"},
        {"definitions": {"s": STR}, "$ref": "#/definitions/s", "maxLength": 5},
        [],
        [],
        "draft-07-ref-siblings-are-ignored",
    ),
    change(
        obj({"a": STR}), obj({"a": False}), ["#/properties/a: property is now false"], [], "false"
    ),
]
FAIL_CLOSED = [
    change(
        STR,
        string(**{"if": {"maxLength": 3}, "then": {"pattern": "^a"}}),
        ["#: if cannot be judged for compatibility"],
        [],
        "if-added",
    ),
    change(
        draft(D2019, obj({"a": STR})),
        draft(D2019, obj({"a": STR}, unevaluatedProperties=False)),
        ["#: unevaluatedProperties cannot be judged"],
        [],
        "unevaluatedProperties-added",
    ),
    change(
        {"definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}}}
        | {"$ref": "#/definitions/a"},
        STR,
        ["#: $ref chain too long or circular"],
        ["#: circular $ref without descending into the data"],
        "circular-refs",
    ),
    change(
        STR,
        {"definitions": {"a": {"allOf": [{"$ref": "#/definitions/a"}]}}, "$ref": "#/definitions/a"},
        ["circular $ref without descending into the data"],
        ["$ref chain too long or circular"],
        "circular-allOf",
    ),
]
CHANGES = (
    TYPE_CHANGES
    + VALUE_CHANGES
    + STRING_CHANGES
    + NUMBER_CHANGES
    + OBJECT_CHANGES
    + DEPENDENCY_CHANGES
    + ARRAY_CHANGES
    + COMBINED_CHANGES
    + REF_CHANGES
    + FAIL_CLOSED
)


@pytest.mark.parametrize(("old", "new", "new_reads_old", "old_reads_new"), CHANGES)
def test_compatibility_change_kinds(
    old: Any, new: Any, new_reads_old: list[str], old_reads_new: list[str]
) -> None:
    older, newer = parse(old), parse(new)

    assert_problems(JSON_SCHEMA.incompatibilities(newer, older), new_reads_old)
    assert_problems(JSON_SCHEMA.incompatibilities(older, newer), old_reads_new)


def assert_problems(found: list[str], expected: list[str]) -> None:
    if not expected:
        assert found == []
    for fragment in expected:
        assert any(fragment in problem for problem in found), (fragment, found)


def test_changed_references_are_followed() -> None:
    schema = obj({"address": {"$ref": "address.json"}})
    old = parse(schema, {"address.json": obj({"zip": STR})})
    new = parse(schema, {"address.json": obj({"zip": INT})})

    assert JSON_SCHEMA.incompatibilities(new, old) == [
        "#/properties/address/properties/zip: type changed from string to integer"
    ]


@pytest.mark.parametrize("schema", [param.values[1] for param in CHANGES])
def test_every_schema_reads_its_own_data(schema: Any) -> None:
    assert JSON_SCHEMA.incompatibilities(parse(schema), parse(schema)) == []


def test_a_schema_of_another_type_is_incompatible() -> None:
    avro = ParsedSchema("AVRO", '"string"', '"string"', object())

    found = JSON_SCHEMA.incompatibilities(parse(STR), avro)

    assert found == ["#: schema type changed from AVRO to JSON"]
