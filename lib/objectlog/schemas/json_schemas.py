"""The JSON schema type (JSON Schema, Confluent's "JSON"): parse a schema with its
references, give its stored and normalized forms, and walk two schemas side by side to say
why data one writes another may refuse.

Parsing: the text is JSON (an object or a boolean; NaN and overflowing numbers refused),
valid against the meta-schema of its dialect (``$schema``: draft-04, -06, -07, 2019-09,
2020-12; none means draft-07, Confluent's default), and every ``$ref`` resolves, locally or
to a reference named by that URL (as confluent-kafka's serializers resolve them). The stored
form is the JSON re-serialized compactly in its key order; the normalized form also sorts the
keys, the one JSON difference Confluent's normalization documents (property order).

Compatibility: the change kinds judged, and how, are listed at the top of json_compatibility;
this module walks $refs, combinators, properties and items, and applies its keyword rules at
each pair of nodes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import referencing.jsonschema
from jsonschema import validators
from jsonschema.exceptions import SchemaError
from referencing import Registry
from referencing._core import Resolver
from referencing.exceptions import Unresolvable

from objectlog.errors import InvalidSchema
from objectlog.schemas.json_compatibility import (
    OBJECT,
    REFS,
    STRING_NAMES,
    Conj,
    Dialect,
    JsonNode,
    Unjudgeable,
    atoms,
    dependents,
    flatten,
    keys,
    keyword_problems,
    member,
    most_items,
    required,
    tuple_form,
    type_atoms,
    values,
    writer_alternatives,
)
from objectlog.schemas.types import JSON, ParsedSchema

DIALECTS = {
    dialect.uri: dialect
    for dialect in (
        Dialect("draft-04", "http://json-schema.org/draft-04/schema", validators.Draft4Validator,
                referencing.jsonschema.DRAFT4, before_2019=True),
        Dialect("draft-06", "http://json-schema.org/draft-06/schema", validators.Draft6Validator,
                referencing.jsonschema.DRAFT6, before_2019=True),
        Dialect("draft-07", "http://json-schema.org/draft-07/schema", validators.Draft7Validator,
                referencing.jsonschema.DRAFT7, before_2019=True),
        Dialect("2019-09", "https://json-schema.org/draft/2019-09/schema",
                validators.Draft201909Validator, referencing.jsonschema.DRAFT201909,
                before_2019=False),
        Dialect("2020-12", "https://json-schema.org/draft/2020-12/schema",
                validators.Draft202012Validator, referencing.jsonschema.DRAFT202012,
                before_2019=False),
    )
}  # fmt: skip
DEFAULT_DIALECT = DIALECTS["http://json-schema.org/draft-07/schema"]
# Keywords holding one subschema, a list of them, or a map of them: where $refs and $schemas are.
ONE = "additionalItems additionalProperties contains contentSchema else if items not "
ONE += "propertyNames then unevaluatedItems unevaluatedProperties"
LIST = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
NAMED = (
    "$defs",
    "definitions",
    "dependentSchemas",
    "patternProperties",
    "properties",
    "dependencies",
)
BUDGET, MAX_NESTING = 20_000, 200


@dataclass(frozen=True)
class JsonDocument:
    """ParsedSchema.parsed for JSON: the root node (its resolver knows the references by
    name) and the references' canonical texts (same text, same references: same schema)."""

    root: JsonNode
    references: Mapping[str, str]


