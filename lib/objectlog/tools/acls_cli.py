"""``objectlog acls add|list|remove``: Kafka's ACLs from the command line with kafka-acls.sh's
vocabulary (issue 37; docs/security.md, Managing ACLs), on the table directly (the ACL store,
stores.acls; AWS credentials as for ``objectlog users``). Agents and the HTTP API enforce a
change within their cache's staleness (services.acl_cache).

The options mean what they mean to kafka-acls.sh (Kafka's AclCommand, org.apache.kafka.tools):

- ``--topic``, ``--group``, ``--transactional-id`` (each repeatable) and ``--cluster`` name the
  resources, ``--resource-pattern-type`` how their names match (literal by default; add takes
  literal or prefixed, list and remove also any and match, as filters).
- The ACLs on each resource: every ``--allow-principal`` times every ``--allow-host`` (``*``
  when none is given) times every ``--operation`` (All when none is given), allowed; the same
  for ``--deny-principal`` and ``--deny-host``, denied. An operation must be one the resource
  type supports (services.authorization.SUPPORTED_OPERATIONS) or All.
- ``--producer``: WRITE, DESCRIBE and CREATE on each ``--topic``, WRITE and DESCRIBE on each
  ``--transactional-id``, and with ``--idempotent`` IDEMPOTENT_WRITE on the cluster (which a
  producer no longer needs: WRITE on a topic implies it, KIP-679). ``--consumer``: READ and
  DESCRIBE on each ``--topic`` and READ on each ``--group``; both may be given together. With
  either, ``--operation``, ``--deny-principal`` and ``--deny-host`` are refused; ``--producer``
  needs a ``--topic``, ``--consumer`` a ``--topic`` and a ``--group`` (and, without
  ``--producer``, no ``--cluster`` or ``--transactional-id``); ``--idempotent`` needs
  ``--producer``.
- remove: with principals, removes exactly the ACLs add would have made; without, every ACL on
  the resources the filters select.

Where kafka-acls.sh silently ignores an option, this refuses it instead: ``--cluster`` with a
prefixed pattern (Kafka drops the cluster), and a resource no shortcut covers (``--group`` with
``--producer`` alone; ``--cluster`` with a shortcut). Operation names are taken in any case, as
Kafka takes them (Read, READ, read; ClusterAction, CLUSTERACTION), and also with underscores as
the listing prints them (CLUSTER_ACTION).

Bad input is refused before anything is stored: a usage error naming the option, exit status 2.

Who made a change: each ACL added or removed is logged (INFO, logger ``objectlog.tools.acls_cli``)
with the local user running the command (``getpass.getuser()``), not the AWS identity whose
credentials wrote the table: knowing that would take an STS GetCallerIdentity call per command,
and CloudTrail's DynamoDB data events record it where it matters.
"""

from __future__ import annotations

import getpass
import json
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import click

from objectlog.clients.direct import ObjectLog
from objectlog.errors import InvalidRequest
from objectlog.format.acls import (
    CLUSTER_NAME,
    WILDCARD,
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    check_principal,
)
from objectlog.services.acl_admin import (
    OPERATION_NAMES,
    as_json,
    by_resource,
    check_supported,
    operation_named,
    remove_exactly,
    selected,
)
from objectlog.services.authorization import describe_binding
from objectlog.stores.acls import AclResource, AclStore, check_sizes
from objectlog.tools.cli_errors import clear_errors

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
Entry = tuple[str, str, Operation, Permission]  # principal, host, operation, permission
Resource = tuple[ResourceType, str]  # type and name; the pattern type is the command's

PRODUCER_TOPIC = (Operation.WRITE, Operation.DESCRIBE, Operation.CREATE)
PRODUCER_TRANSACTIONAL_ID = (Operation.WRITE, Operation.DESCRIBE)
CONSUMER_TOPIC = (Operation.READ, Operation.DESCRIBE)
CONSUMER_GROUP = (Operation.READ,)
RESOURCE_OPTIONS = {
    ResourceType.TOPIC: "--topic",
    ResourceType.GROUP: "--group",
    ResourceType.TRANSACTIONAL_ID: "--transactional-id",
    ResourceType.CLUSTER: "--cluster",
}


def parse_operation(text: str) -> Operation:
    """An --operation value, case-insensitive, with or without underscores."""
    try:
        return operation_named(text)
    except InvalidRequest as e:
        raise click.BadParameter(e.message, param_hint="'--operation'") from e


