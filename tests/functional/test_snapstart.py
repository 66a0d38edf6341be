"""SnapStart: the functions' runtime hooks (functions.snapstart) and the compact function
deleting superseded versions (adapters.lambda_versions), against the session's AWS endpoint.

``snapshot_restore_py`` exists only in Lambda's runtime: a stand-in module records what the
handlers register, and the test calls the registered functions as Lambda would.
"""

from __future__ import annotations

import io
import json
import random
import sys
import types
import uuid
import zipfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from objectlog import ObjectLog
from objectlog.adapters.aws import dynamodb_client
from objectlog.adapters.dynamodb import DynamoTable
from objectlog.adapters.lambda_versions import delete_superseded_versions, lambda_client
from objectlog.functions import snapstart
from objectlog.functions.authorize import authorizer_handler
from objectlog.functions.compact import (
    ENV_FUNCTION_ALIAS,
    ENV_VERSION_GRACE_S,
    ENV_VERSIONED_FUNCTIONS,
    compact_handler,
    delete_superseded,
)
from objectlog.http.app import lambda_handler
from objectlog.http.routes import PRODUCE
from objectlog.stores.documents import DynamoDocumentStore
from objectlog.tools.gateway import LambdaContext

EVENTS = Path(__file__).resolve().parents[1] / "events"


class Hooks(types.ModuleType):
    """What the handlers register with Lambda's snapshot_restore_py."""

    def __init__(self) -> None:
        super().__init__(snapstart.HOOKS_MODULE)
        self.before: list[Callable[[], None]] = []
        self.after: list[Callable[[], None]] = []

    def register_before_snapshot(self, hook: Callable[[], None]) -> None:
        self.before.append(hook)

    def register_after_restore(self, hook: Callable[[], None]) -> None:
        self.after.append(hook)


@pytest.fixture
def hooks(monkeypatch: pytest.MonkeyPatch) -> Hooks:
    found = Hooks()
    monkeypatch.setitem(sys.modules, snapstart.HOOKS_MODULE, found)
    return found


class Counted:
    """A log whose S3 and DynamoDB requests are counted (botocore's before-send)."""

    def __init__(self, make: Callable[[], ObjectLog]) -> None:
        self.make, self.sent, self.built = make, 0, 0

    def __call__(self) -> ObjectLog:
        log = self.make()
        for client in (log.store.client, log.metadata.client):
            client.meta.events.register("before-send", self._count)
        self.built += 1
        return log

    def _count(self, **_: Any) -> None:
        self.sent += 1


def test_outside_lambda_nothing_is_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, snapstart.HOOKS_MODULE, None)  # import raises ImportError
    assert not snapstart.register(lambda: None, lambda: None)


def test_the_produce_function_prepares_before_the_snapshot_without_a_request(
    hooks: Hooks, log: ObjectLog
) -> None:
    counted = Counted(lambda: ObjectLog(log.config))
    handler = lambda_handler(PRODUCE, counted)
    (before,), (after,) = hooks.before, hooks.after
    before()
    assert (counted.built, counted.sent) == (1, 0)  # the clients, and no socket in the snapshot
    assert handler.services._producer is None  # its id and partitioner are the restored process's

    random.seed(7)
    drawn = random.random()
    random.seed(7)
    after()  # every environment resumed from one snapshot draws its own numbers
    assert random.random() != drawn

    log.create_topic("snap", 1)
    event = json.loads((EVENTS / "produce_records.json").read_text())
    event["rawPath"] = event["requestContext"]["http"]["path"] = "/topics/snap/records"
    event["pathParameters"] = {"topic": "snap"}
    result = handler(event, LambdaContext(function_name="produce"))
    assert result["statusCode"] == 200, result
    assert counted.built == 1 and counted.sent > 0  # the prepared log served the request
    handler.services.close()


