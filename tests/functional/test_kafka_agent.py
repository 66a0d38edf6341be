"""The Kafka agent (objectlog.kafka) with unmodified Kafka clients, against the AWS endpoint.

kafka-python and confluent-kafka produce keyed records with every compression and read them back;
what they wrote is identical when read through the library, and what the library wrote is
identical when read through them. Placement follows objectlog's partitioner (murmur2). Raw
frames check the edges: a malformed, oversized or unoffered request closes that connection only,
ApiVersions of an unknown version answers UNSUPPORTED_VERSION at v0, and a batch that fails its
CRC is refused with CORRUPT_MESSAGE and stores nothing.
"""

from __future__ import annotations

import datetime
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from aiokafka.record._crecords import DefaultRecordBatchBuilder
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from objectlog import ObjectLog
from objectlog.format.partitioner import partition_for_key
from objectlog.kafka.server import AgentThread
from objectlog.kafka.wire import request_schema, response_schema
from tests.kafka_agent_config import agent_config
from tests.kafka_frames import encoded

TOPIC = "orders"
PARTITIONS = 3
COMPRESSIONS = (None, "gzip", "snappy", "lz4", "zstd")
Row = tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]


@pytest.fixture
def agent(log: ObjectLog) -> Iterator[AgentThread]:
    log.create_topic(TOPIC, partitions=PARTITIONS)
    running = AgentThread(log, agent_config()).start()
    yield running
    running.stop()


def library_rows(log: ObjectLog, topic: str = TOPIC) -> set[Row]:
    rows: set[Row] = set()
    for partition in range(log.topic(topic).partitions):
        offset = 0
        while records := log.fetch(topic, partition, offset, max_records=1000).records:
            rows |= {(r.partition, r.offset, r.key, r.value, tuple(r.headers)) for r in records}
            offset = records[-1].offset + 1
    return rows


def kafka_python_rows(address: str, expected: int, topic: str = TOPIC) -> set[Row]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=address, enable_auto_commit=False, consumer_timeout_ms=3000
    )
    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(partitions)
    consumer.seek_to_beginning(*partitions)
    rows: set[Row] = set()
    deadline = time.monotonic() + 20
    while len(rows) < expected and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            rows |= {(r.partition, r.offset, r.key, r.value, tuple(r.headers)) for r in batch}
    consumer.close()
    return rows


def test_kafka_python_produces_every_compression_and_the_library_reads_it_back(
    log: ObjectLog, agent: AgentThread
) -> None:
    from kafka import KafkaProducer

    sent = []
    for compression in COMPRESSIONS:
        producer = KafkaProducer(
            bootstrap_servers=agent.address,
            compression_type=compression,
            acks="all",  # kafka-python 3 is then idempotent: InitProducerId, sequences
        )
        for i in range(20):
            key, value = b"key-%d" % i, b"%s-%d" % (str(compression).encode(), i)
            headers = [("source", b"kafka-python"), ("i", b"%d" % i)]
            future = producer.send(TOPIC, key=key, value=value, headers=headers)
            sent.append((future, key, value, headers))
        producer.flush()
        producer.close()
    acknowledged = set()
    for future, key, value, headers in sent:
        metadata = future.get(timeout=10)
        assert metadata.partition == partition_for_key(key, PARTITIONS)  # murmur2, as ours
        acknowledged.add((metadata.partition, metadata.offset, key, value, tuple(headers)))
    assert library_rows(log) == acknowledged
    assert kafka_python_rows(agent.address, len(acknowledged)) == acknowledged


