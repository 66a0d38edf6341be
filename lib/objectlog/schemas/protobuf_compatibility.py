"""Confluent's Protobuf compatibility rules, judged on protoc's descriptors.

``incompatibilities(reader, writer)`` says why records written with the writer's schema cannot
be read with the reader's: for BACKWARD the new schema is the reader and the latest the writer,
for FORWARD the other way round. Confluent's own check (its ``protobuf.diff`` package) calls the
writer "original" and the reader "update"; each change kind below carries Confluent's name for
it, so the docs can cite both. Fields are matched by number, messages and enums by name within
their scope; each problem names the element, e.g.
``field 'Order.amount' (3): type changed from int64 to string``.

Change kinds judged (compatible: no problem reported):

- PACKAGE_CHANGED: the file's package renamed, added or removed. Incompatible.
- MESSAGE_ADDED: a message only the reader has. Compatible.
- MESSAGE_REMOVED: a message only the writer has; renaming a message or moving it to another
  scope (nesting it, un-nesting it) is a removal. Incompatible.
- MESSAGE_MOVED: a message at another position among its siblings. Compatible (a record's
  message indexes refer to the schema it was written with).
- ENUM_ADDED, ENUM_REMOVED, ENUM_CONST_ADDED, ENUM_CONST_REMOVED, ENUM_CONST_CHANGED (a value
  renamed): compatible, as in Confluent (an unknown number is kept, not a parse failure).
- FIELD_ADDED, FIELD_REMOVED: a field number only one side has. Compatible (a reader skips
  numbers it does not know and reads a missing field as its default).
- FIELD_NAME_CHANGED: one number, another name. Compatible (the encoding carries numbers).
- REQUIRED_FIELD_ADDED, REQUIRED_FIELD_REMOVED: a required field (proto2 ``required``, editions
  ``LEGACY_REQUIRED``) only one side has. Incompatible, as in Confluent; a field becoming or
  ceasing to be required likewise.
- FIELD_KIND_CHANGED: a field moving between scalar (enums included), message, map and group.
  Incompatible.
- FIELD_SCALAR_KIND_CHANGED: a scalar moving between the wire-compatible groups {int32, uint32,
  int64, uint64, bool, enum}, {sint32, sint64}, {fixed32, sfixed32}, {fixed64, sfixed64},
  {string, bytes}, {float}, {double}. Incompatible; a change within a group is compatible (an
  enum may become another enum or an integer, as Confluent allows).
- FIELD_NAMED_TYPE_CHANGED: a message field whose type has another name (its package aside).
  Incompatible. A type of the same name is compared by these same rules when either side
  takes it from an import (a reference), so an imported type that changed is judged too.
- FIELD_NUMERIC_LABEL_CHANGED: singular <-> repeated on a number, bool or enum field.
  Incompatible (repeated numbers are packed).
- FIELD_STRING_OR_BYTES_LABEL_CHANGED: singular <-> repeated on a string or bytes field.
  Compatible; on a message field likewise (protobuf's own rule). proto3 ``optional`` added or
  removed (presence only) is compatible.
- ONEOF_ADDED, ONEOF_REMOVED, ONEOF_FIELD_ADDED, ONEOF_FIELD_MOVED_TO_TOP_LEVEL (a member
  leaving its oneof, or one field moved into a new oneof): compatible.
- ONEOF_FIELD_REMOVED: a member of a oneof removed while the oneof or another of its members
  survives. Incompatible (removing a whole oneof with all its members is compatible).
- MULTIPLE_FIELDS_MOVED_TO_ONEOF: several fields that were outside any oneof now in one oneof.
  Incompatible (a reader keeps only one of them).
- FIELD_MOVED_TO_EXISTING_ONEOF: a oneof that now joins fields the writer did not hold in one
  oneof (a field moved into an existing oneof, two oneofs merged). Incompatible.

objectlog's own, where Confluent's list says nothing:

- syntax proto2 <-> proto3: compatible (one encoding; parsers take packed and unpacked repeated
  scalars alike).
- editions: any change of edition or of an explicit ``features`` setting when either side uses
  editions, and any change of ``message_set_wire_format``, is reported as not judged (fail
  closed: such settings can change the encoding).
- extensions of data messages: judged as fields, matched by (extended message, number).
  Extensions of ``google.protobuf.*Options`` define custom options, not data: ignored.
- options (java_package, packed, deprecated, json_name, custom options such as
  ``confluent.field_meta``) and services: ignored, they do not change the binary encoding.
- a message type whose definition is not at hand (a ParsedSchema built without its imports):
  reported as not judged.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor_pb2 import (
    DescriptorProto,
    EnumDescriptorProto,
    FeatureSet,
    FieldDescriptorProto,
    FileDescriptorProto,
)

from objectlog.schemas.types import ParsedSchema

_SCALAR_GROUPS = {
    FieldDescriptorProto.TYPE_INT32: "varint",
    FieldDescriptorProto.TYPE_UINT32: "varint",
    FieldDescriptorProto.TYPE_INT64: "varint",
    FieldDescriptorProto.TYPE_UINT64: "varint",
    FieldDescriptorProto.TYPE_BOOL: "varint",
    FieldDescriptorProto.TYPE_ENUM: "varint",
    FieldDescriptorProto.TYPE_SINT32: "zigzag",
    FieldDescriptorProto.TYPE_SINT64: "zigzag",
    FieldDescriptorProto.TYPE_FIXED32: "fixed32",
    FieldDescriptorProto.TYPE_SFIXED32: "fixed32",
    FieldDescriptorProto.TYPE_FIXED64: "fixed64",
    FieldDescriptorProto.TYPE_SFIXED64: "fixed64",
    FieldDescriptorProto.TYPE_FLOAT: "float",
    FieldDescriptorProto.TYPE_DOUBLE: "double",
    FieldDescriptorProto.TYPE_STRING: "string or bytes",
    FieldDescriptorProto.TYPE_BYTES: "string or bytes",
}
# Kinds whose repeated form is packed: a singular reader cannot take it (nor the reverse).
_PACKED_KINDS = {"varint", "zigzag", "fixed32", "fixed64", "float", "double"}


@dataclass(frozen=True)
class ProtobufParsedSchema(ParsedSchema):
    """A PROTOBUF ParsedSchema with every file it imports, directly or not (protoc's
    ``--include_imports``), so a field can be followed into a type a reference defines."""

    imports: tuple[FileDescriptorProto, ...] = ()


def incompatibilities(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    """Why records written with writer cannot be read with reader (see the module docstring
    for the rules); none when they can."""
    return _Comparison(_Side(writer), _Side(reader)).problems()


@dataclass(frozen=True)
class _Type:
    definition: DescriptorProto | EnumDescriptorProto
    local_name: str  # the full name without the package, which Confluent compares
    in_schema: bool  # defined by the schema itself rather than by an import


class _Side:
    """One schema and every message and enum it can name, by full name (no leading dot)."""

    def __init__(self, schema: ParsedSchema) -> None:
        self.file: FileDescriptorProto = schema.parsed
        self.types: dict[str, _Type] = {}
        imports = schema.imports if isinstance(schema, ProtobufParsedSchema) else ()
        for imported in imports:
            self._index(imported, in_schema=False)
        self._index(self.file, in_schema=True)

    def _index(self, file: FileDescriptorProto, *, in_schema: bool) -> None:
        prefix = f"{file.package}." if file.package else ""
        for local_name, definition in _definitions("", file.message_type, file.enum_type):
            self.types[prefix + local_name] = _Type(definition, local_name, in_schema)

    def type_of(self, field: FieldDescriptorProto) -> _Type | None:
        return self.types.get(field.type_name.lstrip("."))

    def kind(self, field: FieldDescriptorProto) -> str:
        """The field's wire kind: a scalar group of _SCALAR_GROUPS, message, map or group."""
        if field.type == FieldDescriptorProto.TYPE_GROUP:
            return "group"
        if field.type != FieldDescriptorProto.TYPE_MESSAGE:
            return _SCALAR_GROUPS[field.type]
        known = self.type_of(field)
        is_map = known is not None and known.definition.options.map_entry
        return "map" if is_map else "message"

    def describe(self, field: FieldDescriptorProto) -> str:
        """The field's type as .proto text writes it: int64, shop.Money, map<string, int32>."""
        kind, known = self.kind(field), self.type_of(field)
        if kind == "map" and known is not None:
            key, value = (self.describe(part) for part in known.definition.field)
            return f"map<{key}, {value}>"
        return ("group " if kind == "group" else "") + _type_text(field)


