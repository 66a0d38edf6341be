"""The workload's consume-transform-produce member (Kafka's exactly-once pipeline), through
the Kafka agent with confluent-kafka, and what the transactional checks read of its output.

A member instance is a read_committed group member of TXN_GROUP on the workload's topic and a
transactional producer (``transactional.id`` fixed per member, so a new instance fences the
last). Per batch it consumed it opens a transaction, writes one output per input (its value
names the transaction and the input: txn_checker.output_value) to random partitions of
TXN_TOPIC, sends the group's offsets with send_offsets_to_transaction and commits; now and
then it aborts on purpose (then rewinds to the group's committed offsets), and now and then it
crashes mid-transaction: its outputs written, it abandons its producer and consumer without
closing them, and the next instance's InitProducerId fences them and aborts the transaction.
Each transaction is recorded (history.Txn) with what it was told: committed, aborted, or
unknown (a crash, or an error that left no answer).

When the workload stops consuming, the last instance ends its transaction and closes; then a
new instance of each transactional id runs InitProducerId alone, which completes or aborts
anything of that id still open, so the stuck-transaction check asks only whether the log's
heads agree that nothing is open.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from objectlog.clients.direct import ObjectLog
from objectlog.services.isolation import READ_COMMITTED, READ_UNCOMMITTED, end_for
from objectlog.tools.verify.history import (
    ABORTED,
    COMMITTED,
    UNKNOWN,
    History,
    Poll,
    StableSample,
    Txn,
)
from objectlog.tools.verify.kafka_trail import MEMBER_LOG
from objectlog.tools.verify.txn_checker import Rows, TxnFinal, output_value

TXN_TOPIC = "verify-txn-out"
TXN_GROUP = "verify-txn-group"
# The producers' transaction.timeout.ms: above a transaction's length under every fault on
# the embedded server (up to 16 s measured), so few expire; the drain does not wait for it
# (TxnMember._fence).
TXN_TIMEOUT_MS = 30_000
# Of transactions, aborted on purpose and abandoned mid-transaction; the first member's
# second transaction aborts and its third crashes, so a short run has both, also when the
# workload began to drain before them (a loaded machine: 4 transactions in a short run).
ABORT_SHARE = 0.1
CRASH_SHARE = 0.02
# Above a transaction's length under load (5-7 s on the embedded server's shared moto): a
# member dropped mid-transaction has its offsets refused (UNKNOWN_MEMBER_ID) and aborts.
MAX_POLL_INTERVAL_MS = 20_000
CALL_TIMEOUT_S = 30.0  # each transactional call's (librdkafka retries within it)
T = TypeVar("T")


def transactional_id(index: int) -> str:
    return f"verify-txn-{index}"


class TxnMember:
    """One pipeline member thread's lives (``run``), instance after instance."""

    def __init__(
        self,
        index: int,
        address: str,
        source: str,
        partitions: int,
        history: History,
        draining: threading.Event,
        stopping: threading.Event,
        seed: int,
    ) -> None:
        self.index = index
        self.address = address
        self.source = source
        self.partitions = partitions
        self.history = history
        self.draining = draining  # once set, no abort or crash the shares draw (planned ones go on)
        self.stopping = stopping
        self.rng = random.Random(f"{seed}-txn-member-{index}")
        self.ownership = 0  # bumped at every assignment change and rewind (checker.Poll)
        self.abandoned: list[Any] = []
        self.begun = 0  # transactions begun by this member's instances

    def run(self) -> None:
        number = 0
        try:
            while not self.stopping.is_set():
                number += 1
                ended = self._instance(f"txn-{self.index}-{number}")
                self.history.count(f"txn member {ended}")
            self._fence()
        finally:
            for client in self.abandoned:
                with contextlib.suppress(Exception):
                    client.close()

    def _fence(self, attempts: int = 5) -> None:
        """A last instance's InitProducerId, alone: it completes or aborts whatever of this
        transactional id is still open (the drain's, before the stuck-transaction check)."""
        from confluent_kafka import KafkaException

        for _ in range(attempts):
            try:
                _producer(self.address, transactional_id(self.index), self.history)
                return
            except KafkaException:
                time.sleep(0.5)
        self.history.count("txn final InitProducerId failed")

    # ---- one instance ------------------------------------------------------------------

    def _instance(self, name: str) -> str:
        """One instance's life; how it ended: "left", "crashed", "restarted"."""
        from confluent_kafka import Consumer, KafkaException

        try:
            producer = _producer(self.address, transactional_id(self.index), self.history)
        except KafkaException:
            self.history.count("txn InitProducerId failed")
            time.sleep(0.2)
            return "restarted"
        consumer = Consumer(
            {
                "bootstrap.servers": self.address,
                "group.id": TXN_GROUP,
                "client.id": name,
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 3_000,
                "heartbeat.interval.ms": 300,
                "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,  # when an abandoned one leaves
            }
        )

        def moved(how: str) -> Callable[[Any, Any], None]:
            def note(_: Any, partitions: Any) -> None:
                self.ownership += 1
                numbers = sorted(tp.partition for tp in partitions)
                MEMBER_LOG.debug("txn member %s %s %s", name, how, numbers)

            return note

        consumer.subscribe(
            [self.source],
            on_assign=moved("assigned"),
            on_revoke=moved("revoked"),
            on_lost=moved("lost"),
        )
        serial = 0
        while not self.stopping.is_set():
            try:
                # up to 2,000: a transaction costs the same few dozen requests whatever its
                # size, so a member that fell behind catches up in larger ones
                polled = consumer.consume(num_messages=self.rng.randint(50, 2_000), timeout=0.3)
            except KafkaException:
                continue
            messages: list[Any] = [m for m in polled if m.error() is None]
            if not messages:
                continue
            records = tuple((m.partition(), m.offset(), m.value()) for m in messages)
            self.history.add_poll(Poll(name, self.ownership, records, group=TXN_GROUP))
            serial += 1
            self.begun += 1  # across instances: one that failed early plans nothing away
            first = self.index == 0
            planned = {2: "abort", 3: "crash"}.get(self.begun, "") if first else ""
            ended = self._transaction(
                producer, consumer, f"t{name[4:]}.{serial}", messages, planned
            )
            if ended == "crashed":
                # The producer is kept, never closed (destroying it could end its transaction),
                # its transaction left open for the next instance's InitProducerId to fence.
                # The consumer leaves at once, as a crashed process's session ends: an
                # abandoned librdkafka consumer would heartbeat on, and the group wait
                # max.poll.interval.ms for it. It commits nothing (no auto commit).
                self.abandoned.append(producer)
                with contextlib.suppress(KafkaException, RuntimeError):
                    consumer.close()
                return ended
            if ended == "failed":
                with contextlib.suppress(KafkaException, RuntimeError):
                    consumer.close()
                return "restarted"
        with contextlib.suppress(KafkaException, RuntimeError):
            consumer.close()
        producer.flush(CALL_TIMEOUT_S)
        return "left"

    def _transaction(
        self, producer: Any, consumer: Any, name: str, messages: list[Any], planned: str
    ) -> str:
        """One transaction over messages; "committed", "aborted" (and rewound: the instance
        goes on), "crashed", or "failed" (the instance must end). planned: "abort", "crash",
        or "" (the shares decide)."""
        from confluent_kafka import KafkaException, TopicPartition

        calm = self.draining.is_set()
        crash = planned == "crash" or (not calm and self.rng.random() < CRASH_SHARE)
        abort = not crash and (planned == "abort" or (not calm and self.rng.random() < ABORT_SHARE))
        inputs = tuple((m.partition(), m.offset()) for m in messages)
        offsets = {m.partition(): m.offset() + 1 for m in messages}
        outputs: list[tuple[int, bytes]] = []

        def record(outcome: str, *, crashed: bool = False, error: str | None = None) -> None:
            txn = Txn(
                name,
                transactional_id(self.index),
                outcome,
                inputs,
                tuple(outputs),
                tuple(sorted(offsets.items())),
                crashed,
                error,
            )
            self.history.add_txn(txn)

        try:
            producer.begin_transaction()
            for m in messages:
                value = output_value(name, m.topic(), m.partition(), m.offset())
                partition = self.rng.randrange(self.partitions)
                producer.produce(TXN_TOPIC, value, partition=partition)
                outputs.append((partition, value))
            if crash:
                producer.flush(CALL_TIMEOUT_S)  # its outputs are in the log, uncommitted
                record(UNKNOWN, crashed=True)
                return "crashed"
            positions = [TopicPartition(self.source, p, o) for p, o in sorted(offsets.items())]
            metadata = consumer.consumer_group_metadata()
            _retrying(
                lambda: producer.send_offsets_to_transaction(positions, metadata, CALL_TIMEOUT_S)
            )
            if abort:
                producer.flush(CALL_TIMEOUT_S)  # written, then aborted
                _retrying(lambda: producer.abort_transaction(CALL_TIMEOUT_S))
                record(ABORTED, error="on purpose")
                return "aborted" if self._rewind(consumer) else "failed"
            _retrying(lambda: producer.commit_transaction(CALL_TIMEOUT_S))
            record(COMMITTED)
            return "committed"
        except KafkaException as e:
            error = e.args[0]
            self.history.count(f"txn error {error.name()}")
            if not error.txn_requires_abort():
                record(UNKNOWN, error=error.name())
                return "failed"
        try:
            _retrying(lambda: producer.abort_transaction(CALL_TIMEOUT_S))
        except KafkaException as e:
            record(UNKNOWN, error=f"{error.name()}, then abort: {e.args[0].name()}")
            return "failed"
        record(ABORTED, error=error.name())
        return "aborted" if self._rewind(consumer) else "failed"

    def _rewind(self, consumer: Any) -> bool:
        """Seek the assigned partitions back to the group's committed offsets (what an aborted
        transaction consumed is consumed again); False if that could not be done."""
        from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

        self.ownership += 1
        try:
            for tp in consumer.committed(consumer.assignment(), timeout=10):
                offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
                consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
        except KafkaException:
            self.history.count("txn rewind failed")
            return False
        return True


