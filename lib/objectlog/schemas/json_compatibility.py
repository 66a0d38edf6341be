"""JSON Schema compatibility, node by node: the vocabulary the check is stated in (nodes,
a writer's conjunction, the types and values it lets through) and the keyword rules that need
no subschema. json_schemas walks the two schemas ($ref, combinators, properties, items) and
applies them. Checks are proofs: a problem is reported unless every value the writer accepts
is accepted by the reader, so they are stricter than Confluent where Confluent is unsound.
Messages name the reader's JSON pointer and the change.

Change kinds judged (Confluent's names where it has one), reader against writer:

- boolean schemas: reader true or writer false compatible; reader false not.
- type: TYPE_EXTENDED (integer -> number, a type added) compatible; TYPE_NARROWED and
  TYPE_CHANGED not. A writer's enum or const stands for its types.
- enum / const: ENUM_ARRAY_EXTENDED compatible; values removed (NARROWED, CHANGED, a const
  changed), an enum or const added, not.
- maxLength, minLength, maximum, minimum, exclusiveMaximum, exclusiveMinimum (draft-04's
  boolean form too), maxItems, minItems, maxProperties, minProperties: removed or loosened
  compatible, added or tightened not (the writer's bounds, whole numbers for integers, must
  imply the reader's). multipleOf: REMOVED, REDUCED (the writer's a multiple of the reader's)
  compatible; ADDED, EXPANDED, CHANGED not. pattern, format: removed compatible; added or
  changed not. uniqueItems: added not, unless the writer's arrays hold at most one item.
- required: REQUIRED_ATTRIBUTE_REMOVED compatible; a property becoming required is not, unless
  the reader's property has a default (Confluent's REQUIRED_..._WITH_DEFAULT_ADDED).
- properties by content model (additionalProperties absent or true: open; false: closed; a
  schema or patternProperties: partially open): added to an open writer not, unless its
  schema accepts anything; added to a closed writer compatible; added to a partially open
  writer, compatible if it covers what that writer's patternProperties /
  additionalProperties allowed. Removed from an open reader compatible; from a closed reader
  only if the writer's was false; from a partially open one if the reader's
  patternProperties / additionalProperties cover it. patternProperties and
  additionalProperties added, narrowed or made false: not, unless the writer cannot write
  such names. propertyNames: compared as a schema of the names.
- items, prefixItems, additionalItems: item schemas compared position by position; tuple
  items added or removed under open, closed or partially open models as for properties.
- dependencies, dependentRequired, dependentSchemas: removed or narrowed compatible; added or
  extended not, unless the writer already guarantees them.
- allOf, anyOf, oneOf: a reader's allOf needs every member; its anyOf one alternative that
  accepts all the writer's data (SUM_TYPE_EXTENDED, a schema wrapped in anyOf, allOf ->
  anyOf); its oneOf the same, and every other alternative provably disjoint from the
  writer's data (other types or values, or a required property held to other values), so
  wrapping in oneOf with null passes and overlapping alternatives fail. A writer's anyOf /
  oneOf alternatives must each be accepted; its allOf members are all known of its data.
- not: compatible when the writer's data provably avoids it, or the writer's own not forbade
  at least as much (NOT_TYPE_NARROWED); otherwise not.
- $ref: followed into local definitions and references (siblings ignored before 2019-09); a
  recursion met again after descending into the data is assumed to hold, met without
  descending is reported.
- Fail closed: if/then/else, contains (with minContains, maxContains), unevaluatedProperties,
  unevaluatedItems, $dynamicRef, $recursiveRef and any other keyword the dialect asserts:
  unchanged is compatible, added or changed is reported as not judged; so are patterns
  Python cannot compile, unresolvable $refs and schemas too complex to compare. Annotations
  (title, description, default, examples, $comment, ...) and keywords the dialect does not
  assert are ignored, as validators ignore them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property, lru_cache
from math import ceil, floor
from typing import Any

from referencing import Specification
from referencing._core import Resolver  # not re-exported; confluent-kafka imports it so too
from referencing.exceptions import Unresolvable

NULL, BOOLEAN, OBJECT, ARRAY, STRING, INTEGER, FRACTION = (
    "null", "boolean", "object", "array", "string", "integer", "fraction"
)  # fmt: skip
ANY = frozenset({NULL, BOOLEAN, OBJECT, ARRAY, STRING, INTEGER, FRACTION})
NUMBER = frozenset({INTEGER, FRACTION})
TYPE_ATOMS = {"number": NUMBER, "integer": frozenset({INTEGER})} | {
    name: frozenset({name}) for name in (NULL, BOOLEAN, OBJECT, ARRAY, STRING)
}
JUDGED = """$ref type enum const format minLength maxLength pattern minimum maximum
exclusiveMinimum exclusiveMaximum multipleOf properties patternProperties additionalProperties
required minProperties maxProperties propertyNames dependencies dependentRequired
dependentSchemas items prefixItems additionalItems minItems maxItems uniqueItems allOf anyOf
oneOf not"""
APPLIES_TO = {"unevaluatedProperties": {OBJECT}, "unevaluatedItems": {ARRAY}, "contains": {ARRAY}}
REFS = re.compile(r'"\$(ref|dynamicRef|recursiveRef)":')
TOGETHER = {"if": ("if", "then", "else"), "contains": ("contains", "minContains", "maxContains")}
STRING_NAMES = {"type": "string"}  # what a writer's property names are, said as a schema
MAX_HOPS = 64


@dataclass(frozen=True)
class Dialect:
    """A JSON Schema draft: its jsonschema validator class (its keywords are the ones that
    assert), its ``referencing`` specification, and whether $ref overrides its siblings."""

    name: str
    uri: str
    validator: Any
    specification: Specification[Any]
    before_2019: bool

    @cached_property
    def asserted(self) -> frozenset[str]:
        return frozenset(self.validator.VALIDATORS)


class Unjudgeable(Exception):
    """A construct the rules cannot judge here: reported as a problem at its path."""


@dataclass(frozen=True)
class JsonNode:
    """A schema node with what reading it needs: its resolver and dialect, the dialect of
    every subschema dict by id (references may use other drafts), and keywords to ignore
    (``omit``: the parts of a reader already split off)."""

    schema: Any
    resolver: Resolver[Any]
    dialect: Dialect
    dialects: Mapping[int, Dialect] = field(compare=False)
    omit: frozenset[str] = frozenset()

    @cached_property
    def kw(self) -> dict[str, Any]:
        """The keywords that assert in this node's dialect."""
        if not isinstance(self.schema, dict):
            return {}
        asserted = self.dialect.asserted - self.omit
        return {key: value for key, value in self.schema.items() if key in asserted}

    def child(self, sub: Any) -> JsonNode:
        if not isinstance(sub, dict):
            return JsonNode(sub, self.resolver, self.dialect, self.dialects)
        dialect = self.dialects.get(id(sub), self.dialect)
        resolver = self.resolver.in_subresource(dialect.specification.create_resource(sub))
        return JsonNode(sub, resolver, dialect, self.dialects)

    def follow(self, ref: str) -> JsonNode:
        try:
            found = self.resolver.lookup(ref)
        except Unresolvable as error:
            raise Unjudgeable(f"$ref {ref!r} does not resolve") from error
        return JsonNode(found.contents, found.resolver, self.dialect, self.dialects).child(
            found.contents
        )

    def without(self, keyword: str) -> JsonNode:
        return JsonNode(
            self.schema, self.resolver, self.dialect, self.dialects, self.omit | {keyword}
        )


