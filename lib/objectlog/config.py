"""Connection settings, read from the environment with defaults that fit the embedded stack."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

ENV_BUCKET = "OBJECTLOG_BUCKET"
ENV_TABLE = "OBJECTLOG_TABLE"
ENV_PREFIX = "OBJECTLOG_PREFIX"
ENV_REGION = "AWS_REGION"
ENV_DEFAULT_REGION = "AWS_DEFAULT_REGION"
ENV_ENDPOINT = "AWS_ENDPOINT_URL"
ENV_S3_ENDPOINT = "AWS_ENDPOINT_URL_S3"
ENV_DYNAMODB_ENDPOINT = "AWS_ENDPOINT_URL_DYNAMODB"
ENV_DELETE_GRACE_MS = "OBJECTLOG_DELETE_GRACE_MS"
ENV_GLUE_ENDPOINT = "AWS_ENDPOINT_URL_GLUE"
ENV_CATALOG = "OBJECTLOG_CATALOG"  # "glue", or a SQL catalog's URI (sqlite:///path); unset: none
ENV_TABLE_NAMESPACE = "OBJECTLOG_TABLE_NAMESPACE"
# A directory holding the bucket's objects (a local copy) instead of S3; DynamoDB stays.
ENV_OBJECTS_DIR = "OBJECTLOG_OBJECTS_DIR"
# REST Proxy's consumer.instance.timeout.ms: how long an idle consumer instance lives.
ENV_CONSUMER_INSTANCE_TIMEOUT_MS = "OBJECTLOG_CONSUMER_INSTANCE_TIMEOUT_MS"
# Kafka's auto.create.topics.enable, for the HTTP API's produce and the Kafka agent's Metadata: a
# topic that does not exist is created with num.partitions partitions by its first produce (or
# a Kafka client's metadata request that allows it). Off unless set; the dev stack turns it on,
# as a Kafka development broker has it.
ENV_AUTO_CREATE_TOPICS = "OBJECTLOG_AUTO_CREATE_TOPICS"
ENV_NUM_PARTITIONS = "OBJECTLOG_NUM_PARTITIONS"  # Kafka's num.partitions (1)
# Kafka's default.replication.factor: accepted and reported (DescribeConfigs), no effect: S3
# keeps every object in several zones, and there are no replicas to place.
ENV_DEFAULT_REPLICATION_FACTOR = "OBJECTLOG_DEFAULT_REPLICATION_FACTOR"
DEFAULT_TABLE_NAMESPACE = "objectlog"

DEFAULT_BUCKET = "objectlog"
DEFAULT_TABLE = "objectlog"
DEFAULT_REGION = "us-east-1"

LOOPBACK_HOSTS = ("127.", "localhost", "[::1]")


@dataclass(frozen=True)
class Config:
    """Where objectlog keeps its data and state."""

    bucket: str = DEFAULT_BUCKET
    table: str = DEFAULT_TABLE
    prefix: str = ""
    region: str = DEFAULT_REGION
    # None means "whatever botocore resolves": AWS, or the AWS_ENDPOINT_URL* variables.
    s3_endpoint: str | None = None
    dynamodb_endpoint: str | None = None
    # How many times botocore retries throttling, 5xx and connection errors (standard mode).
    max_attempts: int = 8
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 30.0
    # Replaced objects stay readable this long before GC may delete them (file.delete.delay.ms).
    delete_grace_ms: int = 60_000
    glue_endpoint: str | None = None
    # Where topics' Iceberg tables are registered: "glue", a SQL catalog URI, or None (no tables).
    catalog: str | None = None
    table_namespace: str = DEFAULT_TABLE_NAMESPACE
    objects_dir: str | None = None
    consumer_instance_timeout_ms: int = 300_000
    auto_create_topics: bool = False
    num_partitions: int = 1
    default_replication_factor: int = 1
    # A fetch below a partition's last seen high watermark reuses that head this long (0: never;
    # capped at half of delete_grace_ms): services.recent_heads.
    head_reuse_ms: int = 1_000

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Config:
        env = os.environ if env is None else env
        generic = env.get(ENV_ENDPOINT)
        config = cls(
            bucket=env.get(ENV_BUCKET, DEFAULT_BUCKET),
            table=env.get(ENV_TABLE, DEFAULT_TABLE),
            prefix=normalize_prefix(env.get(ENV_PREFIX, "")),
            region=env.get(ENV_REGION) or env.get(ENV_DEFAULT_REGION) or DEFAULT_REGION,
            s3_endpoint=env.get(ENV_S3_ENDPOINT) or generic,
            dynamodb_endpoint=env.get(ENV_DYNAMODB_ENDPOINT) or generic,
            delete_grace_ms=int(env.get(ENV_DELETE_GRACE_MS, "60000")),
            glue_endpoint=env.get(ENV_GLUE_ENDPOINT) or generic,
            catalog=env.get(ENV_CATALOG) or None,
            table_namespace=env.get(ENV_TABLE_NAMESPACE, DEFAULT_TABLE_NAMESPACE),
            objects_dir=env.get(ENV_OBJECTS_DIR) or None,
            consumer_instance_timeout_ms=int(env.get(ENV_CONSUMER_INSTANCE_TIMEOUT_MS, "300000")),
            auto_create_topics=env.get(ENV_AUTO_CREATE_TOPICS, "").lower() in ("1", "true"),
            num_partitions=int(env.get(ENV_NUM_PARTITIONS, "1")),
            default_replication_factor=int(env.get(ENV_DEFAULT_REPLICATION_FACTOR, "1")),
        )
        return replace(config, **overrides) if overrides else config  # type: ignore[arg-type]

    @property
    def is_local(self) -> bool:
        """True when both endpoints are on this machine (the embedded stack or LocalStack)."""
        return all(
            endpoint is not None and _is_loopback(endpoint)
            for endpoint in (self.s3_endpoint, self.dynamodb_endpoint)
        )


def normalize_prefix(prefix: str) -> str:
    prefix = prefix.strip("/")
    return f"{prefix}/" if prefix else ""


def _is_loopback(url: str) -> bool:
    host = url.split("://", 1)[-1]
    return host.startswith(LOOPBACK_HOSTS)