class _Comparison:
    """Walks writer and reader side by side, collecting one message per problem."""

    def __init__(self, writer: _Side, reader: _Side) -> None:
        self.writer, self.reader = writer, reader
        self.found: list[str] = []
        self.followed: set[tuple[str, str]] = set()

    def problems(self) -> list[str]:
        old, new = self.writer.file, self.reader.file
        if old.package != new.package:
            self.found.append(f"package changed from {old.package!r} to {new.package!r}")
        self._encoding_settings(old, new)
        self._scope("", old.message_type, new.message_type)
        self._extensions(old, new)
        return self.found

    def _encoding_settings(self, old: FileDescriptorProto, new: FileDescriptorProto) -> None:
        if "editions" not in (old.syntax, new.syntax) and not (
            _message_sets(old) or _message_sets(new)
        ):
            return
        before, after = _settings(old), _settings(new)
        for path in sorted(before.keys() | after.keys()):
            if before.get(path) != after.get(path):
                self.found.append(
                    f"'{path}': edition, features or message_set_wire_format changed, which "
                    "can change the encoding; objectlog does not judge such a change"
                )

    def _scope(self, prefix: str, old: list[DescriptorProto], new: list[DescriptorProto]) -> None:
        readers = {message.name: message for message in new}
        for message in old:
            if message.options.map_entry:
                continue  # a map's entry type: the map field is judged instead
            name = prefix + message.name
            if message.name not in readers:
                self.found.append(f"message '{name}' removed")
            else:
                self._message(name, message, readers[message.name])

    def _message(self, name: str, old: DescriptorProto, new: DescriptorProto) -> None:
        old_fields, new_fields = _by_number(old), _by_number(new)
        old_oneofs = _oneof_of(old)
        self._oneof_merges(name, new, old_fields, old_oneofs)
        gone = _deleted_oneofs(old, new, new_fields)
        for number, before in sorted(old_fields.items()):
            after = new_fields.get(number)
            where = f"field '{name}.{before.name}' ({number})"
            oneof = old_oneofs.get(number)
            if after is not None:
                self._field(where, before, after)
            elif oneof is not None and oneof not in gone:
                self.found.append(f"{where}: removed from oneof '{oneof}'")
            elif _label(before) == "required":
                self.found.append(f"{where}: required field removed")
        for number, after in sorted(new_fields.items()):
            if number not in old_fields and _label(after) == "required":
                self.found.append(f"field '{name}.{after.name}' ({number}): required field added")
        self._scope(f"{name}.", list(old.nested_type), list(new.nested_type))

    def _oneof_merges(
        self,
        name: str,
        new: DescriptorProto,
        old_fields: dict[int, FieldDescriptorProto],
        old_oneofs: dict[int, str],
    ) -> None:
        for index, oneof in enumerate(new.oneof_decl):
            members = [f.number for f in new.field if real_oneof_index(f) == index]
            kept = [number for number in members if number in old_fields]
            origins = {old_oneofs.get(number, f"field {number}") for number in kept}
            moved_in = [number for number in kept if number not in old_oneofs]
            where = f"oneof '{name}.{oneof.name}'"
            if len(origins) > 1 and len(moved_in) > 1:
                fields = ", ".join(map(str, moved_in))
                self.found.append(f"{where}: fields {fields} moved into it from outside a oneof")
            elif len(origins) > 1:
                fields = ", ".join(map(str, kept))
                self.found.append(f"{where}: fields {fields} were not in one oneof before")

    def _field(self, where: str, old: FieldDescriptorProto, new: FieldDescriptorProto) -> None:
        before, after = _label(old), _label(new)
        if "required" in (before, after) and before != after:
            self.found.append(f"{where}: label changed from {before} to {after}")
        repeated_changed = (before == "repeated") != (after == "repeated")
        self._types(where, old, new, repeated_changed, (before, after))

    def _types(
        self,
        where: str,
        old: FieldDescriptorProto,
        new: FieldDescriptorProto,
        repeated_changed: bool,
        labels: tuple[str, str],
    ) -> None:
        kind, new_kind = self.writer.kind(old), self.reader.kind(new)
        if kind != new_kind:
            before, after = self.writer.describe(old), self.reader.describe(new)
            self.found.append(f"{where}: type changed from {before} to {after}")
        elif repeated_changed and kind in _PACKED_KINDS and "required" not in labels:
            self.found.append(f"{where}: label changed from {labels[0]} to {labels[1]}")
        elif kind == "map":
            self._map(where, old, new)
        elif kind in ("message", "group"):
            self._named_type(where, old, new)

    def _map(self, where: str, old: FieldDescriptorProto, new: FieldDescriptorProto) -> None:
        old_entry, new_entry = self.writer.type_of(old), self.reader.type_of(new)
        assert old_entry is not None and new_entry is not None  # kind() found both
        for part, before, after in zip(
            ("key", "value"), old_entry.definition.field, new_entry.definition.field, strict=True
        ):
            self._types(f"{where} map {part}", before, after, False, ("", ""))

    def _named_type(self, where: str, old: FieldDescriptorProto, new: FieldDescriptorProto) -> None:
        before, after = self.writer.type_of(old), self.reader.type_of(new)
        if before is None or after is None:
            missing = old.type_name if before is None else new.type_name
            self.found.append(f"{where}: no definition of {missing[1:]} at hand; not judged")
        elif before.local_name != after.local_name:
            self.found.append(f"{where}: type changed from {_type_text(old)} to {_type_text(new)}")
        elif not (before.in_schema and after.in_schema):
            pair = (old.type_name, new.type_name)
            if pair not in self.followed:  # types may refer to themselves
                self.followed.add(pair)
                self._message(before.local_name, before.definition, after.definition)

    def _extensions(self, old: FileDescriptorProto, new: FileDescriptorProto) -> None:
        readers = _data_extensions(new)
        for key, before in _data_extensions(old).items():
            after = readers.get(key)
            if after is not None:
                where = f"extension '{before.name}' ({key[1]}) of {key[0][1:]}"
                self._field(where, before, after)