Conj = tuple[JsonNode, ...]  # data valid under the writer satisfies every node


def flatten(writer: Iterable[JsonNode]) -> Conj | None:
    """The writer's conjunction with $refs followed and allOf spread; None if it is false."""
    pending, flat, hops = list(writer), [], 0
    while pending:
        node = pending.pop(0)
        ref, members = node.kw.get("$ref"), node.kw.get("allOf")
        if node.schema is False:
            return None
        if isinstance(ref, str):
            hops += 1
            if hops > MAX_HOPS:
                raise Unjudgeable("$ref chain too long or circular")
            pending += [node.follow(ref)] + (
                [] if node.dialect.before_2019 else [node.without("$ref")]
            )
        elif isinstance(members, list):
            pending += [node.child(m) for m in members] + [node.without("allOf")]
        elif node.schema is not True:
            flat.append(node)
    return tuple(flat)


def writer_alternatives(flat: Conj) -> list[Conj] | None:
    """The writer's first anyOf / oneOf spread into conjunctions, one per alternative."""
    for i, node in enumerate(flat):
        for keyword in ("anyOf", "oneOf"):
            if keyword in node.kw:
                rest = (*flat[:i], node.without(keyword), *flat[i + 1 :])
                return [(*rest, node.child(alt)) for alt in node.kw[keyword]]
    return None


