"""`objectlog acls add|list|remove` on the table, with kafka-acls.sh's vocabulary (issue 37)."""

from __future__ import annotations

import getpass
import json
import logging
import shlex

import pytest
from click.testing import CliRunner, Result

from objectlog import ObjectLog
from objectlog.format.acls import AclBinding, Operation, PatternType, Permission, ResourceType
from objectlog.tools.cli import main

TOPIC, GROUP, CLUSTER, TXN = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
)
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY


def acls(log_env: dict[str, str], command: str, input: str | None = None) -> Result:
    """``objectlog acls COMMAND`` (split as a shell would)."""
    return CliRunner().invoke(main, ["acls", *shlex.split(command)], env=log_env, input=input)


def ok(log_env: dict[str, str], command: str, input: str | None = None) -> str:
    result = acls(log_env, command, input)
    assert result.exit_code == 0, result.output
    return result.output


def acl(
    kind: ResourceType,
    name: str,
    op: Operation,
    principal: str = "User:alice",
    pattern: PatternType = LITERAL,
    permission: Permission = ALLOW,
    host: str = "*",
) -> AclBinding:
    return AclBinding(kind, name, pattern, principal, host, op, permission)


def test_add_literal_and_prefixed_bindings_and_list_them(
    log: ObjectLog, log_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="objectlog.tools.acls_cli")
    added = ok(
        log_env,
        "add --allow-principal User:alice --operation Read --operation WRITE "
        "--operation describeconfigs --topic orders",
    )
    assert "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders" in added
    assert "\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in added
    ok(
        log_env,
        "add --allow-principal User:bob --allow-host 10.0.0.1 --deny-principal User:mallory "
        "--operation Describe --topic orders. --group orders. --resource-pattern-type PREFIXED",
    )
    ok(log_env, "add --allow-principal User:ops --cluster --operation ClusterAction")
    assert set(log.items.acls.list()) == {
        acl(TOPIC, "orders", Operation.READ),
        acl(TOPIC, "orders", Operation.WRITE),
        acl(TOPIC, "orders", Operation.DESCRIBE_CONFIGS),
        acl(TOPIC, "orders.", Operation.DESCRIBE, "User:bob", PREFIXED, host="10.0.0.1"),
        acl(TOPIC, "orders.", Operation.DESCRIBE, "User:mallory", PREFIXED, DENY),
        acl(GROUP, "orders.", Operation.DESCRIBE, "User:bob", PREFIXED, host="10.0.0.1"),
        acl(GROUP, "orders.", Operation.DESCRIBE, "User:mallory", PREFIXED, DENY),
        acl(CLUSTER, "kafka-cluster", Operation.CLUSTER_ACTION, "User:ops"),
    }
    assert sum(f"ACL added by local user {getpass.getuser()}" in m for m in caplog.messages) == 8
    again = ok(log_env, "add --allow-principal User:ops --cluster --operation CLUSTER_ACTION")
    assert "added 0 ACL(s), 1 there already" in again

    assert ok(log_env, "list").count("Current ACLs for resource") == 4
    literal = ok(log_env, "list --topic orders")  # LITERAL by default, as Kafka's
    assert "name=orders," in literal and "orders." not in literal
    matching = ok(log_env, "list --topic orders.eu --resource-pattern-type match")
    assert "name=orders., patternType=PREFIXED" in matching and "GROUP" not in matching
    bobs = ok(log_env, "list --principal User:bob")
    assert bobs.startswith("ACLs for principal `User:bob`") and "alice" not in bobs
    assert bobs.count("User:bob") == 3  # the heading, a topic and a group
    listed = json.loads(ok(log_env, "list --group orders. --resource-pattern-type any --json"))
    bob = {"principal": "User:bob", "host": "10.0.0.1", "operation": "DESCRIBE"}
    mallory = {"principal": "User:mallory", "host": "*", "operation": "DESCRIBE"}
    assert listed == [
        {
            "resource_type": "GROUP",
            "name": "orders.",
            "pattern_type": "PREFIXED",
            "acls": [{**bob, "permission": "ALLOW"}, {**mallory, "permission": "DENY"}],
        }
    ]


