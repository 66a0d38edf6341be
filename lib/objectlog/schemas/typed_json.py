"""Typed Arrow columns decoded from a topic's JSON values (issue 35, topics as typed tables):
the Arrow type a JSON Schema becomes, and a binary column of framed values decoded into it.

JSON Schema -> Arrow, keeping to what an Iceberg table can hold:

    "type": "string"                        string
      with "format": "date-time"            timestamp[us, UTC]
      with "format": "date"                 date32
    "type": "integer" / "number"            int64 / float64
    "type": "boolean"                       bool
    "type": "null"                          null
    "type": "object"
      with "properties"                     struct of the properties, in declaration order
      else "additionalProperties": V        map<string, V>
    "type": "array", "items": T             list<T> (no items: list of JSON strings)
    "type": ["T", "null"]                   T, nullable
    "type": ["integer", "number"]           float64 (a number holds the integers)
    anyOf / oneOf of T and {"type": "null"} T, nullable (alternatives all of one Arrow type:
                                            that type)
    enum / const                            the type of their values (strings: string)
    $ref                                    the schema it names: local (#/definitions/...,
                                            #/$defs/...) or a registered reference
    allOf                                   its one member that shapes the value (type,
                                            properties, items, enum, ...), the others being
                                            constraints (minLength, required, ...)

Without "type", it is what its keywords imply: properties / additionalProperties an object,
items / prefixItems an array, enum / const the type of their values (as Confluent's
converter reads such schemas). A struct field is nullable unless the property is required
and its schema does not admit null; a list item or map value where its schema admits null;
the column itself always. Properties a schema does not declare (additionalProperties,
patternProperties beside properties) are not columns: the raw value column keeps them.

Schemas whose values Iceberg cannot type become JSON strings (json.dumps, compact, not
ASCII-escaped):

- a schema that does not say what the value is: {}, true, false, constraints only;
- an open object (no properties, additionalProperties absent, true, {} or false);
- a union: two non-null types, anyOf / oneOf of different Arrow types;
- a conjunction of two shapes: allOf (or, from 2019-09, $ref with sibling keywords) of two
  members that each shape the value, or a shape beside anyOf / oneOf alternatives that
  shape it too (alternatives of constraints only are ignored); they are not merged;
- tuples (items as an array, prefixItems);
- a recursive schema (one that can contain itself through $ref), wherever it appears;
  $dynamicRef and $recursiveRef.

Decoding is strict on JSON types, never coercing: a row is null with a reason (where, as a
JSON pointer) when its payload is not UTF-8 JSON (NaN, Infinity and numbers past a double's
range are refused, as the registry refuses them in schemas), a value has a JSON type its
column does not take ("12" or 1.5 for an integer, null where the schema does not admit it,
an integer outside int64), a required property is missing, or a string is not in its
format: a date-time is RFC 3339 with its offset (converted to UTC, digits past the
microsecond dropped), a date YYYY-MM-DD. Such a string makes its row null rather than its
column a string, because the schema promised the format and Confluent's serializers assert
formats. Other constraints (enum membership, minimum, pattern, ...) are validation, left to
the producing side.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from objectlog.format.schema_ids import MAGIC_BYTE, NOT_FRAMED_REASON, PREFIX_BYTES
from objectlog.schemas.json_compatibility import (
    FRACTION,
    INTEGER,
    JsonNode,
    Unjudgeable,
    atom_of,
    flatten,
)
from objectlog.schemas.json_schemas import JsonDocument, compact, finite, not_json, pointer
from objectlog.schemas.typed_columns import Undecodable, decode_rows
from objectlog.schemas.types import ParsedSchema

# The keywords that say what a value is; a schema without any says nothing of it.
SHAPES = frozenset(
    {"type", "properties", "additionalProperties", "items", "prefixItems", "enum", "const",
     "anyOf", "oneOf", "$dynamicRef", "$recursiveRef"}
)  # fmt: skip
INT64 = (-(2**63), 2**63 - 1)
_DATE_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")

Convert = Callable[[Any], Any]
Key = tuple[int, frozenset[str]]  # a schema node: its dict's identity and the keywords left out


def arrow_type(parsed: ParsedSchema) -> pa.DataType:
    """The Arrow type of the column the schema's values decode into (the module's table)."""
    return _root_plan(parsed).kind


def decode_column(
    values: pa.Array | pa.ChunkedArray,
    parsed: ParsedSchema,
    reader_type: pa.DataType | None = None,
) -> tuple[pa.Array, pa.Array]:
    """(typed, reasons) for a binary column of framed values all written with the parsed
    JSON schema (callers group the values by schema id; the id itself is not checked here).

    typed has arrow_type(parsed), or reader_type when given (the table's evolved type: a
    struct field the writer lacks is null, one the reader lacks is left out). reasons is a
    string column: null where the value decoded (or was null), else why it did not, and typed
    is null there."""
    plan = _root_plan(parsed)
    target = plan.kind if reader_type is None else reader_type
    return decode_rows(values, lambda value: plan.convert(_document(value)), target)


# ---- decoding ----------------------------------------------------------------------------


class _Undecodable(Undecodable):
    pass


class _Misfit(Undecodable):
    """A value its column does not take; path: where, innermost segment first."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.path: list[object] = []

    def __str__(self) -> str:
        return f"{self.message} (at {pointer('#', *reversed(self.path))})"