def who() -> str:
    """The local user running the command, for the change log (see the module docstring)."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in the environment or the password database
        return "unknown local user"


# ---- the command line, as kafka-acls.sh reads it ------------------------------------------


def resource_options(patterns: Sequence[str]) -> Callable[[F], F]:
    def decorate(command: F) -> F:
        for option in reversed(
            [
                click.option("--topic", "topics", multiple=True, help="repeatable; '*': all"),
                click.option("--group", "groups", multiple=True, help="repeatable; '*': all"),
                click.option(
                    "--transactional-id", "transactional_ids", multiple=True, help="repeatable"
                ),
                click.option("--cluster", is_flag=True, help="the cluster resource"),
                click.option(
                    "--resource-pattern-type",
                    "pattern",
                    type=click.Choice(patterns, case_sensitive=False),
                    default="literal",
                    show_default=True,
                ),
            ]
        ):
            command = option(command)
        return command

    return decorate


def binding_options(command: F) -> F:
    """add's and remove's options besides the resources."""
    for option in reversed(
        [
            click.option(
                "--allow-principal", "allow_principals", multiple=True, help="User:NAME or User:*"
            ),
            click.option("--allow-host", "allow_hosts", multiple=True, help="default '*'"),
            click.option(
                "--deny-principal", "deny_principals", multiple=True, help="User:NAME; DENY wins"
            ),
            click.option("--deny-host", "deny_hosts", multiple=True, help="default '*'"),
            click.option(
                "--operation",
                "operations",
                multiple=True,
                help=f"repeatable, default All; one of {', '.join(OPERATION_NAMES)}",
            ),
            click.option("--producer", is_flag=True, help="WRITE, DESCRIBE, CREATE on --topic"),
            click.option(
                "--consumer", is_flag=True, help="READ, DESCRIBE on --topic, READ on --group"
            ),
            click.option("--idempotent", is_flag=True, help="with --producer"),
        ]
    ):
        command = option(command)
    return command


def resources_of(args: dict[str, Any], required: bool) -> list[Resource]:
    """The resources named, in kafka-acls.sh's order (topics, cluster, groups, ids)."""
    pattern = PatternType[args["pattern"].upper()]
    if args["cluster"] and pattern is PatternType.PREFIXED:
        raise click.BadParameter(
            "the cluster has one name: it takes no prefixed pattern", param_hint="'--cluster'"
        )
    found: list[Resource] = [(ResourceType.TOPIC, t.strip()) for t in args["topics"]]
    if args["cluster"]:
        found.append((ResourceType.CLUSTER, CLUSTER_NAME))
    found += [(ResourceType.GROUP, g.strip()) for g in args["groups"]]
    found += [(ResourceType.TRANSACTIONAL_ID, x) for x in args["transactional_ids"]]
    for kind, name in found:
        if not name:
            raise click.BadParameter("the name is empty", param_hint=f"'{RESOURCE_OPTIONS[kind]}'")
    if required and not found:
        raise click.UsageError(
            "name at least one resource: --topic, --group, --transactional-id or --cluster"
        )
    return list(dict.fromkeys(found))


def check_shortcuts(args: dict[str, Any]) -> None:
    """kafka-acls.sh's rules for --producer, --consumer and --idempotent (module docstring)."""
    producer, consumer = args["producer"], args["consumer"]
    if args["idempotent"] and not producer:
        raise click.UsageError("--idempotent is only available with --producer")
    if not (producer or consumer):
        return
    for key, option in (
        ("operations", "--operation"),
        ("deny_principals", "--deny-principal"),
        ("deny_hosts", "--deny-host"),
    ):
        if args[key]:
            raise click.UsageError(f"{option} is not taken with --producer or --consumer")
    if producer and not args["topics"]:
        raise click.UsageError("with --producer you must specify a --topic")
    if consumer and (not args["topics"] or not args["groups"]):
        raise click.UsageError("with --consumer you must specify a --topic and a --group")
    if consumer and not producer and args["transactional_ids"]:
        raise click.UsageError("--transactional-id is for --producer, not --consumer")
    if args["groups"] and not consumer:
        raise click.UsageError("--group is for --consumer: --producer makes no group ACL")
    if args["cluster"]:
        raise click.UsageError(
            "--cluster is not taken with --producer or --consumer (--idempotent makes the "
            "cluster ACL)"
        )


def principals(values: Iterable[str], option: str) -> list[str]:
    checked = []
    for value in values:
        try:
            checked.append(check_principal(value.strip()))
        except InvalidRequest as e:
            raise click.BadParameter(e.message, param_hint=f"'{option}'") from e
    return checked