def _producer(address: str, txn_id: str, history: History) -> Any:
    """A transactional producer, its InitProducerId done (it fences every older instance)."""
    from confluent_kafka import KafkaException, Producer

    producer = Producer(
        {
            "bootstrap.servers": address,
            "transactional.id": txn_id,
            "transaction.timeout.ms": TXN_TIMEOUT_MS,
            "message.timeout.ms": TXN_TIMEOUT_MS,
            "linger.ms": 5,
            "retry.backoff.ms": 20,
        }
    )
    try:
        _retrying(lambda: producer.init_transactions(CALL_TIMEOUT_S))
    except KafkaException as e:
        history.count(f"txn error {e.args[0].name()}")
        raise
    return producer


def _retrying(call: Callable[[], T], attempts: int = 5) -> T:
    """call, again while it raises a retriable KafkaException (librdkafka's advice for the
    transactional calls), up to attempts."""
    from confluent_kafka import KafkaException

    for attempt in range(attempts):
        try:
            return call()
        except KafkaException as e:
            if not e.args[0].retriable() or attempt == attempts - 1:
                raise
            time.sleep(0.1)
    raise AssertionError("unreachable")


# ---- what the checks read ----------------------------------------------------------------


def sample_stable(log: ObjectLog, history: History, partitions: int) -> None:
    """The output topic's last stable offsets and high watermarks, from one read of its heads
    (the monitor's, as it samples committed offsets)."""
    for partition, head in log.metadata.get_heads(TXN_TOPIC, range(partitions)).items():
        history.add_stable(StableSample(partition, head.last_stable_offset, head.next_offset))


