"""objectlog's exceptions. Each carries a kind; retry decisions and HTTP status come from it."""

from __future__ import annotations

from enum import Enum


class ErrorKind(Enum):
    """What the caller should do about an error; the value is its HTTP status."""

    INVALID = 400
    UNAUTHENTICATED = 401
    FORBIDDEN = 403
    UNPROCESSABLE = 422
    NOT_FOUND = 404
    NOT_ACCEPTABLE = 406
    CONFLICT = 409
    OUT_OF_RANGE = 416
    TOO_LARGE = 413
    UNSUPPORTED_MEDIA_TYPE = 415
    RETRIABLE = 503
    UNKNOWN_OUTCOME = 504
    FATAL = 500

    @property
    def retriable(self) -> bool:
        return self in (ErrorKind.RETRIABLE, ErrorKind.UNKNOWN_OUTCOME)

    @property
    def http_status(self) -> int:
        return self.value


class ObjectLogError(Exception):
    """Base of every error objectlog raises."""

    kind: ErrorKind = ErrorKind.FATAL

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    @property
    def retriable(self) -> bool:
        return self.kind.retriable

    def to_dict(self) -> dict[str, object]:
        body: dict[str, object] = {"error": type(self).__name__, "message": self.message}
        if self.field is not None:
            body["field"] = self.field
        return body


class InvalidRequest(ObjectLogError):
    """The request is malformed or breaks a limit; nothing was stored."""

    kind = ErrorKind.INVALID


class InvalidTopicName(InvalidRequest):
    """The topic name breaks Kafka's naming rules."""


class InvalidConfig(InvalidRequest):
    """A topic config key is unknown or its value is out of range."""


class InvalidRecord(InvalidRequest):
    """A record breaks its topic's rules: a record without a key on a compacted topic, as
    Kafka refuses it (INVALID_RECORD). ``records``: the positions of the records that break
    them, among those checked together (Kafka's record_errors)."""

    def __init__(self, message: str, *, field: str | None = None, records: tuple[int, ...] = ()):
        super().__init__(message, field=field)
        self.records = records


class SchemaValidationFailed(InvalidRecord):
    """Records a validated topic refuses: no Schema Registry wire format, or a schema id not
    registered under the topic's subject (Kafka's INVALID_RECORD; HTTP 422)."""

    kind = ErrorKind.UNPROCESSABLE


class PolicyViolation(InvalidRequest):
    """The topic's config forbids the operation (deleting records from a topic whose
    cleanup.policy is compact only, as Kafka forbids it)."""


class RecordTooLarge(ObjectLogError):
    """A record exceeds the topic's max.message.bytes."""

    kind = ErrorKind.TOO_LARGE


class TopicNotFound(ObjectLogError):
    """The topic does not exist (or is being deleted)."""

    kind = ErrorKind.NOT_FOUND


class UnknownPartition(ObjectLogError):
    """The partition number is not below the topic's partition count."""

    kind = ErrorKind.NOT_FOUND


class TopicExists(ObjectLogError):
    """A topic with that name already exists."""

    kind = ErrorKind.CONFLICT


class OffsetOutOfRange(ObjectLogError):
    """The offset is below the log start offset or above the high watermark."""

    kind = ErrorKind.OUT_OF_RANGE

    def __init__(self, message: str, *, log_start_offset: int, high_watermark: int) -> None:
        super().__init__(message, field="offset")
        self.log_start_offset = log_start_offset
        self.high_watermark = high_watermark

    def to_dict(self) -> dict[str, object]:
        body = super().to_dict()
        body.update(log_start_offset=self.log_start_offset, high_watermark=self.high_watermark)
        return body


class OutOfOrderSequence(ObjectLogError):
    """The producer's sequence skipped ahead of what the partition last committed for it."""

    kind = ErrorKind.FATAL


class ProducerFenced(ObjectLogError):
    """A newer instance of this producer (a higher epoch) has written to the partition."""

    kind = ErrorKind.CONFLICT


class TransactionalIdFenced(ProducerFenced):
    """A newer epoch of the producer holds the transactional id: a new instance called
    InitProducerId, or the coordinator aborted a transaction that outlived its timeout (Kafka's
    PRODUCER_FENCED, fatal to the producer)."""


class InvalidProducerIdMapping(ObjectLogError):
    """The transactional id is unknown (or expired), or held by another producer id: call
    InitProducerId (Kafka's INVALID_PRODUCER_ID_MAPPING)."""

    kind = ErrorKind.CONFLICT


class InvalidTxnState(ObjectLogError):
    """The transaction's state refuses the request: EndTxn with nothing begun or against the
    decision taken, offsets for a group not added (Kafka's INVALID_TXN_STATE)."""

    kind = ErrorKind.CONFLICT


