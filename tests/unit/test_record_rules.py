"""One rule in one place, on a log with no server (MemoryObjectStore, ItemStores.memory()).

A record's size (key + value + header names + header values) is held against max.message.bytes
by every path that writes: Producer.send, Producer.send_table, the HTTP API's produce route and
the Spark sink's executors; the single-record and the columnar measure agree.
"""

from __future__ import annotations

import base64
import json
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from objectlog import ObjectLog, RecordTooLarge, UnknownPartition
from objectlog.clock import ManualClock
from objectlog.config import Config
from objectlog.format.partitioner import partition_for_key
from objectlog.format.records import Headers, record_size, record_sizes
from objectlog.format.segment import HEADER_TYPE
from objectlog.http.app import lambda_handler
from objectlog.http.routes import PRODUCE
from objectlog.spark.options import SinkOptions
from objectlog.spark.sink import commit_uploads, upload_task
from objectlog.stores.items import ItemStores
from objectlog.stores.objects import MemoryObjectStore
from objectlog.tools.gateway import LambdaContext

EVENTS = Path(__file__).resolve().parents[1] / "events"
LIMIT = 100
KEY, VALUE = b"k" * 10, b"v" * 80  # 90 bytes: under the limit on their own
HEADERS: Headers = [("trace", b"t" * 15)]  # 5 + 15 = 20 more: 110, over it
TOO_LARGE = r"of 110 bytes exceeds max\.message\.bytes \(100\)"


@pytest.fixture
def log() -> Iterator[ObjectLog]:
    with ObjectLog(
        Config(), store=MemoryObjectStore(), items=ItemStores.memory(), clock=ManualClock()
    ) as memory_log:
        memory_log.create_topic("t", partitions=2, config={"max.message.bytes": str(LIMIT)})
        yield memory_log


def stored(log: ObjectLog) -> int:
    return sum(log.offsets("t", p).latest for p in range(2))


# ---- every path refuses a record its headers push over the limit -----------------------------

WITH_AND_WITHOUT_HEADERS = pytest.mark.parametrize(
    ("headers", "refused"),
    [pytest.param(None, False, id="without-headers"), pytest.param(HEADERS, True, id="headers")],
)


@WITH_AND_WITHOUT_HEADERS
def test_send(log: ObjectLog, headers: Headers | None, refused: bool) -> None:
    with log.producer() as producer:
        future = producer.send("t", VALUE, KEY, headers=headers)
        producer.flush()
    error = future.exception(timeout=10)
    if refused:
        assert isinstance(error, RecordTooLarge) and re.search(TOO_LARGE, error.message)
    else:
        assert error is None
    assert stored(log) == (0 if refused else 1)


def table(headers: Headers | None) -> pa.Table:
    return pa.table(
        {
            "key": pa.array([b"small", KEY], pa.binary()),
            "value": pa.array([b"x", VALUE], pa.binary()),
            "headers": pa.array(
                [[], [{"key": k, "value": v} for k, v in headers or []]], HEADER_TYPE
            ),
        }
    )


@WITH_AND_WITHOUT_HEADERS
def test_send_table(log: ObjectLog, headers: Headers | None, refused: bool) -> None:
    with log.producer() as producer:
        if refused:
            with pytest.raises(RecordTooLarge, match=TOO_LARGE):
                producer.send_table("t", table(headers))
        else:
            producer.send_table("t", table(headers))
    assert stored(log) == (0 if refused else 2)


@WITH_AND_WITHOUT_HEADERS
def test_http_produce_route(log: ObjectLog, headers: Headers | None, refused: bool) -> None:
    handler = lambda_handler(PRODUCE, lambda: log)
    event = json.loads((EVENTS / "produce_records.json").read_text())
    b64 = {"key": "aw==", "value": "dg=="}  # k, v: the small first record
    record = {
        "key": _b64(KEY),
        "value": _b64(VALUE),
        "headers": [{"key": k, "value": _b64(v or b"")} for k, v in headers or []],
    }
    event = {
        **event,
        "rawPath": "/topics/t/records",
        "pathParameters": {"topic": "t"},
        "requestContext": {
            **event["requestContext"],
            "http": {**event["requestContext"]["http"], "path": "/topics/t/records"},
        },
        "body": json.dumps({"records": [b64, record]}),
    }
    result = handler(event, LambdaContext(function_name="objectlog-produce"))
    handler.services.close()  # type: ignore[attr-defined]
    if refused:
        assert result["statusCode"] == 413, result
        body = json.loads(result["body"])
        assert body["field"] == "records[1]" and "110 bytes" in body["message"]
        assert stored(log) == 0
    else:
        assert result["statusCode"] == 200, result
        assert stored(log) == 2


@WITH_AND_WITHOUT_HEADERS
def test_spark_sink_upload(log: ObjectLog, headers: Headers | None, refused: bool) -> None:
    options = SinkOptions.parse({"topic": "t"})
    batches = table(headers).to_batches()
    if refused:
        with pytest.raises(RecordTooLarge, match=TOO_LARGE):
            upload_task(log, batches, options, task=0, rng=random.Random(0))
        assert list(log.store.list(log.config.prefix + "l0/")) == []
    else:
        upload = upload_task(log, batches, options, task=0, rng=random.Random(0))
        assert sum(piece.ref.records for piece in upload.slices) == 2


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# ---- one measure, two computations -------------------------------------------------------------

