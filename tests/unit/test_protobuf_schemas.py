"""The PROTOBUF schema type: protoc parses (.proto text and confluent-kafka's base64
descriptors), the rendering compiles back to the same descriptor, normalization equates what
Confluent's does, the serialized form feeds confluent-kafka's ProtobufDeserializer, and every
compatibility change kind is judged both ways."""

from __future__ import annotations

import base64
import threading
from collections.abc import Mapping
from typing import Any

import pytest
from confluent_kafka.schema_registry import RegisteredSchema, Schema, topic_subject_name_strategy
from confluent_kafka.schema_registry.confluent import meta_pb2
from confluent_kafka.schema_registry.confluent.type import decimal_pb2
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import (
    any_pb2,
    api_pb2,
    descriptor_pb2,
    descriptor_pool,
    message_factory,
    struct_pb2,
    timestamp_pb2,
    type_pb2,
)

from objectlog.errors import InvalidSchema
from objectlog.schemas.protobuf_compatibility import ProtobufParsedSchema
from objectlog.schemas.protobuf_schemas import (
    CONFLUENT_IMPORTS,
    ProtobufSchemaType,
    parse,
    render,
    serialized,
)
from objectlog.schemas.types import PROTOBUF, ParsedSchema, SchemaType

PROTOBUF_TYPE: SchemaType = ProtobufSchemaType()


def b64(file: Any) -> str:
    """What confluent-kafka's ProtobufSerializer registers: its _schema_to_str."""
    return base64.standard_b64encode(file.serialized_pb).decode("ascii")


def proto3(body: str, package: str = "shop") -> str:
    return f'syntax = "proto3";\npackage {package};\n{body}'


def proto2(body: str, package: str = "shop") -> str:
    return f'syntax = "proto2";\npackage {package};\n{body}'


def shape(descriptor: descriptor_pb2.FileDescriptorProto) -> dict[str, object]:
    """What a round trip must keep: every message's fields (number, name, label, type),
    every enum's values (the first, its default, then the rest in any order), the package,
    imports and services."""
    found: dict[str, object] = {
        "package": descriptor.package,
        "imports": sorted(descriptor.dependency),
    }
    pending = [(m.name, m) for m in descriptor.message_type]
    while pending:
        name, message = pending.pop()
        found[name] = sorted(
            (f.number, f.name, f.label, f.type, f.type_name, f.oneof_index) for f in message.field
        )
        pending += [(f"{name}.{n.name}", n) for n in message.nested_type]
        found.update({f"{name}.{e.name}": values(e) for e in message.enum_type})
    found.update({e.name: values(e) for e in descriptor.enum_type})
    found["services"] = [str(s) for s in descriptor.service]
    return found


def values(enum: descriptor_pb2.EnumDescriptorProto) -> list[tuple[str, int]]:
    pairs = [(value.name, value.number) for value in enum.value]
    return pairs[:1] + sorted(pairs[1:])


ORDERS = proto3(
    """import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  Money amount = 2;
  google.protobuf.Timestamp placed_at = 3;
  message Line { string sku = 1; int32 quantity = 2; }
  repeated Line lines = 4;
}
message Money { string currency = 1; int64 units = 2; }
"""
)