def _definitions(
    prefix: str, messages: list[DescriptorProto], enums: list[EnumDescriptorProto]
) -> Iterator[tuple[str, DescriptorProto | EnumDescriptorProto]]:
    for enum in enums:
        yield prefix + enum.name, enum
    for message in messages:
        yield prefix + message.name, message
        yield from _definitions(f"{prefix}{message.name}.", message.nested_type, message.enum_type)


def real_oneof_index(field: FieldDescriptorProto) -> int | None:
    """The field's real oneof (proto3 ``optional`` makes a synthetic one, which is not)."""
    if field.HasField("oneof_index") and not field.proto3_optional:
        return int(field.oneof_index)
    return None


def _by_number(message: DescriptorProto) -> dict[int, FieldDescriptorProto]:
    return {field.number: field for field in message.field}


def _oneof_of(message: DescriptorProto) -> dict[int, str]:
    """FieldDescriptorProto number -> name of the (real) oneof holding it."""
    result = {}
    for field in message.field:
        index = real_oneof_index(field)
        if index is not None:
            result[field.number] = message.oneof_decl[index].name
    return result


def _deleted_oneofs(
    old: DescriptorProto, new: DescriptorProto, new_fields: dict[int, FieldDescriptorProto]
) -> set[str]:
    """Oneofs the reader dropped together with every member: a compatible removal."""
    surviving_names = {oneof.name for oneof in new.oneof_decl}
    members: dict[str, list[int]] = {}
    for number, oneof in _oneof_of(old).items():
        members.setdefault(oneof, []).append(number)
    return {
        oneof
        for oneof, numbers in members.items()
        if oneof not in surviving_names and not any(n in new_fields for n in numbers)
    }


