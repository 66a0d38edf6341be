"""Who calls the deployed API of tests/e2e/test_terraform.py, and what Kafka's ACLs let each do
(issue 37): two roles made in the endpoint's IAM and assumed through its STS, whose sessions
sign the Python client's requests (SigV4, verified for real by the deployed gateway), the
module's default authorization carried to every door, and ACLs granted as a deployment's
operator grants them, with `objectlog acls add` on the table directly.

- admin: the super user the deployment names (early_deployment: ``super_users``), which runs
  the existing exercise of every route;
- reader: an ACL granting READ on one topic and nothing else: its fetch of that topic is
  allowed, its produce to it and its fetch of another topic refused (403, a JSON body naming
  the operation and the resource), and nothing of what it sent is stored.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC
from typing import Any

import boto3
import pytest
from click.testing import CliRunner

from objectlog import ObjectLog
from objectlog.clients.http import HttpObjectLog
from objectlog.errors import NotAuthorized
from objectlog.services.access import (
    ENV_ALLOW_EVERYONE,
    ENV_AUTHORIZER,
    ENV_SUPER_USERS,
    AccessSettings,
)
from objectlog.services.authorization import Settings
from objectlog.tools.cli import main
from objectlog.tools.deploy.deployment import chained
from objectlog.tools.gateway_auth import Credential, CredentialLookup, moto_credentials

REGION = "us-east-1"
ACCESS_VARIABLES = (ENV_AUTHORIZER, ENV_SUPER_USERS, ENV_ALLOW_EVERYONE)


@dataclass(frozen=True)
class Caller:
    """An assumed role's session: its principal as the deployed functions name it
    (``User:arn:aws:iam::ACCOUNT:role/NAME``) and its credentials."""

    role: str
    principal: str
    credential: Credential

    @property
    def environment(self) -> dict[str, str]:
        """The session's credentials as the AWS_* variables boto3's chain reads."""
        return {
            "AWS_ACCESS_KEY_ID": self.credential.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.credential.secret_access_key,
            "AWS_SESSION_TOKEN": self.credential.session_token or "",
        }


def assume_role(endpoint: str, role: str) -> Caller:
    """The role made in the endpoint's IAM (trusting its account) and assumed through its STS."""
    iam = boto3.client("iam", endpoint_url=endpoint, region_name=REGION)
    sts = boto3.client("sts", endpoint_url=endpoint, region_name=REGION)
    account = sts.get_caller_identity()["Account"]
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:aws:iam::{account}:root"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    arn = iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    issued = sts.assume_role(RoleArn=arn, RoleSessionName=f"{role}-e2e")
    keys, user = issued["Credentials"], issued["AssumedRoleUser"]
    credential = Credential(
        keys["AccessKeyId"],
        keys["SecretAccessKey"],
        account,
        user["Arn"],  # arn:aws:sts::ACCOUNT:assumed-role/NAME/SESSION
        user["AssumedRoleId"],
        keys["SessionToken"],
        keys["Expiration"].astimezone(UTC).timestamp(),
    )
    return Caller(role, f"User:{arn}", credential)


def delete_roles(endpoint: str, *callers: Caller) -> None:
    iam = boto3.client("iam", endpoint_url=endpoint, region_name=REGION)
    for caller in callers:
        iam.delete_role(RoleName=caller.role)


def credential_lookup(*callers: Caller) -> CredentialLookup:
    """What the deployed gateway verifies signatures against: the keys moto issued in this
    process (the embedded endpoint of tests/conftest.py), else, for an endpoint in another
    process (AWS_ENDPOINT_URL preset to a moto server), the sessions its STS handed out here."""
    issued = {c.credential.access_key_id: c.credential for c in callers}
    return chained(moto_credentials, issued.get)


@contextmanager
def _environment(variables: Mapping[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def signing_client(url: str, caller: Caller) -> HttpObjectLog:
    """The Python client signing as the caller's session, as an application given the session's
    AWS_* variables signs (the signer takes boto3's credentials when it is made)."""
    with _environment(caller.environment):
        client = ObjectLog.connect(api_url=url, sign=True)
    frozen = client.api.auth.credentials.get_frozen_credentials()  # type: ignore[union-attr]
    assert frozen.access_key == caller.credential.access_key_id
    return client


def grant(outputs: Mapping[str, Any], arguments: str) -> None:
    """`objectlog acls add <arguments>` on the deployment's table, as its operator runs it
    (direct DynamoDB access, authorized by IAM: no Kafka permission needed)."""
    command = ["--bucket", outputs["bucket"], "--table", outputs["table"], "acls", "add"]
    result = CliRunner().invoke(main, [*command, *shlex.split(arguments)])
    assert result.exit_code == 0, result.output


def assert_module_access(environment: Mapping[str, str], super_user: str) -> None:
    """The module's defaults (authorizer "acls", allow_everyone_if_no_acl_found false) and the
    deployment's one super user, as the three variables and as the door reads them."""
    assert {name: environment.get(name) for name in ACCESS_VARIABLES} == {
        ENV_AUTHORIZER: "acls",
        ENV_SUPER_USERS: super_user,
        ENV_ALLOW_EVERYONE: "false",
    }
    assert AccessSettings.from_env(environment) == AccessSettings(
        enabled=True, rules=Settings(frozenset({super_user}), allow_everyone_if_no_acl_found=False)
    )


def assert_refused(answer: Any, operation: str, resource: str) -> None:
    """403 with a JSON body whose message names the operation and the resource."""
    assert answer.status_code == 403, f"{answer.status_code} {answer.text}"
    message = str(answer.json().get("message", ""))
    assert operation in message and resource in message, answer.text


def reader_session(
    reader: HttpObjectLog, url: str, direct: ObjectLog, topic: str, other: str
) -> None:
    """The reader's ACL grants READ on topic alone: fetching it is allowed; producing to it
    (the API's records route, the REST Proxy's, the Python client) and fetching other are
    refused, and nothing is stored."""
    before = [p.high_watermark for p in direct.describe_topic(topic).partitions]
    fetched = reader.fetch(topic, 0, 0, max_records=3)
    assert [r.value for r in fetched.records] == [b"v0", b"v1", b"v2"]
    signed = reader.api.http  # the reader's SigV4-signing session
    value = base64.b64encode(b"not allowed").decode()
    produced = signed.post(
        f"{url}/topics/{topic}/records",
        json={"records": [{"value": value, "partition": 0}]},
        timeout=30,
    )
    assert_refused(produced, "WRITE", topic)
    proxied = signed.post(
        f"{url}/kafka/topics/{topic}",
        data=json.dumps({"records": [{"value": value, "partition": 0}]}),
        headers={"Content-Type": "application/vnd.kafka.binary.v2+json"},
        timeout=30,
    )
    assert_refused(proxied, "WRITE", topic)
    with pytest.raises(NotAuthorized), reader.producer(linger_ms=0) as producer:
        producer.send(topic, value=b"not allowed either", partition=1).result()
    other_fetch = signed.get(
        f"{url}/topics/{other}/partitions/0/records", params={"offset": 0}, timeout=30
    )
    assert_refused(other_fetch, "READ", other)
    assert [p.high_watermark for p in direct.describe_topic(topic).partitions] == before
