"""The agent's transaction admin APIs (KIP-664) over the wire, with real clients: a
transaction opened by confluent-kafka's transactional producer is listed Ongoing with its
partitions, then CompleteCommit once committed, and DescribeProducers shows its first offset
on each partition until then; idempotent producers show their windows, objectlog's own
producers are left out. Asked by kafka-python 3.0.12's KafkaAdminClient (list_transactions,
describe_transactions, describe_producers) and by Kafka's Java AdminClient (kafka-clients
3.9.1: listTransactions with and without KIP-994's duration filter, describeTransactions,
describeProducers; tests/java/TxnAdminChecks.java, jars from `make kafka-java`).
confluent-kafka 2.16's AdminClient has none of these calls."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import kafka.errors
import pytest
from confluent_kafka import Producer
from kafka import KafkaAdminClient
from kafka import TopicPartition as TP
from kafka.admin._transactions import TransactionState

from objectlog import ObjectLog
from objectlog.kafka.server import AgentThread
from tests.java_programs import compile_program, run_program
from tests.kafka_agent_config import agent_config

TOPIC, TXN_ID, TIMEOUT_MS = "txa", "txa-writer", 60_000


@pytest.fixture(scope="module")
def checks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TxnAdminChecks compiled once against the jars (tests.java_programs)."""
    return compile_program("TxnAdminChecks", tmp_path_factory.mktemp("java-classes"))


def java(classes: Path, address: str, *checks: str) -> list[str]:
    return run_program(classes, "TxnAdminChecks", address, *checks)


@pytest.fixture
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    log.create_topic(TOPIC, 2)
    running = AgentThread(log, agent_config()).start()
    yield running
    running.stop()


@pytest.fixture
def admin(agent: AgentThread) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=agent.address, request_timeout_ms=20_000)
    yield client
    client.close()


def test_a_transaction_is_listed_described_and_its_producers_shown_until_committed(
    log: ObjectLog, agent: AgentThread, admin: KafkaAdminClient, checks: Path
) -> None:
    with log.producer() as own:  # objectlog's own producer: not a Kafka producer, left out
        for n in range(3):
            own.send(TOPIC, b"plain-%d" % n, partition=0)
    idempotent = Producer({"bootstrap.servers": agent.address, "enable.idempotence": True})
    for n in range(2):
        idempotent.produce(TOPIC, b"idempotent-%d" % n, partition=1)
    assert idempotent.flush(10) == 0
    writer = Producer(
        {
            "bootstrap.servers": agent.address,
            "transactional.id": TXN_ID,
            "transaction.timeout.ms": TIMEOUT_MS,
        }
    )
    writer.init_transactions(30)
    before = int(time.time() * 1000)
    writer.begin_transaction()
    for n in range(3):
        writer.produce(TOPIC, b"txn-%d" % n, partition=0 if n < 2 else 1)
    assert writer.flush(10) == 0

    (listing,) = admin.list_transactions()[1]
    pid = listing.producer_id
    assert (listing.transactional_id, listing.state) == (TXN_ID, TransactionState.ONGOING)
    described = admin.describe_transactions([TXN_ID])[TXN_ID]
    assert (described.state, described.producer_id, described.producer_epoch) == (
        TransactionState.ONGOING,
        pid,
        0,
    )
    assert described.topic_partitions == {TP(TOPIC, 0), TP(TOPIC, 1)}
    assert described.transaction_timeout_ms == TIMEOUT_MS
    assert before - 1000 <= described.transaction_start_time_ms <= time.time() * 1000
    producers = admin.describe_producers([TP(TOPIC, 0), TP(TOPIC, 1)])
    (on_zero,) = producers[TP(TOPIC, 0)].active_producers
    assert (on_zero.producer_id, on_zero.producer_epoch, on_zero.last_sequence) == (pid, 0, 1)
    assert on_zero.current_transaction_start_offset == 3  # after the 3 plain records
    assert on_zero.last_timestamp >= before - 1000  # the commit's time, to the second
    on_one = {p.producer_id: p for p in producers[TP(TOPIC, 1)].active_producers}
    assert on_one[pid].current_transaction_start_offset == 2  # after 2 idempotent records
    (other,) = set(on_one) - {pid}
    assert (on_one[other].last_sequence, on_one[other].current_transaction_start_offset) == (1, -1)

    assert java(
        checks,
        agent.address,
        "list",
        "longer:0",
        "longer:3600000",
        f"describe:{TXN_ID}",
        "describe:nope",
        f"producers:{TOPIC}:0",
    ) == [
        f"listing {TXN_ID} producer {pid} state Ongoing",
        f"listing {TXN_ID} producer {pid} state Ongoing",  # running longer than 0 ms
        f"txn {TXN_ID} state Ongoing producer {pid} epoch 0 timeout {TIMEOUT_MS} started yes "
        f"partitions {TOPIC}:0,{TOPIC}:1",
        "error nope TransactionalIdNotFoundException",
        f"producer {TOPIC}:0 id {pid} epoch 0 last-sequence 1 txn-start 3 coordinator-epoch none",
    ]

    writer.commit_transaction(30)
    (listing,) = admin.list_transactions()[1]
    assert (listing.producer_id, listing.state) == (pid, TransactionState.COMPLETE_COMMIT)
    assert admin.list_transactions(duration_filter_ms=0) == {1: []}  # no longer running
    described = admin.describe_transactions([TXN_ID])[TXN_ID]
    assert (described.state, described.transaction_start_time_ms) == (
        TransactionState.COMPLETE_COMMIT,
        -1,
    )
    assert described.topic_partitions == set()
    (done,) = admin.describe_producers([TP(TOPIC, 0)])[TP(TOPIC, 0)].active_producers
    assert (done.producer_id, done.last_sequence, done.current_transaction_start_offset) == (
        pid,
        1,
        -1,
    )


def test_unknown_ids_and_partitions_are_refused_as_kafka_refuses_them(
    agent: AgentThread, admin: KafkaAdminClient
) -> None:
    with pytest.raises(kafka.errors.TransactionalIdNotFoundError):
        admin.describe_transactions(["nobody"])
    with pytest.raises(kafka.errors.UnknownTopicOrPartitionError, match="none numbered 7"):
        admin.describe_producers([TP(TOPIC, 7)], broker_id=1)
    with pytest.raises(kafka.errors.UnknownTopicOrPartitionError, match="does not exist"):
        admin.describe_producers([TP("no-such-topic", 0)], broker_id=1)
    assert admin.list_transactions(state_filters=["Ongoing"]) == {1: []}