# A broad sample: each must parse, and its rendering must compile to the same descriptor.
ROUND_TRIPS = [
    pytest.param(ORDERS, {}, id="proto3-nested-and-well-known"),
    pytest.param(
        proto3(
            """option java_package = "com.example.shop";
option go_package = "example.com/shop;shop";
option java_multiple_files = true;
message Everything {
  optional string note = 1 [json_name = "memo", deprecated = true];
  repeated int32 packed_off = 2 [packed = false];
  map<string, Everything> children = 3;
  map<int64, Kind> kinds = 4;
  oneof choice {
    string text = 5;
    bytes blob = 6;
    Everything nested = 7;
  }
  double ratio = 8;
  float f = 9;
  sint32 s32 = 10; sint64 s64 = 11; fixed32 f32 = 12; fixed64 f64 = 13;
  sfixed32 sf32 = 14; sfixed64 sf64 = 15; uint32 u32 = 16; uint64 u64 = 17; bool flag = 18;
  reserved 20, 30 to 39, 100 to max;
  reserved "old", "older";
  enum Kind {
    option allow_alias = true;
    KIND_UNSPECIFIED = 0;
    KIND_A = 1;
    KIND_ALIAS = 1 [deprecated = true];
    KIND_NEGATIVE = -3;
    reserved 5, 9 to 11, 40 to max;
    reserved "KIND_GONE";
  }
  message Deep { message Deeper { Kind kind = 1; } Deeper deeper = 1; }
}
service Shop {
  option deprecated = true;
  rpc Get (Everything) returns (Everything);
  rpc Watch (stream Everything) returns (stream Everything) { option deprecated = true; }
}
"""
        ),
        {},
        id="proto3-maps-oneofs-options-reserved-services",
    ),
    pytest.param(
        proto2(
            r"""message Legacy {
  required int32 id = 1;
  optional string name = 2 [default = "a \"quoted\"\n\tname é"];
  optional bytes raw = 3 [default = "\001\377abc"];
  optional double big = 4 [default = inf];
  optional float small = 5 [default = -1.5e-3];
  optional Color color = 6 [default = GREEN];
  repeated int64 ids = 7 [packed = true];
  optional group Extra = 8 { optional int32 x = 9; }
  extensions 100 to 199;
  extensions 1000 to max;
  enum Color { RED = 1; GREEN = 2; }
}
extend Legacy { optional string tag = 100; repeated int32 codes = 101; }
message Holder { extend Legacy { optional Holder held = 102; } }
"""
        ),
        {},
        id="proto2-required-defaults-groups-extensions",
    ),
    pytest.param(
        'edition = "2023";\npackage shop;\n'
        "option features.field_presence = IMPLICIT;\n"
        "message Edition {\n"
        "  int32 a = 1 [features.field_presence = EXPLICIT];\n"
        "  Edition child = 2 [features.message_encoding = DELIMITED];\n"
        "  repeated int32 r = 3 [features.repeated_field_encoding = EXPANDED];\n"
        "  int32 must = 4 [features.field_presence = LEGACY_REQUIRED];\n"
        "  reserved gone, also_gone;\n"
        "  enum Closed { option features.enum_type = CLOSED; ONE = 1; }\n"
        "}\n",
        {},
        id="edition-2023-features",
    ),
    pytest.param(
        proto3(
            """import "confluent/meta.proto";
import "confluent/type/decimal.proto";
import "google/protobuf/descriptor.proto";
extend google.protobuf.FieldOptions { repeated string labels = 50001; }
message Payment {
  option (confluent.message_meta) = { doc: "a payment" tags: "FINANCE" };
  string card = 1 [(confluent.field_meta) = { tags: "PII" params { key: "k" value: "v" } },
                   (labels) = "x", (labels) = "y\\"z"];
  confluent.type.Decimal amount = 2;
}
"""
        ),
        {},
        id="confluent-imports-and-custom-options",
    ),
    pytest.param(
        proto3('import public "common.proto";\nmessage UsesCommon { common.Shared shared = 1; }'),
        {"common.proto": 'syntax = "proto3";\npackage common;\nmessage Shared { int32 x = 1; }'},
        id="public-import-reference",
    ),
    pytest.param(
        'edition = "2024";\npackage shop;\n'
        'import option "google/protobuf/cpp_features.proto";\n'
        "export message Visible {\n"
        "  local message Hidden { int32 x = 1; }\n"
        "  string s = 1 [features.(pb.cpp).string_type = VIEW];\n"
        "}\n"
        "local enum Internal { INTERNAL_UNSPECIFIED = 0; }\n",
        {},
        id="edition-2024-visibility-and-import-option",
    ),
    pytest.param(
        proto2("message Set { option message_set_wire_format = true; extensions 4 to max; }"),
        {},
        id="message-set",
    ),
    pytest.param(b64(descriptor_pb2.DESCRIPTOR), {}, id="descriptor.proto-base64"),
    pytest.param(b64(struct_pb2.DESCRIPTOR), {}, id="struct.proto-base64"),
    pytest.param(b64(type_pb2.DESCRIPTOR), {}, id="type.proto-base64"),
    pytest.param(b64(api_pb2.DESCRIPTOR), {}, id="api.proto-base64"),
]


@pytest.mark.parametrize(("schema", "references"), ROUND_TRIPS)
def test_the_rendering_compiles_back_to_the_same_descriptor(
    schema: str, references: Mapping[str, str]
) -> None:
    parsed = parse(schema, references)
    again = parse(parsed.canonical, references)
    assert again.parsed == parsed.parsed
    assert again.canonical == parsed.canonical
    normalized = parse(parsed.normalized, references)
    assert shape(normalized.parsed) == shape(parsed.parsed)
    assert render(parsed.parsed, parsed.imports) == parsed.canonical


@pytest.mark.parametrize(
    ("module", "messages"),
    [
        pytest.param(descriptor_pb2, ["FileDescriptorSet", "FileDescriptorProto"], id="descriptor"),
        pytest.param(timestamp_pb2, ["Timestamp"], id="timestamp"),
        pytest.param(any_pb2, ["Any"], id="any"),
        pytest.param(struct_pb2, ["Struct", "Value", "ListValue"], id="struct"),
    ],
)
def test_a_base64_descriptor_from_a_generated_class_parses_to_its_own_messages(
    module: Any, messages: list[str]
) -> None:
    parsed = parse(b64(module.DESCRIPTOR), {})
    generated = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(generated)
    assert [m.name for m in parsed.parsed.message_type][: len(messages)] == messages
    assert shape(parsed.parsed) == shape(generated)


