"""The PROTOBUF schema type: parsed by protoc (the reference compiler, run in-process as
grpcio-tools ships it), stored as .proto text rendered from protoc's FileDescriptorProto, judged
by protobuf_compatibility.

A schema (and each reference, keyed by its import path) is .proto text (REST, Java) or the
base64 of a serialized FileDescriptorProto (confluent-kafka's Python ProtobufSerializer).
Imports of google/protobuf/*.proto (bundled with grpcio-tools), confluent/meta.proto and
confluent/type/decimal.proto (written below) need no reference: Confluent's serializers send
none for them.

The stored form (``canonical``) is rendered from the descriptor: every type name fully
qualified, every option protoc interpreted (custom ones such as ``(confluent.field_meta)``
included), comments and layout dropped. ``normalized`` is Confluent's normalize=true form of
it: imports and options sorted, fields by number, oneofs by their first number, enum values by
number (the first one, the default, kept first), reserved entries sorted, extensions grouped by
extended message. Message order is kept: a record's message indexes depend on it.

Each parse runs protoc twice: once on the schema, once on its rendering, and refuses a schema
whose rendering does not compile to the same descriptor (fail closed, should the renderer meet
a construct it does not cover, such as a group declared inside an ``extend`` block).
"""

from __future__ import annotations

import base64
import binascii
import itertools
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from importlib.resources import files
from operator import attrgetter
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from google.protobuf.descriptor_pb2 import DescriptorProto as MessageProto
from google.protobuf.descriptor_pb2 import EnumDescriptorProto as EnumProto
from google.protobuf.descriptor_pb2 import FieldDescriptorProto as FieldProto
from google.protobuf.descriptor_pb2 import FileDescriptorProto as FileProto
from google.protobuf.descriptor_pb2 import FileDescriptorSet
from google.protobuf.message import DecodeError
from google.protobuf.text_encoding import CEscape
from grpc_tools import protoc

from objectlog.errors import InvalidSchema
from objectlog.schemas.protobuf_compatibility import (
    ProtobufParsedSchema,
    incompatibilities,
    real_oneof_index,
)
from objectlog.schemas.types import PROTOBUF, ParsedSchema

CONFLUENT_IMPORTS = {
    "confluent/meta.proto": """syntax = "proto3";
package confluent;
import "google/protobuf/descriptor.proto";
option java_package = "io.confluent.protobuf";
message Meta {
  string doc = 1; map<string, string> params = 2; repeated string tags = 3; repeated Rule rules = 4;
}
message Rule { string name = 1; string doc = 2; string expr = 3; string sql = 4; }
extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
""",
    "confluent/type/decimal.proto": """syntax = "proto3";
package confluent.type;
option java_package = "io.confluent.protobuf.type";
message Decimal { bytes value = 1; uint32 precision = 2; int32 scale = 3; }
""",
}
_WELL_KNOWN_TYPES = str(files("grpc_tools") / "_proto")  # google/protobuf/*.proto
# protoc writes its messages to file descriptor 2, shared by the whole process: one at a time.
_PROTOC = threading.Lock()
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_number = attrgetter("number")
_MAX_FIELD_NUMBER, _MAX_ENUM_NUMBER = 536_870_911, 2_147_483_647
_VISIBILITY = {1: "local ", 2: "export "}  # edition 2024's SymbolVisibility


def parse(schema: str, references: Mapping[str, str]) -> ProtobufParsedSchema:
    """Compile schema (.proto text or base64 FileDescriptorProto) with its references; raises
    InvalidSchema with protoc's message when it does not compile."""
    names = (f"schema{n or ''}.proto" for n in itertools.count())  # one no reference takes
    main = next(name for name in names if name not in references)
    sources, descriptors = _inputs(references)
    given = _from_base64(schema)
    if given is None:
        sources[main] = schema
    else:
        given.name = main
        descriptors.append(given)
    wanted = " ".join([*sources.values(), *(d for f in descriptors for d in f.dependency)])
    for name, text in CONFLUENT_IMPORTS.items():  # written only when imported: dirs cost
        if name not in references and name in wanted:
            sources[name] = text
    descriptor, imports = _compile(main, sources, descriptors)
    sources[main] = canonical = render(descriptor, imports)
    recompiled, imports = _compile(main, sources, [d for d in descriptors if d.name != main])
    _check_faithful(descriptor, recompiled)
    return ProtobufParsedSchema(
        schema_type=PROTOBUF,
        canonical=canonical,
        normalized=render(recompiled, imports, normalize=True),
        parsed=recompiled,
        imports=imports,
    )


