"""Typed Arrow columns decoded from a topic's PROTOBUF values (issue 35, topics as typed
tables): the Arrow type a Protobuf schema becomes, and a binary column of framed values
decoded into it.

The column is the schema file's first message ([0], the one Confluent's serializers and
REST Proxy write by default); a value whose message indexes name another message of the
file is null with a reason. Protobuf -> Arrow, keeping to what an Iceberg table can hold:

    message                             struct of its fields in declaration order
    int32, sint32, sfixed32             int32
    int64, sint64, sfixed64             int64
    uint32, fixed32                     int64
    uint64, fixed64                     decimal128(20, 0)
    float / double                      float32 / float64
    bool, string                        bool, string
    bytes                               binary
    enum                                string: the value's name (a number the enum does
                                        not name: the number as text)
    repeated T                          list<T>, items not null
    map<K, V>                           map<K, V>, values not null
    google.protobuf.Timestamp           timestamp[us, UTC] (nanoseconds past the
                                        microsecond dropped)
    google.protobuf.*Value wrappers     the wrapped scalar, nullable (UInt64Value:
                                        decimal128(20, 0))
    oneof                               string, named after the oneof: the JSON object
                                        {"<field>": <its value>} of the member set, null if
                                        none; its members are not columns (Iceberg has no
                                        union type)
    proto3 optional                     the field, nullable: null when unset

Fields keep their declaration order (a oneof's column stands where its first member is
declared), the order users read in the .proto, rather than field-number order. uint64 is a
decimal rather than an int64 so that no value is lost or wraps (Iceberg has no unsigned
type). An unset singular message field (wrappers and Timestamp included) is null; an unset
scalar, enum, repeated or map field is what Protobuf reads: its default, [] or {} (proto2's
optional scalars too), so those struct fields are not nullable. Other messages, well-known
ones included (Duration, Any), are structs of their fields.

Types Iceberg cannot hold become string columns, their value's JSON:

- a recursive message (one that can contain itself), wherever it appears, such as
  google.protobuf.Struct, Value and ListValue;
- a message with no fields (google.protobuf.Empty): Parquet cannot write an empty struct;
- a oneof, as above.

That JSON is json_format's Protobuf JSON mapping with the proto field names (as the columns
have them) and every field printed, defaults included (as REST Proxy answers): 64-bit
integers are strings, bytes base64, enums names, Timestamps RFC 3339 strings, compacted by
json.dumps (not ASCII-escaped).

A row is null with a reason when it is not framed, its message indexes are cut short or
name another message than the column's, Protobuf cannot parse its message, or a Timestamp
is outside its range (years 1 to 9999).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor, OneofDescriptor
from google.protobuf.descriptor_pb2 import DescriptorProto
from google.protobuf.message import DecodeError

from objectlog.errors import UndecodableRecord
from objectlog.format.schema_ids import MAGIC_BYTE, NOT_FRAMED_REASON, PREFIX_BYTES, message_indexes
from objectlog.schemas.protobuf_compatibility import real_oneof_index
from objectlog.schemas.protobuf_messages import FIRST_MESSAGE, ProtobufMessages
from objectlog.schemas.typed_columns import Undecodable, decode_rows, self_containing, to_json
from objectlog.schemas.types import ParsedSchema

TIMESTAMP = "google.protobuf.Timestamp"
TIMESTAMP_SECONDS = (-62_135_596_800, 253_402_300_799)  # 0001-01-01 to 9999-12-31, UTC
_F = FieldDescriptor
_SCALARS: dict[int, pa.DataType] = {
    _F.TYPE_INT32: pa.int32(),
    _F.TYPE_SINT32: pa.int32(),
    _F.TYPE_SFIXED32: pa.int32(),
    _F.TYPE_INT64: pa.int64(),
    _F.TYPE_SINT64: pa.int64(),
    _F.TYPE_SFIXED64: pa.int64(),
    _F.TYPE_UINT32: pa.int64(),
    _F.TYPE_FIXED32: pa.int64(),
    _F.TYPE_UINT64: pa.decimal128(20, 0),
    _F.TYPE_FIXED64: pa.decimal128(20, 0),
    _F.TYPE_FLOAT: pa.float32(),
    _F.TYPE_DOUBLE: pa.float64(),
    _F.TYPE_BOOL: pa.bool_(),
    _F.TYPE_STRING: pa.string(),
    _F.TYPE_BYTES: pa.binary(),
}
_WRAPPERS = {
    f"google.protobuf.{name}Value"
    for name in ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")
}

Convert = Callable[[Any], Any]
Get = Callable[[Any], Any]  # a message -> one column's value


def arrow_type(parsed: ParsedSchema) -> pa.DataType:
    """The Arrow type of the column the schema's values decode into (the module's table)."""
    kind: pa.DataType = _Reader(ProtobufMessages(parsed)).plan.kind
    return kind


def decode_column(
    values: pa.Array | pa.ChunkedArray,
    parsed: ParsedSchema,
    reader_type: pa.DataType | None = None,
) -> tuple[pa.Array, pa.Array]:
    """(typed, reasons) for a binary column of framed values all written with the parsed
    Protobuf schema (callers group the values by schema id; the id itself is not checked
    here).

    typed has arrow_type(parsed), or reader_type when given (the table's evolved type: a
    struct field the writer lacks is null, one the reader lacks is left out). reasons is a
    string column: null where the value decoded (or was null), else why it did not, and typed
    is null there."""
    read = _Reader(ProtobufMessages(parsed))
    target = read.plan.kind if reader_type is None else reader_type
    return decode_rows(values, read, target)


# ---- decoding ----------------------------------------------------------------------------


class _Undecodable(Undecodable):
    pass


class _Reader:
    """A framed value -> its first message's column value; _Undecodable says why not."""

    def __init__(self, messages: ProtobufMessages) -> None:
        self.messages = messages
        self.first: Descriptor | None = None
        self.plan = _Plan(pa.null(), _no_message)
        if messages.file.message_type:
            self.first = messages.descriptor(FIRST_MESSAGE)
            self.message_class = messages.message_class(FIRST_MESSAGE)
            self.plan = _Planner(self.first).message(self.first)
        self.convert = _apply(self.plan.convert)

    def __call__(self, value: bytes) -> Any:
        if len(value) < PREFIX_BYTES or value[0] != MAGIC_BYTE:
            raise _Undecodable(NOT_FRAMED_REASON)
        if self.first is None:
            return _no_message(value)
        payload = value[PREFIX_BYTES:]
        try:
            indexes, start = message_indexes(payload)
        except ValueError as e:
            raise _Undecodable(str(e)) from None
        if tuple(indexes) != FIRST_MESSAGE:
            raise _Undecodable(self._another_message(tuple(indexes)))
        try:
            message = self.message_class.FromString(payload[start:])
        except DecodeError as e:
            raise _Undecodable(f"Protobuf cannot parse its message: {e}") from None
        return self.convert(message)

    def _another_message(self, indexes: tuple[int, ...]) -> str:
        assert self.first is not None
        try:
            named = self.messages.descriptor(indexes).full_name
        except UndecodableRecord as e:
            return e.message
        return (
            f"it is a {named} (message indexes {list(indexes)}), "
            f"not the column's message {self.first.full_name}"
        )


