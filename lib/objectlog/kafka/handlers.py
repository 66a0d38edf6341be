"""The Kafka APIs the agent answers, over the objectlog library (DESIGN.md section 12).

Each handler takes the parsed request and returns the response as a mapping of the newest
version's fields (wire.build fits it to the version asked for), or None for a request Kafka
does not answer (Produce with acks=0). Library calls are synchronous: they run on the agent's
worker threads, never on the event loop.

The agent is one logical broker: leader of every partition and coordinator of every group, at
the address it advertises (a load balancer's on AWS, where several agents stand behind it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from objectlog.clients.direct import ObjectLog
from objectlog.errors import ObjectLogError, TopicNotFound
from objectlog.format.acls import CLUSTER_NAME, ResourceType
from objectlog.kafka.acls import AclsApi
from objectlog.kafka.admin import AdminApi
from objectlog.kafka.auth import SASL_AUTHENTICATE, SASL_HANDSHAKE  # per connection
from objectlog.kafka.authorizer import TOPIC_FAILED, Gate
from objectlog.kafka.cluster_admin import ClusterAdminApi
from objectlog.kafka.configs import ConfigsApi
from objectlog.kafka.consumer_protocol import ConsumerProtocolApi
from objectlog.kafka.context import ApiContext, Broker, topic_uuid
from objectlog.kafka.errors import error_code
from objectlog.kafka.fetch import FetchApi
from objectlog.kafka.group_admin import GroupAdminApi
from objectlog.kafka.groups import GroupsApi
from objectlog.kafka.guards import guard_routes
from objectlog.kafka.produce import ProduceApi
from objectlog.kafka.records import RecordsApi
from objectlog.kafka.topic_partitions import TopicPartitionsApi
from objectlog.kafka.transactions import TransactionsApi
from objectlog.kafka.transactions_admin import TransactionsAdminApi
from objectlog.kafka.wire import Request
from objectlog.services.access import OFF as access_off
from objectlog.services.access import AccessSettings, Emit

# API key: (lowest, highest) version offered. ApiVersions answers exactly this table.
PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS, INIT_PRODUCER_ID = 18, 19, 20, 22
OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP = 8, 9, 10, 11
HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS = 12, 13, 14, 15, 16
DESCRIBE_CONFIGS, CREATE_PARTITIONS, DELETE_GROUPS, INCREMENTAL_ALTER_CONFIGS = 32, 37, 42, 44
OFFSET_DELETE, DESCRIBE_CLUSTER, CONSUMER_GROUP_HEARTBEAT = 47, 60, 68
CONSUMER_GROUP_DESCRIBE = 69
DELETE_RECORDS = 21
ALTER_CONFIGS, LIST_CONFIG_RESOURCES, DESCRIBE_TOPIC_PARTITIONS = 33, 74, 75
ALTER_REPLICA_LOG_DIRS, DESCRIBE_LOG_DIRS, ELECT_LEADERS = 34, 35, 43
ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS = 45, 46
ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT = 24, 25, 26, 28
DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 61, 65, 66
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
SUPPORTED: dict[int, tuple[int, int]] = {
    SASL_HANDSHAKE: (0, 1),  # v0 advertised, not served: librdkafka 2.10 needs it (auth.py)
    SASL_AUTHENTICATE: (0, 2),
    CONSUMER_GROUP_HEARTBEAT: (0, 1),
    CONSUMER_GROUP_DESCRIBE: (0, 1),
    DESCRIBE_GROUPS: (0, 6),
    LIST_GROUPS: (0, 5),
    DESCRIBE_CONFIGS: (1, 4),
    CREATE_PARTITIONS: (0, 3),
    DELETE_GROUPS: (0, 2),
    INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ALTER_CONFIGS: (0, 2),
    LIST_CONFIG_RESOURCES: (0, 1),
    DESCRIBE_TOPIC_PARTITIONS: (0, 0),
    OFFSET_DELETE: (0, 0),
    DESCRIBE_CLUSTER: (0, 1),
    OFFSET_COMMIT: (2, 9),
    OFFSET_FETCH: (1, 9),
    FIND_COORDINATOR: (0, 4),
    JOIN_GROUP: (0, 9),
    HEARTBEAT: (0, 4),
    LEAVE_GROUP: (0, 5),
    SYNC_GROUP: (0, 5),
    INIT_PRODUCER_ID: (0, 4),
    PRODUCE: (3, 11),
    FETCH: (4, 17),
    LIST_OFFSETS: (1, 9),
    METADATA: (1, 12),
    API_VERSIONS: (0, 4),
    CREATE_TOPICS: (2, 7),
    DELETE_TOPICS: (1, 6),
    DELETE_RECORDS: (0, 2),
    ELECT_LEADERS: (0, 2),
    DESCRIBE_LOG_DIRS: (1, 4),
    ALTER_REPLICA_LOG_DIRS: (1, 2),
    ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ADD_PARTITIONS_TO_TXN: (0, 3),  # transaction protocol version 1 (kafka/transactions.py)
    ADD_OFFSETS_TO_TXN: (0, 3),
    END_TXN: (0, 3),
    TXN_OFFSET_COMMIT: (0, 3),
    DESCRIBE_PRODUCERS: (0, 0),  # KIP-664, as Kafka 3.9 (kafka/transactions_admin.py)
    DESCRIBE_TRANSACTIONS: (0, 0),
    LIST_TRANSACTIONS: (0, 1),  # v1: KIP-994's duration filter
    DESCRIBE_ACLS: (1, 3),  # Kafka 3.9 offers 0-3; kio has no v0, which Kafka 4.0 removed
    CREATE_ACLS: (1, 3),
    DELETE_ACLS: (1, 3),
}


class Handlers:
    """Every API the agent offers, by API key."""

    def __init__(
        self,
        log: ObjectLog,
        broker: Broker,
        initial_rebalance_delay_ms: int,
        access: AccessSettings = access_off,
        refusals_to: Emit | None = None,
    ) -> None:
        self.ctx = ApiContext(log, broker, access, refusals_to)
        self.producing = ProduceApi(self.ctx)
        self.fetching = fetching = FetchApi(self.ctx)
        admin, groups = AdminApi(self.ctx), GroupsApi(self.ctx, initial_rebalance_delay_ms)
        group_admin, configs = GroupAdminApi(self.ctx), ConfigsApi(self.ctx)
        consumers = ConsumerProtocolApi(self.ctx)
        cluster = ClusterAdminApi(self.ctx)
        self.transactions = TransactionsApi(self.ctx, groups.member_check)
        txn_admin = TransactionsAdminApi(self.ctx)
        acls = AclsApi(self.ctx)
        self.routes: dict[int, Callable[[Request], Any]] = {
            API_VERSIONS: self.api_versions,
            METADATA: self.metadata,
            PRODUCE: self.producing.produce,
            INIT_PRODUCER_ID: self.init_producer_id,
            ADD_PARTITIONS_TO_TXN: self.transactions.add_partitions_to_txn,
            ADD_OFFSETS_TO_TXN: self.transactions.add_offsets_to_txn,
            END_TXN: self.transactions.end_txn,
            TXN_OFFSET_COMMIT: self.transactions.txn_offset_commit,
            LIST_TRANSACTIONS: txn_admin.list_transactions,
            DESCRIBE_TRANSACTIONS: txn_admin.describe_transactions,
            DESCRIBE_PRODUCERS: txn_admin.describe_producers,
            FETCH: fetching.fetch,
            LIST_OFFSETS: fetching.list_offsets,
            CREATE_TOPICS: admin.create_topics,
            DELETE_TOPICS: admin.delete_topics,
            FIND_COORDINATOR: groups.find_coordinator,
            JOIN_GROUP: groups.join_group,
            SYNC_GROUP: groups.sync_group,
            HEARTBEAT: groups.heartbeat,
            LEAVE_GROUP: groups.leave_group,
            OFFSET_COMMIT: groups.offset_commit,
            OFFSET_FETCH: groups.offset_fetch,
            LIST_GROUPS: group_admin.list_groups,
            DESCRIBE_GROUPS: group_admin.describe_groups,
            CONSUMER_GROUP_DESCRIBE: group_admin.consumer_group_describe,
            DELETE_GROUPS: group_admin.delete_groups,
            OFFSET_DELETE: group_admin.offset_delete,
            DESCRIBE_CONFIGS: configs.describe_configs,
            INCREMENTAL_ALTER_CONFIGS: configs.incremental_alter_configs,
            ALTER_CONFIGS: configs.alter_configs,
            LIST_CONFIG_RESOURCES: configs.list_config_resources,
            CREATE_PARTITIONS: admin.create_partitions,
            DESCRIBE_CLUSTER: admin.describe_cluster,
            DESCRIBE_TOPIC_PARTITIONS: TopicPartitionsApi(self.ctx).describe_topic_partitions,
            CONSUMER_GROUP_HEARTBEAT: consumers.consumer_group_heartbeat,
            DELETE_RECORDS: RecordsApi(self.ctx).delete_records,
            ELECT_LEADERS: cluster.elect_leaders,
            DESCRIBE_LOG_DIRS: cluster.describe_log_dirs,
            ALTER_REPLICA_LOG_DIRS: cluster.alter_replica_log_dirs,
            ALTER_PARTITION_REASSIGNMENTS: cluster.alter_partition_reassignments,
            LIST_PARTITION_REASSIGNMENTS: cluster.list_partition_reassignments,
            DESCRIBE_ACLS: acls.describe_acls,
            CREATE_ACLS: acls.create_acls,
            DELETE_ACLS: acls.delete_acls,
        }
        if self.ctx.access.enabled:  # each API checks what Kafka's broker checks (guards)
            self.routes = guard_routes(self.ctx, self.routes)

    def close(self) -> None:
        self.producing.close()

    # ---- ApiVersions, Metadata -----------------------------------------------------------

    async def init_producer_id(self, request: Request) -> dict[str, Any]:
        """A transactional producer's to the coordinator, an idempotent one's to ProduceApi."""
        if request.body.transactional_id is not None:
            return await self.transactions.init_producer_id(request)
        return await self.producing.init_producer_id(request)

    async def api_versions(self, request: Request) -> dict[str, Any]:
        offered = [
            {"api_key": key, "min_version": low, "max_version": high}
            for key, (low, high) in sorted(SUPPORTED.items())
        ]
        low, high = SUPPORTED[API_VERSIONS]
        supported = low <= request.api_version <= high
        return {
            "error_code": ErrorCode.none if supported else ErrorCode.unsupported_version,
            "api_keys": offered,
            "throttle_time": 0,
        }

    async def metadata(self, request: Request) -> dict[str, Any]:
        asked = request.body.topics
        if asked is None:
            names = await self.ctx.call(self.ctx.log.list_topics)
        else:  # by name, or (v10+) by topic id, as KIP-848 clients ask
            by_id = await self.ctx.names_by_id(t.topic_id for t in asked if t.name is None)
            found = (t.name or by_id.get(t.topic_id) for t in asked)
            names = [name for name in found if name is not None]
        gate = Gate.current(self.ctx.access)
        bits = getattr(request.body, "include_topic_authorized_operations", False)
        # Kafka's auto.create.topics.enable: a topic asked for by name that does not exist is
        # created when the deployment allows it and the client does (always, before v4)
        create = asked is not None and getattr(request.body, "allow_auto_topic_creation", True)
        topics = [await self._topic_metadata(name, gate, bits, create) for name in names]
        return {
            "throttle_time": 0,
            "brokers": [self.ctx.broker.as_node()],
            "cluster_id": self.ctx.broker.cluster_id,
            "controller_id": self.ctx.broker.node_id,
            "topics": topics,
            "cluster_authorized_operations": gate.bits(
                ResourceType.CLUSTER,
                CLUSTER_NAME,
                getattr(request.body, "include_cluster_authorized_operations", False),
            ),
        }

    async def _topic_metadata(
        self, name: str, gate: Gate, bits: bool, create: bool
    ) -> dict[str, Any]:
        log = self.ctx.log
        try:
            try:
                topic = await self.ctx.call(log.topic, name)
            except TopicNotFound:
                if not create or not log.config.auto_create_topics:
                    raise
                if not gate.may_create_topic(name):  # CREATE on the cluster or the topic
                    return {"error_code": TOPIC_FAILED, "name": name, "partitions": []}
                topic = await self.ctx.call(log.topic_or_create, name)
        except ObjectLogError as e:
            return {"error_code": error_code(e), "name": name, "partitions": []}
        return {
            "error_code": ErrorCode.none,
            "name": name,
            "topic_id": topic_uuid(topic.topic_id),
            "is_internal": False,
            "partitions": [self.ctx.broker.leads(p) for p in range(topic.partitions)],
            "topic_authorized_operations": gate.bits(ResourceType.TOPIC, name, bits),
        }
