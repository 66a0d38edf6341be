"""`objectlog dev --registry-auth`: the Schema Registry's routes behind the authorize function,
as deployed. A user made with `objectlog users add` registers a schema through confluent-kafka's
SchemaRegistryClient with ``basic.auth.user.info``; a wrong password or none registers nothing.
Bearer tokens of an issuer served on loopback (its discovery document and JWKS): a valid one is
accepted, one signed by another key, an expired one and one for another audience are refused."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests
from click.testing import CliRunner
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from objectlog.tools.cli import main
from objectlog.tools.embedded import free_port, start_dev_process
from tests.token_issuer import AUDIENCE, LoopbackIssuer, TokenIssuer

USER, PASSWORD = "alice", "wonder-land-42"
AVRO = '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}'


@dataclass
class DevStack:
    endpoint: str
    registry: str
    issuer: LoopbackIssuer

    def client(self, **auth: str) -> SchemaRegistryClient:
        return SchemaRegistryClient({"url": self.registry, **auth})


@pytest.fixture(scope="module")
def dev() -> Iterator[DevStack]:
    """One `objectlog dev --in-memory --registry-auth` for the module, its bearer tokens from
    a loopback issuer started first (its URL is in the stack's environment)."""
    with LoopbackIssuer() as issuer:
        port, api_port = free_port(), free_port()
        jwt_env = {"OBJECTLOG_JWT_ISSUER": issuer.issuer, "OBJECTLOG_JWT_AUDIENCE": AUDIENCE}
        process = start_dev_process(
            port, api_port, "--in-memory", "--registry-auth", environment=jwt_env
        )
        try:
            assert process.stdout is not None
            banner = [process.stdout.readline() for _ in range(6)]
            assert any(f"bearer tokens of {issuer.issuer}" in line for line in banner), banner
            endpoint = f"http://127.0.0.1:{port}"
            yield DevStack(endpoint, f"http://127.0.0.1:{api_port}/schema-registry", issuer)
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=10)
            except Exception:
                process.kill()


def refused_status(client: SchemaRegistryClient, subject: str) -> int:
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, Schema(AVRO, "AVRO"))
    return int(refused.value.http_status_code)


def test_basic_auth_of_a_user_registers_and_a_wrong_password_registers_nothing(
    dev: DevStack,
) -> None:
    env = {"AWS_ENDPOINT_URL": dev.endpoint, "OBJECTLOG_TABLE": "objectlog"}
    added = CliRunner().invoke(main, ["users", "add", USER, "--password", PASSWORD], env=env)
    assert added.exit_code == 0, added.output
    user = dev.client(**{"basic.auth.user.info": f"{USER}:{PASSWORD}"})
    assert user.register_schema("orders-value", Schema(AVRO, "AVRO")) == 1
    wrong = dev.client(**{"basic.auth.user.info": f"{USER}:not-the-password"})
    assert refused_status(wrong, "refused-value") == 403
    unknown = dev.client(**{"basic.auth.user.info": f"mallory:{PASSWORD}"})
    assert refused_status(unknown, "refused-value") == 403
    assert refused_status(dev.client(), "refused-value") == 401  # no credentials at all
    assert user.get_subjects() == ["orders-value"]
    assert requests.get(f"{dev.registry}/subjects", timeout=10).status_code == 401


def bearer(token: str) -> dict[str, Any]:
    return {
        "bearer.auth.credentials.source": "STATIC_TOKEN",
        "bearer.auth.token": token,
        "bearer.auth.logical.cluster": "objectlog",  # a Confluent Cloud header; ignored
    }


def test_bearer_tokens_are_verified_against_the_issuers_keys(dev: DevStack) -> None:
    issuer = dev.issuer
    valid = dev.client(**bearer(issuer.token("svc-orders")))
    assert valid.register_schema("tokens-value", Schema(AVRO, "AVRO")) >= 1
    refused = {
        "signed by another key": TokenIssuer(issuer.issuer, kid=issuer.kid).token(),
        "expired": issuer.token(expires_in_s=-3600),
        "for another audience": issuer.token(aud="another-service"),
        "of another issuer": issuer.token(iss="https://elsewhere.test"),
    }
    for what, token in refused.items():
        assert refused_status(dev.client(**bearer(token)), f"x-{what}") == 403, what
    assert "x-expired" not in valid.get_subjects()
    for _ in range(5):
        valid.get_subjects()
    # discovery once, the keys once: the authorizer keeps them (no refusal refetched them)
    assert issuer.requests == ["/.well-known/openid-configuration", "/keys"]
