"""The SchemaStore contract, held by the DynamoDB store (on the embedded endpoint) and the
in-memory one alike."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from objectlog.stores.items import ItemStores
from objectlog.stores.schemas import SchemaReference, SchemaStore, StoredSchema
from tests.aio_stores import dynamodb_items


@pytest.fixture(params=["memory", "dynamodb", "dynamodb-aio"])
def store(request: pytest.FixtureRequest) -> Iterator[SchemaStore]:
    if request.param == "memory":
        yield ItemStores.memory().schemas
        return
    yield dynamodb_items(request, "schemas")[0].schemas


def schema(schema_id: int, text: str = '"string"') -> StoredSchema:
    return StoredSchema(
        id=schema_id,
        schema_type="AVRO",
        schema=text,
        guid=f"guid-{schema_id}",
        references=(SchemaReference("a.B", "b-value", 2),),
        metadata='{"properties":{"owner":"team"}}',
    )


def test_ids_are_handed_out_once_from_one(store: SchemaStore) -> None:
    assert [store.next_id() for _ in range(3)] == [1, 2, 3]


def test_a_schema_is_written_once_under_its_id_and_found_by_its_guid(store: SchemaStore) -> None:
    assert store.put_schema(schema(7))
    assert not store.put_schema(schema(7, '"int"'))
    assert store.schema(7) == schema(7)
    assert store.schema(8) is None
    assert store.id_by_guid("guid-7") == 7
    assert store.id_by_guid("guid-8") is None


def test_a_fingerprint_stays_with_the_first_id_that_claims_it(store: SchemaStore) -> None:
    assert store.id_by_fingerprint("f") is None
    assert store.claim_fingerprint("f", 3) == 3
    assert store.claim_fingerprint("f", 3) == 3  # a repeat of the same claim
    assert store.claim_fingerprint("f", 4) == 3
    assert store.id_by_fingerprint("f") == 3


def test_a_schemas_uses_are_the_subject_versions_added_and_not_removed(
    store: SchemaStore,
) -> None:
    store.put_schema(schema(1))
    store.add_use(1, "orders-value", 1)
    store.add_use(1, "a#b/c", 12)
    store.add_use(1, "orders-value", 1)
    store.remove_use(1, "orders-value", 1)
    found = store.schema(1)
    assert found is not None and found.uses == {("a#b/c", 12)}


def test_subjects_are_listed_sorted_until_removed(store: SchemaStore) -> None:
    for subject in ("b", "a/x", "b"):
        store.add_subject(subject)
    store.remove_subject("gone")
    assert store.subject_names() == ["a/x", "b"]
    store.remove_subject("b")
    assert store.subject_names() == ["a/x"]