def _no_message(_: Any) -> Any:
    raise _Undecodable("the schema defines no message")


def _printed(message: Any, defaults: bool = True) -> Any:
    """The message in Protobuf's JSON mapping, proto field names, defaults printed."""
    try:
        return json_format.MessageToDict(
            message, preserving_proto_field_name=True, always_print_fields_with_no_presence=defaults
        )
    except (json_format.Error, TypeError, ValueError) as e:  # an Any of an unknown type
        raise _Undecodable(f"Protobuf's JSON mapping cannot print it: {e}") from None


def _as_json(message: Any) -> str | None:
    return to_json(_printed(message))


def _timestamp(message: Any) -> int:
    """Microseconds since the epoch, which Arrow takes for timestamp[us]."""
    seconds, nanos = message.seconds, message.nanos
    if not TIMESTAMP_SECONDS[0] <= seconds <= TIMESTAMP_SECONDS[1] or not 0 <= nanos < 10**9:
        raise _Undecodable(f"a {TIMESTAMP} outside its range (years 1 to 9999)")
    return int(seconds * 1_000_000 + nanos // 1000)


# ---- plans: a type's Arrow type and what turns Protobuf's value into Arrow's -------------


@dataclass(frozen=True)
class _Plan:
    kind: pa.DataType
    convert: Convert | None  # None: Arrow takes Protobuf's value as it is


@dataclass(frozen=True)
class _Column:
    field: pa.Field
    get: Get


_JSON = _Plan(pa.string(), _as_json)


def _apply(convert: Convert | None) -> Convert:
    return convert if convert is not None else (lambda value: value)


def _enum(field: FieldDescriptor) -> _Plan:
    names = {number: value.name for number, value in field.enum_type.values_by_number.items()}
    return _Plan(pa.string(), lambda number: names.get(number) or str(number))


def _struct(columns: list[_Column]) -> _Plan:
    kind = pa.struct([column.field for column in columns])
    pairs = [(column.field.name, column.get) for column in columns]
    return _Plan(kind, lambda message: {name: get(message) for name, get in pairs})


def _synthetic(message: Descriptor) -> set[str]:
    """The fields proto3 ``optional`` put in a oneof of their own (a synthetic one)."""
    proto = DescriptorProto()
    message.CopyToProto(proto)
    in_oneofs = [f for f in proto.field if f.HasField("oneof_index")]
    return {f.name for f in in_oneofs if real_oneof_index(f) is None}


def _recursive(root: Descriptor) -> set[str]:
    """The full names of the messages that can contain themselves."""
    graph: dict[str, set[str]] = {}
    todo = [root]
    while todo:
        message = todo.pop()
        if message.full_name in graph:
            continue
        inside = [f.message_type for f in message.fields if f.message_type is not None]
        graph[message.full_name] = {child.full_name for child in inside}
        todo.extend(inside)
    return self_containing(graph)


class _Planner:
    """The plans of one schema's messages, each built once."""

    def __init__(self, root: Descriptor) -> None:
        self.recursive = _recursive(root)
        self.plans: dict[str, _Plan] = {}

    def message(self, message: Descriptor) -> _Plan:
        """A message that is there (the root, a list item, a map value, a set field)."""
        name = message.full_name
        if name not in self.plans:
            if name in self.recursive or not message.fields:
                self.plans[name] = _JSON
            elif name == TIMESTAMP:
                self.plans[name] = _Plan(pa.timestamp("us", tz="UTC"), _timestamp)
            elif name in _WRAPPERS:
                inner = self.value(message.fields_by_name["value"])
                convert = _apply(inner.convert)
                self.plans[name] = _Plan(inner.kind, lambda wrapper: convert(wrapper.value))
            else:
                self.plans[name] = _struct(self.columns(message))
        return self.plans[name]

    def value(self, field: FieldDescriptor) -> _Plan:
        """One value of the field's type (an item, for a repeated field)."""
        if field.message_type is not None:
            return self.message(field.message_type)
        if field.enum_type is not None:
            return _enum(field)
        return _Plan(_SCALARS[field.type], None)

    def columns(self, message: Descriptor) -> list[_Column]:
        synthetic = _synthetic(message)
        columns: list[_Column] = []
        oneofs: set[str] = set()
        for field in message.fields:
            oneof = field.containing_oneof
            if oneof is None or field.name in synthetic:
                columns.append(self.column(field, optional=field.name in synthetic))
            elif oneof.name not in oneofs:
                oneofs.add(oneof.name)
                columns.append(_oneof_column(oneof))
        return columns

    def column(self, field: FieldDescriptor, optional: bool) -> _Column:
        entry = field.message_type
        if entry is not None and entry.GetOptions().map_entry:
            key, value = (self.value(entry.fields_by_name[n]) for n in ("key", "value"))
            return _map_column(field.name, key.kind, value)
        plan = self.value(field)
        if field.is_repeated:
            return _list_column(field.name, plan)
        return _single_column(field.name, plan, nullable=entry is not None or optional)


def _single_column(name: str, plan: _Plan, nullable: bool) -> _Column:
    """A singular field: null when unset if nullable (it has presence), else as read."""
    convert = _apply(plan.convert)

    def present(message: Any) -> Any:
        return convert(getattr(message, name))

    def unless_unset(message: Any) -> Any:
        return convert(getattr(message, name)) if message.HasField(name) else None

    if nullable:
        return _Column(pa.field(name, plan.kind), unless_unset)
    return _Column(pa.field(name, plan.kind, nullable=False), present)


def _list_column(name: str, plan: _Plan) -> _Column:
    kind = pa.list_(pa.field("item", plan.kind, nullable=False))
    convert = _apply(plan.convert)

    def items(message: Any) -> list[Any]:
        return [convert(item) for item in getattr(message, name)]

    def as_they_are(message: Any) -> list[Any]:
        return list(getattr(message, name))

    return _Column(
        pa.field(name, kind, nullable=False), as_they_are if plan.convert is None else items
    )


def _map_column(name: str, key: pa.DataType, value: _Plan) -> _Column:
    kind = pa.map_(key, pa.field("value", value.kind, nullable=False))
    convert = _apply(value.convert)

    def entries(message: Any) -> list[tuple[Any, Any]]:
        return [(k, convert(v)) for k, v in getattr(message, name).items()]

    return _Column(pa.field(name, kind, nullable=False), entries)


def _oneof_column(oneof: OneofDescriptor) -> _Column:
    """The JSON object {"<member>": <its value>} of the member set, null if none."""
    name, fields = oneof.name, oneof.containing_type.fields_by_name
    holder = message_factory.GetMessageClass(oneof.containing_type)

    def get(message: Any) -> str | None:
        member = message.WhichOneof(name)
        if member is None:
            return None
        value = getattr(message, member)
        if fields[member].message_type is not None:
            return to_json({member: _printed(value)})
        alone = holder()  # a scalar, printed as json_format prints its field
        setattr(alone, member, value)
        return to_json({member: _printed(alone, defaults=False)[member]})

    return _Column(pa.field(name, pa.string()), get)