def test_the_compact_and_authorize_functions_prepare_too(hooks: Hooks, log: ObjectLog) -> None:
    counted = Counted(lambda: ObjectLog(log.config))
    compact = compact_handler(counted, env={})
    built: list[DynamoDocumentStore] = []

    def documents() -> DynamoDocumentStore:
        built.append(
            DynamoDocumentStore(DynamoTable(dynamodb_client(log.config), log.config.table))
        )
        return built[-1]

    authorizer_handler(documents, env={})
    assert len(hooks.before) == len(hooks.after) == 2
    for before in hooks.before:
        before()
    assert (counted.built, counted.sent, len(built)) == (1, 0, 1)
    compact.services.close()


# ---- superseded versions --------------------------------------------------------------------


@pytest.fixture
def versioned(log: ObjectLog) -> Iterator[tuple[Any, str]]:
    """A function with versions 1-4 published and its "live" alias on 3."""
    client = lambda_client(log.config)
    iam = boto3.client("iam", endpoint_url=log.config.s3_endpoint, region_name=log.config.region)
    name = f"snap-{uuid.uuid4().hex[:8]}"
    role = iam.create_role(RoleName=name, AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    package = io.BytesIO()
    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return None\n")
    code = {"ZipFile": package.getvalue()}
    client.create_function(
        FunctionName=name, Runtime="python3.12", Role=role, Handler="handler.handler", Code=code
    )
    for n in range(4):
        client.update_function_configuration(FunctionName=name, Description=f"v{n + 1}")
        assert client.publish_version(FunctionName=name)["Version"] == str(n + 1)
    client.create_alias(FunctionName=name, Name="live", FunctionVersion="3")
    yield client, name
    client.delete_function(FunctionName=name)
    iam.delete_role(RoleName=name)


def versions(client: Any, name: str) -> list[str]:
    return [v["Version"] for v in client.list_versions_by_function(FunctionName=name)["Versions"]]


def test_versions_older_than_the_alias_are_deleted_after_a_grace(
    versioned: tuple[Any, str],
) -> None:
    client, name = versioned
    client.create_alias(FunctionName=name, Name="canary", FunctionVersion="1")
    fresh = delete_superseded_versions(client, name, "live")  # the alias moved just now
    assert fresh.kept_for_grace and not fresh.deleted
    later = datetime.now(UTC) + timedelta(hours=1)
    cleanup = delete_superseded_versions(client, name, "live", now=later)
    # 1 is routed by another alias, 3 is live, 4 is newer (published, the alias not yet moved)
    assert (cleanup.alias_version, cleanup.deleted) == ("3", ("2",))
    assert versions(client, name) == ["$LATEST", "1", "3", "4"]
    assert delete_superseded_versions(client, "no-such-function", "live").alias_version is None


def test_the_compact_run_cleans_the_named_functions(
    versioned: tuple[Any, str], log: ObjectLog
) -> None:
    client, name = versioned
    env = {ENV_VERSIONED_FUNCTIONS: f"{name}, no-such-function", ENV_FUNCTION_ALIAS: "live"}
    assert delete_superseded(log, env) == {name: [], "no-such-function": []}  # within the grace
    assert delete_superseded(log, {ENV_FUNCTION_ALIAS: "live"}) == {}  # none named: no call
    assert versions(client, name) == ["$LATEST", "1", "2", "3", "4"]
    with pytest.raises(ValueError, match=f"{ENV_VERSION_GRACE_S}='soon'"):
        delete_superseded(log, env | {ENV_VERSION_GRACE_S: "soon"})
    with pytest.raises(ValueError, match="0 or more"):
        delete_superseded(log, env | {ENV_VERSION_GRACE_S: "-1"})
    assert versions(client, name) == ["$LATEST", "1", "2", "3", "4"]
    # no grace: what the alias no longer serves goes at once
    assert delete_superseded(log, env | {ENV_VERSION_GRACE_S: "0"}) == {
        name: ["1", "2"],
        "no-such-function": [],
    }
    assert versions(client, name) == ["$LATEST", "3", "4"]
