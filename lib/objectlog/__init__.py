"""objectlog: a serverless, Kafka-style partitioned log on S3 and DynamoDB.

The public names below load on first use (PEP 562): importing any ``objectlog.*`` module
imports this package first, and the Lambda handlers that need no client (the authorizer) or no
pyarrow must not pay for ``objectlog.clients.direct`` (pyarrow, numpy, boto3) at cold start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# public name -> the module that defines it
_MODULES = {
    "ObjectLog": "objectlog.clients.direct",
    "Producer": "objectlog.clients.producer",
    "RecordFuture": "objectlog.clients.producer",
    "Offsets": "objectlog.clients.values",
    "Config": "objectlog.config",
    "ErrorKind": "objectlog.errors",
    "InvalidRequest": "objectlog.errors",
    "ObjectLogError": "objectlog.errors",
    "OffsetOutOfRange": "objectlog.errors",
    "RecordTooLarge": "objectlog.errors",
    "TopicExists": "objectlog.errors",
    "TopicNotFound": "objectlog.errors",
    "UnknownOutcome": "objectlog.errors",
    "UnknownPartition": "objectlog.errors",
    "Record": "objectlog.format.records",
    "RecordMetadata": "objectlog.format.records",
    "FetchRequest": "objectlog.services.fetch",
    "FetchResult": "objectlog.services.fetch",
}

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


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'objectlog' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
