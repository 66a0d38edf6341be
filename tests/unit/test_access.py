"""services.access: what turns authorization on, Kafka's two settings, and an AccessControl
that decides by the one function, reads nothing when off, and logs and counts each refusal
(one EMF line with the principal, operation and resource)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from objectlog.clock import ManualClock
from objectlog.format.acls import AclBinding, Operation, PatternType, Permission, ResourceType
from objectlog.services.access import (
    ENV_ALLOW_EVERYONE,
    ENV_AUTHORIZER,
    ENV_SUPER_USERS,
    AccessControl,
    AccessSettings,
)
from objectlog.services.authorization import Settings
from objectlog.stores.memory_acls import MemoryAclStore

ON = AccessSettings(enabled=True)
T = ResourceType.TOPIC


class UnreadableStore(MemoryAclStore):
    """A store that fails the test if anything reads it."""

    def version(self) -> int:
        raise AssertionError("the ACL store was read")

    def list(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the ACL store was read")


def write(principal: str, name: str, prefixed: bool = False) -> AclBinding:
    pattern = PatternType.PREFIXED if prefixed else PatternType.LITERAL
    return AclBinding(T, name, pattern, principal, "*", Operation.WRITE, Permission.ALLOW)


def control(settings: AccessSettings, *bindings: AclBinding) -> tuple[AccessControl, list[str]]:
    store = MemoryAclStore()
    store.create(list(bindings))
    lines: list[str] = []
    return AccessControl(store, ManualClock(0), settings, door="kafka", emit=lines.append), lines


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, AccessSettings()),
        ({ENV_AUTHORIZER: "none"}, AccessSettings()),
        ({ENV_AUTHORIZER: "ACLS"}, AccessSettings(enabled=True)),
        (
            {ENV_AUTHORIZER: "acls", ENV_SUPER_USERS: " User:admin ; User:ops;"},
            AccessSettings(True, Settings(frozenset({"User:admin", "User:ops"}))),
        ),
        (
            {ENV_AUTHORIZER: "acls", ENV_ALLOW_EVERYONE: "true"},
            AccessSettings(True, Settings(allow_everyone_if_no_acl_found=True)),
        ),
    ],
)
def test_settings_come_from_the_environment(env: dict[str, str], expected: AccessSettings) -> None:
    assert AccessSettings.from_env(env) == expected


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({ENV_AUTHORIZER: "kafka.security.authorizer.AclAuthorizer"}, ENV_AUTHORIZER),
        ({ENV_SUPER_USERS: "admin"}, "admin"),
        ({ENV_SUPER_USERS: "User:"}, "User:"),
        ({ENV_ALLOW_EVERYONE: "maybe"}, ENV_ALLOW_EVERYONE),
    ],
)
def test_a_bad_setting_is_refused_naming_it(env: dict[str, str], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        AccessSettings.from_env(env)


def test_off_allows_everything_and_reads_nothing() -> None:
    access = AccessControl(UnreadableStore(), ManualClock(0), AccessSettings(), door="kafka")
    assert access.allows("User:anyone", "*", Operation.DELETE, T, "orders")
    assert access.operations("User:anyone", "*", T, "orders") is None
    assert not access.due()


def test_a_refusal_is_logged_and_counted_with_who_what_and_where(
    caplog: pytest.LogCaptureFixture,
) -> None:
    access, lines = control(ON, write("User:alice", "orders"))
    with caplog.at_level(logging.INFO, "objectlog.services.access"):
        assert access.allows("User:alice", "*", Operation.WRITE, T, "orders")
        assert not access.allows("User:bob", "10.0.0.7", Operation.WRITE, T, "orders")
    assert access.refusals == 1
    assert "principal User:bob from 10.0.0.7 denied WRITE on TOPIC:orders" in caplog.text
    [line] = lines
    emf = json.loads(line)
    assert emf["AuthorizationFailures"] == 1
    assert (emf["Door"], emf["Operation"], emf["ResourceType"]) == ("kafka", "WRITE", "TOPIC")
    assert (emf["Principal"], emf["Host"], emf["Resource"]) == ("User:bob", "10.0.0.7", "orders")
    metric = emf["_aws"]["CloudWatchMetrics"][0]
    assert metric["Dimensions"] == [["Door", "Operation", "ResourceType"]]


def test_a_quiet_refusal_is_neither_counted_nor_emitted() -> None:
    access, lines = control(ON)
    assert not access.allows("User:bob", "*", Operation.DESCRIBE, T, "orders", quiet=True)
    assert (access.refusals, lines) == (0, [])


def test_idempotent_write_is_implied_by_write_on_any_topic() -> None:
    """KIP-679 (rule 9) needs every topic binding, not those of the cluster resource."""
    access, _ = control(ON, write("User:alice", "orders.", prefixed=True))
    cluster = (ResourceType.CLUSTER, "kafka-cluster")
    assert access.allows("User:alice", "*", Operation.IDEMPOTENT_WRITE, *cluster)
    assert not access.allows("User:bob", "*", Operation.IDEMPOTENT_WRITE, *cluster)


def test_super_users_and_the_switch() -> None:
    supers = AccessSettings(True, Settings(super_users=frozenset({"User:admin"})))
    access, _ = control(supers, write("User:alice", "orders"))
    assert access.allows("User:admin", "*", Operation.DELETE, T, "orders")
    open_when_unnamed = AccessSettings(True, Settings(allow_everyone_if_no_acl_found=True))
    access, _ = control(open_when_unnamed, write("User:alice", "orders"))
    assert access.allows("User:bob", "*", Operation.READ, T, "payments")  # no ACL names it
    assert not access.allows("User:bob", "*", Operation.READ, T, "orders")  # one does


def test_authorized_operations_are_the_principals() -> None:
    access, _ = control(ON, write("User:alice", "orders"))
    assert access.operations("User:alice", "*", T, "orders") == {
        Operation.WRITE,
        Operation.DESCRIBE,
    }


def test_the_http_doors_of_a_container_share_one_acl_cache() -> None:
    from types import SimpleNamespace

    from objectlog.http.access import HttpAccess
    from objectlog.stores.items import ItemStores

    log = SimpleNamespace(items=ItemStores.memory(), clock=ManualClock(0))
    access = HttpAccess(lambda: log, AccessSettings(enabled=True))  # type: ignore[arg-type,return-value]
    doors = [access.door(name) for name in ("http", "rest-proxy", "schema-registry")]
    assert doors[0].cache is doors[1].cache is doors[2].cache
    assert access.door("http") is doors[0]