def serialized(parsed: ParsedSchema) -> str:
    """The schema as ``?format=serialized`` answers it: the base64 of its FileDescriptorProto,
    which confluent-kafka's ProtobufDeserializer reads."""
    raw = parsed.parsed.SerializeToString(deterministic=True)
    return base64.standard_b64encode(raw).decode("ascii")


def render(file: FileProto, imports: Sequence[FileProto] = (), *, normalize: bool = False) -> str:
    """The file's descriptor as .proto text that compiles back to it. imports: the files it
    imports, which define its custom options; options they do not define are left out."""
    return _Renderer(file, imports, normalize).text()


class ProtobufSchemaType:
    name = PROTOBUF
    parse = staticmethod(parse)
    incompatibilities = staticmethod(incompatibilities)


def _inputs(references: Mapping[str, str]) -> tuple[dict[str, str], list[FileProto]]:
    """The files protoc reads: .proto text to write to disk, and descriptors to hand it as a
    descriptor set (a reference given as a base64 FileDescriptorProto)."""
    sources: dict[str, str] = {}
    descriptors = []
    for name, text in references.items():
        if "\\" in name or {"", ".", ".."} & set(name.split("/")):  # absolute, escaping
            message = f"Invalid schema: reference name {name!r} is not an import path"
            raise InvalidSchema(message, field="references")
        descriptor = _from_base64(text)
        if descriptor is None:
            sources[name] = text
        else:
            descriptor.name = name
            descriptors.append(descriptor)
    return sources, descriptors


def _from_base64(schema: str) -> FileProto | None:
    """The FileDescriptorProto schema is the base64 of, or None for .proto text (which always
    holds a character base64 lacks: a space, a semicolon, a brace)."""
    text = schema.strip()
    if not _BASE64.fullmatch(text):
        return None
    try:
        descriptor = FileProto.FromString(base64.b64decode(text, validate=True))
    except (binascii.Error, DecodeError):
        return None
    return descriptor if descriptor.name or descriptor.message_type else None


def _compile(
    main: str, sources: Mapping[str, str], descriptors: Sequence[FileProto]
) -> tuple[FileProto, tuple[FileProto, ...]]:
    """protoc's descriptor of main, and of every file it imports (imports first)."""
    with tempfile.TemporaryDirectory(prefix="objectlog-protoc-") as work:
        root = Path(work, "src")
        root.mkdir()
        for name, text in sources.items():
            Path(root, name).parent.mkdir(parents=True, exist_ok=True)
            Path(root, name).write_text(text, encoding="utf-8")
        arguments = [f"--proto_path={root}", f"--proto_path={_WELL_KNOWN_TYPES}"]
        if descriptors:
            given = FileDescriptorSet(file=descriptors)
            Path(work, "in.pb").write_bytes(given.SerializeToString())
            arguments.append(f"--descriptor_set_in={work}/in.pb")
        arguments += ["--include_imports", f"--descriptor_set_out={work}/out.pb", main]
        with _PROTOC, _stderr_into(Path(work, "stderr")):
            status = protoc.main(["protoc", *arguments])
        if status != 0:
            raise InvalidSchema(_protoc_message(Path(work, "stderr"), root), field="schema")
        output = FileDescriptorSet.FromString(Path(work, "out.pb").read_bytes())
    compiled = [file for file in output.file if file.name == main]
    return compiled[0], tuple(file for file in output.file if file.name != main)


@contextmanager
def _stderr_into(path: Path) -> Iterator[None]:
    """Point file descriptor 2 at path: protoc's C++ writes there, past sys.stderr."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with path.open("wb") as sink:
            os.dup2(sink.fileno(), 2)  # fd 2 keeps the file open once sink closes
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _protoc_message(stderr: Path, root: Path) -> str:
    """protoc's errors, the temporary root left out: lines naming a .proto file and not
    warnings, unless there are none (another thread's output may share the file)."""
    text = stderr.read_text(encoding="utf-8", errors="replace").replace(f"{root}/", "")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if ".proto" in line and "warning:" not in line] or lines
    return "Invalid schema: " + ("; ".join(errors) or "protoc refused it")


