"""S3 as an ObjectStore: put-if-absent, ranged and suffix GETs, batch deletes, listings.

Every method raises objectlog errors only: objectlog.adapters.aws translates botocore's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from objectlog.adapters.aws import translated
from objectlog.errors import ObjectExists, ObjectNotFound
from objectlog.stores.objects import ObjectInfo, ObjectStore

DELETE_BATCH = 1000


class S3ObjectStore(ObjectStore):
    def __init__(self, client: Any, bucket: str) -> None:
        self.client = client
        self.bucket = bucket

    def _create(self, key: str, body: bytes) -> None:
        with translated(f"PutObject s3://{self.bucket}/{key}", idempotent=False):
            self.client.put_object(Bucket=self.bucket, Key=key, Body=body, IfNoneMatch="*")

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
            with translated(f"HeadBucket {self.bucket}"):
                self.client.head_bucket(Bucket=self.bucket)
            return
        except ObjectNotFound:
            pass
        kwargs: dict[str, Any] = {"Bucket": self.bucket}
        if region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
        try:
            with translated(f"CreateBucket {self.bucket}"):
                self.client.create_bucket(**kwargs)
        except ObjectExists:
            pass  # created meanwhile by another process