maybe_bytes = st.none() | st.binary(max_size=40)
header_lists = st.lists(st.tuples(st.text(max_size=8), maybe_bytes), max_size=4)
rows = st.lists(st.tuples(maybe_bytes, maybe_bytes, header_lists), max_size=30)


@given(rows=rows, start=st.integers(0, 5))
def test_single_and_columnar_sizes_agree(
    rows: list[tuple[bytes | None, bytes | None, Headers]], start: int
) -> None:
    keys = pa.array([k for k, _, _ in rows], pa.binary())
    values = pa.array([v for _, v, _ in rows], pa.binary())
    headers = pa.array([[{"key": n, "value": d} for n, d in h] for _, _, h in rows], HEADER_TYPE)
    expected = [record_size(k, v, h) for k, v, h in rows]
    assert record_sizes(keys, values, headers).tolist() == expected
    # a slice of the columns (offsets not at zero), as take() and Spark batches give
    assert record_sizes(keys[start:], values[start:], headers[start:]).tolist() == expected[start:]
    no_headers = [record_size(k, v, None) for k, v, _ in rows]
    assert record_sizes(keys, values).tolist() == no_headers


def test_sizes_count_null_header_lists_and_values_as_nothing() -> None:
    headers = pa.array([None, [{"key": "é", "value": None}], [None]], HEADER_TYPE)
    keys = pa.array([None, b"ab", None], pa.binary())
    values = pa.array([b"x", None, None], pa.binary())
    assert record_sizes(keys, values, headers).tolist() == [1, 3, 0]
    assert record_size(b"ab", None, [("é", None)]) == 3


# ---- every timestamp from the log's clock -----------------------------------------------------


def timestamps(log: ObjectLog, topic: str) -> list[int]:
    return [
        record.timestamp
        for p in range(log.topic(topic).partitions)
        for record in log.fetch(topic, p, 0).records
    ]


def test_records_are_stamped_with_the_logs_clock(log: ObjectLog) -> None:
    clock = log.clock
    assert isinstance(clock, ManualClock)
    clock.advance(-1_000_000_000)  # far from the system's time, so a stray time.time() shows
    now = clock.now_ms()
    log.create_topic("appended", config={"message.timestamp.type": "LogAppendTime"})
    with log.producer() as producer:
        md = producer.send("t", b"a").result(timeout=10)
        producer.send_table("t", pa.table({"value": [b"b", b"c"]}))
        producer.send("appended", b"d", timestamp_ms=5).result(timeout=10)
        producer.send_table("appended", pa.table({"value": [b"e"], "timestamp": [6]}))
    assert md.timestamp == now
    assert timestamps(log, "t") == [now] * 3
    assert timestamps(log, "appended") == [now] * 2


def test_the_spark_sink_stamps_with_the_logs_clock(log: ObjectLog) -> None:
    clock = log.clock
    assert isinstance(clock, ManualClock)
    clock.advance(-1_000_000_000)
    upload = upload_task(log, table(None).to_batches(), SinkOptions.parse({"topic": "t"}), task=0)
    assert upload.slices
    for piece in upload.slices:
        assert piece.ref.min_timestamp == piece.ref.max_timestamp == clock.now_ms()


# ---- one columnar path for send_table and the Spark sink --------------------------------------


def sink_partitions(log: ObjectLog, batch: pa.Table, topic: str) -> dict[bytes | None, int]:
    """Where the Spark sink's executor and driver put each value of batch."""
    options = SinkOptions.parse({"topic": topic})
    upload = upload_task(log, batch.to_batches(), options, task=0, rng=random.Random(0))
    commit_uploads(log, [upload], producer_id="s-test", batch_id=0)
    return {r.value: p for p in range(2) for r in log.fetch(topic, p, 0).records}


def test_send_table_and_the_sink_place_records_alike(log: ObjectLog) -> None:
    """An explicit partition where given; a null one means "not given": murmur2 of the key."""
    batch = pa.table(
        {
            "key": pa.array([b"a", b"b", b"c", b"d"], pa.binary()),
            "value": pa.array([b"0", b"1", b"2", b"3"], pa.binary()),
            "partition": pa.array([1, None, 0, None], pa.int32()),
        }
    )
    with log.producer() as producer:
        sent = producer.send_table("t", batch)
    by_producer = dict(
        zip(batch.column("value").to_pylist(), sent.partitions.tolist(), strict=True)
    )
    keyed = {b"1": partition_for_key(b"b", 2), b"3": partition_for_key(b"d", 2)}
    assert by_producer == {b"0": 1, b"2": 0, **keyed}
    log.create_topic("u", partitions=2)
    assert sink_partitions(log, batch, "u") == by_producer


@pytest.mark.parametrize("bad", [-1, 2])
def test_send_table_and_the_sink_refuse_a_partition_the_topic_lacks(
    log: ObjectLog, bad: int
) -> None:
    batch = pa.table({"value": [b"x", b"y"], "partition": pa.array([0, bad], pa.int32())})
    with log.producer() as producer, pytest.raises(UnknownPartition, match=r"outside 0\.\.1"):
        producer.send_table("t", batch)
    with pytest.raises(UnknownPartition, match=r"outside 0\.\.1"):
        upload_task(log, batch.to_batches(), SinkOptions.parse({"topic": "t"}), task=0)
    assert stored(log) == 0