class JsonSchemaType:
    """Confluent's JSON schema type for the registry (see types.SchemaType)."""

    name = JSON

    def parse(self, schema: str, references: Mapping[str, str]) -> ParsedSchema:
        try:
            return parse(schema, references)
        except RecursionError as error:
            raise InvalidSchema("the schema is nested too deeply to parse") from error

    def incompatibilities(self, reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
        ours, theirs = reader.parsed, writer.parsed
        if not isinstance(ours, JsonDocument) or not isinstance(theirs, JsonDocument):
            return [f"#: schema type changed from {writer.schema_type} to {reader.schema_type}"]
        if reader.canonical == writer.canonical and ours.references == theirs.references:
            return []
        return incompatibilities(ours.root, theirs.root)


def parse(schema: str, references: Mapping[str, str]) -> ParsedSchema:
    decoded = decode(schema, "the schema")
    dialect = dialect_of(decoded)
    try:
        dialect.validator.check_schema(decoded)
    except SchemaError as error:
        at = pointer("#", *error.absolute_path)
        raise InvalidSchema(f"{error.message} (at {at}, {dialect.name})") from error
    documents = {name: decode(text, f"reference {name!r}") for name, text in references.items()}
    registry: Registry[Any] = Registry().with_resources(
        (name, dialect_of(doc).specification.create_resource(doc))
        for name, doc in documents.items()
    )
    resolver = registry.resolver_with_root(dialect.specification.create_resource(decoded))
    dialects: dict[int, Dialect] = {}
    walk(decoded, dialect, resolver, dialects, "#", "")
    for name, doc in documents.items():
        where = f" in reference {name!r}"
        walk(doc, dialect_of(doc), registry.resolver(base_uri=name), dialects, "#", where)
    root = JsonNode(decoded, resolver, dialect, dialects)
    document = JsonDocument(root, {name: compact(doc) for name, doc in documents.items()})
    return ParsedSchema(JSON, compact(decoded), compact(decoded, sort_keys=True), document)


def decode(text: str, what: str) -> Any:
    try:
        value = json.loads(text, parse_constant=not_json, parse_float=finite)
        compact(value).encode()  # a lone surrogate cannot be stored as UTF-8
    except ValueError as error:
        raise InvalidSchema(f"{what} is not valid JSON: {error}") from error
    if isinstance(value, dict | bool):
        return value
    kind = (
        "an array"
        if isinstance(value, list)
        else "a string"
        if isinstance(value, str)
        else "a number or null"
    )
    raise InvalidSchema(f"{what} is not a JSON Schema: an object or a boolean, not {kind}")


def not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def finite(number: str) -> float:
    """JSON numbers past a double's range would come back as Infinity, which is not JSON."""
    value = float(number)
    if math.isinf(value):
        raise ValueError(f"{number} is out of range")
    return value


def dialect_of(document: Any) -> Dialect:
    if not isinstance(document, dict) or "$schema" not in document:
        return DEFAULT_DIALECT
    uri = document["$schema"]
    dialect = DIALECTS.get(uri.removesuffix("#")) if isinstance(uri, str) else None
    if dialect is None:
        expected = "draft-04, draft-06, draft-07, 2019-09 or 2020-12"
        raise InvalidSchema(f"unsupported $schema {uri!r}: expected {expected}")
    return dialect


def walk(
    node: Any,
    dialect: Dialect,
    resolver: Resolver[Any],
    dialects: dict[int, Dialect],
    at: str,
    where: str,
) -> None:
    """Record each subschema's dialect (references may use other drafts) and check that
    each $ref resolves, following $id changes of base URI as validators do."""
    if not isinstance(node, dict):
        return
    dialect = dialect_of(node) if "$schema" in node else dialect
    dialects[id(node)] = dialect
    resolver = resolver.in_subresource(dialect.specification.create_resource(node))
    ref = node.get("$ref")
    if isinstance(ref, str):
        try:
            resolver.lookup(ref)
        except Unresolvable as error:
            raise InvalidSchema(
                f"unresolvable $ref {ref!r} at {at}{where}: "
                "neither within the schema nor one of its references"
            ) from error
    for segments, sub in subschemas(node):
        walk(sub, dialect, resolver, dialects, pointer(at, *segments), where)


def subschemas(node: dict[str, Any]) -> Iterator[tuple[tuple[object, ...], Any]]:
    for keyword in ONE.split():
        if isinstance(node.get(keyword), dict):
            yield (keyword,), node[keyword]
    for keyword in LIST:
        if isinstance(node.get(keyword), list):
            yield from (((keyword, i), sub) for i, sub in enumerate(node[keyword]))
    for keyword in NAMED:
        if isinstance(node.get(keyword), dict):
            yield from (((keyword, name), sub) for name, sub in node[keyword].items())


def compact(value: Any, sort_keys: bool = False) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys)