class ConcurrentTransactions(ObjectLogError):
    """The transaction is decided and being completed, or changed under every attempt: retry
    shortly (Kafka's CONCURRENT_TRANSACTIONS)."""

    kind = ErrorKind.RETRIABLE


class InvalidTransactionTimeout(InvalidRequest):
    """A transaction timeout not above 0 or above transaction.max.timeout.ms (Kafka's
    INVALID_TRANSACTION_TIMEOUT)."""


class TransactionTooLarge(InvalidRequest):
    """A transaction would hold more partitions, groups or pending offsets than its item may
    (the message says which); nothing changed."""


class TransactionalIdNotFound(ObjectLogError):
    """No transactional id of that name, or it expired (Kafka's TRANSACTIONAL_ID_NOT_FOUND)."""

    kind = ErrorKind.NOT_FOUND


class ConcurrentModification(ObjectLogError):
    """Another writer changed the item first; re-read and try again."""

    kind = ErrorKind.CONFLICT


class StorageUnavailable(ObjectLogError):
    """S3 or DynamoDB failed after the client's retries; nothing is known to have changed."""

    kind = ErrorKind.RETRIABLE


class UnknownOutcome(ObjectLogError):
    """A write was sent but its answer was lost: it may or may not have been applied."""

    kind = ErrorKind.UNKNOWN_OUTCOME


class ProducerClosed(ObjectLogError):
    """The producer was closed; no more records are accepted."""

    kind = ErrorKind.FATAL


class ObjectNotFound(ObjectLogError):
    """The S3 object (or byte range) does not exist."""

    kind = ErrorKind.NOT_FOUND


class ObjectExists(ObjectLogError):
    """A put-if-absent found the key already taken."""

    kind = ErrorKind.CONFLICT


class HorizonPassed(ObjectLogError):
    """The object is older than the partition's GC horizon: upload it again, then commit."""

    kind = ErrorKind.RETRIABLE


class SpillRaced(ObjectLogError):
    """A commit carried a spill planned on a head that another writer has changed since; the
    commit did not land (commit it again without the spill)."""

    kind = ErrorKind.RETRIABLE


class UnsupportedContentType(ObjectLogError):
    """The request's Content-Type is not one this route takes."""

    kind = ErrorKind.UNSUPPORTED_MEDIA_TYPE


class NotAcceptable(ObjectLogError):
    """The request's Accept header names no media type this route answers with."""

    kind = ErrorKind.NOT_ACCEPTABLE


class GroupNotFound(ObjectLogError):
    """The consumer group does not exist."""

    kind = ErrorKind.NOT_FOUND


class UnknownMemberId(ObjectLogError):
    """The member is not in the group (it left, or its session lease lapsed): join again."""

    kind = ErrorKind.NOT_FOUND


class UnstableOffsetCommit(ObjectLogError):
    """A transaction still holds the partition's committed offset pending: ask again when it
    ends (Kafka's UNSTABLE_OFFSET_COMMIT)."""

    kind = ErrorKind.RETRIABLE


class CommitFailed(ObjectLogError):
    """The partition is owned by another member or a newer generation: the commit is fenced."""

    kind = ErrorKind.CONFLICT


class GroupNotEmpty(ObjectLogError):
    """The group has live members; the operation needs it empty."""

    kind = ErrorKind.CONFLICT


class InconsistentGroupProtocol(ObjectLogError):
    """The member shares no assignment strategy with the group's members."""

    kind = ErrorKind.CONFLICT


class CorruptIndex(ObjectLogError):
    """An index ref does not match the object it points at."""

    kind = ErrorKind.FATAL


class LeaseLost(ObjectLogError):
    """Another holder took the lease (it expired, or was fenced): stop working under it."""

    kind = ErrorKind.CONFLICT


class ConsumerInstanceNotFound(ObjectLogError):
    """The REST Proxy consumer instance does not exist (deleted, or idle past its timeout)."""

    kind = ErrorKind.NOT_FOUND


class ConsumerInstanceExists(ObjectLogError):
    """A consumer instance of that name already exists in the group."""

    kind = ErrorKind.CONFLICT


class ConsumerFormatMismatch(NotAcceptable):
    """The embedded format asked for is not the consumer instance's format."""


class RecordNotJson(ObjectLogError):
    """A json consumer instance reached a record whose key or value is not JSON."""

    kind = ErrorKind.CONFLICT


class InvalidConsumerConfig(InvalidRequest):
    """A consumer instance's settings are not valid."""


class SchemaRegistryError(ObjectLogError):
    """A Schema Registry error; ``code`` is Confluent's error code for it (its REST API's
    ``error_code``), ``status`` the HTTP status Confluent answers it with."""

    code: int = 50001
    status: int = 500