def hosts(values: Sequence[str], option: str, have_principals: bool) -> list[str]:
    """The hosts given, else '*' when principals are (Kafka's default)."""
    if any(not v.strip() for v in values):
        raise click.BadParameter("the host is empty: '*' for any", param_hint=f"'{option}'")
    if values:
        return [v.strip() for v in values]
    return [WILDCARD] if have_principals else []


def entries(args: dict[str, Any], operations: Iterable[Operation]) -> set[Entry]:
    """Kafka's getAcl: allowed principals x hosts x operations, and the same denied."""
    allowed = principals(args["allow_principals"], "--allow-principal")
    denied = principals(args["deny_principals"], "--deny-principal")
    allow_hosts = hosts(args["allow_hosts"], "--allow-host", bool(allowed))
    deny_hosts = hosts(args["deny_hosts"], "--deny-host", bool(denied))
    ops = list(operations)
    made = {(p, h, op, Permission.ALLOW) for p in allowed for h in allow_hosts for op in ops}
    made |= {(p, h, op, Permission.DENY) for p in denied for h in deny_hosts for op in ops}
    return made


def resource_entries(args: dict[str, Any]) -> dict[Resource, set[Entry]]:
    """Each resource's ACLs as kafka-acls.sh makes them (getResourceFilterToAcls), checked."""
    check_shortcuts(args)
    found = resources_of(args, required=True)
    made: dict[Resource, set[Entry]] = {}
    if not (args["producer"] or args["consumer"]):
        ops = [parse_operation(o) for o in args["operations"]] or [Operation.ALL]
        made = {r: entries(args, ops) for r in found}
    if args["producer"]:
        for kind, name in found:
            if kind is ResourceType.TOPIC:
                made[(kind, name)] = entries(args, PRODUCER_TOPIC)
            elif kind is ResourceType.TRANSACTIONAL_ID:
                made[(kind, name)] = entries(args, PRODUCER_TRANSACTIONAL_ID)
        if args["idempotent"]:
            cluster = (ResourceType.CLUSTER, CLUSTER_NAME)
            made[cluster] = entries(args, [Operation.IDEMPOTENT_WRITE])
    if args["consumer"]:
        consumed = {ResourceType.TOPIC: CONSUMER_TOPIC, ResourceType.GROUP: CONSUMER_GROUP}
        for kind, name in found:
            if kind in consumed:
                made.setdefault((kind, name), set()).update(entries(args, consumed[kind]))
    for (kind, _), acls in made.items():
        try:
            check_supported(kind, (op for _, _, op, _ in acls), "operation")
        except InvalidRequest as e:
            raise click.BadParameter(e.message, param_hint="'--operation'") from e
    return made


def bindings_to_add(args: dict[str, Any]) -> list[AclBinding]:
    """The bindings add stores, every one checked (model and size bounds) before any is."""
    made = resource_entries(args)
    if any(not acls for acls in made.values()):
        raise click.UsageError(
            "you must specify one of --allow-principal, --deny-principal when adding ACLs"
        )
    pattern = PatternType[args["pattern"].upper()]
    bindings = []
    for (kind, name), acls in made.items():
        for principal, host, op, permission in sorted(acls):
            try:
                binding = AclBinding(kind, name, pattern, principal, host, op, permission)
                check_sizes(binding)
            except InvalidRequest as e:
                hint = f"'{RESOURCE_OPTIONS[kind]}'"
                raise click.BadParameter(e.message, param_hint=hint) from e
            bindings.append(binding)
    return sorted(set(bindings))


def removal_filters(args: dict[str, Any]) -> list[AclFilter]:
    """remove's filters: the ACLs add would have made, or (no principal) all on the resources."""
    pattern = PatternType[args["pattern"].upper()]
    filters = []
    for (kind, name), acls in resource_entries(args).items():
        if not acls:
            filters.append(AclFilter(kind, name, pattern))
        for principal, host, op, permission in sorted(acls):
            filters.append(AclFilter(kind, name, pattern, principal, host, op, permission))
    return filters


# ---- what the terminal shows, in kafka-acls.sh's words ------------------------------------


def pattern_text(r: AclResource) -> str:
    return (
        f"ResourcePattern(resourceType={r.resource_type.name}, name={r.name}, "
        f"patternType={r.pattern_type.name})"
    )