def pointer(base: str, *segments: object) -> str:
    escaped = (str(s).replace("~", "~0").replace("/", "~1") for s in segments)
    return "/".join([base, *escaped])


def incompatibilities(reader: JsonNode, writer: JsonNode) -> list[str]:
    """Why data valid under writer may be refused by reader; empty when it cannot be."""
    try:
        problems = _Checker().compare(reader, (writer,), _Trail())
    except _TooComplex:
        return ["#: the schemas are too complex to judge"]
    return list(dict.fromkeys(problems))


class _TooComplex(Exception):
    """The comparison ran out of budget: reported once for the whole schema."""


@dataclass(frozen=True)
class _Trail:
    """Where the comparison is: the reader's pointer, how deep into the data, and the pairs
    compared on the way there (to meet a recursion)."""

    path: str = "#"
    depth: int = 0
    seen: Mapping[Any, int] = field(default_factory=dict)

    def at(self, *segments: object, descend: bool = False) -> _Trail:
        return _Trail(pointer(self.path, *segments), self.depth + descend, self.seen)

    def visit(self, reader: JsonNode, flat: Conj) -> _Trail | None:
        """None when this pair is already being compared further up, after descending into
        the data: on finite data the recursion holds if everything else does."""
        key = tuple((id(node.schema), node.omit) for node in (reader, *flat))
        if key in self.seen and self.seen[key] < self.depth:
            return None
        if key in self.seen or len(self.seen) > MAX_NESTING:
            raise Unjudgeable("circular $ref without descending into the data, or too deep")
        return _Trail(self.path, self.depth, {**self.seen, key: self.depth})