def read_isolated(log: ObjectLog, partition: int, start: int, isolation: str) -> Rows:
    """Every (offset, value) of an output partition from start, at an isolation level, until
    its end (the last stable offset or the high watermark); a fetch that reads only holes (a
    marker, an aborted range) moves on; one that stops moving ends the read short, which the
    gap check shows."""
    rows: list[tuple[int, bytes | None]] = []
    offset = start
    while True:
        result = log.fetch(
            TXN_TOPIC, partition, offset, max_bytes=1 << 20, isolation_level=isolation
        )
        rows += [(record.offset, record.value) for record in result.records]
        end = end_for(isolation, result.high_watermark, result.last_stable_offset)
        if result.next_offset <= offset or result.next_offset >= end:
            return rows
        offset = result.next_offset


def read_final(log: ObjectLog, partitions: int, group_committed: dict[int, int]) -> TxnFinal:
    """The output topic as a client with no faults reads it after the run."""
    committed, uncommitted, refs, opened = {}, {}, {}, {}
    log_start, stable, ends = {}, {}, {}
    for partition, head in log.metadata.get_heads(TXN_TOPIC, range(partitions)).items():
        start = head.log_start_offset
        log_start[partition], stable[partition] = start, head.last_stable_offset
        ends[partition], opened[partition] = head.next_offset, dict(head.open_txns)
        refs[partition] = list(log.index.placed_refs(head, start))
        committed[partition] = read_isolated(log, partition, start, READ_COMMITTED)
        uncommitted[partition] = read_isolated(log, partition, start, READ_UNCOMMITTED)
    return TxnFinal(committed, uncommitted, log_start, stable, ends, refs, group_committed, opened)