def type_atoms(node: JsonNode) -> frozenset[str]:
    named = node.kw.get("type")
    names = [] if named is None else [named] if isinstance(named, str) else named
    return frozenset().union(*(TYPE_ATOMS[name] for name in names)) if names else ANY


def own_values(node: JsonNode) -> list[Any] | None:
    found = [node.kw["const"]] if "const" in node.kw else None
    return intersect(found, node.kw["enum"]) if "enum" in node.kw else found


def atoms(conj: Conj) -> frozenset[str]:
    """The JSON types (integers apart from other numbers) the conjunction lets through."""
    allowed = ANY
    for node in conj:
        own = own_values(node)
        allowed &= type_atoms(node) & (ANY if own is None else {atom_of(v) for v in own})
    return allowed


def values(conj: Conj) -> list[Any] | None:
    """The values the conjunction allows when finite (enum, const, null, boolean), else None."""
    found: list[Any] | None = None
    for node in conj:
        found = intersect(found, own_values(node))
    allowed = atoms(conj)
    if found is None and allowed <= {NULL, BOOLEAN}:
        found = ([None] if NULL in allowed else []) + ([False, True] if BOOLEAN in allowed else [])
    return None if found is None else [v for v in found if atom_of(v) in allowed]


def intersect(found: list[Any] | None, more: list[Any] | None) -> list[Any] | None:
    if found is None or more is None:
        return more if found is None else found
    return [value for value in found if key(value) in keys(more)]


