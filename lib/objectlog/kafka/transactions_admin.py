"""Kafka's transaction admin APIs on the agent (KIP-664, issue 36): ListTransactions (v0-1,
v1's duration filter from KIP-994), DescribeTransactions (v0) and DescribeProducers (v0), the
versions a Kafka 3.9 broker offers. kafka-transactions.sh, the Java AdminClient's
listTransactions, describeTransactions and describeProducers, and kafka-python's use them to
find hanging transactions.

- ListTransactions and DescribeTransactions read the coordinator's items
  (ObjectLog.transactions: ``list`` reads the registry and one BatchGetItem per 100 ids, as
  ``objectlog transactions list`` does; ``describe`` one GetItem per id). Every agent is the
  coordinator of every id, so one agent's answer lists them all.
- DescribeProducers reads the partitions' heads (one BatchGetItem per topic): each Kafka
  producer's idempotence window (epoch, last sequence, the time of its last write) and each
  transaction open on the partition (its first offset, stores.txn_marks), including one opened
  by AddPartitionsToTxn that has written nothing yet: it holds the last stable offset already.

Where this differs from Kafka, on purpose: a producer's last timestamp is the time its last
batch was committed, to the second (what the head keeps), not the batch's largest timestamp;
the coordinator epoch is always -1 (objectlog's coordinator has none: any agent is it); a
duration filter lists only open transactions (Ongoing, PrepareCommit, PrepareAbort: those
with a start), where Kafka also lists Empty ones, whose start is -1.

Refusals, each logged with its reason: a transactional id with no transaction is
TRANSACTIONAL_ID_NOT_FOUND (the coordinator logs it); a topic or partition that does not exist
is UNKNOWN_TOPIC_OR_PARTITION with a message; the table unavailable is COORDINATOR_NOT_AVAILABLE
(clients retry it); state filters naming no Kafka state come back in unknown_state_filters.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Collection, Iterable
from typing import Any

from kio.schema.errors import ErrorCode

from objectlog.errors import InvalidRequest, ObjectLogError, TopicNotFound
from objectlog.kafka.context import ApiContext
from objectlog.kafka.errors import error_code
from objectlog.kafka.wire import Request
from objectlog.stores.metadata import PartitionHead, kafka_producer
from objectlog.stores.transactions import Transaction, TxnState

logger = logging.getLogger(__name__)

NONE = -1  # Kafka's value for a time, sequence, offset or epoch there is none of
# States a Kafka coordinator knows and objectlog's never holds: a filter naming one is not
# unknown (Kafka would not report it so), it matches nothing.
KAFKA_ONLY_STATES = frozenset({"Dead", "PrepareEpochFence"})
STATES = {state.value: state for state in TxnState}


class TransactionsAdminApi:
    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx

    async def list_transactions(self, request: Request) -> dict[str, Any]:
        body = request.body
        asked = list(body.state_filters)
        unknown = [name for name in asked if name not in STATES and name not in KAFKA_ONLY_STATES]
        if unknown:
            logger.info(
                "ListTransactions: state filters %s name no transaction state (Kafka's: %s); "
                "answered in unknown_state_filters",
                unknown,
                ", ".join([*STATES, *sorted(KAFKA_ONLY_STATES)]),
            )
        states = {STATES[name] for name in asked if name in STATES}
        answer: dict[str, Any] = {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "unknown_state_filters": unknown,
            "transaction_states": [],
        }
        if asked and not states:  # every filter names a state no transaction here is in
            return answer
        duration_ms = int(getattr(body, "duration_filter", NONE))
        try:
            found = await self.ctx.call(
                self._list, states, [int(p) for p in body.producer_id_filters], duration_ms
            )
        except ObjectLogError as e:
            answer["error_code"] = _coordinator_code(e, "ListTransactions")
            return answer
        answer["transaction_states"] = [
            {
                "transactional_id": txn.transactional_id,
                "producer_id": txn.producer_id,
                "transaction_state": txn.state.value,
            }
            for txn in found
        ]
        return answer

    def _list(
        self, states: Collection[TxnState], producer_ids: Collection[int], duration_ms: int
    ) -> list[Transaction]:
        coordinator = self.ctx.log.transactions
        found = coordinator.list(states, producer_ids)
        if duration_ms < 0:
            return found
        now = coordinator.clock.now_ms()
        return [txn for txn in found if running_longer(txn, now, duration_ms)]

    async def describe_transactions(self, request: Request) -> dict[str, Any]:
        ids = list(request.body.transactional_ids)
        states = await self.ctx.call(self._describe, ids)
        return {"throttle_time": 0, "transaction_states": states}

    def _describe(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        return [self._describe_one(transactional_id) for transactional_id in ids]

    def _describe_one(self, transactional_id: str) -> dict[str, Any]:
        try:  # the coordinator logs a refusal with its reason
            txn = self.ctx.log.transactions.describe(transactional_id)
        except InvalidRequest:  # empty or too long: no such id can hold a transaction
            return not_described(transactional_id, ErrorCode.transactional_id_not_found)
        except ObjectLogError as e:
            return not_described(transactional_id, _coordinator_code(e))
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, partition in sorted(txn.partitions):
            by_topic[topic].append(partition)
        return {
            "error_code": ErrorCode.none,
            "transactional_id": transactional_id,
            "transaction_state": txn.state.value,
            "transaction_timeout": txn.timeout_ms,
            "transaction_start_time": NONE if txn.started_ms is None else txn.started_ms,
            "producer_id": txn.producer_id,
            "producer_epoch": txn.producer_epoch,
            "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
        }

    async def describe_producers(self, request: Request) -> dict[str, Any]:
        topics = []
        for topic in request.body.topics:
            asked = [int(p) for p in topic.partition_indexes]
            partitions = await self.ctx.call(self._producers, topic.name, asked)
            topics.append({"name": topic.name, "partitions": partitions})
        return {"throttle_time": 0, "topics": topics}

    def _producers(self, name: str, asked: list[int]) -> list[dict[str, Any]]:
        """Each partition asked for, in the request's order, from one read of its heads."""
        log = self.ctx.log
        try:
            topic = log.topic(name, fresh=True)
            exist = sorted({p for p in asked if 0 <= p < topic.partitions})
            heads = log.metadata.get_heads(name, exist) if exist else {}
        except TopicNotFound:
            return [_no_partition(name, p, f"topic {name!r} does not exist") for p in asked]
        except ObjectLogError as e:
            logger.warning("DescribeProducers of topic %r failed: %s", name, e)
            return [_partition(p, error_code(e), [], str(e)) for p in asked]
        answers = []
        for p in asked:
            head = heads.get(p)
            if head is None or head.topic_id != topic.topic_id:
                reason = f"topic {name!r} has {topic.partitions} partitions, none numbered {p}"
                answers.append(_no_partition(name, p, reason))
            else:
                answers.append(_partition(p, ErrorCode.none, active_producers(head)))
        return answers