def _check_faithful(compiled: FileProto, recompiled: FileProto) -> None:
    if compiled == recompiled:
        return
    before = text_format.MessageToString(compiled).splitlines()
    after = text_format.MessageToString(recompiled).splitlines()
    first = next((a for a, b in zip(before, after, strict=False) if a != b), "its end")
    raise InvalidSchema(
        "Invalid schema: objectlog cannot render it as .proto text that keeps its meaning "
        f"(the rendering differs at {first.strip()!r})",
        field="schema",
    )


class _Renderer:
    """One file's .proto text, in descriptor order or (normalize) in Confluent's order."""

    def __init__(self, file: FileProto, imports: Sequence[FileProto], normalize: bool) -> None:
        self.file, self.normalize = file, normalize
        self.syntax = file.syntax or "proto2"
        self.pool = _options_pool([*imports, file])
        self.lines: list[str] = []
        self.scope = f".{file.package}" if file.package else ""  # the enclosing full name

    def text(self) -> str:
        file = self.file
        if self.syntax == "editions":
            edition = descriptor_pb2.Edition.Name(file.edition).removeprefix("EDITION_")
            self.lines.append(f'edition = "{edition}";')
        else:
            self.lines.append(f'syntax = "{self.syntax}";')
        if file.package:
            self.lines.append(f"package {file.package};")
        self.lines += self._imports()
        self._options(0, file.options)
        for message in file.message_type:
            self._message(0, message)
        for enum in file.enum_type:
            self._enum(0, enum)
        self._extends(0, list(file.extension))
        for service in file.service:
            self._service(service)
        return "\n".join(self.lines) + "\n"

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("  " * depth + line)

    def _imports(self) -> list[str]:
        file = self.file
        kinds = {i: "public " for i in file.public_dependency}
        kinds.update({i: "weak " for i in file.weak_dependency})
        lines = [f'import {kinds.get(i, "")}"{name}";' for i, name in enumerate(file.dependency)]
        lines += [f'import option "{name}";' for name in file.option_dependency]
        return sorted(lines) if self.normalize else lines

    def _options(self, depth: int, options: Any) -> None:
        for _, option in self._option_pairs(options):
            self.emit(depth, f"option {option};")

    def _option_pairs(self, options: Any) -> list[tuple[str, str]]:
        """(name, "name = value") for each option set, repeated ones once per value."""
        pairs = []
        for field, value in self._readable(options).ListFields():
            name = f"({field.full_name})" if field.is_extension else field.name
            values = value if _is_repeated(field) else [value]
            pairs += [(name, f"{name} = {_literal(field, item)}") for item in values]
        return sorted(pairs, key=lambda pair: pair[0]) if self.normalize else pairs

    def _readable(self, options: Any) -> Any:
        """options re-read in a pool holding the file's imports, so custom options are named
        fields rather than unknown bytes, whatever generated modules this process imported."""
        try:
            found = self.pool.FindMessageTypeByName(options.DESCRIPTOR.full_name)
        except KeyError:
            return options
        return message_factory.GetMessageClass(found).FromString(options.SerializeToString())

    def _brackets(self, pairs: list[tuple[str, str]]) -> str:
        return f" [{', '.join(text for _, text in pairs)}]" if pairs else ""

    def _message(self, depth: int, message: MessageProto, head: str = "", tail: str = "") -> None:
        """A message's block; a group's has its label before the name and number after."""
        visibility = _VISIBILITY.get(message.visibility, "")
        self.emit(depth, f"{visibility}{head or 'message '}{message.name}{tail} {{")
        outer, self.scope = self.scope, f"{self.scope}.{message.name}"
        self._options(depth + 1, message.options)
        self._fields(depth + 1, message)
        inline = {f.type_name for f in message.field if f.type == FieldProto.TYPE_GROUP}
        for nested in message.nested_type:
            if not nested.options.map_entry and f"{self.scope}.{nested.name}" not in inline:
                self._message(depth + 1, nested)
        for enum in message.enum_type:
            self._enum(depth + 1, enum)
        for span in message.extension_range:
            numbers = _span(span.start, span.end - 1, _MAX_FIELD_NUMBER)
            options = self._brackets(self._option_pairs(span.options))
            self.emit(depth + 1, f"extensions {numbers}{options};")
        self._extends(depth + 1, list(message.extension))
        ranges = [(r.start, r.end - 1) for r in message.reserved_range]
        self._reserved(depth + 1, ranges, list(message.reserved_name), _MAX_FIELD_NUMBER)
        self.scope = outer
        self.emit(depth, "}")

    def _fields(self, depth: int, message: MessageProto) -> None:
        """Fields in declaration order, a oneof's block where its first member was; or
        (normalize) fields by number, then oneofs by their first number."""
        oneofs: dict[int, list[FieldProto]] = {}
        for field in message.field:
            index = real_oneof_index(field)
            if index is not None:
                oneofs.setdefault(index, []).append(field)
        if self.normalize:
            plain = [field for field in message.field if real_oneof_index(field) is None]
            for field in sorted(plain, key=_number):
                self._field(depth, field, message)
            for index, members in sorted(oneofs.items(), key=lambda item: _number(item[1][0])):
                self._oneof(depth, message, index, sorted(members, key=_number))
            return
        shown: set[int] = set()
        for field in message.field:
            index = real_oneof_index(field)
            if index is None:
                self._field(depth, field, message)
            elif index not in shown:
                shown.add(index)
                self._oneof(depth, message, index, oneofs[index])

    def _oneof(self, depth: int, message: MessageProto, index: int, fields: list[Any]) -> None:
        self.emit(depth, f"oneof {message.oneof_decl[index].name} {{")
        self._options(depth + 1, message.oneof_decl[index].options)
        for field in fields:
            self._field(depth + 1, field, message)
        self.emit(depth, "}")

    def _field(self, depth: int, field: FieldProto, container: MessageProto | None) -> None:
        """One field; container: the message declaring it (None in an extend block), whose
        nested types hold a map field's entry type and a group's type."""
        numbered = f"{field.number}{self._brackets(self._field_option_pairs(field))}"
        entry = _nested(container, self.scope, field.type_name)
        if entry is not None and entry.options.map_entry:
            key, value = (_type_name(part) for part in entry.field)
            self.emit(depth, f"map<{key}, {value}> {field.name} = {numbered};")
        elif entry is not None and field.type == FieldProto.TYPE_GROUP:
            self._message(depth, entry, f"{self._label(field)}group ", f" = {numbered}")
        else:
            self.emit(depth, f"{self._label(field)}{_type_name(field)} {field.name} = {numbered};")

    def _label(self, field: FieldProto) -> str:
        if real_oneof_index(field) is not None:
            return ""
        if field.label == FieldProto.LABEL_REPEATED:
            return "repeated "
        if self.syntax == "proto2":
            return "required " if field.label == FieldProto.LABEL_REQUIRED else "optional "
        return "optional " if field.proto3_optional else ""

    def _field_option_pairs(self, field: FieldProto) -> list[tuple[str, str]]:
        pairs = []
        if field.HasField("default_value"):
            pairs.append(("default", f"default = {_default_literal(field)}"))
        if field.HasField("json_name") and field.json_name != _json_name(field.name):
            pairs.append(("json_name", f'json_name = "{CEscape(field.json_name, True)}"'))
        pairs += self._option_pairs(field.options)
        return sorted(pairs, key=lambda pair: pair[0]) if self.normalize else pairs

    def _enum(self, depth: int, enum: EnumProto) -> None:
        self.emit(depth, f"{_VISIBILITY.get(enum.visibility, '')}enum {enum.name} {{")
        self._options(depth + 1, enum.options)
        values = list(enum.value)
        if self.normalize:  # the first value is the default: it stays first
            values = values[:1] + sorted(values[1:], key=lambda v: (v.number, v.name))
        for value in values:
            pairs = self._option_pairs(value.options)
            self.emit(depth + 1, f"{value.name} = {value.number}{self._brackets(pairs)};")
        ranges = [(r.start, r.end) for r in enum.reserved_range]  # inclusive, unlike messages'
        self._reserved(depth + 1, ranges, list(enum.reserved_name), _MAX_ENUM_NUMBER)
        self.emit(depth, "}")

    def _reserved(self, depth: int, ranges: list[Any], names: list[str], maximum: int) -> None:
        if self.normalize:
            ranges, names = sorted(ranges), sorted(names)
        if ranges:
            self.emit(depth, f"reserved {', '.join(_span(a, b, maximum) for a, b in ranges)};")
        if names:  # editions take identifiers here, the older syntaxes strings
            quote = "" if self.syntax == "editions" else '"'
            self.emit(depth, f"reserved {', '.join(quote + n + quote for n in names)};")

    def _extends(self, depth: int, extensions: list[FieldProto]) -> None:
        """extend blocks: one per run of one extended message, or (normalize) one per
        extended message, its fields by number."""
        blocks: list[tuple[str, list[FieldProto]]] = []
        for extension in extensions:
            same = [block for block in blocks if block[0] == extension.extendee]
            if same and (self.normalize or blocks[-1] is same[0]):
                same[0][1].append(extension)
            else:
                blocks.append((extension.extendee, [extension]))
        for extendee, fields in blocks:
            self.emit(depth, f"extend {extendee} {{")
            for field in sorted(fields, key=_number) if self.normalize else fields:
                self._field(depth + 1, field, None)
            self.emit(depth, "}")

    def _service(self, service: Any) -> None:
        self.emit(0, f"service {service.name} {{")
        self._options(1, service.options)
        for method in service.method:
            request = ("stream " if method.client_streaming else "") + method.input_type
            response = ("stream " if method.server_streaming else "") + method.output_type
            pairs = self._option_pairs(method.options)
            head = f"rpc {method.name} ({request}) returns ({response})"
            self.emit(1, head + (" {" if pairs else ";"))
            if pairs:
                self._options(2, method.options)
                self.emit(1, "}")
        self.emit(0, "}")