def test_confluent_kafka_round_trip_and_the_library_writing_for_kafka_readers(
    log: ObjectLog, agent: AgentThread
) -> None:
    import confluent_kafka

    delivered: list[Any] = []
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": agent.address,
            "partitioner": "murmur2_random",  # librdkafka's default is consistent_random
            "compression.type": "lz4",
            "linger.ms": 5,
        }
    )
    for i in range(30):
        producer.produce(
            TOPIC,
            key=b"c-%d" % i,
            value=b"confluent-%d" % i,
            headers=[("n", b"%d" % i)],
            on_delivery=lambda error, message: delivered.append((error, message)),
        )
    assert producer.flush(15) == 0
    assert [error for error, _ in delivered if error is not None] == []
    for _, message in delivered:
        assert message.partition() == partition_for_key(message.key(), PARTITIONS)
    with log.producer() as library:  # and the other way round
        for i in range(10):
            library.send(TOPIC, b"lib-%d" % i, key=b"l-%d" % i, headers=[("from", b"library")])

    expected = library_rows(log)
    assert len(expected) == 40
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": agent.address, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign(
        [
            confluent_kafka.TopicPartition(TOPIC, p, confluent_kafka.OFFSET_BEGINNING)
            for p in range(PARTITIONS)
        ]
    )
    rows: set[Row] = set()
    deadline = time.monotonic() + 20
    while len(rows) < len(expected) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        assert message.error() is None, message.error()
        headers = tuple(message.headers() or ())
        rows.add((message.partition(), message.offset(), message.key(), message.value(), headers))
    consumer.close()
    assert rows == expected


def test_list_offsets_earliest_latest_and_by_time(log: ObjectLog, agent: AgentThread) -> None:
    from kafka import KafkaConsumer, TopicPartition

    with log.producer() as producer:
        for i in range(6):
            producer.send(TOPIC, b"v%d" % i, partition=1, timestamp_ms=1_000_000 + i * 1000)
    consumer = KafkaConsumer(bootstrap_servers=agent.address)
    tp = TopicPartition(TOPIC, 1)
    assert consumer.beginning_offsets([tp]) == {tp: 0}
    assert consumer.end_offsets([tp]) == {tp: 6}
    found = consumer.offsets_for_times({tp: 1_002_500})[tp]
    assert (found.offset, found.timestamp) == (3, 1_003_000)
    assert consumer.offsets_for_times({tp: 9_999_999})[tp] is None
    consumer.close()


def test_topics_are_created_and_deleted_with_the_admin_client(
    log: ObjectLog, agent: AgentThread
) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=agent.address)
    admin.create_topics([NewTopic("Events.v1-EU", 4, 1, topic_configs={"retention.ms": "3600000"})])
    created = log.topic("Events.v1-EU", fresh=True)
    assert created.partitions == 4 and created.config.retention_ms == 3_600_000
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topics([NewTopic("Events.v1-EU", 1, 1)])
    assert "Events.v1-EU" in admin.list_topics()
    admin.delete_topics(["Events.v1-EU"])
    assert "Events.v1-EU" not in log.list_topics()
    admin.close()


# ---- raw frames ------------------------------------------------------------------------


def frame(api_key: int, version: int, body: Any, correlation_id: int = 7) -> bytes:
    data = encoded(api_key, version, body, correlation_id=correlation_id)
    return len(data).to_bytes(4, "big") + data