def test_text_and_base64_of_one_schema_parse_alike() -> None:
    text = parse(ORDERS, {})
    pool = descriptor_pool.DescriptorPool()
    for file in [*text.imports, text.parsed]:
        pool.Add(file)
    from_base64 = parse(b64(pool.FindFileByName(text.parsed.name)), {})
    assert from_base64 == text


REFERENCED = {
    "money.proto": proto3("message Money { string currency = 1; int64 units = 2; }", "money"),
    "shop/line.proto": proto3(
        'import "money.proto";\nmessage Line { string sku = 1; money.Money price = 2; }', "line"
    ),
}


@pytest.mark.parametrize(
    ("schema", "references", "messages"),
    [
        pytest.param(
            proto3('import "shop/line.proto";\nmessage Cart { repeated line.Line lines = 1; }'),
            REFERENCED,
            ["Cart"],
            id="text-references-of-references",
        ),
        pytest.param(
            proto3('import "shop/line.proto";\nmessage Cart { repeated line.Line lines = 1; }'),
            {
                "money.proto": REFERENCED["money.proto"],
                "shop/line.proto": serialized(parse(REFERENCED["shop/line.proto"], REFERENCED)),
            },
            ["Cart"],
            id="base64-reference",
        ),
        pytest.param(
            proto3(
                """import "google/protobuf/any.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/empty.proto";
import "google/protobuf/field_mask.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
message Known {
  google.protobuf.Any any = 1; google.protobuf.Duration duration = 2;
  google.protobuf.Empty empty = 3; google.protobuf.FieldMask mask = 4;
  google.protobuf.Struct struct = 5; google.protobuf.Timestamp at = 6;
  google.protobuf.StringValue wrapped = 7;
}"""
            ),
            {},
            ["Known"],
            id="well-known-types-need-no-reference",
        ),
        pytest.param(
            proto3(
                """import "confluent/meta.proto";
import "confluent/type/decimal.proto";
message Priced {
  confluent.type.Decimal price = 1 [(confluent.field_meta).doc = "the price"];
}"""
            ),
            {},
            ["Priced"],
            id="confluent-imports-need-no-reference",
        ),
        pytest.param(
            proto3('import "confluent/meta.proto";\nmessage M { string s = 1; }'),
            {"confluent/meta.proto": proto3("message Mine { int32 x = 1; }", "mine")},
            ["M"],
            id="a-reference-overrides-a-builtin",
        ),
        pytest.param(
            "syntax = 'proto3'; message  Spaced{int32 a=1;}  // trailing comment\n",
            {},
            ["Spaced"],
            id="terse-text",
        ),
    ],
)
def test_parse_accepts(schema: str, references: Mapping[str, str], messages: list[str]) -> None:
    parsed = PROTOBUF_TYPE.parse(schema, references)
    assert parsed.schema_type == PROTOBUF
    assert [m.name for m in parsed.parsed.message_type] == messages


@pytest.mark.parametrize(
    ("schema", "references", "message"),
    [
        pytest.param(
            'syntax = "proto3";\nmessage A {\n  int32 x = 1\n}\n',
            {},
            'schema.proto:4:1: Expected ";".',
            id="syntax-error-with-line",
        ),
        pytest.param(
            "hello world", {}, "schema.proto:1:1: Expected top-level statement", id="garbage"
        ),
        pytest.param("aGVsbG8=", {}, "schema.proto:1:1:", id="base64-of-no-descriptor"),
        pytest.param(
            proto3("message A { B b = 1; }"), {}, '"B" is not defined.', id="unknown-type"
        ),
        pytest.param(
            proto3('import "missing.proto";\nmessage A { int32 x = 1; }'),
            {},
            "missing.proto: File not found.",
            id="missing-reference",
        ),
        pytest.param(
            proto3("message A { int32 x = 1; int64 y = 1; }"),
            {},
            'Field number 1 has already been used in "shop.A" by field "x".',
            id="number-used-twice",
        ),
        pytest.param(
            base64.b64encode(
                descriptor_pb2.FileDescriptorProto(
                    name="bad.proto",
                    message_type=[
                        descriptor_pb2.DescriptorProto(
                            name="A",
                            field=[
                                descriptor_pb2.FieldDescriptorProto(
                                    name="b", number=1, label=1, type=11, type_name=".Nope"
                                )
                            ],
                        )
                    ],
                ).SerializeToString()
            ).decode(),
            {},
            'schema.proto: ".Nope" is not defined.',
            id="base64-descriptor-with-unknown-type",
        ),
        pytest.param(
            proto2(
                "message G { extensions 10 to 20; }\n"
                "extend G { optional group Grp = 10 { optional int32 a = 1; } }"
            ),
            {},
            "objectlog cannot render it as .proto text that keeps its meaning",
            id="a-construct-the-renderer-does-not-cover-fails-closed",
        ),
        pytest.param(
            proto3("message A { int32 x = 1; }"),
            {"../escape.proto": proto3("message E {}")},
            "reference name '../escape.proto' is not an import path",
            id="reference-path-escaping",
        ),
    ],
)
def test_parse_refuses_with_protocs_message(
    schema: str, references: Mapping[str, str], message: str
) -> None:
    with pytest.raises(InvalidSchema) as refused:
        parse(schema, references)
    assert message in refused.value.message
    assert "/tmp" not in refused.value.message