def _options_pool(files: Sequence[FileProto]) -> descriptor_pool.DescriptorPool:
    """A pool holding descriptor.proto and the given files, in which option messages name
    their extensions. A file it cannot take (its imports missing) is left out."""
    pool = descriptor_pool.DescriptorPool()
    if not any(file.name == "google/protobuf/descriptor.proto" for file in files):
        pool.AddSerializedFile(descriptor_pb2.DESCRIPTOR.serialized_pb)
    for file in files:
        with suppress(TypeError):  # "Couldn't build proto file into descriptor pool"
            pool.Add(file)
    return pool


def _literal(field: Any, value: Any) -> str:
    """An option's value as .proto text takes it: message values in text format."""
    if field.message_type is not None:
        body = text_format.MessageToString(value, as_one_line=True)
        return f"{{ {body} }}" if body else "{}"
    if field.enum_type is not None:
        known = field.enum_type.values_by_number.get(value)
        return str(known.name) if known is not None else str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | bytes):
        return f'"{CEscape(value, isinstance(value, str))}"'
    return repr(value) if isinstance(value, float) else str(value)


def _default_literal(field: FieldProto) -> str:
    """protoc keeps a string default unescaped, a bytes default escaped, the rest as text."""
    if field.type == FieldProto.TYPE_STRING:
        return f'"{CEscape(field.default_value, True)}"'
    if field.type == FieldProto.TYPE_BYTES:
        return f'"{field.default_value}"'
    return str(field.default_value)


def _json_name(name: str) -> str:
    """protoc's default json_name: underscores dropped, the letter after one upper-cased."""
    parts = name.split("_")
    return parts[0] + "".join(part[:1].upper() + part[1:] for part in parts[1:])


def _is_repeated(field: Any) -> bool:
    if hasattr(field, "is_repeated"):  # protobuf 7 dropped FieldDescriptor.label
        return bool(field.is_repeated)
    return bool(field.label == field.LABEL_REPEATED)


def _span(start: int, end: int, maximum: int) -> str:
    if start == end:
        return str(start)
    return f"{start} to {'max' if end == maximum else end}"


def _type_name(field: FieldProto) -> str:
    if field.type_name:
        return str(field.type_name)
    return str(FieldProto.Type.Name(field.type)).removeprefix("TYPE_").lower()


def _nested(container: MessageProto | None, scope: str, type_name: str) -> MessageProto | None:
    """The type container declares under type_name (a map entry's, a group's), if any."""
    if container is None:
        return None
    return next((n for n in container.nested_type if f"{scope}.{n.name}" == type_name), None)
