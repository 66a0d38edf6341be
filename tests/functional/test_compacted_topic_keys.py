"""A record without a key is refused on a compacted topic, on every door, as Kafka's broker
refuses it (INVALID_RECORD; found by librdkafka's test 0011): compaction keeps the latest record
of each key, so a keyless record could never be compacted. Keyed records in the same topic, and
keyless ones on a topic that is not compacted, are written; a refused record stores nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest
import requests

from objectlog import ObjectLog
from objectlog.errors import InvalidRecord
from objectlog.kafka.server import AgentThread
from tests.kafka_agent_config import agent_config

COMPACTED, PLAIN = "latest-by-key", "plain"


@pytest.fixture
def topics(log: ObjectLog) -> ObjectLog:
    log.create_topic(COMPACTED, partitions=1, config={"cleanup.policy": "compact"})
    log.create_topic(PLAIN, partitions=1)
    return log


@pytest.fixture
def agent(topics: ObjectLog) -> Iterator[AgentThread]:
    running = AgentThread(topics, agent_config()).start()
    yield running
    running.stop()


def values(log: ObjectLog, topic: str) -> list[bytes | None]:
    return [r.value for r in log.fetch(topic, 0, 0).records]


def test_the_library_refuses_a_keyless_record_alone(topics: ObjectLog) -> None:
    producer = topics.producer()
    keyless = producer.send(COMPACTED, value=b"lost")
    keyed = producer.send(COMPACTED, key=b"k", value=b"kept")
    plain = producer.send(PLAIN, value=b"fine")
    producer.flush()
    with pytest.raises(InvalidRecord, match="no key"):
        keyless.result()
    assert keyed.result().offset == 0 and plain.result().offset == 0
    table = pa.table({"key": pa.array([b"a", None], pa.binary()), "value": [b"1", b"2"]})
    with pytest.raises(InvalidRecord):
        producer.send_table(COMPACTED, table)
    producer.close()
    assert values(topics, COMPACTED) == [b"kept"]


def test_the_http_api_refuses_the_request_naming_the_record(topics: ObjectLog, api: str) -> None:
    body = {"records": [{"key": "aw==", "value": "MQ=="}, {"value": "Mg=="}]}
    answer = requests.post(f"{api}/topics/{COMPACTED}/records", json=body, timeout=30)
    assert answer.status_code == 400
    assert answer.json()["field"] == "records[1].key"
    assert values(topics, COMPACTED) == []


def test_a_kafka_producers_batch_names_its_keyless_records(
    topics: ObjectLog, agent: AgentThread
) -> None:
    """KIP-467's record errors name the keyless records: librdkafka fails those with
    INVALID_RECORD and the others of their batch with _INVALID_DIFFERENT_RECORD (test 0011)."""
    from confluent_kafka import KafkaError, Producer

    producer = Producer({"bootstrap.servers": agent.address, "linger.ms": 200})
    errors: dict[bytes, KafkaError | None] = {}

    def report(error: KafkaError | None, message: object) -> None:
        errors[message.value()] = error  # type: ignore[attr-defined]

    for i in range(10):  # one batch: every third record has no key
        key = None if i % 3 == 0 else b"k%d" % i
        producer.produce(COMPACTED, key=key, value=b"%d" % i, partition=0, on_delivery=report)
    producer.flush(10)
    producer.produce(COMPACTED, key=b"k", value=b"keyed", on_delivery=report)
    producer.produce(PLAIN, value=b"plain", on_delivery=report)
    producer.flush(10)
    codes = {value: None if e is None else e.code() for value, e in errors.items()}
    assert codes == {
        **{b"%d" % i: KafkaError.INVALID_RECORD for i in (0, 3, 6, 9)},
        **{b"%d" % i: KafkaError._INVALID_DIFFERENT_RECORD for i in (1, 2, 4, 5, 7, 8)},
        b"keyed": None,
        b"plain": None,
    }
    assert values(topics, COMPACTED) == [b"keyed"]
