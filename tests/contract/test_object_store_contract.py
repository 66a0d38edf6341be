"""One ObjectStore contract, on memory, a local directory and S3 (the AWS endpoint)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import botocore.exceptions
import pytest

from objectlog.adapters import aws
from objectlog.config import Config
from objectlog.errors import InvalidRequest, ObjectExists, ObjectNotFound
from objectlog.stores.local import LocalObjectStore
from objectlog.stores.objects import MemoryObjectStore, ObjectStore
from objectlog.stores.s3 import S3ObjectStore
from objectlog.tools.verify.faults import FaultInjector
from tests.aio_stores import OnLoop, shared_aio_clients


@pytest.fixture(params=["memory", "local", "s3", "s3-aio"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ObjectStore]:
    if request.param == "memory":
        yield MemoryObjectStore()
    elif request.param == "local":
        yield LocalObjectStore(tmp_path / "bucket")
    elif request.param == "s3-aio":
        request.getfixturevalue("aws_endpoint")
        config = Config.from_env(bucket=f"contract-{uuid.uuid4().hex[:12]}")
        loop, s3_client, _ = shared_aio_clients(request)
        bridged = OnLoop(S3ObjectStore(s3_client, config.bucket), loop)
        bridged.ensure_bucket(config.region)
        yield bridged
    else:
        request.getfixturevalue("aws_endpoint")
        config = Config.from_env(bucket=f"contract-{uuid.uuid4().hex[:12]}")
        s3 = S3ObjectStore(aws.s3_client(config), config.bucket)
        s3.ensure_bucket(config.region)
        yield s3


def test_a_key_is_written_once_and_read_whole_by_range_and_by_tail(store: ObjectStore) -> None:
    store.put_if_absent("l0/ab/one.l0", b"0123456789")
    with pytest.raises(ObjectExists):
        store.put_if_absent("l0/ab/one.l0", b"other")
    assert store.get("l0/ab/one.l0") == b"0123456789"
    assert store.get_range("l0/ab/one.l0", 2, 3) == b"234"
    assert store.get_tail("l0/ab/one.l0", 4) == b"6789"
    assert store.get_tail("l0/ab/one.l0", 64) == b"0123456789"


def test_putting_the_same_bytes_again_succeeds(store: ObjectStore) -> None:
    """A retried put whose first attempt landed: the key holds exactly these bytes."""
    store.put_if_absent("l1/t/0/one.parquet", b"0123456789")
    store.put_if_absent("l1/t/0/one.parquet", b"0123456789")
    with pytest.raises(ObjectExists):
        store.put_if_absent("l1/t/0/one.parquet", b"0123456780")
    assert store.get("l1/t/0/one.parquet") == b"0123456789"


def test_an_s3_put_the_sdk_sent_again_after_it_landed_succeeds(aws_endpoint: str) -> None:
    config = Config.from_env(bucket=f"contract-{uuid.uuid4().hex[:12]}")
    s3 = S3ObjectStore(aws.s3_client(config), config.bucket)
    s3.ensure_bucket(config.region)
    faults = FaultInjector()
    resent = faults.lose_answer_in_sdk(s3.client, "PutObject")
    try:
        with pytest.raises(botocore.exceptions.ClientError, match="PreconditionFailed"):
            s3.client.put_object(  # botocore resent it: the answer is the resend's 412
                Bucket=config.bucket, Key="index/t/0/m-1.json", Body=b"[1]", IfNoneMatch="*"
            )
        s3.put_if_absent("index/t/0/m-2.json", b"[2]")
    finally:
        faults.remove()
    assert resent.injected == 2
    assert s3.get("index/t/0/m-2.json") == b"[2]"


def test_missing_keys_and_deletes(store: ObjectStore) -> None:
    for read in (lambda: store.get("nope"), lambda: store.get_range("nope", 0, 1)):
        with pytest.raises(ObjectNotFound):
            read()
    store.put_if_absent("a/1", b"x")
    store.delete_many(["a/1", "a/never"])
    with pytest.raises(ObjectNotFound):
        store.get("a/1")


def test_listing_is_by_prefix_in_key_order(store: ObjectStore) -> None:
    for key in ("index/t/0/m-2.json", "index/t/0/m-1.json", "topics/t/f.parquet", "l0/x/y.l0"):
        store.put_if_absent(key, b"abc")
    assert [i.key for i in store.list("index/")] == ["index/t/0/m-1.json", "index/t/0/m-2.json"]
    assert [i.size for i in store.list("")] == [3, 3, 3, 3]


def test_a_local_store_refuses_keys_outside_its_root(tmp_path: Path) -> None:
    local = LocalObjectStore(tmp_path / "bucket")
    for key in ("../escape", "/abs", "a/../../b"):
        with pytest.raises(InvalidRequest):
            local.put_if_absent(key, b"x")
