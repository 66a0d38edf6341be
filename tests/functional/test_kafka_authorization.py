"""Kafka ACLs enforced by the agent (issue 37, kafka/guards.py): two SCRAM users, each allowed
exactly what its ACLs grant, through kafka-python 3.0 and confluent-kafka 2.16, and refused the
rest with Kafka's error codes: produce, consume, group join and commit, topic create, delete
and configs, transactional ids, the ACL APIs themselves; Metadata lists only what a principal
may describe; authorized-operations bits are the principal's; a change made through the agent
holds at once on it; a super user may do everything.

alice: WRITE on topics prefixed ``orders`` and on the transactional id ``alice-tx``.
bob: READ on the topic ``orders`` and the group ``bob-group``. admin: a super user.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import confluent_kafka
import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType
from confluent_kafka.admin import AdminClient as ConfluentAdmin
from confluent_kafka.admin import ResourcePatternType as CPattern
from confluent_kafka.admin import ResourceType as CType
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ACL as KafkaACL
from kafka.admin import (
    ACLOperation,
    ACLPermissionType,
    NewPartitions,
    NewTopic,
    ResourcePattern,
)
from kafka.admin import ResourceType as KafkaResourceType
from kafka.errors import (
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)

from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.format.acls import (
    AclBinding as Binding,
)
from objectlog.format.acls import (
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from objectlog.groups import TopicPartition as GroupPartition
from objectlog.kafka.server import AgentThread
from objectlog.kafka.users import Users
from objectlog.services.access import AccessSettings
from objectlog.services.authorization import Settings
from tests.kafka_agent_config import agent_config

PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret", "admin": "admin-secret"}
ORDERS, PAYMENTS = "orders", "payments"


def allow(principal: str, kind: ResourceType, name: str, op: Operation, prefixed: bool = False):  # type: ignore[no-untyped-def]
    pattern = PatternType.PREFIXED if prefixed else PatternType.LITERAL
    return Binding(kind, name, pattern, principal, "*", op, Permission.ALLOW)


@pytest.fixture(scope="module")
def log(aws_endpoint: str) -> Iterator[ObjectLog]:
    suffix = uuid.uuid4().hex[:12]
    config = Config.from_env(bucket=f"objectlog-acl-{suffix}", table=f"objectlog-acl-{suffix}")
    with ObjectLog(config) as objectlog:
        objectlog.ensure_resources()
        objectlog.create_topic(ORDERS, partitions=2)
        objectlog.create_topic(PAYMENTS, partitions=1)
        objectlog.create_topic("audit", partitions=1)
        users = Users(objectlog.items.documents)
        for name, password in PASSWORDS.items():
            users.add(name, password)
        objectlog.items.acls.create(
            [
                allow("User:alice", ResourceType.TOPIC, "orders", Operation.WRITE, prefixed=True),
                allow("User:alice", ResourceType.TRANSACTIONAL_ID, "alice-tx", Operation.WRITE),
                allow("User:bob", ResourceType.TOPIC, ORDERS, Operation.READ),
                allow("User:bob", ResourceType.GROUP, "bob-group", Operation.READ),
            ]
        )
        yield objectlog


@pytest.fixture(scope="module")
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    access = AccessSettings(enabled=True, rules=Settings(super_users=frozenset({"User:admin"})))
    running = AgentThread(log, agent_config(sasl=True, access=access)).start()
    yield running
    running.stop()


def produce(log: ObjectLog, topic: str, value: bytes, partition: int) -> None:
    with log.producer() as producer:
        producer.send(topic, value, partition=partition).result(timeout=15)


def kp(agent: AgentThread, user: str) -> dict[str, object]:
    return {
        "bootstrap_servers": agent.address,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": user,
        "sasl_plain_password": PASSWORDS[user],
    }


def ck(agent: AgentThread, user: str, **more: object) -> dict[str, object]:
    return {
        "bootstrap.servers": agent.address,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": PASSWORDS[user],
        **more,
    }


# ---- kafka-python ----------------------------------------------------------------------------


def test_a_writer_writes_its_topics_only_and_reads_none(agent: AgentThread) -> None:
    producer = KafkaProducer(**kp(agent, "alice"), enable_idempotence=True)
    try:
        # idempotent, with WRITE on a topic alone (KIP-679)
        producer.send(ORDERS, b"order 1", partition=0).get(timeout=15)
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send(PAYMENTS, b"stolen", partition=0).get(timeout=15)
    finally:
        producer.close()
    consumer = KafkaConsumer(**kp(agent, "alice"), consumer_timeout_ms=3000)
    try:
        consumer.assign([TopicPartition(ORDERS, 0)])
        consumer.seek(TopicPartition(ORDERS, 0), 0)
        with pytest.raises(TopicAuthorizationFailedError):
            consumer.poll(timeout_ms=5000)
            consumer.poll(timeout_ms=5000)
    finally:
        consumer.close()


def test_a_reader_consumes_in_its_group_only(agent: AgentThread, log: ObjectLog) -> None:
    produce(log, ORDERS, b"for bob", partition=1)
    consumer = KafkaConsumer(
        ORDERS,
        **kp(agent, "bob"),
        group_id="bob-group",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=10000,
    )
    try:
        got = next(iter(consumer))
        assert got.topic == ORDERS
        consumer.commit()
    finally:
        consumer.close()
    tp = GroupPartition(ORDERS, got.partition)
    committed = log.groups.committed("bob-group", [tp])[tp]
    assert committed is not None and committed.offset == got.offset + 1
    other = KafkaConsumer(ORDERS, **kp(agent, "bob"), group_id="not-bobs", consumer_timeout_ms=5000)
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            other.poll(timeout_ms=5000)
    finally:
        other.close()
    producer = KafkaProducer(**kp(agent, "bob"), retries=0, enable_idempotence=False)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send(ORDERS, b"bob may not write", partition=0).get(timeout=15)
    finally:
        producer.close()


def test_metadata_lists_what_each_principal_may_describe(agent: AgentThread) -> None:
    for user, visible in (("alice", {ORDERS}), ("bob", {ORDERS}), ("admin", {ORDERS, PAYMENTS})):
        consumer = KafkaConsumer(**kp(agent, user))
        try:
            assert consumer.topics() >= visible
            assert not ({ORDERS, PAYMENTS} - visible) & consumer.topics(), user
        finally:
            consumer.close()


def test_topic_administration_needs_its_operations(agent: AgentThread, log: ObjectLog) -> None:
    alice = KafkaAdminClient(**kp(agent, "alice"))
    admin = KafkaAdminClient(**kp(agent, "admin"))
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            alice.create_topics([NewTopic("orders.eu", 1, 1)])
        with pytest.raises(TopicAuthorizationFailedError):
            alice.delete_topics([PAYMENTS])
        with pytest.raises(TopicAuthorizationFailedError):  # ALTER adds partitions
            alice.create_partitions({ORDERS: NewPartitions(4)})
        assert PAYMENTS in log.list_topics()
        assert log.topic(ORDERS, fresh=True).partitions == 2
        admin.create_topics([NewTopic("orders.eu", 1, 1)])
        assert "orders.eu" in log.list_topics()
    finally:
        alice.close()
        admin.close()


def test_transactional_ids_are_authorized(agent: AgentThread) -> None:
    allowed = KafkaProducer(**kp(agent, "alice"), transactional_id="alice-tx")
    try:
        allowed.init_transactions()
        allowed.begin_transaction()
        allowed.send(ORDERS, b"in a transaction", partition=0)
        allowed.commit_transaction()
    finally:
        allowed.close()
    refused = KafkaProducer(**kp(agent, "alice"), transactional_id="bob-tx")
    try:
        with pytest.raises(TransactionalIdAuthorizationFailedError):
            refused.init_transactions()
    finally:
        refused.close()


# ---- confluent-kafka -------------------------------------------------------------------------


def test_confluent_clients_are_refused_with_kafka_codes(agent: AgentThread) -> None:
    reports: list[KafkaError | None] = []
    producer = confluent_kafka.Producer(ck(agent, "alice", **{"enable.idempotence": True}))
    producer.produce(ORDERS, b"ok", partition=0, on_delivery=lambda e, m: reports.append(e))
    producer.flush(15)
    assert reports == [None]
    bob = confluent_kafka.Producer(ck(agent, "bob"))
    bob.produce(ORDERS, b"no", partition=0, on_delivery=lambda e, m: reports.append(e))
    bob.flush(15)
    assert reports[-1] is not None
    assert reports[-1].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    metadata = ConfluentAdmin(ck(agent, "bob")).list_topics(timeout=10)
    assert ORDERS in metadata.topics and PAYMENTS not in metadata.topics


def test_acl_apis_need_the_cluster(agent: AgentThread, log: ObjectLog) -> None:
    binding = AclBinding(
        CType.TOPIC,
        PAYMENTS,
        CPattern.LITERAL,
        "User:bob",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    alice, admin = ConfluentAdmin(ck(agent, "alice")), ConfluentAdmin(ck(agent, "admin"))
    with pytest.raises(KafkaException) as failure:
        alice.create_acls([binding])[binding].result(timeout=15)
    assert failure.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    admin.create_acls([binding])[binding].result(timeout=15)
    # the agent that made the change enforces it at once (its cache is invalidated)
    consumer = confluent_kafka.Consumer(
        ck(agent, "bob", **{"group.id": "bob-group", "auto.offset.reset": "earliest"})
    )
    try:
        consumer.assign([confluent_kafka.TopicPartition(PAYMENTS, 0, 0)])
        produce(log, PAYMENTS, b"paid", partition=0)
        message = consumer.poll(15)
        assert message is not None and message.error() is None and message.value() == b"paid"
    finally:
        consumer.close()


def test_authorized_operations_are_the_principals(agent: AgentThread) -> None:
    from confluent_kafka import TopicCollection

    admin = ConfluentAdmin(ck(agent, "alice"))
    described = admin.describe_topics(
        TopicCollection([ORDERS]), include_authorized_operations=True
    )[ORDERS].result(timeout=15)
    assert set(described.authorized_operations) == {AclOperation.WRITE, AclOperation.DESCRIBE}


def test_a_change_through_one_agent_holds_on_another_within_the_refresh(
    agent: AgentThread, log: ObjectLog
) -> None:
    """Two agents over one table: an ACL added through the first is enforced by the second
    within the second's refresh (0.5 s here; 5 s by default), a removal likewise."""
    access = AccessSettings(enabled=True, refresh_s=0.5)
    with ObjectLog(log.config) as own:
        other = AgentThread(own, agent_config(sasl=True, access=access)).start()
        try:
            admin = KafkaAdminClient(**kp(agent, "admin"))
            binding = KafkaACL(
                "User:bob", "*", ACLOperation.WRITE, ACLPermissionType.ALLOW,
                ResourcePattern(KafkaResourceType.TOPIC, "audit"),
            )  # fmt: skip
            try:
                assert not may_produce(other, "bob", "audit")
                admin.create_acls([binding])
                assert eventually(lambda: may_produce(other, "bob", "audit"))
                admin.delete_acls([binding])
                assert eventually(lambda: not may_produce(other, "bob", "audit"))
            finally:
                admin.close()
        finally:
            other.stop()