def _document(value: bytes) -> Any:
    if len(value) < PREFIX_BYTES or value[0] != MAGIC_BYTE:
        raise _Undecodable(NOT_FRAMED_REASON)
    try:
        text = value[PREFIX_BYTES:].decode("utf-8")
    except UnicodeDecodeError as e:
        raise _Undecodable(f"its payload is not UTF-8: {e}") from None
    try:
        return json.loads(text, parse_constant=not_json, parse_float=finite)
    except ValueError as e:
        raise _Undecodable(f"its payload is not JSON: {e}") from None
    except RecursionError:
        raise _Undecodable("its payload is nested too deeply to decode") from None


def _at(segment: object, convert: Convert, value: Any) -> Any:
    try:
        return convert(value)
    except _Misfit as e:
        e.path.append(segment)
        raise


_JSON_TYPES = {
    type(None): "null",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "an array",
    dict: "an object",
}


def _misfit(value: Any, wanted: str) -> _Misfit:
    return _Misfit(f"{_JSON_TYPES.get(type(value), 'a value')} where the schema wants {wanted}")


# ---- plans: a schema node's Arrow type and what turns its JSON into Arrow's value --------


@dataclass(frozen=True)
class _Plan:
    kind: pa.DataType
    nullable: bool  # whether the schema admits JSON null
    convert: Convert  # a JSON value -> the value Arrow takes for kind; raises _Misfit


def _as_json(value: Any) -> str | None:
    return None if value is None else compact(value)


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise _misfit(value, "a string")
    return value


def _integer(value: Any) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # 1.0 is an integer to JSON Schema
    if not isinstance(value, int) or isinstance(value, bool):
        raise _misfit(value, "an integer")
    if not INT64[0] <= value <= INT64[1]:
        raise _Misfit("an integer outside int64's range")
    return value


def _number(value: Any) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise _misfit(value, "a number")
    try:
        return float(value)
    except OverflowError:
        raise _Misfit("an integer past a double's range") from None


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _misfit(value, "a boolean")
    return value


def _null(value: Any) -> None:
    if value is not None:
        raise _misfit(value, "null")


def _date_time(value: Any) -> dt.datetime:
    if not _DATE_TIME.fullmatch(_string(value)):
        raise _Misfit("a string that is not an RFC 3339 date-time with its offset")
    try:
        return dt.datetime.fromisoformat(value.upper()).astimezone(dt.UTC)
    except (ValueError, OverflowError):  # a day or hour out of range; a leap second
        raise _Misfit("a string that is not a valid date-time") from None