def test_producer_and_consumer_shortcuts_make_kafkas_bindings(
    log: ObjectLog, log_env: dict[str, str]
) -> None:
    ok(
        log_env,
        "add --allow-principal User:p --producer --idempotent --topic orders "
        "--transactional-id etl",
    )
    assert set(log.items.acls.list()) == {
        acl(TOPIC, "orders", Operation.WRITE, "User:p"),
        acl(TOPIC, "orders", Operation.DESCRIBE, "User:p"),
        acl(TOPIC, "orders", Operation.CREATE, "User:p"),
        acl(TXN, "etl", Operation.WRITE, "User:p"),
        acl(TXN, "etl", Operation.DESCRIBE, "User:p"),
        acl(CLUSTER, "kafka-cluster", Operation.IDEMPOTENT_WRITE, "User:p"),
    }
    ok(log_env, "remove --topic orders --transactional-id etl --cluster --force")
    assert log.items.acls.list() == []

    ok(
        log_env,
        "add --allow-principal User:c --consumer --topic orders --group billing "
        "--resource-pattern-type prefixed",
    )
    assert set(log.items.acls.list()) == {
        acl(TOPIC, "orders", Operation.READ, "User:c", PREFIXED),
        acl(TOPIC, "orders", Operation.DESCRIBE, "User:c", PREFIXED),
        acl(GROUP, "billing", Operation.READ, "User:c", PREFIXED),
    }
    # Both at once: the consumer's merged into the producer's, as Kafka merges them
    ok(log_env, "add --allow-principal User:pc --producer --consumer --topic t --group g")
    pcs = {
        (b.resource_type, b.operation) for b in log.items.acls.list() if b.principal == "User:pc"
    }
    assert pcs == {
        (TOPIC, Operation.WRITE),
        (TOPIC, Operation.DESCRIBE),
        (TOPIC, Operation.CREATE),
        (TOPIC, Operation.READ),
        (GROUP, Operation.READ),
    }


def test_remove_with_force_and_with_the_confirmation_answered(
    log: ObjectLog, log_env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="objectlog.tools.acls_cli")
    ok(
        log_env,
        "add --allow-principal User:alice --allow-principal User:bob --operation Read "
        "--topic orders",
    )
    ok(log_env, "add --allow-principal User:alice --operation All --topic orders")
    ok(
        log_env,
        "add --allow-principal User:alice --operation Read --topic ord "
        "--resource-pattern-type prefixed",
    )

    # With principals, exactly what add would have made: --operation defaults to All, as Kafka's
    declined = ok(log_env, "remove --allow-principal User:alice --topic orders", input="n\n")
    assert "operation=ALL" in declined and "operation=READ" not in declined
    assert "Remove these 1 ACL(s)?" in declined and "nothing removed" in declined
    assert len(log.items.acls.list()) == 4
    removed = ok(
        log_env, "remove --allow-principal User:alice --operation read --topic orders", input="y\n"
    )
    assert "Removed ACLs from resource `ResourcePattern(resourceType=TOPIC, name=orders" in removed
    assert "removed 1 ACL(s)" in removed
    assert acl(TOPIC, "orders", Operation.READ) not in log.items.acls.list()
    assert "nothing to remove" in ok(log_env, "remove --topic nope --force")

    # Without principals, every ACL the filter selects: MATCH takes the prefixed one too
    ok(log_env, "remove --topic orders --resource-pattern-type match --force")
    assert log.items.acls.list() == []
    assert sum("ACL removed by local user" in m for m in caplog.messages) == 4


BAD_ADDS = [  # (arguments after `add --allow-principal User:alice`, the option named)
    ("--operation Reed --topic t", "--operation"),
    ("--operation Write --group g", "--operation"),  # a GROUP takes no WRITE
    ("--operation Read --topic t --allow-principal alice", "--allow-principal"),
    ("--operation Read --topic t --deny-principal User:x --deny-host ''", "--deny-host"),
    ("--operation Read --topic '*' --resource-pattern-type prefixed", "--topic"),
    ("--operation Read --topic " + "x" * 1100, "--topic"),  # past the store's bound
    ("--operation Read --topic ''", "--topic"),
    ("--operation Read --cluster --resource-pattern-type prefixed", "--cluster"),
    ("--operation Read --topic t --resource-pattern-type any", "--resource-pattern-type"),
    ("--operation Read", "--topic"),  # no resource
    ("--producer", "--producer"),
    ("--producer --topic t --operation Read", "--operation"),
    ("--producer --topic t --group g", "--group"),
    ("--consumer --topic t", "--group"),
    ("--consumer --topic t --group g --deny-principal User:x", "--deny-principal"),
    ("--idempotent --topic t", "--idempotent"),
]


def test_bad_input_is_refused_naming_the_option_and_nothing_is_stored(
    log: ObjectLog, log_env: dict[str, str]
) -> None:
    for args, option in BAD_ADDS:
        result = acls(log_env, f"add --allow-principal User:alice {args}")
        assert result.exit_code == 2 and option in result.output, (args, result.output)
    nobody = acls(log_env, "add --operation Read --topic t")
    assert nobody.exit_code == 2 and "--allow-principal" in nobody.output
    assert acls(log_env, "list --principal alice").exit_code == 2
    assert acls(log_env, "remove --operation Reed --topic t --force").exit_code == 2
    assert log.items.acls.list() == [] and log.items.acls.version() == 0  # not even a bump