def atom_of(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return NULL if value is None else BOOLEAN
    if isinstance(value, int | float):
        return INTEGER if isinstance(value, int) or value.is_integer() else FRACTION
    return STRING if isinstance(value, str) else ARRAY if isinstance(value, list) else OBJECT


def key(value: Any) -> str:
    """JSON Schema equality: 1 equals 1.0, true does not equal 1."""

    def norm(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, list):
            return [norm(x) for x in v]
        return {k: norm(x) for k, x in v.items()} if isinstance(v, dict) else v

    return json.dumps(norm(value), sort_keys=True)


def keys(found: list[Any]) -> set[str]:
    return {key(value) for value in found}


def required(conj: Conj) -> set[str]:
    return set().union(*(node.kw.get("required") or [] for node in conj))


@lru_cache(maxsize=1024)
def regex(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def member(conj: Conj, name: str) -> Conj | None:
    """What the conjunction asks of a property's value (properties, the patternProperties
    matching its name, else additionalProperties); None when it forbids the property."""
    parts: list[JsonNode] = []
    for node in conj:
        declared = node.kw.get("properties") or {}
        schemas = [declared[name]] if name in declared else []
        for pattern, schema in (node.kw.get("patternProperties") or {}).items():
            if (compiled := regex(pattern)) is None:
                raise Unjudgeable(f"patternProperties pattern {pattern!r} cannot be judged")
            schemas += [schema] if compiled.search(name) else []
        if not schemas and "additionalProperties" in node.kw:
            schemas = [node.kw["additionalProperties"]]
        parts += [node.child(s) for s in schemas]
    if any(part.schema is False for part in parts):
        return None
    return tuple(part for part in parts if part.schema is not True)


def dependents(node: JsonNode, schemas: bool) -> dict[str, tuple[str, Any]]:
    """Property -> (keyword, required names or schema) from dependencies (draft-07 and
    before) and dependentRequired / dependentSchemas (2019-09 on)."""
    keywords = ("dependencies", "dependentSchemas" if schemas else "dependentRequired")
    return {
        name: (keyword, value)
        for keyword in keywords
        for name, value in (node.kw.get(keyword) or {}).items()
        if isinstance(value, list) != schemas
    }


def tuple_form(node: JsonNode) -> tuple[list[Any], Any, str, str]:
    """(item schemas by position, schema of the rest, and their keywords), in every draft."""
    if "prefixItems" in node.kw:
        return node.kw["prefixItems"], node.kw.get("items", True), "prefixItems", "items"
    items = node.kw.get("items", True)
    if isinstance(items, list):
        return items, node.kw.get("additionalItems", True), "items", "additionalItems"
    return [], items, "items", "items"


def most_items(flat: Conj) -> tuple[int | None, list[int]]:
    """The most items the writer's arrays hold, and the lengths of its closed tuples."""
    closed = [len(prefix) for prefix, rest, _, _ in map(tuple_form, flat) if rest is False]
    most = min(
        [node.kw["maxItems"] for node in flat if "maxItems" in node.kw] + closed, default=None
    )
    return most, closed


def array_counts(reader: JsonNode, flat: Conj) -> list[str]:
    most, closed = most_items(flat)
    found = count_problems(reader, flat, "maxItems", True, closed)
    found += count_problems(reader, flat, "minItems", False)
    unique = reader.kw.get("uniqueItems") is True and (most is None or most > 1)
    return found + (
        ["uniqueItems added"]
        if unique and not any(n.kw.get("uniqueItems") is True for n in flat)
        else []
    )


def same(reader: JsonNode, node: JsonNode, names: tuple[str, ...]) -> bool:
    """Whether the two give these keywords equal ref-free values in one dialect."""
    ours, theirs = ([n.schema.get(name) for name in names] for n in (reader, node))
    text = json.dumps(ours, sort_keys=True)
    return (
        reader.dialect is node.dialect
        and text == json.dumps(theirs, sort_keys=True)
        and not REFS.search(text)
    )


def keyword_problems(
    reader: JsonNode, flat: Conj, written: frozenset[str], shared: frozenset[str]
) -> list[str]:
    """The keywords judged without a subschema, as messages without their path; each
    type's keywords only when the writer writes that type and the reader takes it."""
    found = type_problems(reader, written) + value_problems(reader, flat)
    found += string_problems(reader, flat) if STRING in shared else []
    found += number_problems(reader, flat, shared) if shared & NUMBER else []
    found += object_counts(reader, flat) if OBJECT in shared else []
    found += array_counts(reader, flat) if ARRAY in shared else []
    return found + unjudged(reader, flat, shared)


def unjudged(reader: JsonNode, flat: Conj, shared: frozenset[str]) -> list[str]:
    """Asserting keywords the rules do not judge: fine unchanged (if/then/else, contains with
    its counts: same values), else a problem."""
    found = []
    for keyword, value in reader.kw.items():
        if keyword in JUDGED.split() or value is True or not shared & APPLIES_TO.get(keyword, ANY):
            continue
        together = TOGETHER.get(keyword)
        if together and any(same(reader, node, together) for node in flat):
            continue
        found.append(f"{keyword} cannot be judged for compatibility, and was added or changed")
    return found


def type_problems(reader: JsonNode, written: frozenset[str]) -> list[str]:
    accepted = type_atoms(reader)
    if written <= accepted:
        return []
    verb = "narrowed" if written & accepted else "changed"
    return [f"type {verb} from {type_names(written)} to {type_names(accepted)}"]


def type_names(found: frozenset[str]) -> str:
    number = ["number"] if FRACTION in found else ["integer"] if INTEGER in found else []
    names = sorted(found - NUMBER) + number
    return "any type" if found == ANY else names[0] if len(names) == 1 else f"[{', '.join(names)}]"


def value_problems(reader: JsonNode, flat: Conj) -> list[str]:
    accepted, written = own_values(reader), values(flat)
    keyword = "enum" if "enum" in reader.kw else "const"
    if accepted is None:
        return []
    if written is None:
        return [f"{keyword} added: only {json.dumps(accepted)} accepted"]
    lost = [value for value in written if key(value) not in keys(accepted)]
    if lost and keyword == "const" and len(written) == 1:
        return [f"const changed from {json.dumps(written[0])} to {json.dumps(reader.kw['const'])}"]
    return [f"{keyword} narrowed: {json.dumps(lost)} no longer accepted"] if lost else []


def string_problems(reader: JsonNode, flat: Conj) -> list[str]:
    found = count_problems(reader, flat, "maxLength", True)
    found += count_problems(reader, flat, "minLength", False)
    for keyword in ("pattern", "format"):
        wanted = reader.kw.get(keyword)
        had = [node.kw[keyword] for node in flat if keyword in node.kw]
        if wanted is not None and wanted not in had:
            found.append(
                f"{keyword} changed from {had[0]!r} to {wanted!r}"
                if had
                else f"{keyword} added: {wanted!r}"
            )
    return found


def count_problems(
    reader: JsonNode, flat: Conj, keyword: str, upper: bool, implied: Iterable[int] = ()
) -> list[str]:
    """A whole-number bound (lengths, item and property counts) the writer's must imply."""
    wanted = reader.kw.get(keyword)
    had = [node.kw[keyword] for node in flat if keyword in node.kw] + list(implied)
    if wanted is None or (had and (min(had) <= wanted if upper else max(had) >= wanted)):
        return []
    if not had:
        return [f"{keyword} added: {wanted}"]
    verb, before = ("decreased", min(had)) if upper else ("increased", max(had))
    return [f"{keyword} {verb} from {before} to {wanted}"]


def object_counts(reader: JsonNode, flat: Conj) -> list[str]:
    """required (Confluent allows it with a default), property counts, and dependencies
    on required names."""
    declared, had = reader.kw.get("properties") or {}, required(flat)
    defaults = {name for name, s in declared.items() if isinstance(s, dict) and "default" in s}
    found = [
        f"property {name!r} became required without a default"
        for name in reader.kw.get("required") or []
        if name not in had | defaults
    ]
    found += count_problems(reader, flat, "maxProperties", True)
    found += count_problems(reader, flat, "minProperties", False)
    for name, (keyword, needed) in dependents(reader, schemas=False).items():
        theirs = {n for node in flat for n in dependents(node, False).get(name, ("", []))[1]}
        missing = [n for n in needed if n not in had | theirs]
        if missing and member(flat, name) is not None:
            found.append(f"{keyword} added: {name!r} now requires {missing}")
    return found


def number_problems(reader: JsonNode, flat: Conj, shared: frozenset[str]) -> list[str]:
    """Bounds (lower ones negated to read as upper) the writer's tightest must imply, on
    whole numbers when only integers pass; then multipleOf."""
    found = []
    for upper in (True, False):
        theirs = [bound for node in flat for bound in bounds(node, upper)]
        if shared <= {INTEGER}:
            theirs = [(k, whole(v, exclusive), False, shown) for k, v, exclusive, shown in theirs]
        tightest = min(theirs, key=lambda b: (b[1], not b[2]), default=None)
        for keyword, limit, exclusive, shown in bounds(reader, upper):
            if tightest is None:
                found.append(f"{keyword} added: {shown}")
            elif tightest[1] > limit or (tightest[1] == limit and exclusive and not tightest[2]):
                verb, before = "decreased" if upper else "increased", tightest[3]
                was = before if tightest[0] == keyword else f"{tightest[0]} {before}"
                found.append(f"{keyword} {verb} from {was} to {shown}")
    return found + multiple_problems(reader, flat, shared)


def bounds(node: JsonNode, upper: bool) -> list[tuple[str, float, bool, float]]:
    """(keyword, limit read as upper, exclusive, limit as written); draft-04's boolean
    exclusiveMaximum modifies maximum."""
    inclusive, exclusive = (
        ("maximum", "exclusiveMaximum") if upper else ("minimum", "exclusiveMinimum")
    )
    sign, found = (1 if upper else -1), []
    if inclusive in node.kw:
        modified = node.schema.get(exclusive) is True
        found.append((inclusive, sign * node.kw[inclusive], modified, node.kw[inclusive]))
    if type(node.kw.get(exclusive)) in (int, float):
        found.append((exclusive, sign * node.kw[exclusive], True, node.kw[exclusive]))
    return found


def multiple_problems(reader: JsonNode, flat: Conj, shared: frozenset[str]) -> list[str]:
    wanted = reader.kw.get("multipleOf")
    had = [node.kw["multipleOf"] for node in flat if "multipleOf" in node.kw]
    if wanted is None or any((fraction(h) / fraction(wanted)).denominator == 1 for h in had):
        return []
    if shared <= {INTEGER} and (1 / fraction(wanted)).denominator == 1:
        return []  # every integer is a multiple of 1/n
    if not had:
        return [f"multipleOf added: {wanted}"]
    verb = "expanded" if (fraction(wanted) / fraction(had[0])).denominator == 1 else "changed"
    return [f"multipleOf {verb} from {had[0]} to {wanted}"]


def fraction(number: float) -> Fraction:
    return Fraction(str(number)) if isinstance(number, float) else Fraction(number)


def whole(bound: float, exclusive: bool) -> int:
    """The largest integer within an upper bound."""
    return ceil(bound) - 1 if exclusive else floor(bound)
