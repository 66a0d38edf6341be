"""The HTTP transport: the same Producer and fetch API over the local API Gateway."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from objectlog import ObjectLog
from objectlog.clients.http import ApiSession, HttpObjectLog
from objectlog.errors import InvalidTopicName, OffsetOutOfRange, TopicExists, TopicNotFound
from objectlog.format.partitioner import partition_for_key
from objectlog.tools.cli import main
from objectlog.tools.gateway import LocalGateway


@pytest.fixture
def remote(api: str) -> HttpObjectLog:
    with ObjectLog.connect(api_url=api) as log:
        yield log


def test_topics_over_http(remote: HttpObjectLog, log: ObjectLog) -> None:
    created = remote.create_topic("orders", partitions=3, config={"retention.ms": 1000})
    assert created.partitions == 3 and created.config.get("retention.ms") == "1000"
    assert remote.list_topics() == ["orders"] == log.list_topics()
    assert remote.alter_topic_config("orders", set={"cleanup.policy": "compact"}).config.compacted
    assert remote.add_partitions("orders", 5).partitions == 5
    assert [p.partition for p in remote.describe_topic("orders").partitions] == [0, 1, 2, 3, 4]
    with pytest.raises(TopicExists):
        remote.create_topic("orders")
    with pytest.raises(InvalidTopicName):
        remote.create_topic("bad name")
    remote.delete_topic("orders")
    with pytest.raises(TopicNotFound):
        remote.describe_topic("orders")


def test_producer_and_fetch_over_http_match_direct(remote: HttpObjectLog, log: ObjectLog) -> None:
    remote.create_topic("t", partitions=3)
    with remote.producer(linger_ms=5) as producer:
        futures = [
            producer.send("t", b"v%d" % i, key=b"k%d" % (i % 5), headers=[("i", b"%d" % i)])
            for i in range(60)
        ]
        metadata = [f.result() for f in futures]
    assert all(
        md.partition == partition_for_key(b"k%d" % (i % 5), 3) for i, md in enumerate(metadata)
    )
    for partition in range(3):
        over_http = remote.fetch("t", partition, 0, max_records=1000).records
        direct = log.fetch("t", partition, 0).records
        assert over_http == direct
        assert [r.offset for r in over_http] == list(range(len(over_http)))
    assert sum(remote.offsets("t", p).latest for p in range(3)) == 60
    assert remote.offset_for_time("t", 0, 0) == 0
    with pytest.raises(OffsetOutOfRange) as error:
        remote.fetch("t", 0, 10_000)
    assert error.value.high_watermark == log.offsets("t", 0).latest


def test_lost_answer_is_retried_with_the_same_idempotency_key(
    gateway: LocalGateway, remote: HttpObjectLog, log: ObjectLog
) -> None:
    remote.create_topic("t")
    real = gateway.targets["produce"]
    lost = {"count": 0}

    def answer_lost_once(event, context):
        result = real(event, context)
        if event["rawPath"].endswith("/records") and lost["count"] == 0:
            lost["count"] += 1
            return {"statusCode": 502, "body": json.dumps({"message": "Bad Gateway"})}
        return result

    gateway.targets["produce"] = answer_lost_once
    with remote.producer() as producer:
        md = producer.send("t", b"exactly-once").result()
    assert lost["count"] == 1
    assert md.offset == 0
    assert [r.value for r in log.fetch("t", 0, 0).records] == [b"exactly-once"]


def test_requests_are_sigv4_signed_when_asked(gateway: LocalGateway, api: str) -> None:
    seen = {}
    real = gateway.targets["fetch"]

    def capture(event, context):
        seen.update(event["headers"])
        return real(event, context)

    gateway.targets["fetch"] = capture
    ApiSession(api, sign=True).request("GET", "/topics")
    assert seen["authorization"].startswith("AWS4-HMAC-SHA256 Credential=")
    assert "/execute-api/aws4_request" in seen["authorization"]
    assert "x-amz-date" in seen


def test_cli_through_api_url(api: str, log: ObjectLog) -> None:
    runner = CliRunner()
    env = {"OBJECTLOG_API_URL": api}
    assert (
        runner.invoke(main, ["topics", "create", "t", "--partitions", "2"], env=env).exit_code == 0
    )
    produced = runner.invoke(
        main, ["produce", "t", "--key-separator", "="], input="a=1\nb=2\n", env=env
    )
    assert produced.exit_code == 0, produced.output
    consumed = runner.invoke(
        main,
        ["--api-url", api, "consume", "t", "--from-beginning", "--timeout", "0.5", "--print-key"],
    )
    assert sorted(consumed.stdout.splitlines()) == ["a\t1", "b\t2"]
    assert log.list_topics() == ["t"]
    missing = runner.invoke(main, ["topics", "describe", "nope"], env=env)
    assert missing.exit_code == 1 and missing.output.strip() == "error: topic 'nope' does not exist"