def exchange(address: str, data: bytes) -> bytes | None:
    """Send data, return the first response frame's body, or None if the agent closed."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(data)
        connection.shutdown(socket.SHUT_WR)  # a frame cut short ends here
        size = connection.recv(4, socket.MSG_WAITALL)
        if len(size) < 4:
            return None
        return connection.recv(int.from_bytes(size, "big"), socket.MSG_WAITALL)


def produce_request(records: bytes, topic: str = TOPIC, partition: int = 0) -> Any:
    from kio.schema.produce.v9.request import (
        PartitionProduceData,
        ProduceRequest,
        TopicProduceData,
    )

    data = PartitionProduceData(index=partition, records=records)
    return ProduceRequest(
        acks=-1,
        timeout=datetime.timedelta(seconds=5),
        topic_data=(TopicProduceData(name=topic, partition_data=(data,)),),
    )


def batch(*values: bytes) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 20)
    for i, value in enumerate(values):
        builder.append(i, 1_700_000_000_000 + i, None, value, [])
    return bytes(builder.build())


def produce_answer(address: str, records: bytes) -> Any:
    answer = exchange(address, frame(0, 9, produce_request(records)))
    assert answer is not None
    header_size = 5  # v1 response header: correlation id, empty tagged fields
    response, _ = entity_reader(response_schema(0, 9))(answer, header_size)
    return response.responses[0].partition_responses[0]


def test_a_batch_that_fails_its_crc_is_refused_and_stores_nothing(
    log: ObjectLog, agent: AgentThread
) -> None:
    good = produce_answer(agent.address, batch(b"a", b"b"))
    assert (good.error_code, good.base_offset) == (ErrorCode.none, 0)
    corrupt = bytearray(batch(b"c", b"d"))
    corrupt[-1] ^= 0xFF
    refused = produce_answer(agent.address, bytes(corrupt))
    assert refused.error_code == ErrorCode.corrupt_message
    assert log.offsets(TOPIC, 0).latest == 2  # nothing stored


def test_malformed_oversized_and_unoffered_requests_close_only_their_connection(
    log: ObjectLog, agent: AgentThread
) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=agent.address, enable_idempotence=False)
    producer.send(TOPIC, b"before", partition=0).get(timeout=10)
    metadata = frame(
        3,
        12,
        request_schema(3, 12)(
            topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
        ),
    )  # size, key, version, id, ...
    broken = [
        (len(metadata) + 10).to_bytes(4, "big") + metadata[4:],  # ends inside the frame
        (200 << 20).to_bytes(4, "big") + b"\0" * 16,  # over the frame size limit
        metadata[:4] + b"\x00\x03\x00\x2a" + metadata[8:],  # Metadata v42: not offered
        metadata[:4] + b"\x00\x63\x00\x0c" + metadata[8:],  # API 99: not offered
        metadata[:12] + b"\xff" * (len(metadata) - 12),  # garbage after the correlation id
    ]
    for data in broken:
        assert exchange(agent.address, data) is None
    producer.send(TOPIC, b"after", partition=0).get(timeout=10)
    producer.close()
    assert [r.value for r in log.fetch(TOPIC, 0, 0).records] == [b"before", b"after"]


def test_an_api_versions_request_of_an_unknown_version_gets_unsupported_version_at_v0(
    agent: AgentThread,
) -> None:
    body = request_schema(18, 3)(client_software_name="raw", client_software_version="1")
    request = frame(18, 3, body)
    unknown = request[:6] + b"\x00\x63" + request[8:]  # ApiVersions v99
    answer = exchange(agent.address, unknown)
    assert answer is not None
    response, _ = entity_reader(response_schema(18, 0))(answer, 4)  # v0 header: correlation id
    assert response.error_code == ErrorCode.unsupported_version
    offered = {api.api_key: (api.min_version, api.max_version) for api in response.api_keys}
    assert offered[0] == (3, 11) and offered[18] == (0, 4)


def set_bits(value: int) -> set[int]:
    return {bit for bit in range(32) if value >> bit & 1}


def test_authorized_operations_are_all_of_kafkas_when_asked_and_int32_min_when_not(
    agent: AgentThread,
) -> None:
    """No ACLs: asked, Metadata reports every operation Kafka defines for a topic and for the
    cluster (kafka-python 2.3 decodes the bits into its AclOperation enum and fails on others)."""
    for asked in (True, False):
        body = request_schema(3, 10)(
            topics=None,
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=asked,
            include_topic_authorized_operations=asked,
        )
        answer = exchange(agent.address, frame(3, 10, body))
        assert answer is not None
        response, _ = entity_reader(response_schema(3, 10))(answer, 5)
        (topic,) = [t for t in response.topics if t.name == TOPIC]
        if asked:
            # READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS
            assert set_bits(topic.topic_authorized_operations) == {3, 4, 5, 6, 7, 8, 10, 11}
            # CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
            # IDEMPOTENT_WRITE
            assert set_bits(response.cluster_authorized_operations) == {5, 7, 8, 9, 10, 11, 12}
        else:
            assert topic.topic_authorized_operations == -(2**31)
            assert response.cluster_authorized_operations == -(2**31)


def init_producer(address: str, producer_id: int = -1, epoch: int = -1) -> tuple[int, int]:
    body = request_schema(22, 4)(
        transactional_id=None,
        transaction_timeout=datetime.timedelta(seconds=60),
        producer_id=producer_id,
        producer_epoch=epoch,
    )
    answer = exchange(address, frame(22, 4, body))
    assert answer is not None
    response, _ = entity_reader(response_schema(22, 4))(answer, 5)
    assert response.error_code == ErrorCode.none
    return int(response.producer_id), int(response.producer_epoch)


def idempotent_batch(producer: tuple[int, int], sequence: int, records: int = 3) -> bytes:
    producer_id, epoch = producer
    builder = DefaultRecordBatchBuilder(2, 0, 0, producer_id, epoch, sequence, 1 << 20)
    for i in range(records):
        builder.append(i, 1_700_000_000_000, None, b"s%d" % (sequence + i), [])
    return bytes(builder.build())


def test_an_idempotent_producers_retries_get_their_original_offsets_and_gaps_are_refused(
    log: ObjectLog, agent: AgentThread
) -> None:
    producer = init_producer(agent.address)
    assert init_producer(agent.address)[0] == producer[0] + 1  # ids from one counter
    bases = [
        produce_answer(agent.address, idempotent_batch(producer, s)).base_offset
        for s in (0, 3, 6, 9, 12, 15)
    ]
    assert bases == [0, 3, 6, 9, 12, 15]
    for sequence, base in ((3, 3), (6, 6), (15, 15)):  # retries within the last five batches
        again = produce_answer(agent.address, idempotent_batch(producer, sequence))
        assert (again.error_code, again.base_offset) == (ErrorCode.none, base)
    old = produce_answer(agent.address, idempotent_batch(producer, 0))  # beyond the window
    assert old.error_code == ErrorCode.duplicate_sequence_number
    gap = produce_answer(agent.address, idempotent_batch(producer, 30))
    assert gap.error_code == ErrorCode.out_of_order_sequence_number
    bumped = init_producer(agent.address, *producer)  # KIP-360: the same id, the next epoch
    assert bumped == (producer[0], producer[1] + 1)
    assert produce_answer(agent.address, idempotent_batch(bumped, 0)).base_offset == 18
    fenced = produce_answer(agent.address, idempotent_batch(producer, 18))
    assert fenced.error_code == ErrorCode.invalid_producer_epoch
    values = [r.value for r in log.fetch(TOPIC, 0, 0).records]
    assert values == [b"s%d" % i for i in range(18)] + [b"s0", b"s1", b"s2"]  # nothing twice


def test_the_head_stays_small_with_sixteen_idempotent_producers(
    log: ObjectLog, agent: AgentThread
) -> None:
    from bench.meter import item_size
    from objectlog.stores.dynamo_metadata import head_key

    producers = [init_producer(agent.address) for _ in range(16)]
    for round_ in range(6):  # six batches each: every window full and wrapped
        for producer in producers:
            answer = produce_answer(agent.address, idempotent_batch(producer, 3 * round_))
            assert answer.error_code == ErrorCode.none
    head = log.metadata.get_head(TOPIC, 0)
    assert head is not None and len([p for p in head.producers if p.startswith("k")]) == 16
    raw = log.metadata.table.client.get_item(
        TableName=log.config.table, Key={k: {"S": v} for k, v in head_key(TOPIC, 0).items()}
    )["Item"]
    size = item_size(raw)
    print(f"head with 16 Kafka producers and {len(head.tail)} refs: {size} bytes")
    assert size < 2048  # DESIGN.md section 3; figures in docs/kafka.md


def test_waiting_fetches_share_one_head_watcher_and_wake_when_records_arrive(
    log: ObjectLog, agent: AgentThread
) -> None:
    from kafka import KafkaConsumer, TopicPartition

    consumers = []
    for _ in range(6):  # six consumers tailing the same partition at its end
        consumer = KafkaConsumer(bootstrap_servers=agent.address, fetch_max_wait_ms=500)
        consumer.assign([TopicPartition(TOPIC, 0)])
        consumer.seek_to_end()
        consumer.poll(timeout_ms=100)
        consumers.append(consumer)
    assert agent.agent.handlers is not None
    watcher = agent.agent.handlers.fetching.watcher
    before, started = watcher.reads, time.monotonic()
    for consumer in consumers:
        consumer.poll(timeout_ms=300)
    time.sleep(1.0)
    elapsed = time.monotonic() - started
    reads = watcher.reads - before
    assert 0 < reads <= elapsed / watcher.interval_s + 2  # one reader for all six, not six
    with log.producer() as producer:
        producer.send(TOPIC, b"news", partition=0)
    arrived = []
    for consumer in consumers:
        polled = consumer.poll(timeout_ms=3000)
        arrived += [r.value for batch in polled.values() for r in batch]
        consumer.close()
    assert arrived == [b"news"] * 6
