"""SchemaStore on DynamoDB (the item layout is in stores.schemas)."""

from __future__ import annotations

import json
from typing import Any

from objectlog.adapters.dynamodb import DynamoTable
from objectlog.stores.name_sets import DynamoNameSet
from objectlog.stores.schemas import (
    SchemaReference,
    StoredSchema,
    parse_use,
    use_key,
)

IDS_KEY = {"pk": "schemas", "sk": "ids"}
SUBJECTS_KEY = {"pk": "schemas", "sk": "subjects"}


def schema_key(schema_id: int) -> dict[str, str]:
    return {"pk": f"schema#{schema_id}", "sk": "schema"}


def fingerprint_key(fingerprint: str) -> dict[str, str]:
    return {"pk": f"schemafp#{fingerprint}", "sk": "fp"}


def guid_key(guid: str) -> dict[str, str]:
    return {"pk": f"schemaguid#{guid}", "sk": "guid"}


class DynamoSchemaStore:
    def __init__(self, table: DynamoTable) -> None:
        self.table = table
        self.subjects = DynamoNameSet(table, SUBJECTS_KEY, "schema subjects")

    def next_id(self) -> int:
        written = self.table.update(
            IDS_KEY,
            "ADD #n :one",
            names={"#n": "n"},
            values={":one": 1},
            returns="UPDATED_NEW",
            repeatable=False,  # a repeat skips an id: harmless (ids need not be dense)
            what="UpdateItem schema ids",
        )
        assert written.item is not None
        return int(written.item["n"])

    def put_schema(self, schema: StoredSchema) -> bool:
        item: dict[str, Any] = {
            **schema_key(schema.id),
            "type": schema.schema_type,
            "schema": schema.schema,
            "guid": schema.guid,
            "refs": json.dumps([[r.name, r.subject, r.version] for r in schema.references]),
        }
        if schema.metadata is not None:
            item["meta"] = schema.metadata
        if schema.rule_set is not None:
            item["rules"] = schema.rule_set
        if not self.table.put(
            item, condition="attribute_not_exists(pk)", what="PutItem schema"
        ).applied:
            return False
        self.table.put(
            {**guid_key(schema.guid), "id": schema.id},
            condition="attribute_not_exists(pk)",
            what="PutItem schema guid",
        )
        return True

    def schema(self, schema_id: int) -> StoredSchema | None:
        item = self.table.get(schema_key(schema_id))
        if item is None:
            return None
        return StoredSchema(
            id=schema_id,
            schema_type=item["type"],
            schema=item["schema"],
            guid=item["guid"],
            references=tuple(
                SchemaReference(name, subject, int(version))
                for name, subject, version in json.loads(item.get("refs", "[]"))
            ),
            metadata=item.get("meta"),
            rule_set=item.get("rules"),
            uses=frozenset(parse_use(u) for u in item.get("uses", ())),
        )

    def id_by_guid(self, guid: str) -> int | None:
        item = self.table.get(guid_key(guid))
        return None if item is None else int(item["id"])

    def id_by_fingerprint(self, fingerprint: str) -> int | None:
        item = self.table.get(fingerprint_key(fingerprint))
        return None if item is None else int(item["id"])

    def claim_fingerprint(self, fingerprint: str, schema_id: int) -> int:
        written = self.table.put(
            {**fingerprint_key(fingerprint), "id": schema_id},
            condition="attribute_not_exists(pk) OR id = :id",
            values={":id": schema_id},
            returns="ALL_OLD",
            what="PutItem schema fingerprint",
        )
        if written.applied or written.item is None:
            return schema_id
        return int(written.item["id"])

    def add_use(self, schema_id: int, subject: str, version: int) -> None:
        self._uses("ADD", schema_id, subject, version)

    def remove_use(self, schema_id: int, subject: str, version: int) -> None:
        self._uses("DELETE", schema_id, subject, version)

    def _uses(self, action: str, schema_id: int, subject: str, version: int) -> None:
        self.table.update(
            schema_key(schema_id),
            f"{action} uses :u",
            condition="attribute_exists(pk)",
            values={":u": {use_key(subject, version)}},
            repeatable=True,
            what="UpdateItem schema uses",
        )

    def subject_names(self) -> list[str]:
        return self.subjects.names()

    def add_subject(self, subject: str) -> None:
        self.subjects.add(subject)

    def remove_subject(self, subject: str) -> None:
        self.subjects.remove(subject)
