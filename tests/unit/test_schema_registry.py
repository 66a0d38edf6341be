"""The Schema Registry's rules (schemas.registry) over the in-memory stores: Confluent's
behaviour for ids, versions, deletes, references, compatibility and modes."""

from __future__ import annotations

import json

import pytest

from objectlog.errors import (
    IncompatibleSchema,
    InvalidCompatibilityLevel,
    InvalidSchema,
    OperationNotPermitted,
    ReferenceExists,
    SchemaNotFound,
    SchemaVersionNotFound,
    SchemaVersionNotSoftDeleted,
    SchemaVersionSoftDeleted,
    SubjectCompatibilityNotConfigured,
    SubjectNotFound,
    SubjectNotSoftDeleted,
    SubjectSoftDeleted,
)
from objectlog.schemas.parsing import SchemaInput
from objectlog.schemas.registry import SchemaRegistry
from objectlog.stores.items import ItemStores
from objectlog.stores.schemas import SchemaReference


def record(*fields: tuple[str, str], default: bool = False) -> SchemaInput:
    """An Avro record User with these (name, type) fields, the last with a default if asked."""
    listed = [{"name": n, "type": t} for n, t in fields]
    if default:
        listed[-1]["default"] = 0
    return SchemaInput(json.dumps({"type": "record", "name": "User", "fields": listed}))


V1 = record(("name", "string"))
V2_WITH_DEFAULT = record(("name", "string"), ("age", "int"), default=True)
V2_WITHOUT_DEFAULT = record(("name", "string"), ("age", "int"))


@pytest.fixture
def registry() -> SchemaRegistry:
    items = ItemStores.memory()
    return SchemaRegistry(items.schemas, items.documents)


def test_the_same_schema_registered_twice_is_one_version_and_one_id(
    registry: SchemaRegistry,
) -> None:
    first = registry.register("users-value", V1)
    spaced = SchemaInput(V1.schema.replace(",", ", "))
    again = registry.register("users-value", spaced)
    elsewhere = registry.register("other-value", V1)
    assert (first.version, again.version, again.schema.id) == (1, 1, first.schema.id)
    assert (elsewhere.version, elsewhere.schema.id) == (1, first.schema.id)
    assert registry.versions("users-value") == [1]


def test_backward_refuses_a_field_without_default_and_none_takes_it(
    registry: SchemaRegistry,
) -> None:
    registry.register("users-value", V1)
    with pytest.raises(IncompatibleSchema, match="reader_field_missing_default_value"):
        registry.register("users-value", V2_WITHOUT_DEFAULT)
    assert registry.register("users-value", V2_WITH_DEFAULT).version == 2
    registry.settings.set_compatibility("users-value", "none")
    assert registry.register("users-value", V2_WITHOUT_DEFAULT).version == 3
    assert registry.settings.compatibility("users-value") == "NONE"
    assert registry.settings.compatibility(None) == "BACKWARD"


@pytest.mark.parametrize(
    ("level", "refused"),
    [
        pytest.param("FORWARD", False, id="forward-old-reads-new-with-extra-field"),
        pytest.param("FULL", True, id="full-needs-both-ways"),
        pytest.param("NONE", False, id="none"),
    ],
)
def test_each_level_checks_its_direction(
    registry: SchemaRegistry, level: str, refused: bool
) -> None:
    registry.settings.set_compatibility("s", level)
    registry.register("s", V1)
    problems = registry.test_compatibility("s", "latest", V2_WITHOUT_DEFAULT)
    assert bool(problems) is refused


def test_transitive_levels_check_every_live_version(registry: SchemaRegistry) -> None:
    registry.settings.set_compatibility("s", "NONE")
    registry.register("s", record(("name", "int")))
    registry.register("s", V1)
    registry.settings.set_compatibility("s", "BACKWARD")
    assert registry.test_compatibility("s", None, V2_WITH_DEFAULT) == []
    registry.settings.set_compatibility("s", "BACKWARD_TRANSITIVE")
    assert registry.test_compatibility("s", None, V2_WITH_DEFAULT)


def test_versions_keep_their_numbers_through_soft_and_permanent_deletes(
    registry: SchemaRegistry,
) -> None:
    registry.settings.set_compatibility("s", "NONE")
    for schema in (V1, V2_WITH_DEFAULT, V2_WITHOUT_DEFAULT):
        registry.register("s", schema)
    assert registry.delete_version("s", "2") == 2
    with pytest.raises(SchemaVersionSoftDeleted):
        registry.delete_version("s", 2)
    with pytest.raises(SchemaVersionNotSoftDeleted):
        registry.delete_version("s", 1, permanent=True)
    assert registry.versions("s") == [1, 3]
    assert registry.versions("s", deleted=True) == [1, 2, 3]
    with pytest.raises(SchemaVersionNotFound):
        registry.version("s", 2)
    assert registry.version("s", 2, deleted=True).deleted
    assert registry.delete_version("s", 2, permanent=True) == 2
    assert registry.versions("s", deleted=True) == [1, 3]
    assert registry.register("s", record(("other", "string"))).version == 4