class InvalidSchema(SchemaRegistryError):
    """A schema its type's parser refuses (the parser's message), or one whose references do
    not resolve."""

    kind = ErrorKind.INVALID
    code, status = 42201, 422


class InvalidSchemaVersion(SchemaRegistryError):
    """A version that is neither a positive number nor ``latest`` (or -1)."""

    kind = ErrorKind.INVALID
    code, status = 42202, 422


class InvalidCompatibilityLevel(SchemaRegistryError):
    """A compatibility level the registry does not know."""

    kind = ErrorKind.INVALID
    code, status = 42203, 422


class InvalidMode(SchemaRegistryError):
    """A mode the registry does not know, or one it cannot enter now."""

    kind = ErrorKind.INVALID
    code, status = 42204, 422


class OperationNotPermitted(SchemaRegistryError):
    """The registry's mode forbids the operation (registering in READONLY, an id given
    outside IMPORT)."""

    kind = ErrorKind.INVALID
    code, status = 42205, 422


class ReferenceExists(SchemaRegistryError):
    """Another schema references the version being deleted."""

    kind = ErrorKind.INVALID
    code, status = 42206, 422


class IncompatibleSchema(SchemaRegistryError):
    """The schema breaks the subject's compatibility level; the message gives the reasons."""

    kind = ErrorKind.CONFLICT
    code, status = 409, 409


class SubjectNotFound(SchemaRegistryError):
    """No (live) subject of that name."""

    kind = ErrorKind.NOT_FOUND
    code, status = 40401, 404


class SchemaVersionNotFound(SchemaRegistryError):
    """The subject has no (live) version of that number."""

    kind = ErrorKind.NOT_FOUND
    code, status = 40402, 404


class SchemaNotFound(SchemaRegistryError):
    """No schema of that id (or guid), or not under the subject asked about."""

    kind = ErrorKind.NOT_FOUND
    code, status = 40403, 404


class SubjectSoftDeleted(SchemaRegistryError):
    """The subject was soft-deleted already; delete it with permanent=true."""

    kind = ErrorKind.NOT_FOUND
    code, status = 40404, 404


class SubjectNotSoftDeleted(SchemaRegistryError):
    """A permanent delete of a subject that was not soft-deleted first."""

    kind = ErrorKind.NOT_FOUND
    code, status = 40405, 404


class SchemaVersionSoftDeleted(SchemaRegistryError):
    """The version was soft-deleted already; delete it with permanent=true."""

    kind = ErrorKind.NOT_FOUND
    code, status = 40406, 404


class SchemaVersionNotSoftDeleted(SchemaRegistryError):
    """A permanent delete of a version that was not soft-deleted first."""

    kind = ErrorKind.NOT_FOUND
    code, status = 40407, 404


class SubjectCompatibilityNotConfigured(SchemaRegistryError):
    """The subject has no compatibility level of its own (defaultToGlobal=false)."""

    kind = ErrorKind.NOT_FOUND
    code, status = 40408, 404


class SubjectModeNotConfigured(SchemaRegistryError):
    """The subject has no mode of its own (defaultToGlobal=false)."""

    kind = ErrorKind.NOT_FOUND
    code, status = 40409, 404


class RegistryBusy(SchemaRegistryError):
    """A subject changed under every attempt to change it; nothing was changed: try again."""

    kind = ErrorKind.RETRIABLE
    code, status = 50001, 503


class SchemaMismatch(ObjectLogError):
    """A key or value does not fit its schema (the message says where); nothing was written."""

    kind = ErrorKind.UNPROCESSABLE


class UndecodableRecord(ObjectLogError):
    """Stored bytes are not in the wire format of a schema the registry holds."""

    kind = ErrorKind.CONFLICT


class SchemaFormatRefused(ObjectLogError):
    """A schema-format produce REST Proxy refuses with 422 and the sub-code ``code``: a schema
    missing, invalid, incompatible or not found; nothing was stored."""

    kind = ErrorKind.UNPROCESSABLE

    def __init__(self, message: str, code: int, *, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.code = code


class AnswerTooLarge(ObjectLogError):
    """The records read make an answer larger than a function may give; nothing moved."""

    kind = ErrorKind.TOO_LARGE


class NotAuthenticated(ObjectLogError):
    """The request's credentials are missing, malformed or wrong (basic auth, a bearer token)."""

    kind = ErrorKind.UNAUTHENTICATED


class NotAuthorized(ObjectLogError):
    """The ACLs refuse the principal the operation on the resource (services.access decided);
    the message names all three (http.access.refusal); nothing was read or changed."""

    kind = ErrorKind.FORBIDDEN


class IssuerUnavailable(ObjectLogError):
    """The token issuer's keys (its JWKS) could not be fetched; nothing was decided."""

    kind = ErrorKind.RETRIABLE
