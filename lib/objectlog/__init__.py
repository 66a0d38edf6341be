"""objectlog: a serverless, Kafka-style partitioned log on S3 and DynamoDB."""

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
from objectlog.fetch import FetchRequest, FetchResult
from objectlog.log import ObjectLog, Offsets
from objectlog.producer import Producer, RecordFuture
from objectlog.records import Record, RecordMetadata

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