def _label(field: FieldDescriptorProto) -> str:
    legacy_required = field.options.features.field_presence == FeatureSet.LEGACY_REQUIRED
    if field.label == FieldDescriptorProto.LABEL_REQUIRED or legacy_required:
        return "required"
    return "repeated" if field.label == FieldDescriptorProto.LABEL_REPEATED else "optional"


def _type_text(field: FieldDescriptorProto) -> str:
    if field.type_name:
        return str(field.type_name).lstrip(".")
    return str(FieldDescriptorProto.Type.Name(field.type)).removeprefix("TYPE_").lower()


def _data_extensions(file: FileDescriptorProto) -> dict[tuple[str, int], FieldDescriptorProto]:
    """Extensions of data messages, by (extended message, number); those extending
    google.protobuf's *Options messages declare custom options and are left out."""
    found = list(file.extension)
    pending = list(file.message_type)
    while pending:
        message = pending.pop()
        found.extend(message.extension)
        pending.extend(message.nested_type)
    return {
        (ext.extendee, ext.number): ext
        for ext in found
        if not (ext.extendee.startswith(".google.protobuf.") and ext.extendee.endswith("Options"))
    }


def _message_sets(file: FileDescriptorProto) -> bool:
    return any(key.endswith(":message_set") for key in _settings(file))


def _settings(file: FileDescriptorProto) -> dict[str, str]:
    """Every explicit setting that can change the encoding, by element path: the edition,
    each ``features`` set and each ``message_set_wire_format``."""
    settings = {"file:edition": str(file.edition)} if file.syntax == "editions" else {}
    _note_features(settings, file.package or "file", file.options)
    pending: list[tuple[str, DescriptorProto]] = [(m.name, m) for m in file.message_type]
    enums: list[tuple[str, EnumDescriptorProto]] = [(e.name, e) for e in file.enum_type]
    while pending:
        path, message = pending.pop()
        _note_features(settings, path, message.options)
        if message.options.message_set_wire_format:
            settings[f"{path}:message_set"] = "true"
        for field in [*message.field, *message.extension]:
            _note_features(settings, f"{path}.{field.name}", field.options)
        for oneof in message.oneof_decl:
            _note_features(settings, f"{path}.{oneof.name}", oneof.options)
        pending.extend((f"{path}.{nested.name}", nested) for nested in message.nested_type)
        enums.extend((f"{path}.{enum.name}", enum) for enum in message.enum_type)
    for path, enum in enums:
        _note_features(settings, path, enum.options)
        for value in enum.value:
            _note_features(settings, f"{path}.{value.name}", value.options)
    for field in file.extension:
        _note_features(settings, field.name, field.options)
    return settings


def _note_features(settings: dict[str, str], path: str, options: Any) -> None:
    if options.HasField("features"):
        settings[path] = str(options.features).replace("\n", " ").strip()
