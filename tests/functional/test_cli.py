import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from objectlog import ObjectLog
from objectlog.tools.cli import main
from objectlog.tools.embedded import free_port, start_dev_process


@pytest.fixture
def run(log_env: dict[str, str]):
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None):
        return runner.invoke(main, list(args), input=input, env=log_env, catch_exceptions=False)

    return invoke


def test_topics_commands(run, log: ObjectLog) -> None:
    created = run(
        "topics", "create", "orders", "--partitions", "3", "--config", "retention.ms=1000"
    )
    assert created.exit_code == 0, created.output
    assert run("topics", "list").output.split() == ["orders"]
    described = json.loads(run("topics", "describe", "orders", "--json").output)
    assert described["partition_count"] == 3 and described["config"]["retention.ms"] == "1000"
    assert "PartitionCount: 3" in run("topics", "describe", "orders").output
    altered = run(
        "topics", "alter", "orders", "--partitions", "5", "--config", "cleanup.policy=compact"
    )
    assert altered.exit_code == 0, altered.output
    assert log.topic("orders", fresh=True).partitions == 5
    assert run("topics", "delete", "orders").exit_code == 0
    assert run("topics", "list").output.strip() == ""


def test_topics_delete_records(run, log: ObjectLog) -> None:
    log.create_topic("purged", partitions=2)
    with log.producer() as producer:
        for i in range(4):
            producer.send("purged", b"v%d" % i, partition=0)
    deleted = run("topics", "delete-records", "purged", "--offset", "0=3", "--offset", "1=-1")
    assert deleted.exit_code == 0, deleted.output
    assert deleted.output.splitlines() == [
        "Partition: 0\tLogStartOffset: 3",
        "Partition: 1\tLogStartOffset: 0",
    ]
    assert log.offsets("purged", 0).earliest == 3
    past = run("topics", "delete-records", "purged", "--offset", "0=9")
    assert past.exit_code == 1 and "high watermark is 4" in past.output
    assert run("topics", "delete-records", "purged", "--offset", "0:3").exit_code == 2


def test_errors_are_one_line_and_non_zero(run) -> None:
    result = run("topics", "describe", "missing")
    assert result.exit_code == 1
    assert result.output.strip() == "error: topic 'missing' does not exist"
    bad = run("topics", "create", "bad name")
    assert bad.exit_code == 1 and bad.output.count("\n") == 1 and bad.output.startswith("error:")


def test_produce_then_consume(run) -> None:
    run("topics", "create", "t", "--partitions", "2")
    produced = run("produce", "t", "--key-separator", ":", input="a:1\nb:2\nc:3\n")
    assert produced.exit_code == 0, produced.output
    consumed = run(
        "consume", "t", "--from-beginning", "--max-records", "3", "--timeout", "1", "--print-key"
    )
    lines = sorted(consumed.stdout.splitlines())
    assert lines == ["a\t1", "b\t2", "c\t3"]
    as_json = run(
        "consume", "t", "--partition", "0", "--offset", "0", "--timeout", "0.5", "--format", "json"
    )
    records = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert records and all(r["partition"] == 0 for r in records)
    assert [r["offset"] for r in records] == list(range(len(records)))
    to_partition = run("produce", "t", "--partition", "1", input="x\ny\n")
    assert to_partition.exit_code == 0
    tail = run("consume", "t", "--partition", "1", "--offset", "0", "--timeout", "0.5")
    assert tail.stdout.splitlines()[-2:] == ["x", "y"]


def test_consume_usage_errors(run) -> None:
    run("topics", "create", "t")
    assert run("consume", "t", "--offset", "3").exit_code == 2


def test_dev_serves_an_aws_endpoint_until_interrupted(tmp_path: Path) -> None:
    port, api_port, kafka_port = free_port(), free_port(), free_port()
    # Started as a script's background job is: with SIGINT ignored, which it inherits.
    inherited = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        process = start_dev_process(port, api_port, "--in-memory", kafka_port=kafka_port)
    finally:
        signal.signal(signal.SIGINT, inherited)
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        assert f"127.0.0.1:{port}" in banner
        assert f"HTTP API http://127.0.0.1:{api_port}" in process.stdout.readline()
        console = f"Web console http://127.0.0.1:{api_port}/console"
        assert console in process.stdout.readline()
        assert f"REST Proxy http://127.0.0.1:{api_port}/kafka" in process.stdout.readline()
        registry = f"Schema Registry http://127.0.0.1:{api_port}/schema-registry"
        assert registry in process.stdout.readline()
        assert f"Kafka agent 127.0.0.1:{kafka_port}" in process.stdout.readline()
        assert " OBJECTLOG_CATALOG=glue" in process.stdout.readline()  # in memory: its Glue
        endpoint = f"http://127.0.0.1:{port}"
        with ObjectLog.connect(s3_endpoint=endpoint, dynamodb_endpoint=endpoint) as log:
            log.create_topic("hello")
            with log.producer() as producer:
                assert producer.send("hello", b"world").result().offset == 0
            assert log.fetch("hello", 0, 0).records[0].value == b"world"
        api = f"http://127.0.0.1:{api_port}/topics/hello/partitions/0/records?offset=0"
        with urllib.request.urlopen(api) as response:
            assert json.load(response)["records"][0]["value"] == "d29ybGQ="
        with urllib.request.urlopen(f"http://127.0.0.1:{api_port}/console/topics") as response:
            assert "<title>objectlog console</title>" in response.read().decode()
        from kafka import KafkaConsumer, TopicPartition

        kafka = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{kafka_port}")
        kafka.assign([TopicPartition("hello", 0)])
        kafka.seek_to_beginning()
        assert [r.value for r in kafka.poll(timeout_ms=5000, max_records=1).popitem()[1]] == [
            b"world"
        ]
        kafka.close()
    finally:
        process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 10
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if process.poll() is None:
            process.kill()
        rest = process.stdout.read()
    assert process.returncode == 0
    assert " GET /topics/hello/" in rest  # a request line, and no raw EMF line (metrics are off)
    assert not [line for line in rest.splitlines() if line.startswith('{"_aws"')]


def test_commands_leave_no_unclosed_session_or_resource_warning(
    log: ObjectLog, log_env: dict[str, str]
) -> None:
    """Reading several slices at once starts the reading threads: every command closes them."""
    log.create_topic("many", partitions=2)
    for flush in range(4):  # several slices per partition, so reads go concurrent
        with log.producer() as producer:
            for i in range(10):
                producer.send("many", b"%d-%d" % (flush, i), partition=i % 2)
    env = {**os.environ, **log_env, "PYTHONWARNINGS": "always", "PYTHONDEVMODE": "1"}
    outputs = []
    for command in (
        ["consume", "many", "--from-beginning", "--timeout", "1"],
        ["consume", "many", "--group", "g", "--from-beginning", "--timeout", "2"],
        ["compact", "--once"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "objectlog.tools.cli", *command],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, (command, done.stderr)
        outputs.append(done.stdout + done.stderr)
        for noise in ("Unclosed", "ResourceWarning", "Exception ignored"):
            assert noise not in done.stderr, (command, done.stderr)
    assert "Processed a total of 40 messages" in outputs[0]