def may_produce(agent: AgentThread, user: str, topic: str) -> bool:
    reports: list[KafkaError | None] = []
    producer = confluent_kafka.Producer(ck(agent, user, **{"message.timeout.ms": 5000}))
    producer.produce(topic, b"x", partition=0, on_delivery=lambda e, m: reports.append(e))
    producer.flush(10)
    assert len(reports) == 1
    error = reports[0]
    assert error is None or error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, error
    return error is None


def eventually(check: Callable[[], bool], within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_configs_need_describe_configs_and_alter_configs(agent: AgentThread) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    alice, admin = ConfluentAdmin(ck(agent, "alice")), ConfluentAdmin(ck(agent, "admin"))
    read = ConfigResource("topic", ORDERS)
    change = ConfigResource("topic", ORDERS)
    change.add_incremental_config(
        ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)
    )
    for futures in (alice.describe_configs([read]), alice.incremental_alter_configs([change])):
        with pytest.raises(KafkaException) as failure:
            next(iter(futures.values())).result(timeout=15)
        assert failure.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    configs = next(iter(admin.describe_configs([read]).values())).result(timeout=15)
    assert configs["retention.ms"].value != "60000"  # alice's change was not made


def test_aiokafka_is_refused_with_the_same_code(agent: AgentThread) -> None:
    import asyncio

    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import TopicAuthorizationFailedError as AioTopicAuthorizationFailed

    async def produce() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=agent.address,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username="alice",
            sasl_plain_password=PASSWORDS["alice"],
        )
        await producer.start()
        try:
            await producer.send_and_wait(ORDERS, b"allowed", partition=0)
            with pytest.raises(AioTopicAuthorizationFailed):
                await producer.send_and_wait(PAYMENTS, b"refused", partition=0)
        finally:
            await producer.stop()

    asyncio.run(produce())
