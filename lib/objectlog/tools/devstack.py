"""``objectlog dev``: the embedded stack, its data directory and its console.

One AWS-compatible endpoint (moto, or moto for S3 beside DynamoDB Local for DynamoDB, with the
endpoint forwarding DynamoDB requests there), the HTTP API behind the local gateway, the Kafka
agent (objectlog.kafka) for Kafka clients, and a data directory that keeps S3 and DynamoDB
state across stops:

    .objectlog/stack.json        which DynamoDB the directory holds (moto or local), moto's version
    .objectlog/moto/             moto's checkpoint and journal (tools.persistence)
    .objectlog/dynamodb-local/   DynamoDB Local's -dbPath (with --dynamodb local)
    .objectlog/catalog.db        the SQL (sqlite) catalog of the topics' Iceberg tables
    .objectlog/logs/             DynamoDB Local's log

A directory written by one DynamoDB is not opened with the other: its tables would be missing.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from objectlog.adapters.iceberg import GLUE
from objectlog.clients.direct import ObjectLog
from objectlog.config import DEFAULT_REGION, Config
from objectlog.kafka.classic import DEV_INITIAL_REBALANCE_DELAY_MS
from objectlog.services.access import OFF as ACCESS_OFF
from objectlog.services.access import AccessSettings
from objectlog.tools.emulators.dynamodb_local import DynamoDBLocal
from objectlog.tools.persistence import PersistenceError

DEFAULT_DATA_DIR = Path(".objectlog")
DYNAMODB_CHOICES = ("moto", "local")
STACK_FILE = "stack.json"
CATALOG_FILE = "catalog.db"


@dataclass(frozen=True)
class DevOptions:
    host: str = "127.0.0.1"
    port: int = 4566
    api_port: int = 8080
    kafka_port: int | None = 9092  # the Kafka agent's; None: no agent
    bucket: str = "objectlog"
    table: str = "objectlog"
    dynamodb: str = "moto"  # or "local": DynamoDB Local
    data_dir: Path | None = DEFAULT_DATA_DIR  # None: in memory, gone at stop
    fresh: bool = False
    log_aws: bool = False  # a console line for every AWS request, not only the API's
    initial_rebalance_delay_ms: int = DEV_INITIAL_REBALANCE_DELAY_MS  # the Kafka agent's
    num_partitions: int = 1  # of a topic created by its first use
    # the Schema Registry's routes run the authorize function, as deployed (docs/schemas.md)
    registry_auth: bool = False
    # the other routes need IAM (SigV4) or JWT authorization, verified as API Gateway does
    api_auth: str | None = None  # "iam", "jwt" (tools.gateway.API_AUTH); None: open
    # Kafka ACLs on every door (services.access); off unless --authorizer acls
    access: AccessSettings = ACCESS_OFF


def console_line(text: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {text}", flush=True)


class DevStack:
    def __init__(self, options: DevOptions, echo: Callable[[str], None] = console_line) -> None:
        self.options = options
        self.echo = echo
        self.dynamodb_local: DynamoDBLocal | None = None
        self.server: Any = None
        self.gateway: Any = None
        self.agent: Any = None
        self.log: ObjectLog | None = None
        self.catalog = ""
        self.api_url = ""

    @property
    def endpoint_url(self) -> str:
        return str(self.server.endpoint_url)

    def start(self) -> DevStack:
        from objectlog.tools.embedded import EmbeddedAWS
        from objectlog.tools.gateway import api_authenticator, local_api

        options = self.options
        if options.registry_auth:  # its settings' mistakes now, not at the first request
            from objectlog.http.authentication import AuthSettings

            AuthSettings.from_env(os.environ)
        if options.api_auth is not None:  # likewise: an unknown mode, JWT without an issuer
            api_authenticator(options.api_auth, None, None, DEFAULT_REGION)
        data = self._prepare_data_dir()
        dynamodb_url = None
        if options.dynamodb == "local":
            self.dynamodb_local = DynamoDBLocal(
                db_path=data / "dynamodb-local" if data else None,
                log_path=data / "logs" / "dynamodb-local.log" if data else None,
            ).start()
            dynamodb_url = self.dynamodb_local.endpoint_url
        self.server = EmbeddedAWS(
            options.host,
            options.port,
            data_dir=data / "moto" if data else None,
            dynamodb_url=dynamodb_url,
            request_log=self.echo if options.log_aws else None,
        ).start()
        self.catalog = catalog_for(data)
        self.log = ObjectLog(
            Config.from_env(
                bucket=options.bucket,
                table=options.table,
                s3_endpoint=self.endpoint_url,
                dynamodb_endpoint=dynamodb_url or self.endpoint_url,
                catalog=self.catalog,
                auto_create_topics=True,  # as a Kafka development broker has it
                num_partitions=options.num_partitions,
            )
        )
        self.log.ensure_resources()
        log = self.log
        self.gateway = local_api(
            lambda: log,
            request_log=self.echo,
            registry_auth=options.registry_auth,
            api_auth=options.api_auth,
            region=log.config.region,
            principal_header=True,  # honoured only here, never by the deployed functions
        )
        self.api_url = self.gateway.start(options.host, options.api_port)
        if options.kafka_port is not None:
            from objectlog.kafka.server import AgentConfig, AgentThread

            config = AgentConfig(
                host=options.host,
                port=options.kafka_port,
                initial_rebalance_delay_ms=options.initial_rebalance_delay_ms,
                access=options.access,
            )
            self.agent = AgentThread(log, config).start()
        return self

    def banner(self) -> list[str]:
        options = self.options
        storage = "in memory" if options.data_dir is None else f"data in {options.data_dir}/"
        dynamodb = (
            f"DynamoDB Local {self.dynamodb_local.endpoint_url}" if self.dynamodb_local else "moto"
        )
        replayed = getattr(self.server, "replayed", 0)
        # Per service too: a service's own variable (left from another stack, say) wins over
        # AWS_ENDPOINT_URL. DynamoDB Local directly skips the endpoint's forwarding hop.
        dynamodb_url = (
            self.dynamodb_local.endpoint_url if self.dynamodb_local else self.endpoint_url
        )
        exports = (
            f"AWS_ENDPOINT_URL={self.endpoint_url} AWS_ENDPOINT_URL_S3={self.endpoint_url} "
            f"AWS_ENDPOINT_URL_DYNAMODB={dynamodb_url} OBJECTLOG_API_URL={self.api_url} "
            f"OBJECTLOG_CATALOG={self.catalog}"  # `objectlog compact` keeps tables there
        )
        lines = [
            f"objectlog dev: AWS endpoint {self.endpoint_url} (bucket {options.bucket}, "
            f"table {options.table}; DynamoDB: {dynamodb}; {storage})"
            + (f"; {access_note(options.access)}" if options.access.enabled else ""),
            f"  HTTP API {self.api_url} (docs: {self.api_url}/docs)"
            + (f"; {api_auth_note(options.api_auth)}" if options.api_auth else ""),
            f"  Web console {self.api_url}/console",
            f"  REST Proxy {self.api_url}/kafka",
            f"  Schema Registry {self.api_url}/schema-registry (schema.registry.url)"
            + (f"; {registry_auth_note()}" if options.registry_auth else ""),
            *([f"  Kafka agent {self.agent.address} (bootstrap.servers)"] if self.agent else []),
            f"  export {exports}",
        ]
        if replayed:
            lines.insert(1, f"  recovered {replayed} journaled writes since the last clean stop")
        return lines

    def stop(self) -> None:
        """Stop serving; the data directory gets its checkpoint (a clean stop)."""
        if self.agent is not None:
            self.agent.stop()
        if self.gateway is not None:
            self.gateway.stop()
        if self.log is not None:
            self.log.close()
        if self.server is not None:
            self.server.stop()
        if self.dynamodb_local is not None:
            self.dynamodb_local.stop()
        self.agent = self.gateway = self.log = self.server = self.dynamodb_local = None

    def _prepare_data_dir(self) -> Path | None:
        data = self.options.data_dir
        if data is None:
            return None
        if self.options.fresh and data.exists():
            shutil.rmtree(data)
        data.mkdir(parents=True, exist_ok=True)
        stack_file = data / STACK_FILE
        wanted = {"dynamodb": self.options.dynamodb, "moto": _moto_version()}
        if stack_file.exists():
            found = json.loads(stack_file.read_text())
            if found.get("dynamodb") != wanted["dynamodb"]:
                raise PersistenceError(
                    f"{data} holds DynamoDB state of {found.get('dynamodb')!r}, not "
                    f"{wanted['dynamodb']!r}: start with --dynamodb {found.get('dynamodb')}, "
                    "or --fresh to begin empty"
                )
        stack_file.write_text(json.dumps(wanted) + "\n")
        return data


def registry_auth_note() -> str:
    """What the registry's routes take with --registry-auth (the banner's words)."""
    from objectlog.http.tokens import ENV_ISSUER

    issuer = os.environ.get(ENV_ISSUER)
    tokens = f"bearer tokens of {issuer}" if issuer else f"no bearer tokens ({ENV_ISSUER} unset)"
    return f"basic auth of `objectlog users`, {tokens}"


def access_note(access: AccessSettings) -> str:
    """The banner's words for authorization by ACLs."""
    supers = ", ".join(sorted(access.rules.super_users)) or "none"
    return (
        f"Kafka ACLs enforced on every door (super users: {supers}; HTTP callers name "
        "themselves with the x-objectlog-principal header, objectlog dev only)"
    )


def api_auth_note(api_auth: str) -> str:
    """What the API's routes (the registry's aside) take with --api-auth (the banner's words)."""
    if api_auth == "iam":
        return "IAM auth: SigV4 by keys this endpoint issued (sts assume-role, create-access-key)"
    from objectlog.http.tokens import ENV_AUDIENCE, ENV_ISSUER

    issuer, audience = os.environ.get(ENV_ISSUER), os.environ.get(ENV_AUDIENCE)
    return f"JWT auth: bearer tokens of {issuer} for {audience}"


def catalog_for(data: Path | None) -> str:
    """Where the dev stack keeps the topics' tables: a SQL catalog in the data directory, which
    persists with it (the endpoint journals S3 and DynamoDB, not Glue); in memory, the
    endpoint's Glue, gone at stop like everything else."""
    if data is None:
        return GLUE
    return f"sqlite:///{(data / CATALOG_FILE).resolve()}"


def _moto_version() -> str:
    from importlib.metadata import version

    return version("moto")
