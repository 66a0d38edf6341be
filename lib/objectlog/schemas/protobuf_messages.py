"""The messages of a PROTOBUF schema, as a record's message indexes name them: the schema's
file in a descriptor pool of its own, holding every file it imports (references and
well-known types), and a message class per message named.

Message indexes (the wire format's, objectlog.format.schema_ids): the message's index among
the file's top-level messages, then among its parent's nested ones; [0] is the file's first
message, which Confluent's serializers and REST Proxy write by default.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor

from objectlog.errors import UndecodableRecord
from objectlog.schemas.protobuf_compatibility import ProtobufParsedSchema
from objectlog.schemas.types import ParsedSchema

FIRST_MESSAGE = (0,)


class ProtobufMessages:
    """A PROTOBUF schema's messages, each class built once, when first named."""

    def __init__(self, parsed: ParsedSchema) -> None:
        assert isinstance(parsed, ProtobufParsedSchema)
        self.file = parsed.parsed
        self.pool = descriptor_pool.DescriptorPool()
        for imported in parsed.imports:
            self.pool.AddSerializedFile(imported.SerializeToString())
        self.pool.AddSerializedFile(self.file.SerializeToString())
        self._classes: dict[tuple[int, ...], Any] = {}

    def descriptor(self, indexes: tuple[int, ...]) -> Descriptor:
        """The message the indexes name; UndecodableRecord if they name none."""
        names, container = [self.file.package] if self.file.package else [], self.file
        for index in indexes:
            types = container.message_type if container is self.file else container.nested_type
            if not 0 <= index < len(types):
                raise UndecodableRecord(f"its message indexes {list(indexes)} name no message")
            container = types[index]
            names.append(container.name)
        return self.pool.FindMessageTypeByName(".".join(names))

    def message_class(self, indexes: tuple[int, ...]) -> Any:
        """The class of the message the indexes name; UndecodableRecord if they name none."""
        found = self._classes.get(indexes)
        if found is None:
            found = message_factory.GetMessageClass(self.descriptor(indexes))
            self._classes[indexes] = found
        return found