class _Checker:
    """The walk. A reader is split into parts each to be met ($ref and its siblings, allOf);
    a writer is a conjunction of what its data is known to satisfy, its anyOf / oneOf
    alternatives each checked. Every method returns problems as messages with paths."""

    def __init__(self) -> None:
        self.budget = BUDGET
        self.texts: dict[int, str] = {}

    def compare(self, reader: JsonNode, writer: Conj, trail: _Trail) -> list[str]:
        self.budget -= 1
        if self.budget < 0:
            raise _TooComplex
        try:
            return self._compare(reader, writer, trail)
        except Unjudgeable as error:
            return [f"{trail.path}: {error}"]

    def _compare(self, reader: JsonNode, writer: Conj, trail: _Trail) -> list[str]:
        flat = flatten(writer)
        if flat is None or reader.schema is True or self.identical(reader, flat):
            return []
        if reader.schema is False:
            return [f"{trail.path}: the reader's schema is false, refusing all the writer's data"]
        visited = trail.visit(reader, flat)
        if visited is None:
            return []
        parts = split_reader(reader, visited)
        if parts is not None:
            return [p for part, at in parts for p in self.compare(part, flat, at)]
        alternatives = writer_alternatives(flat)
        if alternatives is not None:
            return [p for conj in alternatives for p in self.compare(reader, conj, visited)]
        for keyword in ("anyOf", "oneOf", "not"):
            if keyword in reader.kw:
                rest = self.compare(reader.without(keyword), flat, visited)
                rule = self.not_ if keyword == "not" else self.sum_of
                return rule(reader, keyword, flat, visited) + rest
        return self.plain(reader, flat, visited)

    def identical(self, reader: JsonNode, flat: Conj) -> bool:
        """Equal ref-free nodes of one dialect accept the same data, whatever they hold."""
        if len(flat) != 1 or reader.omit or flat[0].omit or reader.dialect is not flat[0].dialect:
            return False
        text = self.text(reader.schema)
        return text == self.text(flat[0].schema) and not REFS.search(text)

    def text(self, node: Any) -> str:
        if id(node) not in self.texts:
            self.texts[id(node)] = json.dumps(node, sort_keys=True)
        return self.texts[id(node)]

    def sum_of(self, reader: JsonNode, keyword: str, flat: Conj, trail: _Trail) -> list[str]:
        """anyOf: one alternative accepts all the writer's data. oneOf: that, and every
        other alternative provably refuses it (data matching two is refused)."""
        alternatives = [reader.child(alt) for alt in reader.kw[keyword]]
        results = [self.compare(a, flat, trail.at(keyword, i)) for i, a in enumerate(alternatives)]
        if all(results):
            closest = min(results, key=len)
            return [
                f"{trail.path}: no alternative of {keyword} accepts all the writer's data",
                *closest,
            ]
        chosen = results.index([])
        return [
            f"{trail.path}/oneOf/{i}: may also accept the writer's data, which oneOf then refuses"
            for i, alternative in enumerate(alternatives)
            if keyword == "oneOf" and i != chosen and not self.disjoint(alternative, flat)
        ]

    def not_(self, reader: JsonNode, keyword: str, flat: Conj, trail: _Trail) -> list[str]:
        """The writer's data provably avoids what not forbids, or the writer's own not
        forbade at least as much."""
        forbidden = reader.child(reader.kw["not"])
        theirs = [node.child(node.kw["not"]) for node in flat if "not" in node.kw]
        wider = any(not self.compare(t, (forbidden,), trail.at("not")) for t in theirs)
        if wider or self.disjoint(forbidden, flat):
            return []
        return [f"{trail.path}: not forbids data the writer may write"]

    def disjoint(self, schema: JsonNode, flat: Conj) -> bool:
        """Whether no value valid under the writer is valid under schema, provably: other
        types, other values, or a property the writer requires held to other values."""
        try:
            parts = flatten((schema,))
        except Unjudgeable:
            return False
        return parts is None or any(self.part_disjoint(part, flat) for part in parts)

    def part_disjoint(self, part: JsonNode, flat: Conj) -> bool:
        shared, ours, theirs = atoms((part,)) & atoms(flat), values((part,)), values(flat)
        if not shared or (
            ours is not None and theirs is not None and not keys(ours) & keys(theirs)
        ):
            return True
        return shared == {OBJECT} and any(
            (mine := member((part,), name)) is None
            or (written := member(flat, name)) is None
            or any(self.disjoint(p, written) for p in mine)
            for name in required(flat)
        )

    def plain(self, reader: JsonNode, flat: Conj, trail: _Trail) -> list[str]:
        """A reader without combinators: its keywords, then its properties and items."""
        written = atoms(flat)
        shared = written & type_atoms(reader)
        found = [f"{trail.path}: {p}" for p in keyword_problems(reader, flat, written, shared)]
        found += self.object_problems(reader, flat, trail) if OBJECT in shared else []
        return found + (self.array_problems(reader, flat, trail) if "array" in shared else [])

    def object_problems(self, reader: JsonNode, flat: Conj, trail: _Trail) -> list[str]:
        found = self.property_problems(reader, flat, trail)
        patterns = reader.kw.get("patternProperties") or {}
        for pattern, schema in patterns.items():
            at = trail.at("patternProperties", pattern, descend=True)
            found += self.undeclared(reader.child(schema), flat, pattern, set(), at)
        extra = reader.kw.get("additionalProperties", True)
        if extra is not True:
            at = trail.at("additionalProperties", descend=True)
            problems = self.undeclared(reader.child(extra), flat, None, set(patterns), at)
            closed = (
                f"{at.path}: additional properties are no longer allowed, "
                "but the writer's content model lets them in"
            )
            found += [closed] if problems and extra is False else problems
        for name, (keyword, schema) in dependents(reader, schemas=True).items():
            if member(flat, name) is not None:  # data with it meets both writer schemas
                theirs = [
                    n.child(dependents(n, True)[name][1])
                    for n in flat
                    if name in dependents(n, True)
                ]
                found += self.compare(
                    reader.child(schema), (*flat, *theirs), trail.at(keyword, name)
                )
        names = reader.kw.get("propertyNames", True)
        if names is not True:
            written = [n.child(n.kw["propertyNames"]) for n in flat if "propertyNames" in n.kw]
            strings = (*written, reader.child(STRING_NAMES))
            found += self.compare(reader.child(names), strings, trail.at("propertyNames"))
        return found

    def property_problems(self, reader: JsonNode, flat: Conj, trail: _Trail) -> list[str]:
        """Each declared property: the writer's value for it must be the reader's."""
        ours = reader.kw.get("properties") or {}
        theirs = {name for node in flat for name in node.kw.get("properties") or {}}
        found = []
        for name in dict.fromkeys([*ours, *sorted(theirs)]):
            written, accepted = member(flat, name), member((reader,), name)
            at = trail.at("properties", name, descend=True)
            if written is None:
                continue  # the writer never writes it: a closed content model, or false
            if accepted is None:
                how = "is now false" if name in ours else "was removed from a closed content model"
                found.append(f"{at.path}: property {how}, though the writer writes it")
                continue
            problems = [p for part in accepted for p in self.compare(part, written, at)]
            if problems and not written and name not in theirs:
                problems = [
                    f"{at.path}: property added to an open content model: "
                    "the writer may have written any value under that name"
                ]
            found += problems
        return found

    def undeclared(
        self, part: JsonNode, flat: Conj, pattern: str | None, known: set[str], at: _Trail
    ) -> list[str]:
        """What the writer lets names it does not declare hold, against the reader's
        patternProperties schema (pattern) or additionalProperties (pattern None; known:
        the reader's patterns, whose names it does not cover). One writer node suffices."""
        options = []
        for node in flat:
            patterns = node.kw.get("patternProperties") or {}
            if pattern in patterns:
                options.append(self.compare(part, (node.child(patterns[pattern]),), at))
                continue
            others = [node.kw.get("additionalProperties", True)]
            others += [schema for p, schema in patterns.items() if p not in known]
            options.append([x for s in others for x in self.compare(part, (node.child(s),), at)])
        return min(options or [self.compare(part, (), at)], key=len)

    def array_problems(self, reader: JsonNode, flat: Conj, trail: _Trail) -> list[str]:
        """Position by position (tuples), then the rest; the writer's arrays end where its
        item schema is false or its maxItems says."""
        prefix, rest, prefix_keyword, rest_keyword = tuple_form(reader)
        forms = [(node, tuple_form(node)) for node in flat]
        positions = max([len(prefix), *(len(form[0]) for _, form in forms)]) + 1
        most = most_items(flat)[0]
        found = []
        for i in range(positions if most is None else min(positions, most)):
            written = tuple(node.child(f[0][i] if i < len(f[0]) else f[1]) for node, f in forms)
            if any(w.schema is False for w in written):
                break
            at = trail.at(
                *((prefix_keyword, i) if i < len(prefix) else (rest_keyword,)), descend=True
            )
            accepted = reader.child(prefix[i] if i < len(prefix) else rest)
            problems = self.compare(accepted, tuple(w for w in written if w.schema is not True), at)
            if problems and accepted.schema is False:
                problems = [
                    f"{at.path}: items from position {i} are no longer allowed, "
                    "but the writer writes them"
                ]
            elif problems and i < len(prefix) and all(w.schema is True for w in written):
                problems = [
                    f"{at.path}: item added to an open content model: "
                    "the writer may have written any value there"
                ]
            found += problems
        return found


def split_reader(reader: JsonNode, trail: _Trail) -> list[tuple[JsonNode, _Trail]] | None:
    """A reader's conjunction ($ref with its siblings, allOf) as parts each to be met."""
    ref, members = reader.kw.get("$ref"), reader.kw.get("allOf")
    if isinstance(ref, str):
        rest = [] if reader.dialect.before_2019 else [(reader.without("$ref"), trail)]
        return [(reader.follow(ref), trail), *rest]
    if isinstance(members, list):
        parts = [(reader.child(m), trail.at("allOf", i)) for i, m in enumerate(members)]
        return [*parts, (reader.without("allOf"), trail)]
    return None