def test_a_subject_is_soft_deleted_then_permanently(registry: SchemaRegistry) -> None:
    registry.register("s", V1)
    with pytest.raises(SubjectNotSoftDeleted):
        registry.delete_subject("s", permanent=True)
    assert registry.delete_subject("s") == [1]
    with pytest.raises(SubjectSoftDeleted):
        registry.delete_subject("s")
    assert registry.subjects() == [] and registry.subjects(deleted=True) == ["s"]
    schema_id = registry.version("s", 1, deleted=True).schema.id
    assert registry.schema_by_id(schema_id).schema_type == "AVRO"  # still known while soft
    assert registry.delete_subject("s", permanent=True) == [1]
    assert registry.subjects(deleted=True) == []
    with pytest.raises(SchemaNotFound):
        registry.schema_by_id(schema_id)
    with pytest.raises(SubjectNotFound):
        registry.versions("s", deleted=True)
    assert registry.register("s", V1).schema.id == schema_id  # the same schema, the same id


def test_references_resolve_and_keep_what_they_reference(registry: SchemaRegistry) -> None:
    address = SchemaInput(
        json.dumps(
            {
                "type": "record",
                "name": "Address",
                "namespace": "shop",
                "fields": [{"name": "city", "type": "string"}],
            }
        )
    )
    registry.register("address", address)
    user = SchemaInput(
        json.dumps(
            {"type": "record", "name": "User", "fields": [{"name": "home", "type": "shop.Address"}]}
        ),
        references=(SchemaReference("shop.Address", "address", 1),),
    )
    found = registry.register("users-value", user)
    assert '"type":"shop.Address"' in found.schema.schema  # named, not repeated
    assert registry.referenced_by("address", 1) == [found.schema.id]
    with pytest.raises(ReferenceExists):
        registry.delete_version("address", 1)
    missing = SchemaInput(user.schema, references=(SchemaReference("shop.Address", "nope", 1),))
    with pytest.raises(InvalidSchema, match="nope"):
        registry.register("other", missing)
    registry.delete_subject("users-value")
    registry.delete_subject("users-value", permanent=True)
    assert registry.referenced_by("address", 1) == []
    assert registry.delete_version("address", 1) == 1


def test_lookup_finds_the_version_that_is_the_schema(registry: SchemaRegistry) -> None:
    registry.settings.set_compatibility("s", "NONE")
    registry.register("s", V1)
    registry.register("s", V2_WITH_DEFAULT)
    assert registry.lookup("s", V2_WITH_DEFAULT).version == 2
    with pytest.raises(SchemaNotFound):
        registry.lookup("s", V2_WITHOUT_DEFAULT)
    with pytest.raises(SubjectNotFound):
        registry.lookup("nope", V1)


def test_normalize_makes_key_order_one_schema(registry: SchemaRegistry) -> None:
    reordered = SchemaInput(
        '{"name":"User","fields":[{"type":"string","name":"name"}],"type":"record"}'
    )
    first = registry.register("s", V1, normalize=True)
    assert registry.register("s", reordered, normalize=True).schema.id == first.schema.id


def test_read_only_refuses_and_import_registers_under_the_id_given(
    registry: SchemaRegistry,
) -> None:
    registry.settings.set_mode("s", "READONLY")
    with pytest.raises(OperationNotPermitted):
        registry.register("s", V1)
    with pytest.raises(OperationNotPermitted):
        registry.register("t", V1, schema_id=42)  # an id outside IMPORT
    registry.settings.set_mode(None, "IMPORT")
    imported = registry.register("t", V2_WITHOUT_DEFAULT, schema_id=42)
    assert imported.schema.id == 42 and registry.schema_by_id(42).schema == imported.schema.schema
    with pytest.raises(OperationNotPermitted):
        registry.register("u", V1, schema_id=42)  # the id holds another schema


def test_settings_default_to_global_unless_asked(registry: SchemaRegistry) -> None:
    with pytest.raises(SubjectCompatibilityNotConfigured):
        registry.settings.compatibility("s", default_to_global=False)
    registry.settings.set_compatibility(None, "FULL")
    assert registry.settings.compatibility("s") == "FULL"
    with pytest.raises(InvalidCompatibilityLevel):
        registry.settings.set_compatibility("s", "SIDEWAYS")
    assert registry.settings.delete_compatibility(None) == "FULL"
    assert registry.settings.compatibility(None) == "BACKWARD"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"type":"recrd"}', id="unknown-type"),
        pytest.param("{", id="not-json"),
        pytest.param('{"type":"enum","name":"E","symbols":["a","a"]}', id="duplicate-symbol"),
        pytest.param("  ", id="empty"),
    ],
)
def test_a_schema_the_parser_refuses_stores_nothing(registry: SchemaRegistry, text: str) -> None:
    with pytest.raises(InvalidSchema):
        registry.register("s", SchemaInput(text))
    assert registry.subjects(deleted=True) == []
