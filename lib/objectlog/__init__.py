"""objectlog: a serverless, Kafka-style partitioned log on S3 and DynamoDB."""

from objectlog.clients.direct import ObjectLog
from objectlog.clients.producer import Producer, RecordFuture
from objectlog.clients.values import Offsets
from objectlog.config import Config
from objectlog.errors import (
    ErrorKind,
    InvalidRequest,
    ObjectLogError,
    OffsetOutOfRange,
    RecordTooLarge,
    TopicExists,
    TopicNotFound,
    UnknownOutcome,
    UnknownPartition,
)
from objectlog.format.records import Record, RecordMetadata
from objectlog.services.fetch import FetchRequest, FetchResult

__all__ = [
    "Config",
    "ErrorKind",
    "FetchRequest",
    "FetchResult",
    "InvalidRequest",
    "ObjectLog",
    "ObjectLogError",
    "OffsetOutOfRange",
    "Offsets",
    "Producer",
    "Record",
    "RecordFuture",
    "RecordMetadata",
    "RecordTooLarge",
    "TopicExists",
    "TopicNotFound",
    "UnknownOutcome",
    "UnknownPartition",
]
