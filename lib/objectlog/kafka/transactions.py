"""Kafka's transaction APIs on the agent (issue 36, docs/transactions.md): InitProducerId with a
transactional id, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn, each one
call of the stateless coordinator (ObjectLog.transactions), so any agent serves any request.

Transaction protocol version 1 (KIP-98, KIP-360, KIP-447, KIP-588) at the versions Kafka 3.x
clients and librdkafka send: AddPartitionsToTxn 0-3, AddOffsetsToTxn 0-3, TxnOffsetCommit 0-3,
EndTxn 0-3 (KIP-890 part 2's EndTxn v5 and Produce v12 are not offered). A fenced producer
gets PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH at the versions before KIP-588's. Every
refusal is logged by the coordinator with its reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from objectlog.errors import ObjectLogError
from objectlog.kafka.context import ApiContext
from objectlog.kafka.errors import error_code
from objectlog.kafka.wire import Request
from objectlog.stores.groups import TopicPartition
from objectlog.stores.transactions import PendingOffset, Transaction, offsets_mark

logger = logging.getLogger(__name__)

# The first version of each API that answers PRODUCER_FENCED (KIP-588); before it, a fenced
# producer gets INVALID_PRODUCER_EPOCH, as Kafka answers it.
INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT = (
    22,
    24,
    25,
    26,
    28,
)
PRODUCER_FENCED_FROM = {
    INIT_PRODUCER_ID: 4,
    ADD_PARTITIONS_TO_TXN: 2,
    ADD_OFFSETS_TO_TXN: 2,
    END_TXN: 2,
    TXN_OFFSET_COMMIT: 3,
}

# group, member id (None: not named), generation, the transaction's mark, partitions -> code
MemberCheck = Callable[[str, str | None, int, str, Sequence[TopicPartition]], ErrorCode]


class MemberRefused(ObjectLogError):
    """TxnOffsetCommit's member or generation is not the group's (KIP-447)."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(f"the group refuses the member: {code.name}")
        self.code = code


class TransactionsApi:
    def __init__(self, ctx: ApiContext, check_member: MemberCheck) -> None:
        self.ctx = ctx
        self.check_member = check_member

    async def init_producer_id(self, request: Request) -> dict[str, Any]:
        """InitProducerId with a transactional id (ProduceApi handles the others)."""
        body = request.body
        coordinator = self.ctx.log.transactions
        try:
            txn = await self.ctx.call(
                coordinator.init_producer_id,
                body.transactional_id,
                int(body.transaction_timeout.total_seconds() * 1000),
                getattr(body, "producer_id", -1),
                getattr(body, "producer_epoch", -1),
            )
        except ObjectLogError as e:
            return {
                "throttle_time": 0,
                "error_code": _code(e, request),
                "producer_id": -1,
                "producer_epoch": -1,
            }
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "producer_id": txn.producer_id,
            "producer_epoch": txn.producer_epoch,
        }

    async def add_partitions_to_txn(self, request: Request) -> dict[str, Any]:
        body = request.body
        topics = body.v3_and_below_topics
        wanted = [(topic.name, int(p)) for topic in topics for p in topic.partitions]
        code = ErrorCode.none
        try:
            for name in {name for name, _ in wanted}:  # an unknown topic fails them all
                await self.ctx.call(self.ctx.log.topic, name)
            await self.ctx.call(
                self.ctx.log.transactions.add_partitions,
                body.v3_and_below_transactional_id,
                body.v3_and_below_producer_id,
                body.v3_and_below_producer_epoch,
                wanted,
            )
        except ObjectLogError as e:
            code = _code(e, request)
        return {
            "throttle_time": 0,
            "results_by_topic_v3_and_below": [
                {
                    "name": topic.name,
                    "results_by_partition": [
                        {"partition_index": p, "partition_error_code": code}
                        for p in topic.partitions
                    ],
                }
                for topic in topics
            ],
        }

    async def add_offsets_to_txn(self, request: Request) -> dict[str, Any]:
        body = request.body
        code = await self._call(
            request,
            self.ctx.log.transactions.add_offsets,
            body.transactional_id,
            body.producer_id,
            body.producer_epoch,
            body.group_id,
        )
        return {"throttle_time": 0, "error_code": code}

    async def end_txn(self, request: Request) -> dict[str, Any]:
        body = request.body
        code = await self._call(
            request,
            self.ctx.log.transactions.end_txn,
            body.transactional_id,
            body.producer_id,
            body.producer_epoch,
            bool(body.committed),
        )
        return {"throttle_time": 0, "error_code": code}

    async def txn_offset_commit(self, request: Request) -> dict[str, Any]:
        """The offsets are held in the transaction and applied to the group when it commits;
        the member and its generation are checked now, as KIP-447 has the group coordinator
        do it (a classic group's document). A commit that names no member (generation -1,
        as every TxnOffsetCommit before v3 is, and aiokafka's) is not checked: Kafka accepts
        it in a group with members, unlike a plain OffsetCommit."""
        body = request.body
        generation = getattr(body, "generation_id", -1)
        member_id = getattr(body, "member_id", "") or ""
        instance = getattr(body, "group_instance_id", None)
        named = generation >= 0 or bool(member_id) or instance is not None
        offsets = {
            TopicPartition(topic.name, p.partition_index): PendingOffset(
                p.committed_offset,
                getattr(p, "committed_leader_epoch", -1),
                p.committed_metadata or "",
                generation,
            )
            for topic in body.topics
            for p in topic.partitions
        }

        def member_check(txn: Transaction) -> None:
            code = self.check_member(
                body.group_id,
                member_id if named else None,
                generation,
                offsets_mark(txn),
                sorted(offsets),
            )
            if code != ErrorCode.none:
                raise MemberRefused(code)

        code = await self._call(
            request,
            self.ctx.log.transactions.txn_offset_commit,
            body.transactional_id,
            body.producer_id,
            body.producer_epoch,
            body.group_id,
            offsets,
            member_check,
        )
        return {
            "throttle_time": 0,
            "topics": [
                {
                    "name": topic.name,
                    "partitions": [
                        {"partition_index": p.partition_index, "error_code": code}
                        for p in topic.partitions
                    ],
                }
                for topic in body.topics
            ],
        }

    async def _call(self, request: Request, call: Callable[..., Any], *args: Any) -> ErrorCode:
        try:
            await self.ctx.call(call, *args)
        except ObjectLogError as e:
            return _code(e, request)
        return ErrorCode.none


def _code(error: ObjectLogError, request: Request) -> ErrorCode:
    """The Kafka error code of a refusal, at the request's version."""
    if isinstance(error, MemberRefused):
        return error.code
    code = error_code(error)
    first = PRODUCER_FENCED_FROM.get(request.api_key, 0)
    if code == ErrorCode.producer_fenced and request.api_version < first:
        return ErrorCode.invalid_producer_epoch
    return code
