"""Requests parse as Kafka's broker parses them: every API at every version the agent offers,
encoded by kio and by kafka-python (whose messages come from Kafka's own JSON schemas), is read
whole; bytes after the fields a version defines are ignored; a request cut short is malformed.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from typing import Any

import pytest

from objectlog.kafka.handlers import CONSUMER_GROUP_DESCRIBE, CONSUMER_GROUP_HEARTBEAT, SUPPORTED
from objectlog.kafka.wire import MalformedFrame, parse_request
from tests.kafka_frames import request as kio_request

TRAILING = b"\x01\x00\x00"
# librdkafka 2.16.0's all-topics Metadata v12 (confluent-kafka 2.16.1's list_topics()), as sent
# on the wire after the size: header v2 (client id "rdkafka", no tags), then null topics, two
# false flags and no tags, then 3 bytes more.
LIBRDKAFKA_ALL_TOPICS = bytes.fromhex(
    "0003000c000000030007" + b"rdkafka".hex() + "00" + "00000000" + "010000"
)


def offered() -> Iterator[tuple[int, int]]:
    for api_key, (low, high) in sorted(SUPPORTED.items()):
        for version in range(low, high + 1):
            yield api_key, version


def kafka_python_requests() -> dict[int, Any]:
    """kafka-python's request message classes by API key."""
    import kafka.protocol
    from kafka.protocol.api_message import ApiMessage

    found: dict[int, Any] = {}
    for module_info in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        module = importlib.import_module(module_info.name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, ApiMessage)
                and getattr(value, "_json", None)
                and value.type == "request"
                and value._class_version is None
            ):
                found[value.API_KEY] = value
    return found


OFFERED = list(offered())


@pytest.mark.parametrize(("api_key", "version"), OFFERED, ids=lambda v: str(v))
def test_every_offered_version_is_read_whole_and_bytes_after_it_are_ignored(
    api_key: int, version: int
) -> None:
    data = kio_request(api_key, version)
    clean = parse_request(data, SUPPORTED)
    padded = parse_request(data + TRAILING, SUPPORTED)
    assert (padded.api_key, padded.api_version, padded.correlation_id) == (api_key, version, 5)
    assert padded.body == clean.body


@pytest.mark.parametrize(("api_key", "version"), OFFERED, ids=lambda v: str(v))
def test_a_request_cut_short_is_malformed(api_key: int, version: int) -> None:
    data = kio_request(api_key, version)
    with pytest.raises(MalformedFrame):
        parse_request(data[:-1], SUPPORTED)


def test_kafka_python_encodes_every_offered_version_and_the_agent_reads_it() -> None:
    classes = kafka_python_requests()
    kip_848 = {CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE}
    assert set(SUPPORTED) - set(classes) == kip_848  # not in kafka-python 3.0.12
    encoded = [(key, version) for key, version in OFFERED if key in classes]
    read = 0
    for api_key, version in encoded:
        message = classes[api_key][version]()
        message.with_header(correlation_id=9, client_id="kafka-python")
        data = bytes(message.encode(header=True))
        for frame in (data, data + TRAILING):
            request = parse_request(frame, SUPPORTED)
            assert (request.api_key, request.api_version) == (api_key, version)
            assert request.correlation_id == 9 and request.client_id == "kafka-python"
            read += 1
    assert read == 2 * len(encoded)


def test_librdkafkas_all_topics_metadata_is_read_as_all_topics() -> None:
    request = parse_request(LIBRDKAFKA_ALL_TOPICS, SUPPORTED)
    assert (request.api_key, request.api_version, request.client_id) == (3, 12, "rdkafka")
    assert request.body.topics is None


def test_an_api_not_offered_is_malformed_and_an_unknown_api_versions_gets_no_body() -> None:
    metadata = kio_request(3, 12)
    with pytest.raises(MalformedFrame, match="not offered"):
        parse_request(metadata[:2] + b"\x00\x2a" + metadata[4:], SUPPORTED)
    api_versions = kio_request(18, 3)
    unknown = parse_request(api_versions[:2] + b"\x00\x63" + api_versions[4:], SUPPORTED)
    assert (unknown.api_version, unknown.correlation_id, unknown.body) == (99, 5, None)
