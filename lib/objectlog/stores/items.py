"""The item stores a log uses, bundled: on one DynamoDB table, or in memory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from objectlog.adapters.dynamodb import DynamoTable
from objectlog.stores.acls import AclStore
from objectlog.stores.activity import ActivityStore, DynamoActivityStore, MemoryActivityStore
from objectlog.stores.documents import DocumentStore, DynamoDocumentStore, MemoryDocumentStore
from objectlog.stores.dynamo_acls import DynamoAclStore
from objectlog.stores.dynamo_groups import DynamoGroupStore
from objectlog.stores.dynamo_metadata import DynamoMetadata
from objectlog.stores.dynamo_schemas import DynamoSchemaStore
from objectlog.stores.dynamo_transactions import DynamoTransactionStore
from objectlog.stores.groups import GroupStore
from objectlog.stores.idempotency import DynamoIdempotencyStore, IdempotencyStore
from objectlog.stores.leases import DynamoLeaseStore, LeaseStore
from objectlog.stores.metadata import MetadataStore
from objectlog.stores.schemas import SchemaStore
from objectlog.stores.transactions import TransactionStore


@dataclass(frozen=True)
class ItemStores:
    metadata: MetadataStore
    groups: GroupStore
    leases: LeaseStore
    idempotency: IdempotencyStore
    documents: DocumentStore
    schemas: SchemaStore
    transactions: TransactionStore
    acls: AclStore
    activity: ActivityStore

    @classmethod
    def dynamodb(cls, client: Any, table_name: str) -> ItemStores:
        table = DynamoTable(client, table_name)
        return cls(
            DynamoMetadata(table),
            DynamoGroupStore(table),
            DynamoLeaseStore(table),
            DynamoIdempotencyStore(table),
            DynamoDocumentStore(table),
            DynamoSchemaStore(table),
            DynamoTransactionStore(table),
            DynamoAclStore(table),
            DynamoActivityStore(table),
        )

    @classmethod
    def memory(cls) -> ItemStores:
        from objectlog.stores.memory import (
            MemoryIdempotencyStore,
            MemoryLeaseStore,
            MemoryMetadata,
        )
        from objectlog.stores.memory_acls import MemoryAclStore
        from objectlog.stores.memory_groups import MemoryGroupStore
        from objectlog.stores.memory_schemas import MemorySchemaStore
        from objectlog.stores.memory_transactions import MemoryTransactionStore

        return cls(
            MemoryMetadata(),
            MemoryGroupStore(),
            MemoryLeaseStore(),
            MemoryIdempotencyStore(),
            MemoryDocumentStore(),
            MemorySchemaStore(),
            MemoryTransactionStore(),
            MemoryAclStore(),
            MemoryActivityStore(),
        )
