"""Where a Spark job finds objectlog: reader and writer options, else the environment.

Spark pickles readers and writers to ship them to executors, so they carry a Config, never a
live ObjectLog (boto3 clients do not pickle). Each Python worker opens one ObjectLog per
Config and keeps it: Spark reuses its Python workers across tasks, so the clients, the
manifest cache and the connection pools survive from one task to the next.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from objectlog.clients.direct import ObjectLog
from objectlog.config import Config, normalize_prefix

# Option names (case-insensitive, as every Spark option): the connection's own settings.
ENDPOINT = "endpoint"
BUCKET = "bucket"
TABLE = "table"
PREFIX = "prefix"
REGION = "region"
OBJECTS_DIR = "objectsDir"  # objectlog's own: read the objects from a local copy of the bucket

_logs: dict[tuple[Any, ...], ObjectLog] = {}
_logs_lock = threading.Lock()


def lowered(options: Mapping[str, str]) -> dict[str, str]:
    """Options with lower-case names: Spark's are case-insensitive, keyword arguments are not."""
    return {str(name).lower(): str(value) for name, value in options.items()}


def connection_config(options: Mapping[str, str]) -> Config:
    """The options' endpoint, bucket, table, prefix and region over Config.from_env()."""
    given = lowered(options)
    overrides: dict[str, Any] = {}
    for option in (BUCKET, TABLE, REGION):
        if given.get(option):
            overrides[option] = given[option]
    if given.get(PREFIX):
        overrides["prefix"] = normalize_prefix(given[PREFIX])
    if given.get(ENDPOINT):
        overrides["s3_endpoint"] = overrides["dynamodb_endpoint"] = given[ENDPOINT]
    if given.get(OBJECTS_DIR.lower()):
        overrides["objects_dir"] = given[OBJECTS_DIR.lower()]
    return replace(Config.from_env(), **overrides)


def connect(config: Config) -> ObjectLog:
    """This process's ObjectLog for config, opened on first use and kept."""
    key = (
        config.bucket,
        config.table,
        config.prefix,
        config.region,
        config.s3_endpoint,
        config.dynamodb_endpoint,
        config.objects_dir,
    )
    with _logs_lock:
        log = _logs.get(key)
        if log is None:
            log = _logs[key] = ObjectLog(config)
        return log
