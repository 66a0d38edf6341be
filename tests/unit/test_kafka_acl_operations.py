"""Every Kafka API the agent offers says what it requires of the principal (issue 37): an API
cannot be added to kafka.handlers.SUPPORTED without a row in kafka.acl_operations.REQUIRED."""

from __future__ import annotations

from objectlog.format.acls import Operation, ResourceType
from objectlog.kafka.acl_operations import REQUIRED, Shown
from objectlog.kafka.handlers import SUPPORTED

NEED_NOTHING = {17, 18, 36}  # SaslHandshake, ApiVersions, SaslAuthenticate: before any principal


def test_every_offered_api_has_its_requirements() -> None:
    missing = sorted(set(SUPPORTED) - set(REQUIRED))
    assert not missing, f"APIs offered without a row in acl_operations.REQUIRED: {missing}"
    assert not sorted(set(REQUIRED) - set(SUPPORTED)), "rows for APIs the agent does not offer"


def test_only_the_handshake_needs_nothing() -> None:
    assert {key for key, needs in REQUIRED.items() if not needs} == NEED_NOTHING


def test_the_rows_use_concrete_operations_and_resources() -> None:
    for key, needs in REQUIRED.items():
        for need in needs:
            assert need.operation not in (Operation.ANY, Operation.ALL), key
            assert need.resource is not ResourceType.ANY, key
            assert isinstance(need.shown, Shown)


def test_kafkas_produce_and_consume_requirements() -> None:
    """Spot checks against Kafka 3.9's KafkaApis: the common paths a producer and a group
    consumer take."""
    produce = {(n.operation, n.resource) for n in REQUIRED[0]}
    assert (Operation.WRITE, ResourceType.TOPIC) in produce
    assert (Operation.WRITE, ResourceType.TRANSACTIONAL_ID) in produce
    assert [(n.operation, n.resource) for n in REQUIRED[1]] == [
        (Operation.READ, ResourceType.TOPIC)
    ]
    commit = {(n.operation, n.resource) for n in REQUIRED[8]}
    assert commit == {(Operation.READ, ResourceType.GROUP), (Operation.READ, ResourceType.TOPIC)}
    assert {n.shown for n in REQUIRED[3]} == {Shown.FILTER, Shown.EACH}  # Metadata filters


def test_every_api_offered_has_a_guard() -> None:
    """kafka.guards authorizes every API the agent offers (the no-bypass test sends each)."""
    from objectlog.kafka.guards import GUARDS

    assert set(GUARDS) == set(SUPPORTED)
