"""A commit decided always completes (issue 36): an agent that decides a commit
(PrepareCommit) and dies before writing the markers leaves the decision in the table, and
another agent completes it, so read_committed consumers see the transaction whole, never half
and never lost. confluent-kafka (librdkafka) on both sides, two agents over one moto."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from confluent_kafka import KafkaException

from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.errors import StorageUnavailable
from objectlog.kafka.server import AgentThread
from objectlog.stores.transactions import Transaction, TxnState
from tests.functional.test_kafka_transactions import producer, read_all
from tests.kafka_agent_config import agent_config

OUT = "tx-out"


class DiesWritingMarkers:
    """The dying agent's MarkerWriter: the decision is written, no marker ever is."""

    def __init__(self) -> None:
        self.calls = 0

    def write_markers(self, txn: Transaction, commit: bool) -> None:
        self.calls += 1
        raise StorageUnavailable("the agent died before writing its markers")

    def open_partitions(self, txn: Transaction, partitions: Iterable[object]) -> None:
        raise AssertionError("not reached: the dying agent only decides")


def test_a_commit_decided_by_an_agent_that_died_is_completed_by_another(
    log: ObjectLog, log_config: Config
) -> None:
    log.create_topic(OUT, 2)
    dying = AgentThread(log, agent_config()).start()
    with ObjectLog(log_config) as other_log:
        survivor = AgentThread(other_log, agent_config()).start()
        try:
            p = producer(dying.address, "decided")
            p.begin_transaction()
            for i in range(4):
                p.produce(OUT, b"part-%d" % i, partition=i % 2)
            p.flush(10)
            markers = DiesWritingMarkers()
            log.transactions.markers = markers  # from here the agent dies at every completion
            with pytest.raises(KafkaException):
                p.commit_transaction(3)
            dying.stop()  # killed between PrepareCommit and the markers
            assert markers.calls >= 1
            assert other_log.transactions.store.get("decided").state is TxnState.PREPARE_COMMIT
            assert read_all(survivor.address, OUT, "read_committed") == []  # held at the LSO
            successor = producer(survivor.address, "decided")  # meets the decision: completes it
            txn = other_log.transactions.describe("decided")
            assert txn.state is TxnState.EMPTY and txn.producer_epoch == 1
            expected = sorted(b"part-%d" % i for i in range(4))
            assert read_all(survivor.address, OUT, "read_committed") == expected
            successor.begin_transaction()
            successor.produce(OUT, b"next", partition=0)
            successor.commit_transaction(30)
            assert read_all(survivor.address, OUT, "read_committed") == sorted([*expected, b"next"])
        finally:
            survivor.stop()
