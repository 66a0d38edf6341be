"""`objectlog dev` keeps its data: topics, records, group offsets and producer state survive a
clean stop (SIGINT) and a kill -9 alike, read back from the same data directory (DESIGN.md
invariant 1 for the dev stack: no acknowledged write is lost)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from objectlog import ObjectLog
from objectlog.groups import OffsetAndMetadata, TopicPartition
from objectlog.tools.embedded import free_port, start_dev_process

TOPIC = "orders"
GROUP = "billing"
STOP_TIMEOUT_S = 30


class Dev:
    """One `objectlog dev` process on a data directory, on fresh ports each start."""

    def __init__(self, data_dir: Path, *options: str) -> None:
        self.data_dir = data_dir
        self.options = options
        self.process: subprocess.Popen[str] | None = None
        self.endpoint = ""
        self.exported: dict[str, str] = {}  # the banner's export line

    def start(self) -> Dev:
        port, api_port = free_port(), free_port()
        self.process = start_dev_process(
            port, api_port, "--data-dir", str(self.data_dir), *self.options
        )
        assert self.process.stdout is not None
        banner = self.process.stdout.readline()
        assert f"127.0.0.1:{port}" in banner, banner
        self.endpoint = f"http://127.0.0.1:{port}"
        while not (line := self.process.stdout.readline()).startswith("  export "):
            assert line, banner
        self.exported = dict(pair.split("=", 1) for pair in line.split()[1:])
        return self

    def connect(self) -> ObjectLog:
        return ObjectLog.connect(s3_endpoint=self.endpoint, dynamodb_endpoint=self.endpoint)

    def stop(self, signum: int) -> None:
        assert self.process is not None
        self.process.send_signal(signum)
        self.process.wait(timeout=STOP_TIMEOUT_S)
        if signum == signal.SIGINT:
            assert self.process.returncode == 0
        self.process = None

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=STOP_TIMEOUT_S)


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[Dev]:
    stack = Dev(tmp_path / "data")
    yield stack
    stack.kill()


def produce(log: ObjectLog, first: int, count: int) -> dict[tuple[int, int], bytes]:
    """Acknowledged records: (partition, offset) -> value."""
    acknowledged = {}
    with log.producer(linger_ms=2) as producer:
        futures = [
            (b"v%d" % i, producer.send(TOPIC, b"v%d" % i, key=b"k%d" % i))
            for i in range(first, first + count)
        ]
    for value, future in futures:
        metadata = future.result()
        acknowledged[(metadata.partition, metadata.offset)] = value
    return acknowledged


def read_all(log: ObjectLog, partitions: int) -> dict[tuple[int, int], bytes | None]:
    found = {}
    for partition in range(partitions):
        offset = 0
        while True:
            result = log.fetch(TOPIC, partition, offset)
            if not result.records:
                break
            found.update({(r.partition, r.offset): r.value for r in result.records})
            offset = result.next_offset
    return found


def processes_using(path: Path, wait_s: float = 5.0) -> list[str]:
    """Command lines of live processes naming path (after a short wait for them to go)."""
    deadline = time.monotonic() + wait_s
    while True:
        found = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(path) in text:
                found.append(text)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def producer_ids(log: ObjectLog, partitions: int) -> set[str]:
    heads = log.metadata.get_heads(TOPIC, range(partitions))
    return {pid for head in heads.values() for pid in head.producers}


def test_every_acknowledged_write_survives_a_clean_stop_and_a_kill(dev: Dev) -> None:
    with dev.start().connect() as log:
        log.create_topic(TOPIC, partitions=3)
        acknowledged = produce(log, 0, 300)
        log.groups.commit(GROUP, {TopicPartition(TOPIC, 0): OffsetAndMetadata(7, "seen")})
        producers = producer_ids(log, 3)
    assert producers
    dev.stop(signal.SIGINT)  # a clean stop: the state is checkpointed

    with dev.start().connect() as log:
        assert log.list_topics() == [TOPIC]
        assert read_all(log, 3) == acknowledged
        committed = log.groups.committed(GROUP, [TopicPartition(TOPIC, 0)])
        assert committed[TopicPartition(TOPIC, 0)] == OffsetAndMetadata(7, "seen")
        assert producer_ids(log, 3) == producers
        acknowledged |= produce(log, 300, 200)  # the log goes on where it stopped
        log.groups.commit(GROUP, {TopicPartition(TOPIC, 0): 9})
        producers = producer_ids(log, 3)
    dev.stop(signal.SIGKILL)  # no checkpoint: what was acknowledged is in the journal

    with dev.start().connect() as log:
        assert read_all(log, 3) == acknowledged
        committed = log.groups.committed(GROUP, [TopicPartition(TOPIC, 0)])
        assert committed[TopicPartition(TOPIC, 0)] == OffsetAndMetadata(9, "")
        assert producer_ids(log, 3) == producers
    dev.stop(signal.SIGINT)


def test_the_topics_tables_live_in_the_data_directory_and_survive_a_restart(dev: Dev) -> None:
    """The banner exports the SQL catalog in the data directory; `objectlog compact` with that
    environment registers the topic's table, which is there again after a restart."""
    dev.start()
    catalog = dev.exported["OBJECTLOG_CATALOG"]
    assert catalog == f"sqlite:///{(dev.data_dir / 'catalog.db').resolve()}"
    # Per service too, or a service's own variable in the environment (make
    # test-dynamodb-local sets AWS_ENDPOINT_URL_DYNAMODB) would send `compact` elsewhere.
    services = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_DYNAMODB")
    assert {dev.exported[name] for name in services} == {dev.endpoint}
    with dev.connect() as log:
        log.create_topic(TOPIC, partitions=2, config={"objectlog.table.lag.ms": "0"})
        acknowledged = produce(log, 0, 100)
    compacted = subprocess.run(
        [sys.executable, "-m", "objectlog.tools.cli", "compact", "--once"],
        env={**os.environ, **dev.exported},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert compacted.returncode == 0, compacted.stderr
    dev.stop(signal.SIGINT)

    dev.start()
    with ObjectLog.connect(
        s3_endpoint=dev.endpoint, dynamodb_endpoint=dev.endpoint, catalog=catalog
    ) as log:
        rows = log.table(TOPIC).scan().to_arrow()
        assert rows.num_rows == len(acknowledged)
        assert set(zip(rows["partition"].to_pylist(), rows["offset"].to_pylist(), strict=True)) == (
            set(acknowledged)
        )
        state = log.table_state(TOPIC)
        assert state is not None and state.lag_files == 0
    dev.stop(signal.SIGINT)


def test_fresh_starts_empty_and_a_directory_keeps_its_dynamodb(tmp_path: Path) -> None:
    dev = Dev(tmp_path / "data")
    try:
        with dev.start().connect() as log:
            log.create_topic(TOPIC)
        dev.stop(signal.SIGINT)
        fresh = Dev(dev.data_dir, "--fresh")
        with fresh.start().connect() as log:
            assert log.list_topics() == []
        fresh.stop(signal.SIGINT)
    finally:
        dev.kill()
    other = start_dev_process(
        free_port(), free_port(), "--data-dir", str(dev.data_dir), "--dynamodb", "local"
    )
    output, _ = other.communicate(timeout=STOP_TIMEOUT_S)
    assert other.returncode != 0
    assert "holds DynamoDB state of 'moto'" in output and "--fresh" in output


def test_dynamodb_local_keeps_its_tables_through_a_kill(tmp_path: Path) -> None:
    """With --dynamodb local, DynamoDB state is DynamoDB Local's -dbPath in the same data
    directory, and S3 still moto's journal: both survive kill -9."""
    dev = Dev(tmp_path / "data", "--dynamodb", "local")
    try:
        with dev.start().connect() as log:
            log.create_topic(TOPIC, partitions=3)
            acknowledged = produce(log, 0, 300)
            log.groups.commit(GROUP, {TopicPartition(TOPIC, 1): 11})
        dev.stop(signal.SIGKILL)
        assert not processes_using(dev.data_dir), "DynamoDB Local outlived kill -9 of its dev"
        with dev.start().connect() as log:
            assert read_all(log, 3) == acknowledged
            assert log.groups.committed(GROUP, [TopicPartition(TOPIC, 1)]) == {
                TopicPartition(TOPIC, 1): OffsetAndMetadata(11, "")
            }
        dev.stop(signal.SIGINT)
    finally:
        dev.kill()
