"""Object storage: the interface the log uses, on S3 and in memory.

Every method raises objectlog errors only: ObjectExists, ObjectNotFound, StorageUnavailable,
UnknownOutcome (a put whose answer was lost).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import botocore.exceptions

from objectlog.aws import error_code, translate, translated
from objectlog.config import Config
from objectlog.errors import ObjectExists, ObjectNotFound

PUT_IF_ABSENT_CONFLICTS = {"PreconditionFailed", "ConditionalRequestConflict"}
DELETE_BATCH = 1000


@dataclass(frozen=True, slots=True)
class ObjectInfo:
    key: str
    size: int
    last_modified_ms: int


class ObjectStore(ABC):
    """Immutable objects by key: written once, read by range, deleted when unreferenced."""

    @abstractmethod
    def put_if_absent(self, key: str, body: bytes) -> None:
        """Write a new object; ObjectExists if the key is taken."""

    @abstractmethod
    def get(self, key: str) -> bytes:
        """The whole object; ObjectNotFound if absent."""

    @abstractmethod
    def get_range(self, key: str, start: int, length: int) -> bytes:
        """length bytes from start; ObjectNotFound if absent."""

    @abstractmethod
    def get_tail(self, key: str, length: int) -> bytes:
        """The last length bytes (all of it if shorter); ObjectNotFound if absent."""

    @abstractmethod
    def delete_many(self, keys: Iterable[str]) -> None:
        """Delete the keys; absent keys are not an error."""

    @abstractmethod
    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        """Objects under prefix, in key order."""


class S3ObjectStore(ObjectStore):
    def __init__(self, client: Any, bucket: str) -> None:
        self.client = client
        self.bucket = bucket

    def put_if_absent(self, key: str, body: bytes) -> None:
        try:
            self.client.put_object(Bucket=self.bucket, Key=key, Body=body, IfNoneMatch="*")
        except botocore.exceptions.ClientError as e:
            if error_code(e) in PUT_IF_ABSENT_CONFLICTS:
                raise ObjectExists(f"s3://{self.bucket}/{key} already exists") from e
            raise translate(e, what=f"PutObject {key}", idempotent=False) from e
        except botocore.exceptions.BotoCoreError as e:
            raise translate(e, what=f"PutObject {key}", idempotent=False) from e

    def get(self, key: str) -> bytes:
        with translated(f"GetObject {key}"):
            return bytes(self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read())

    def get_range(self, key: str, start: int, length: int) -> bytes:
        with translated(f"GetObject {key}"):
            response = self.client.get_object(
                Bucket=self.bucket, Key=key, Range=f"bytes={start}-{start + length - 1}"
            )
            return bytes(response["Body"].read())

    def get_tail(self, key: str, length: int) -> bytes:
        with translated(f"GetObject {key} (tail)"):
            response = self.client.get_object(Bucket=self.bucket, Key=key, Range=f"bytes=-{length}")
            return bytes(response["Body"].read())

    def delete_many(self, keys: Iterable[str]) -> None:
        batch = list(keys)
        for i in range(0, len(batch), DELETE_BATCH):
            chunk = [{"Key": key} for key in batch[i : i + DELETE_BATCH]]
            with translated("DeleteObjects"):
                self.client.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": chunk, "Quiet": True}
                )

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        paginator = self.client.get_paginator("list_objects_v2")
        with translated(f"ListObjectsV2 {prefix}"):
            for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
                for item in page.get("Contents", []):
                    yield ObjectInfo(
                        key=item["Key"],
                        size=item["Size"],
                        last_modified_ms=int(item["LastModified"].timestamp() * 1000),
                    )

    def ensure_bucket(self, region: str) -> None:
        """Create the bucket if it is missing (the embedded stack and tests)."""
        try:
            self.client.head_bucket(Bucket=self.bucket)
            return
        except botocore.exceptions.ClientError:
            pass
        kwargs: dict[str, Any] = {"Bucket": self.bucket}
        if region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
        with translated(f"CreateBucket {self.bucket}"):
            try:
                self.client.create_bucket(**kwargs)
            except botocore.exceptions.ClientError as e:
                if error_code(e) not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                    raise


class MemoryObjectStore(ObjectStore):
    """An in-memory store for unit and model-based tests."""

    def __init__(self, clock_ms: Any = None) -> None:
        self._objects: dict[str, tuple[bytes, int]] = {}
        self._lock = threading.Lock()
        self._clock_ms = clock_ms or (lambda: 0)

    def put_if_absent(self, key: str, body: bytes) -> None:
        with self._lock:
            if key in self._objects:
                raise ObjectExists(f"{key} already exists")
            self._objects[key] = (bytes(body), int(self._clock_ms()))

    def get(self, key: str) -> bytes:
        with self._lock:
            if key not in self._objects:
                raise ObjectNotFound(f"{key}: not found")
            return self._objects[key][0]

    def get_range(self, key: str, start: int, length: int) -> bytes:
        return self.get(key)[start : start + length]

    def get_tail(self, key: str, length: int) -> bytes:
        return self.get(key)[-length:]

    def delete_many(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                self._objects.pop(key, None)

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        with self._lock:
            items = sorted((k, v) for k, v in self._objects.items() if k.startswith(prefix))
        for key, (body, modified) in items:
            yield ObjectInfo(key, len(body), modified)


def s3_store(config: Config, client: Any | None = None) -> S3ObjectStore:
    from objectlog.aws import s3_client

    return S3ObjectStore(client or s3_client(config), config.bucket)