def test_parses_in_threads_each_with_its_own_outcome() -> None:
    """protoc runs one at a time (its messages go to the process's file descriptor 2): each
    thread gets its own schema back, or its own schema's error."""
    schemas = {
        n: proto3(f"message M{n} {{ int32 x = {n} }}" if n % 2 else f"message M{n} {{}}")
        for n in range(16)
    }
    outcomes: dict[int, str] = {}

    def work(n: int) -> None:
        try:
            outcomes[n] = parse(schemas[n], {}).canonical
        except InvalidSchema as e:
            outcomes[n] = e.message

    threads = [threading.Thread(target=work, args=(n,)) for n in schemas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for n, outcome in outcomes.items():
        column = len(f"message M{n} {{ int32 x = {n} ") + 1  # this thread's own schema
        expected = f'schema.proto:3:{column}: Expected ";".' if n % 2 else f"message M{n} {{"
        assert expected in outcome


@pytest.mark.parametrize(
    ("one", "other"),
    [
        pytest.param(
            proto3('import "b.proto";\nimport "a.proto";\nmessage M { a.A a = 1; b.B b = 2; }'),
            proto3('import "a.proto";\nimport "b.proto";\nmessage M { .a.A a = 1; .b.B b = 2; }'),
            id="import-order-and-qualified-names",
        ),
        pytest.param(
            proto3('option java_package = "x";\noption go_package = "y";\nmessage M {}'),
            proto3('option go_package = "y";\noption java_package = "x";\nmessage M {}'),
            id="option-order",
        ),
        pytest.param(
            proto3("message M { int32 b = 2; int32 a = 1; oneof o { int32 d = 4; int32 c = 3; } }"),
            proto3("message M { oneof o { int32 c = 3; int32 d = 4; } int32 a = 1; int32 b = 2; }"),
            id="field-and-oneof-order",
        ),
        pytest.param(
            proto3(
                'enum E { Z = 0; B = 2; A = 1; }\nmessage M { reserved 9, 3; reserved "y", "x"; }'
            ),
            proto3(
                'enum E { Z = 0; A = 1; B = 2; }\nmessage M { reserved 3, 9; reserved "x", "y"; }'
            ),
            id="enum-value-and-reserved-order",
        ),
        pytest.param(
            proto3('message M { int32 a = 1 [deprecated = true, json_name = "x"]; }  // comment'),
            proto3('message M {\n  int32 a = 1 [json_name="x", deprecated=true];\n}\n'),
            id="field-option-order-comments-layout",
        ),
        pytest.param(
            "package shop;\nmessage M { optional int32 a = 1; }",
            proto2("message M { optional int32 a = 1; }"),
            id="proto2-with-and-without-syntax",
        ),
    ],
)
def test_equivalent_schemas_normalize_equal(one: str, other: str) -> None:
    references = {
        "a.proto": proto3("message A {}", "a"),
        "b.proto": proto3("message B {}", "b"),
    }
    assert parse(one, references).normalized == parse(other, references).normalized


@pytest.mark.parametrize(
    ("one", "other"),
    [
        pytest.param(
            proto3("message A {}\nmessage B {}"),
            proto3("message B {}\nmessage A {}"),
            id="message-order-decides-message-indexes",
        ),
        pytest.param(
            proto3("message M { int32 a = 1; }"),
            proto3("message M { int32 a = 2; }"),
            id="field-number",
        ),
        pytest.param(
            proto2("enum E { A = 1; B = 2; }"),
            proto2("enum E { B = 2; A = 1; }"),
            id="proto2-enum-default-is-its-first-value",
        ),
        pytest.param(
            proto3("message M { int32 a = 1; int32 b = 2; }"),
            proto3("message M { oneof o { int32 a = 1; int32 b = 2; } }"),
            id="oneof-membership",
        ),
        pytest.param(
            proto3("message M { int32 a = 1; }", "one"),
            proto3("message M { int32 a = 1; }", "two"),
            id="package",
        ),
    ],
)
def test_different_schemas_normalize_differently(one: str, other: str) -> None:
    assert parse(one, {}).normalized != parse(other, {}).normalized


def test_custom_options_are_rendered() -> None:
    parsed = parse(ROUND_TRIPS[4].values[0], {})
    assert '  option (confluent.message_meta) = { doc: "a payment" tags: "FINANCE" };' in (
        parsed.canonical
    )
    assert (
        '(confluent.field_meta) = { params { key: "k" value: "v" } tags: "PII" }, '
        '(shop.labels) = "x", (shop.labels) = "y\\"z"]'
    ) in parsed.canonical


@pytest.mark.parametrize(
    ("path", "module"),
    [
        pytest.param("confluent/meta.proto", meta_pb2, id="meta"),
        pytest.param("confluent/type/decimal.proto", decimal_pb2, id="decimal"),
    ],
)
def test_the_confluent_imports_define_what_confluent_kafka_ships(path: str, module: Any) -> None:
    shipped = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(shipped)
    ours = parse(CONFLUENT_IMPORTS[path], {}).parsed
    assert shape(ours) == shape(shipped)
    assert [(e.extendee, e.name, e.number) for e in ours.extension] == [
        (e.extendee, e.name, e.number) for e in shipped.extension
    ]


def test_canonical_is_the_rendering_with_fully_qualified_names() -> None:
    parsed = parse(ORDERS, {})
    assert parsed.canonical == (
        'syntax = "proto3";\n'
        "package shop;\n"
        'import "google/protobuf/timestamp.proto";\n'
        "message Order {\n"
        "  int64 id = 1;\n"
        "  .shop.Money amount = 2;\n"
        "  .google.protobuf.Timestamp placed_at = 3;\n"
        "  repeated .shop.Order.Line lines = 4;\n"
        "  message Line {\n"
        "    string sku = 1;\n"
        "    int32 quantity = 2;\n"
        "  }\n"
        "}\n"
        "message Money {\n"
        "  string currency = 1;\n"
        "  int64 units = 2;\n"
        "}\n"
    )


class FakeRegistry:
    """The calls confluent-kafka's Protobuf serde makes of its SchemaRegistryClient, answered
    by objectlog's parse and serialized, as the registry's routes will answer them."""

    def __init__(self) -> None:
        self.schemas: list[ParsedSchema] = []

    def config(self) -> dict[str, Any]:
        return {}

    def register_schema_full_response(
        self, subject: str, schema: Schema, normalize_schemas: bool = False
    ) -> RegisteredSchema:
        self.schemas.append(parse(schema.schema_str, {}))
        return RegisteredSchema(
            schema_id=len(self.schemas), guid=None, schema=schema, subject=subject, version=1
        )

    def get_schema(
        self, schema_id: int, subject_name: str | None = None, fmt: str | None = None
    ) -> Schema:
        assert fmt == "serialized"
        return Schema(serialized(self.schemas[schema_id - 1]), PROTOBUF, [])


def test_confluent_kafkas_serializer_registers_and_its_deserializer_reads_the_serialized_form() -> (
    None
):
    parsed = parse(ORDERS, {})
    pool = descriptor_pool.DescriptorPool()
    for file in [*parsed.imports, parsed.parsed]:
        pool.Add(file)
    line_class = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order.Line"))
    registry = FakeRegistry()
    context = SerializationContext("orders", MessageField.VALUE)
    conf = {"subject.name.strategy": topic_subject_name_strategy}
    serializer = ProtobufSerializer(line_class, registry, conf)
    data = serializer(line_class(sku="abc", quantity=3), context)
    assert registry.schemas[0].canonical == parsed.canonical  # registered as base64

    deserializer = ProtobufDeserializer(line_class, conf, schema_registry_client=registry)
    assert deserializer(data, context) == line_class(sku="abc", quantity=3)
    descriptor, reader_pool = deserializer._get_parsed_schema(
        registry.get_schema(1, None, "serialized")
    )
    writer = reader_pool.FindFileByName(descriptor.name)
    assert (
        deserializer._get_message_desc(reader_pool, writer, [0, 0]).full_name == "shop.Order.Line"
    )
    assert deserializer._get_message_desc(reader_pool, writer, [1]).full_name == "shop.Money"


# Compatibility: (old, new, backward, forward). backward: reader new, writer old (the new
# schema reads old data); forward: reader old, writer new. An entry is the exact problems.
def message(body: str, extra: str = "") -> str:
    return proto3(f"message Order {{\n{body}\n}}\n{extra}")


COMPATIBILITY = [
    pytest.param(
        proto3("message Order { int32 a = 1; }", "shop"),
        proto3("message Order { int32 a = 1; }", "store"),
        ["package changed from 'shop' to 'store'"],
        ["package changed from 'store' to 'shop'"],
        id="PACKAGE_CHANGED",
    ),
    pytest.param(
        message("int32 a = 1;"),
        message("int32 a = 1;", "message Refund { int32 a = 1; }"),
        [],
        ["message 'Refund' removed"],
        id="MESSAGE_ADDED-and-REMOVED",
    ),
    pytest.param(
        message("int32 a = 1;", "message Line { int32 a = 1; }"),
        message("int32 a = 1;", "message Item { int32 a = 1; }"),
        ["message 'Line' removed"],
        ["message 'Item' removed"],
        id="message-renamed",
    ),
    pytest.param(
        message("int32 a = 1;", "message Line { int32 a = 1; }"),
        proto3("message Line { int32 a = 1; }\nmessage Order { int32 a = 1; }"),
        [],
        [],
        id="MESSAGE_MOVED-reordered",
    ),
    pytest.param(
        message("int32 a = 1;", "message Line { int32 a = 1; }"),
        message("int32 a = 1;\nmessage Line { int32 a = 1; }"),
        ["message 'Line' removed"],
        ["message 'Order.Line' removed"],
        id="message-moved-into-another-scope",
    ),
    pytest.param(
        message("int32 a = 1;"),
        message("int32 a = 1;\nenum Kind { KIND_UNSPECIFIED = 0; }"),
        [],
        [],
        id="ENUM_ADDED-and-REMOVED",
    ),
    pytest.param(
        message("Kind k = 1;", "enum Kind { A = 0; B = 1; C = 2; }"),
        message("Kind k = 1;", "enum Kind { A = 0; B_RENAMED = 1; D = 3; }"),
        [],
        [],
        id="ENUM_CONST-added-removed-changed",
    ),
    pytest.param(
        message("int32 a = 1;"),
        message("int32 a = 1;\nstring b = 2;"),
        [],
        [],
        id="FIELD_ADDED-and-REMOVED",
    ),
    pytest.param(
        message("int32 a = 1;"),
        message("int32 renamed = 1;"),
        [],
        [],
        id="FIELD_NAME_CHANGED",
    ),
    pytest.param(
        proto2("message Order { optional int32 a = 1; }"),
        proto2("message Order { optional int32 a = 1; required int32 b = 2; }"),
        ["field 'Order.b' (2): required field added"],
        ["field 'Order.b' (2): required field removed"],
        id="REQUIRED_FIELD_ADDED-and-REMOVED",
    ),
    pytest.param(
        proto2("message Order { optional string a = 1; }"),
        proto2("message Order { required string a = 1; }"),
        ["field 'Order.a' (1): label changed from optional to required"],
        ["field 'Order.a' (1): label changed from required to optional"],
        id="required-label-changed",
    ),
    pytest.param(
        message("int64 amount = 3;"),
        message("string amount = 3;"),
        ["field 'Order.amount' (3): type changed from int64 to string"],
        ["field 'Order.amount' (3): type changed from string to int64"],
        id="FIELD_SCALAR_KIND_CHANGED",
    ),
    pytest.param(
        message("int64 amount = 3;"),
        message("string note = 3;"),
        ["field 'Order.amount' (3): type changed from int64 to string"],
        ["field 'Order.note' (3): type changed from string to int64"],
        id="field-number-reused",
    ),
    pytest.param(
        message(
            "int32 a = 1; int64 b = 2; uint32 c = 3; uint64 d = 4; bool e = 5; Kind f = 6;",
            "enum Kind { Z = 0; }",
        ),
        message("uint64 a = 1; bool b = 2; int64 c = 3; int32 d = 4; uint32 e = 5; int32 f = 6;"),
        [],
        [],
        id="varint-group-int32-uint32-int64-uint64-bool-enum",
    ),
    pytest.param(
        message("sint32 a = 1; fixed32 b = 2; fixed64 c = 3; string d = 4;"),
        message("sint64 a = 1; sfixed32 b = 2; sfixed64 c = 3; bytes d = 4;"),
        [],
        [],
        id="zigzag-fixed32-fixed64-string-bytes-groups",
    ),
    pytest.param(
        message("sint32 a = 1; fixed32 b = 2; float c = 3; int32 d = 4;"),
        message("int32 a = 1; fixed64 b = 2; double c = 3; sint32 d = 4;"),
        [
            "field 'Order.a' (1): type changed from sint32 to int32",
            "field 'Order.b' (2): type changed from fixed32 to fixed64",
            "field 'Order.c' (3): type changed from float to double",
            "field 'Order.d' (4): type changed from int32 to sint32",
        ],
        [
            "field 'Order.a' (1): type changed from int32 to sint32",
            "field 'Order.b' (2): type changed from fixed64 to fixed32",
            "field 'Order.c' (3): type changed from double to float",
            "field 'Order.d' (4): type changed from sint32 to int32",
        ],
        id="across-scalar-groups",
    ),
    pytest.param(
        message("int32 a = 1;", "message Money { int32 units = 1; }"),
        message("Money a = 1;", "message Money { int32 units = 1; }"),
        ["field 'Order.a' (1): type changed from int32 to shop.Money"],
        ["field 'Order.a' (1): type changed from shop.Money to int32"],
        id="FIELD_KIND_CHANGED-scalar-message",
    ),
    pytest.param(
        message("repeated Entry a = 1;\nmessage Entry { string key = 1; int32 value = 2; }"),
        message("map<string, int32> a = 1;\nmessage Entry { string key = 1; int32 value = 2; }"),
        ["field 'Order.a' (1): type changed from shop.Order.Entry to map<string, int32>"],
        ["field 'Order.a' (1): type changed from map<string, int32> to shop.Order.Entry"],
        id="FIELD_KIND_CHANGED-message-map",
    ),
    pytest.param(
        message("map<string, int32> a = 1;"),
        message("map<string, string> a = 1;"),
        ["field 'Order.a' (1) map value: type changed from int32 to string"],
        ["field 'Order.a' (1) map value: type changed from string to int32"],
        id="map-value-type-changed",
    ),
    pytest.param(
        message("map<int32, int32> a = 1;"),
        message("map<int64, uint64> a = 1;"),
        [],
        [],
        id="map-types-within-groups",
    ),
    pytest.param(
        message(
            "Money a = 1;", "message Money { int32 units = 1; }\nmessage Price { int32 units = 1; }"
        ),
        message(
            "Price a = 1;", "message Money { int32 units = 1; }\nmessage Price { int32 units = 1; }"
        ),
        ["field 'Order.a' (1): type changed from shop.Money to shop.Price"],
        ["field 'Order.a' (1): type changed from shop.Price to shop.Money"],
        id="FIELD_NAMED_TYPE_CHANGED",
    ),
    pytest.param(
        message("int32 a = 1; bool b = 2; Kind c = 3; double d = 4;", "enum Kind { Z = 0; }"),
        message(
            "repeated int32 a = 1; repeated bool b = 2;"
            " repeated Kind c = 3; repeated double d = 4;",
            "enum Kind { Z = 0; }",
        ),
        [
            "field 'Order.a' (1): label changed from optional to repeated",
            "field 'Order.b' (2): label changed from optional to repeated",
            "field 'Order.c' (3): label changed from optional to repeated",
            "field 'Order.d' (4): label changed from optional to repeated",
        ],
        [
            "field 'Order.a' (1): label changed from repeated to optional",
            "field 'Order.b' (2): label changed from repeated to optional",
            "field 'Order.c' (3): label changed from repeated to optional",
            "field 'Order.d' (4): label changed from repeated to optional",
        ],
        id="FIELD_NUMERIC_LABEL_CHANGED",
    ),
    pytest.param(
        message("string a = 1; bytes b = 2; Order c = 3;"),
        message("repeated string a = 1; repeated bytes b = 2; repeated Order c = 3;"),
        [],
        [],
        id="FIELD_STRING_OR_BYTES_LABEL_CHANGED-and-message-label",
    ),
    pytest.param(
        message("int32 a = 1;"),
        message("optional int32 a = 1;"),
        [],
        [],
        id="proto3-optional-presence",
    ),
    pytest.param(
        message("int32 a = 1;"),
        message("int32 a = 1;\noneof choice { string b = 2; int32 c = 3; }"),
        [],
        [],
        id="ONEOF_ADDED-and-whole-oneof-removed",
    ),
    pytest.param(
        message("oneof choice { string b = 2; int32 c = 3; }"),
        message("oneof choice { string b = 2; int32 c = 3; int64 d = 4; }"),
        [],
        ["field 'Order.d' (4): removed from oneof 'choice'"],
        id="ONEOF_FIELD_ADDED-and-REMOVED",
    ),
    pytest.param(
        message("string b = 2;"),
        message("oneof choice { string b = 2; }"),
        [],
        [],
        id="single-field-into-a-new-oneof-and-ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
    ),
    pytest.param(
        message("string b = 2; int32 c = 3;"),
        message("oneof choice { string b = 2; int32 c = 3; }"),
        ["oneof 'Order.choice': fields 2, 3 moved into it from outside a oneof"],
        [],
        id="MULTIPLE_FIELDS_MOVED_TO_ONEOF",
    ),
    pytest.param(
        message("string b = 2; oneof choice { int32 c = 3; }"),
        message("oneof choice { string b = 2; int32 c = 3; }"),
        ["oneof 'Order.choice': fields 2, 3 were not in one oneof before"],
        [],
        id="FIELD_MOVED_TO_EXISTING_ONEOF",
    ),
    pytest.param(
        message("oneof one { string b = 2; } oneof two { int32 c = 3; }"),
        message("oneof both { string b = 2; int32 c = 3; }"),
        ["oneof 'Order.both': fields 2, 3 were not in one oneof before"],
        [],
        id="oneofs-merged",
    ),
    pytest.param(
        proto2("message Order { optional int32 a = 1; repeated string b = 2; }"),
        proto3("message Order { int32 a = 1; repeated string b = 2; }"),
        [],
        [],
        id="syntax-proto2-to-proto3",
    ),
    pytest.param(
        'edition = "2023";\npackage shop;\nmessage Order { Order a = 1; }',
        'edition = "2023";\npackage shop;\n'
        "message Order { Order a = 1 [features.message_encoding = DELIMITED]; }",
        [
            "'Order.a': edition, features or message_set_wire_format changed, which can "
            "change the encoding; objectlog does not judge such a change"
        ],
        [
            "'Order.a': edition, features or message_set_wire_format changed, which can "
            "change the encoding; objectlog does not judge such a change"
        ],
        id="editions-features-not-judged",
    ),
    pytest.param(
        proto2(
            "message Order { extensions 100 to 200; }\nextend Order { optional int32 x = 100; }"
        ),
        proto2(
            "message Order { extensions 100 to 200; }\nextend Order { optional string x = 100; }"
        ),
        ["extension 'x' (100) of shop.Order: type changed from int32 to string"],
        ["extension 'x' (100) of shop.Order: type changed from string to int32"],
        id="data-extension-judged-as-a-field",
    ),
    pytest.param(
        proto3(
            'import "google/protobuf/descriptor.proto";\n'
            "extend google.protobuf.FieldOptions { int32 opt = 50001; }\nmessage Order {}"
        ),
        proto3(
            'import "google/protobuf/descriptor.proto";\n'
            "extend google.protobuf.FieldOptions { string opt = 50001; }\nmessage Order {}"
        ),
        [],
        [],
        id="custom-option-definitions-ignored",
    ),
    pytest.param(
        proto2("message Order { optional group G = 1 { optional int32 x = 2; } }"),
        proto2("message Order { optional G g = 1; message G { optional int32 x = 2; } }"),
        ["field 'Order.g' (1): type changed from group shop.Order.G to shop.Order.G"],
        ["field 'Order.g' (1): type changed from shop.Order.G to group shop.Order.G"],
        id="group-to-message",
    ),
]


@pytest.mark.parametrize(("old", "new", "backward", "forward"), COMPATIBILITY)
def test_compatibility_rules(old: str, new: str, backward: list[str], forward: list[str]) -> None:
    before, after = parse(old, {}), parse(new, {})
    assert PROTOBUF_TYPE.incompatibilities(after, before) == backward
    assert PROTOBUF_TYPE.incompatibilities(before, after) == forward


@pytest.mark.parametrize(
    ("old_money", "new_money", "problems"),
    [
        pytest.param("int64 units = 1;", "int64 units = 1; string note = 2;", [], id="compatible"),
        pytest.param(
            "int64 units = 1;",
            "string units = 1;",
            ["field 'Money.units' (1): type changed from int64 to string"],
            id="incompatible",
        ),
    ],
)
def test_a_type_from_a_reference_is_followed(
    old_money: str, new_money: str, problems: list[str]
) -> None:
    schema = proto3('import "money.proto";\nmessage Order { money.Money total = 1; }')
    before = parse(schema, {"money.proto": proto3(f"message Money {{ {old_money} }}", "money")})
    after = parse(schema, {"money.proto": proto3(f"message Money {{ {new_money} }}", "money")})
    assert incompatibilities_of(after, before) == problems


def incompatibilities_of(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    return PROTOBUF_TYPE.incompatibilities(reader, writer)


def test_a_type_whose_definition_is_not_at_hand_is_reported_not_judged() -> None:
    schema = proto3('import "money.proto";\nmessage Order { money.Money total = 1; }')
    parsed = parse(schema, {"money.proto": proto3("message Money { int64 units = 1; }", "money")})
    assert isinstance(parsed, ProtobufParsedSchema)
    bare = ParsedSchema(PROTOBUF, parsed.canonical, parsed.normalized, parsed.parsed)
    assert incompatibilities_of(bare, bare) == [
        "field 'Order.total' (1): no definition of money.Money at hand; not judged"
    ]