def entry_text(b: AclBinding) -> str:
    return (
        f"(principal={b.principal}, host={b.host}, operation={b.operation.name}, "
        f"permissionType={b.permission.name})"
    )


def echo_listing(heading: str, bindings: Iterable[AclBinding]) -> None:
    for resource, acls in by_resource(bindings).items():
        click.echo(f"{heading} `{pattern_text(resource)}`:")
        for b in acls:
            click.echo(f"\t{entry_text(b)}")
        click.echo()


# ---- the commands ---------------------------------------------------------------------------


@click.group()
def acls() -> None:
    """Kafka ACLs, as kafka-acls.sh manages them: add, list, remove (docs/security.md)."""


def _store(ctx: click.Context) -> AclStore:
    log = ObjectLog(ctx.find_root().meta["direct_config"]())
    ctx.call_on_close(log.close)
    return log.items.acls


@acls.command("add")
@binding_options
@resource_options(["literal", "prefixed"])
@click.pass_context
@clear_errors
def acls_add(ctx: click.Context, **args: Any) -> None:
    """Add ACLs: --allow-principal User:NAME --operation OP --topic T (kafka-acls.sh --add)."""
    bindings = bindings_to_add(args)
    echo_listing("Adding ACLs for resource", bindings)
    store = _store(ctx)
    answers = store.create(bindings)
    user = who()
    for answer in answers:
        if answer.created:
            logger.info(
                "ACL added by local user %s (objectlog acls add): %s",
                user,
                describe_binding(answer.binding),
            )
    failed = [a for a in answers if a.error is not None]
    for a in failed:
        click.echo(f"error: {describe_binding(a.binding)}: {a.error}", err=True)
    kept = sum(1 for a in answers if not a.created and a.error is None)
    added = len(answers) - kept - len(failed)
    click.echo(f"added {added} ACL(s)" + (f", {kept} there already" if kept else ""))
    resources = {AclResource.of(b) for b in bindings}
    echo_listing(
        "Current ACLs for resource",
        [b for b in store.list() if AclResource.of(b) in resources],
    )
    if failed:
        ctx.exit(1)


@acls.command("list")
@resource_options(["any", "match", "literal", "prefixed"])
@click.option("--principal", "listed", multiple=True, help="only this principal's; repeatable")
@click.option("--json", "as_json_", is_flag=True, help="one JSON document")
@click.pass_context
@clear_errors
def acls_list(ctx: click.Context, listed: tuple[str, ...], as_json_: bool, **args: Any) -> None:
    """List ACLs by resource, of the resources named or all (kafka-acls.sh --list)."""
    pattern = PatternType[args["pattern"].upper()]
    filters = [AclFilter(k, n, pattern) for k, n in resources_of(args, required=False)]
    wanted = principals(listed, "--principal")
    found = selected(_store(ctx), filters)
    if wanted:
        found = [b for b in found if b.principal in wanted]
    if as_json_:
        click.echo(json.dumps(as_json(found), indent=2))
        return
    if not wanted:
        echo_listing("Current ACLs for resource", found)
    for principal in dict.fromkeys(wanted):
        click.echo(f"ACLs for principal `{principal}`")
        echo_listing("Current ACLs for resource", [b for b in found if b.principal == principal])


@acls.command("remove")
@binding_options
@resource_options(["any", "match", "literal", "prefixed"])
@click.option("--force", is_flag=True, help="do not ask for confirmation")
@click.pass_context
@clear_errors
def acls_remove(ctx: click.Context, force: bool, **args: Any) -> None:
    """Remove the ACLs the options select: with principals, those add would have made; else
    every ACL on the resources (kafka-acls.sh --remove). Asks first, unless --force."""
    filters = removal_filters(args)
    store = _store(ctx)
    doomed = selected(store, filters)
    if not doomed:
        click.echo("no ACL matches: nothing to remove")
        return
    echo_listing("Removing ACLs from resource", doomed)
    if not force and not click.confirm(f"Remove these {len(doomed)} ACL(s)?"):
        click.echo("nothing removed")
        return
    removed = remove_exactly(store, doomed)  # what was shown: one added since is left alone
    user = who()
    for b in removed:
        logger.info(
            "ACL removed by local user %s (objectlog acls remove): %s", user, describe_binding(b)
        )
    echo_listing("Removed ACLs from resource", removed)
    gone = len(doomed) - len(removed)
    click.echo(
        f"removed {len(removed)} ACL(s)"
        + (f"; {gone} were removed by someone else meanwhile" if gone else "")
    )
