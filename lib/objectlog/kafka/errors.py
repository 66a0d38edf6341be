"""objectlog's errors as Kafka error codes: one table, used by every API the agent answers."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from objectlog.errors import (
    CommitFailed,
    ConcurrentTransactions,
    GroupNotEmpty,
    GroupNotFound,
    InconsistentGroupProtocol,
    InvalidConfig,
    InvalidProducerIdMapping,
    InvalidRecord,
    InvalidRequest,
    InvalidTopicName,
    InvalidTransactionTimeout,
    InvalidTxnState,
    ObjectLogError,
    OffsetOutOfRange,
    OutOfOrderSequence,
    PolicyViolation,
    ProducerFenced,
    RecordTooLarge,
    StorageUnavailable,
    TopicExists,
    TopicNotFound,
    TransactionalIdFenced,
    TransactionalIdNotFound,
    UnknownMemberId,
    UnknownOutcome,
    UnknownPartition,
    UnstableOffsetCommit,
)
from objectlog.kafka.batches import InvalidBatch

# Most specific first: InvalidTopicName, InvalidConfig, PolicyViolation and
# InvalidTransactionTimeout are InvalidRequests, TransactionalIdFenced a ProducerFenced. The
# coordinator's fencing is PRODUCER_FENCED (KIP-588); the versions before KIP-588's
# (InitProducerId < 4; AddPartitionsToTxn, AddOffsetsToTxn and EndTxn < 2; TxnOffsetCommit < 3)
# get INVALID_PRODUCER_EPOCH instead, as Kafka answers them: the handlers' choice.
CODES: tuple[tuple[type[Exception], ErrorCode], ...] = (
    (TopicNotFound, ErrorCode.unknown_topic_or_partition),
    (UnknownPartition, ErrorCode.unknown_topic_or_partition),
    (OffsetOutOfRange, ErrorCode.offset_out_of_range),
    (RecordTooLarge, ErrorCode.message_too_large),
    (InvalidTopicName, ErrorCode.invalid_topic_exception),
    (InvalidConfig, ErrorCode.invalid_config),
    (InvalidRecord, ErrorCode.invalid_record),
    (PolicyViolation, ErrorCode.policy_violation),
    (TopicExists, ErrorCode.topic_already_exists),
    (OutOfOrderSequence, ErrorCode.out_of_order_sequence_number),
    (TransactionalIdFenced, ErrorCode.producer_fenced),
    (ProducerFenced, ErrorCode.invalid_producer_epoch),
    (InvalidProducerIdMapping, ErrorCode.invalid_producer_id_mapping),
    (InvalidTxnState, ErrorCode.invalid_txn_state),
    (ConcurrentTransactions, ErrorCode.concurrent_transactions),
    (UnstableOffsetCommit, ErrorCode.unstable_offset_commit),
    (InvalidTransactionTimeout, ErrorCode.invalid_transaction_timeout),
    (TransactionalIdNotFound, ErrorCode.transactional_id_not_found),
    (UnknownMemberId, ErrorCode.unknown_member_id),
    (CommitFailed, ErrorCode.illegal_generation),
    (GroupNotFound, ErrorCode.group_id_not_found),
    (GroupNotEmpty, ErrorCode.non_empty_group),
    (InconsistentGroupProtocol, ErrorCode.inconsistent_group_protocol),
    (InvalidBatch, ErrorCode.corrupt_message),
    (InvalidRequest, ErrorCode.invalid_request),
    # the write may have landed: a retriable timeout, as Kafka answers when it cannot tell
    (UnknownOutcome, ErrorCode.request_timed_out),
    (StorageUnavailable, ErrorCode.kafka_storage_error),
)


def error_code(error: BaseException) -> ErrorCode:
    for kind, code in CODES:
        if isinstance(error, kind):
            return code
    if isinstance(error, ObjectLogError) and error.kind.retriable:
        return ErrorCode.kafka_storage_error
    return ErrorCode.unknown_server_error