def _date(value: Any) -> dt.date:
    if not _DATE.fullmatch(_string(value)):
        raise _Misfit("a string that is not an RFC 3339 full-date (YYYY-MM-DD)")
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise _Misfit("a string that is not a valid date") from None


ANY = _Plan(pa.string(), True, _as_json)
NULL = _Plan(pa.null(), True, _null)
_SCALARS = {
    "integer": _Plan(pa.int64(), False, _integer),
    "number": _Plan(pa.float64(), False, _number),
    "boolean": _Plan(pa.bool_(), False, _boolean),
    "null": NULL,
}
_STRINGS = {
    "date-time": _Plan(pa.timestamp("us", tz="UTC"), False, _date_time),
    "date": _Plan(pa.date32(), False, _date),
}
STRING = _Plan(pa.string(), False, _string)


def _or_null(plan: _Plan) -> _Plan:
    if plan.nullable:
        return plan
    inner = plan.convert
    return _Plan(plan.kind, True, lambda value: None if value is None else inner(value))


def _struct(fields: list[tuple[str, _Plan, bool]]) -> _Plan:
    """fields: (name, plan, required)."""
    kind = pa.struct(
        [pa.field(name, p.kind, nullable=p.nullable or not needed) for name, p, needed in fields]
    )

    def convert(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _misfit(value, "an object")
        converted = {}
        for name, plan, needed in fields:
            if name in value:
                converted[name] = _at(name, plan.convert, value[name])
            elif needed:
                raise _Misfit(f"the required property {name!r} is missing")
        return converted

    return _Plan(kind, False, convert)


def _map(values: _Plan) -> _Plan:
    kind = pa.map_(pa.string(), pa.field("value", values.kind, nullable=values.nullable))
    inner = values.convert

    def convert(value: Any) -> list[tuple[str, Any]]:
        if not isinstance(value, dict):
            raise _misfit(value, "an object")
        return [(name, _at(name, inner, item)) for name, item in value.items()]

    return _Plan(kind, False, convert)


def _list(items: _Plan) -> _Plan:
    kind = pa.list_(pa.field("item", items.kind, nullable=items.nullable))
    inner = items.convert

    def convert(value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise _misfit(value, "an array")
        return [_at(i, inner, item) for i, item in enumerate(value)]

    return _Plan(kind, False, convert)


def _union(plans: list[_Plan]) -> _Plan:
    """anyOf / oneOf: null alternatives make the rest nullable; the rest must be one type."""
    rest = [plan for plan in plans if plan.kind != pa.null()]
    if not rest:
        return NULL
    if any(plan.kind != rest[0].kind for plan in rest[1:]):
        return ANY
    return _or_null(rest[0]) if any(plan.nullable for plan in plans) else rest[0]


# ---- the schema's walk -------------------------------------------------------------------


def _root_plan(parsed: ParsedSchema) -> _Plan:
    """The root's plan, walked again while walks find schemas that contain themselves (each
    walk finds at least one more, then types it a JSON string wherever it appears)."""
    document = parsed.parsed
    assert isinstance(document, JsonDocument)
    recursive: set[Key] = set()
    while True:
        planner = _Planner(recursive)
        plan = planner.plan(document.root)
        if not planner.found:
            return plan
        recursive |= planner.found


def _shapes(node: JsonNode) -> list[JsonNode] | None:
    """The parts of the node ($refs followed, allOf spread) that shape its value; None for a
    $ref chain that loops without descending into the data."""
    try:
        flat = flatten((node,))
    except Unjudgeable:
        return None
    return [part for part in flat or () if SHAPES & part.kw.keys()]


def _type_names(node: JsonNode) -> list[str]:
    """The JSON types the node names, or its keywords imply; none when nothing does."""
    named = node.kw.get("type")
    if isinstance(named, str | list):
        return [named] if isinstance(named, str) else list(named)
    kw = node.kw
    implied = {"object"} if {"properties", "additionalProperties"} & kw.keys() else set()
    implied |= {"array"} if {"items", "prefixItems"} & kw.keys() else set()
    if not implied and ("enum" in kw or "const" in kw):
        values = kw["enum"] if "enum" in kw else [kw["const"]]
        atoms = {atom_of(v) for v in values} if isinstance(values, list) else set()
        implied = {"number" if atom == FRACTION else atom for atom in atoms}
        implied = {"number"} | (implied - {INTEGER}) if "number" in implied else implied
    return sorted(implied)


class _Planner:
    """One walk of the schema. recursive: nodes known to contain themselves (JSON strings);
    found: nodes this walk met again inside themselves."""

    def __init__(self, recursive: set[Key]) -> None:
        self.recursive = recursive
        self.found: set[Key] = set()
        self.path: list[Key] = []
        self.done: dict[Key, _Plan] = {}

    def plan(self, node: JsonNode) -> _Plan:
        shapes = _shapes(node)
        if shapes is None or len(shapes) != 1:
            return ANY  # says nothing of the value, or two shapes not merged
        return self.shaped(shapes[0])

    def shaped(self, node: JsonNode) -> _Plan:
        key = (id(node.schema), node.omit)
        if key in self.recursive:
            return ANY
        if key in self.path:
            self.found.update(self.path[self.path.index(key) :])
            return ANY
        if key not in self.done:
            self.path.append(key)
            try:
                self.done[key] = self.node(node)
            finally:
                self.path.pop()
        return self.done[key]

    def node(self, node: JsonNode) -> _Plan:
        if "$dynamicRef" in node.kw or "$recursiveRef" in node.kw:
            return ANY
        for keyword in ("anyOf", "oneOf"):
            if isinstance(node.kw.get(keyword), list):
                return self.alternatives(node, keyword)
        return self.typed(node)

    def alternatives(self, node: JsonNode, keyword: str) -> _Plan:
        """The alternatives' union, or (when they are constraints only) the rest of the node;
        a node with a shape of its own beside shaping alternatives is a JSON string."""
        alternatives = [node.child(sub) for sub in node.kw[keyword]]
        rest = node.without(keyword)
        if not any(_shapes(alternative) != [] for alternative in alternatives):
            return self.shaped(rest) if SHAPES & rest.kw.keys() else ANY
        if SHAPES & rest.kw.keys():
            return ANY
        return _union([self.plan(alternative) for alternative in alternatives])

    def typed(self, node: JsonNode) -> _Plan:
        names = _type_names(node)
        rest = [name for name in names if name != "null"]
        if "number" in rest and "integer" in rest:
            rest.remove("integer")
        if len(rest) != 1:
            return ANY if rest or not names else NULL
        plan = self.of_type(rest[0], node)
        return _or_null(plan) if "null" in names else plan

    def of_type(self, name: str, node: JsonNode) -> _Plan:
        if name == "string":
            found = node.kw.get("format")
            return _STRINGS.get(found, STRING) if isinstance(found, str) else STRING
        if name == "object":
            return self.object(node)
        if name == "array":
            return self.array(node)
        return _SCALARS.get(name, ANY)

    def object(self, node: JsonNode) -> _Plan:
        properties = node.kw.get("properties")
        if isinstance(properties, dict) and properties:
            required = node.kw.get("required")
            needed = set(required) if isinstance(required, list) else set()
            return _struct(
                [(name, self.plan(node.child(sub)), name in needed)
                 for name, sub in properties.items()]
            )  # fmt: skip
        extra = node.kw.get("additionalProperties")
        if extra is not None and _shapes(node.child(extra)):
            return _map(self.plan(node.child(extra)))
        return ANY  # an open object, or a closed one with no properties

    def array(self, node: JsonNode) -> _Plan:
        items = node.kw.get("items", True)
        if "prefixItems" in node.kw or isinstance(items, list):
            return ANY  # a tuple
        return _list(self.plan(node.child(items)))