def running_longer(txn: Transaction, now_ms: int, duration_ms: int) -> bool:
    """KIP-994's duration filter: an open transaction that started more than duration_ms
    before now (Kafka compares the same way); one with no start (Empty, Complete*) is not
    running."""
    return txn.started_ms is not None and now_ms - txn.started_ms > duration_ms


def active_producers(head: PartitionHead) -> list[dict[str, Any]]:
    """DescribeProducers' rows for one head, by producer id: the Kafka producers whose window
    it keeps and those with a transaction open on it (objectlog's own producers, which are not
    Kafka's, are left out)."""
    rows: dict[int, dict[str, Any]] = {}
    for key, state in head.producers.items():
        producer_id = kafka_producer_id(key)
        if producer_id is None or state.window is None:
            continue
        rows[producer_id] = _producer_row(
            producer_id, state.window.epoch, state.sequence, state.last_use_s * 1000
        )
    for key, (epoch, first_offset) in head.open_txns.items():
        producer_id = kafka_producer_id(key)
        if producer_id is None:
            continue
        row = rows.setdefault(producer_id, _producer_row(producer_id, epoch, NONE, NONE))
        row["producer_epoch"] = max(row["producer_epoch"], epoch)  # a fencing epoch's abort
        row["current_txn_start_offset"] = first_offset
    return [rows[producer_id] for producer_id in sorted(rows)]


def kafka_producer_id(key: str) -> int | None:
    """The Kafka producer id a head's producer key names (stores.metadata.kafka_producer),
    None for a key of objectlog's own producers."""
    try:
        producer_id = int(key[1:])
    except ValueError:
        return None
    return producer_id if kafka_producer(producer_id) == key else None


def _producer_row(producer_id: int, epoch: int, sequence: int, time_ms: int) -> dict[str, Any]:
    return {
        "producer_id": producer_id,
        "producer_epoch": epoch,
        "last_sequence": sequence,
        "last_timestamp": time_ms,
        "coordinator_epoch": NONE,
        "current_txn_start_offset": NONE,
    }


def _partition(
    partition: int, code: ErrorCode, producers: list[dict[str, Any]], message: str | None = None
) -> dict[str, Any]:
    return {
        "partition_index": partition,
        "error_code": code,
        "error_message": message,
        "active_producers": producers,
    }


def _no_partition(topic: str, partition: int, reason: str) -> dict[str, Any]:
    logger.warning("DescribeProducers of %s/%d refused: %s", topic, partition, reason)
    return _partition(partition, ErrorCode.unknown_topic_or_partition, [], reason)


def not_described(transactional_id: str, code: ErrorCode) -> dict[str, Any]:
    return {
        "error_code": code,
        "transactional_id": transactional_id,
        "transaction_state": "",
        "transaction_timeout": 0,
        "transaction_start_time": NONE,
        "producer_id": NONE,
        "producer_epoch": NONE,
        "topics": [],
    }


def _coordinator_code(error: ObjectLogError, what: str | None = None) -> ErrorCode:
    """The table unavailable is COORDINATOR_NOT_AVAILABLE (clients retry it, finding the
    coordinator again); any other failure its own code. Logged with its reason when ``what``
    names the API (the coordinator logs its own refusals)."""
    code = ErrorCode.coordinator_not_available if error.retriable else error_code(error)
    if what is not None:
        logger.warning("%s refused with %s: %s", what, code.name, error)
    return code
