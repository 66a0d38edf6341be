"""The coordinator over the log (issue 36): AddPartitionsToTxn opens the transaction on each
partition's head, EndTxn's completion writes one marker per partition, a new instance of the
transactional id fences the old one and its open transaction's records are never read
committed, an expired transaction is aborted; on DynamoDB (moto) with the log's own stores."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from objectlog import ObjectLog
from objectlog.clock import ManualClock
from objectlog.services.transaction_log import PartitionMarkers
from objectlog.services.transactions import TransactionCoordinator
from objectlog.stores.metadata import kafka_producer
from objectlog.stores.transactions import Transaction, TxnState
from tests.functional import test_read_committed as rc

TOPIC = rc.TOPIC
ID = "pipeline-1"


class AppliedOffsets:
    """The OffsetApplier: which transactions' offsets were applied (the groups' part comes
    with TxnOffsetCommit on the agent)."""

    def __init__(self) -> None:
        self.applied: list[int] = []

    def settle(self, txn: Transaction, commit: bool) -> None:
        if commit:
            self.applied.append(txn.producer_epoch)


@pytest.fixture
def txlog(clocked_log: ObjectLog) -> Iterator[ObjectLog]:
    clocked_log.create_topic(TOPIC, 2)
    yield clocked_log


def coordinator(log: ObjectLog, offsets: AppliedOffsets | None = None) -> TransactionCoordinator:
    markers = PartitionMarkers(log.metadata, log._topic_id, log.clock)
    return TransactionCoordinator(
        log.items.transactions,
        log.clock,
        log.metadata.next_producer_id,
        markers,
        offsets or AppliedOffsets(),
        opener=markers,
    )


def lso(log: ObjectLog, partition: int = 0) -> tuple[int, int]:
    head = log.metadata.get_head(TOPIC, partition)
    assert head is not None
    return head.last_stable_offset, head.high_watermark


def test_a_committed_transaction_is_read_whole_once_its_markers_are_written(
    txlog: ObjectLog,
) -> None:
    offsets = AppliedOffsets()
    coord = coordinator(txlog, offsets)
    txn = coord.init_producer_id(ID, 60_000)
    rc.write(txlog, [b"before"])  # offset 0
    coord.add_partitions(ID, txn.producer_id, txn.producer_epoch, [(TOPIC, 0), (TOPIC, 1)])
    assert lso(txlog, 0) == (1, 1) and lso(txlog, 1) == (0, 0)  # opened at each next offset
    rc.write(txlog, [b"t-1", b"t-2"], kafka_producer(txn.producer_id))
    assert rc.read(txlog, "read_committed") == [(0, b"before")]
    done = coord.end_txn(ID, txn.producer_id, txn.producer_epoch, commit=True)
    assert done.state is TxnState.COMPLETE_COMMIT and offsets.applied == [txn.producer_epoch]
    assert lso(txlog, 0) == (4, 4) and lso(txlog, 1) == (1, 1)  # a marker in each partition
    assert rc.read(txlog, "read_committed") == [(0, b"before"), (1, b"t-1"), (2, b"t-2")]
    coord.complete(ID)  # completing again writes no second marker
    assert lso(txlog, 0) == (4, 4)


def test_a_new_instance_fences_the_old_one_and_aborts_its_transaction(txlog: ObjectLog) -> None:
    coord = coordinator(txlog)
    old = coord.init_producer_id(ID, 60_000)
    coord.add_partitions(ID, old.producer_id, old.producer_epoch, [(TOPIC, 0)])
    rc.write(txlog, [b"zombie"], kafka_producer(old.producer_id))
    new = coordinator(txlog).init_producer_id(ID, 60_000)  # another agent, another instance
    assert new.producer_epoch > old.producer_epoch
    assert lso(txlog, 0) == (2, 2)  # the abort marker (under the new epoch) closed it
    assert rc.read(txlog, "read_committed") == []
    assert rc.read(txlog, "read_uncommitted") == [(0, b"zombie")]


def test_an_expired_transaction_is_aborted_by_whoever_meets_it(
    txlog: ObjectLog, clock: ManualClock
) -> None:
    coord = coordinator(txlog)
    txn = coord.init_producer_id(ID, 1_000)
    coord.add_partitions(ID, txn.producer_id, txn.producer_epoch, [(TOPIC, 1)])
    assert lso(txlog, 1) == (0, 0)
    clock.advance(2_000)
    swept = coordinator(txlog).abort_if_expired(ID)
    assert swept is not None and swept.state is TxnState.COMPLETE_ABORT
    assert lso(txlog, 1) == (1, 1)
