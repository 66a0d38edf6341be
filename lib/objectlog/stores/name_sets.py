"""A set of names kept in one item (the topic registry, the group registry, the Schema
Registry's subjects): a DynamoDB string set changed by repeatable single-item ADD and DELETE
updates, read whole."""

from __future__ import annotations

from objectlog.adapters.dynamodb import DynamoTable


class DynamoNameSet:
    def __init__(self, table: DynamoTable, key: dict[str, str], what: str) -> None:
        self.table = table
        self.key = key
        self.what = what  # names the item in the adapter's request log, e.g. "group registry"

    def add(self, name: str) -> None:
        self._change("ADD", name)

    def remove(self, name: str) -> None:
        self._change("DELETE", name)

    def names(self) -> list[str]:
        item = self.table.get(self.key)
        return sorted(item["names"]) if item and "names" in item else []

    def _change(self, action: str, name: str) -> None:
        self.table.update(
            self.key,
            f"{action} #names :n",
            names={"#names": "names"},
            values={":n": {name}},
            repeatable=True,
            what=f"UpdateItem {self.what}",
        )
