"""The local gateway authenticates as API Gateway does (issue 37): IAM routes need a SigV4
signature by credentials the embedded endpoint issued (two roles assumed through its STS, an
IAM user's access key), verified for real, and hand the function the caller's ARN in
``requestContext.authorizer.iam``; JWT routes need a bearer token of the issuer served on
loopback, and hand it the claims. Forged, stale, unknown and foreign credentials are refused
with API Gateway's answers (403 / 401) and store nothing."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from click.testing import CliRunner

from objectlog import ObjectLog
from objectlog.http.tokens import JwtSettings
from objectlog.tools.cli import main
from objectlog.tools.devstack import DevOptions, DevStack
from objectlog.tools.gateway import LocalGateway, local_api
from objectlog.tools.gateway_auth import claim_string, moto_credentials
from tests.token_issuer import AUDIENCE, LoopbackIssuer, TokenIssuer

REGION = "us-east-1"
RECORDS = {"records": [{"value": base64.b64encode(b"hello").decode()}]}


@dataclass
class Served:
    url: str
    gateway: LocalGateway
    events: list[dict[str, Any]]  # what the functions received, in order

    def authorizer(self) -> dict[str, Any]:
        return dict(self.events[-1]["requestContext"]["authorizer"])


def serve(gateway: LocalGateway) -> Iterator[Served]:
    """The gateway on loopback, its functions recording the events they are handed."""
    events: list[dict[str, Any]] = []
    for name, real in list(gateway.targets.items()):

        def recording(event: dict[str, Any], context: Any, real: Any = real) -> Any:
            events.append(event)
            return real(event, context)

        gateway.targets[name] = recording
    url = gateway.start(port=0)
    try:
        yield Served(url, gateway, events)
    finally:
        gateway.stop()


def signed(
    method: str,
    url: str,
    credentials: Credentials,
    body: bytes = b"",
    *,
    region: str = REGION,
    sent_body: bytes | None = None,
    headers: dict[str, str] | None = None,
    signed_at: datetime | None = None,
    monkeypatch: pytest.MonkeyPatch | None = None,
) -> requests.Response:
    """A request signed as botocore signs for API Gateway (service execute-api); sent_body:
    another body than the signed one; headers: more to sign; signed_at: sign with that clock
    (needs monkeypatch)."""
    more = {"Content-Type": "application/json", **(headers or {})}
    request = AWSRequest(method, url, data=body, headers=more)
    if signed_at is not None and monkeypatch is not None:
        monkeypatch.setattr("botocore.auth.get_current_datetime", lambda: signed_at)
    SigV4Auth(credentials, "execute-api", region).add_auth(request)
    if monkeypatch is not None:
        monkeypatch.undo()
    data = body if sent_body is None else sent_body
    return requests.request(method, url, data=data, headers=dict(request.headers), timeout=10)


@dataclass
class Identities:
    writer: Credentials
    reader: Credentials
    user: Credentials
    account: str
    roles: dict[str, tuple[str, str]]  # writer / reader: (role name, role id)
    user_arn: str


@pytest.fixture(scope="module")
def identities(aws_endpoint: str) -> Identities:
    """Two roles assumed through the endpoint's STS and an IAM user's access key; skipped
    where the endpoint is not moto in this process (the gateway could not look keys up)."""
    iam = boto3.client("iam", endpoint_url=aws_endpoint, region_name=REGION)
    sts = boto3.client("sts", endpoint_url=aws_endpoint, region_name=REGION)
    suffix = uuid.uuid4().hex[:8]
    sessions: dict[str, Credentials] = {}
    roles: dict[str, tuple[str, str]] = {}
    for name in ("writer", "reader"):
        role = iam.create_role(RoleName=f"{name}-{suffix}", AssumeRolePolicyDocument="{}")["Role"]
        roles[name] = (role["RoleName"], role["RoleId"])
        issued = sts.assume_role(RoleArn=role["Arn"], RoleSessionName=f"{name}-session")
        c = issued["Credentials"]
        sessions[name] = Credentials(c["AccessKeyId"], c["SecretAccessKey"], c["SessionToken"])
    user = iam.create_user(UserName=f"svc-{suffix}")["User"]
    key = iam.create_access_key(UserName=user["UserName"])["AccessKey"]
    if moto_credentials(key["AccessKeyId"]) is None:
        pytest.skip("the AWS endpoint is not moto in this process")
    account = user["Arn"].split(":")[4]
    user_credentials = Credentials(key["AccessKeyId"], key["SecretAccessKey"])
    return Identities(
        sessions["writer"], sessions["reader"], user_credentials, account, roles, user["Arn"]
    )


@pytest.fixture
def iam_api(log: ObjectLog) -> Iterator[Served]:
    log.create_topic("orders")
    yield from serve(local_api(lambda: log, api_auth="iam", region=REGION))


def stored(log: ObjectLog) -> int:
    return len(log.fetch("orders", 0, 0).records)


def test_each_assumed_role_reaches_the_function_as_its_session_arn(
    iam_api: Served, identities: Identities, log: ObjectLog
) -> None:
    url = f"{iam_api.url}/topics/orders/records"
    for name in ("writer", "reader"):
        credentials = getattr(identities, name)
        answer = signed("POST", url, credentials, json.dumps(RECORDS).encode())
        assert answer.status_code == 200, answer.text
        role_name, role_id = identities.roles[name]
        assert iam_api.authorizer() == {
            "iam": {
                "accessKey": credentials.access_key,
                "accountId": identities.account,
                "callerId": f"{role_id}:{name}-session",
                "cognitoIdentity": None,
                "principalOrgId": None,
                "userArn": f"arn:aws:sts::{identities.account}:assumed-role/{role_name}/"
                f"{name}-session",
                "userId": f"{role_id}:{name}-session",
            }
        }
    assert stored(log) == 2
    # a query string and an IAM user's long-term key (no session token)
    query = f"{iam_api.url}/topics/orders/partitions/0/records?offset=1&max_records=5"
    answer = signed("GET", query, identities.user)
    assert answer.status_code == 200, answer.text
    assert [r["offset"] for r in answer.json()["records"]] == [1]
    assert iam_api.authorizer()["iam"]["userArn"] == identities.user_arn


def test_the_http_client_signs_as_the_gateway_verifies(
    iam_api: Served, identities: Identities, monkeypatch: pytest.MonkeyPatch
) -> None:
    from objectlog.clients.http import HttpObjectLog

    writer = identities.writer
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", writer.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", writer.secret_key)
    monkeypatch.setenv("AWS_SESSION_TOKEN", writer.token)
    with HttpObjectLog(iam_api.url, sign=True, region=REGION) as remote:
        assert remote.list_topics() == ["orders"]
    assert ":assumed-role/writer-" in iam_api.authorizer()["iam"]["userArn"]


def test_forged_unknown_tokenless_and_stale_signatures_are_refused_and_store_nothing(
    iam_api: Served, identities: Identities, log: ObjectLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"{iam_api.url}/topics/orders/records"
    body = json.dumps(RECORDS).encode()
    writer, reader = identities.writer, identities.reader
    refused = {
        "unsigned": requests.post(url, data=body, timeout=10),
        "forged (another secret)": signed(
            "POST", url, Credentials(writer.access_key, reader.secret_key, writer.token), body
        ),
        "unknown key": signed(
            "POST", url, Credentials("AKIAUNKNOWN000000000", "secret", None), body
        ),
        "session key without its token": signed(
            "POST", url, Credentials(writer.access_key, writer.secret_key), body
        ),
        "another session's token": signed(
            "POST", url, Credentials(writer.access_key, writer.secret_key, reader.token), body
        ),
        "another body than signed": signed(
            "POST", url, writer, body, sent_body=body.replace(b"aGVsbG8=", b"ZXZpbA==")
        ),
        "another body than its signed X-Amz-Content-SHA256": signed(
            "POST",
            url,
            writer,
            body,
            sent_body=body.replace(b"aGVsbG8=", b"ZXZpbA=="),
            headers={"X-Amz-Content-SHA256": hashlib.sha256(body).hexdigest()},
        ),
        "another region": signed("POST", url, writer, body, region="eu-west-1"),
        "signed 20 minutes ago": signed(
            "POST",
            url,
            writer,
            body,
            signed_at=datetime.now(UTC) - timedelta(minutes=20),
            monkeypatch=monkeypatch,
        ),
    }
    for what, answer in refused.items():
        assert (answer.status_code, answer.json()) == (403, {"message": "Forbidden"}), what
    assert iam_api.events == []  # no function ran
    assert stored(log) == 0
    # the route nothing matches ($default) is guarded too
    assert requests.get(f"{iam_api.url}/nowhere", timeout=10).status_code == 403


@pytest.fixture(scope="module")
def issuer() -> Iterator[LoopbackIssuer]:
    with LoopbackIssuer() as issuer:
        yield issuer


@pytest.fixture
def jwt_api(log: ObjectLog, issuer: LoopbackIssuer) -> Iterator[Served]:
    log.create_topic("orders")
    settings = JwtSettings(issuer.issuer, (AUDIENCE,))
    yield from serve(local_api(lambda: log, api_auth="jwt", jwt_settings=settings))


def test_a_verified_token_hands_its_claims_and_scopes_to_the_function(
    jwt_api: Served, issuer: LoopbackIssuer, log: ObjectLog
) -> None:
    token = issuer.token("svc-orders", scope="orders.write orders.read", groups=["a", "b"])
    headers = {"Authorization": f"Bearer {token}"}
    answer = requests.post(f"{jwt_api.url}/topics/orders/records", json=RECORDS, headers=headers)
    assert answer.status_code == 200, answer.text
    jwt = jwt_api.authorizer()["jwt"]
    assert jwt["scopes"] == ["orders.write", "orders.read"]
    claims = jwt["claims"]
    assert claims["sub"] == "svc-orders" and claims["iss"] == issuer.issuer
    assert claims["groups"] == "[a b]" and claims["exp"].isdigit()
    assert all(isinstance(value, str) for value in claims.values())
    # the bare token (no Bearer) is an identity source API Gateway takes too; no scope: null
    plain = {"Authorization": issuer.token("svc-reader")}
    assert requests.get(f"{jwt_api.url}/topics", headers=plain).status_code == 200
    assert jwt_api.authorizer()["jwt"] == {
        "claims": jwt_api.authorizer()["jwt"]["claims"],
        "scopes": None,
    }
    assert jwt_api.authorizer()["jwt"]["claims"]["sub"] == "svc-reader"
    assert stored(log) == 1


def test_missing_forged_expired_and_foreign_tokens_get_401(
    jwt_api: Served, issuer: LoopbackIssuer, log: ObjectLog
) -> None:
    url = f"{jwt_api.url}/topics/orders/records"
    missing = requests.post(url, json=RECORDS, timeout=10)
    assert (missing.status_code, missing.json()) == (401, {"message": "Unauthorized"})
    tokens = {
        "signed by another key": TokenIssuer(issuer.issuer, kid=issuer.kid).token(),
        "expired": issuer.token(expires_in_s=-3600),
        "for another audience": issuer.token(aud="another-service"),
        "not a token": "not-a-jwt",
    }
    for what, token in tokens.items():
        answer = requests.post(url, json=RECORDS, headers={"Authorization": f"Bearer {token}"})
        assert (answer.status_code, answer.json()) == (401, {"message": "Unauthorized"}), what
        assert answer.headers["www-authenticate"].startswith('Bearer scope="" error='), what
    assert jwt_api.events == [] and stored(log) == 0


def test_registry_routes_keep_their_authorizer_as_the_terraform_module_has_it(
    log: ObjectLog,
) -> None:
    """The registry's routes are never IAM routes: open without registry_auth, behind the
    authorize function (401 without credentials, not IAM's 403) with it."""
    for registry_auth, status in ((False, 200), (True, 401)):
        gateway = local_api(lambda: log, api_auth="iam", registry_auth=registry_auth)
        url = gateway.start(port=0)
        try:
            assert requests.get(f"{url}/schema-registry/subjects").status_code == status
            assert requests.get(f"{url}/topics").status_code == 403
        finally:
            gateway.stop()


def test_objectlog_dev_turns_iam_auth_on_and_says_so(
    identities: Identities, aws_endpoint: str
) -> None:
    suffix = uuid.uuid4().hex[:8]
    options = DevOptions(
        port=0, api_port=0, kafka_port=None, data_dir=None, api_auth="iam",
        bucket=f"dev-auth-{suffix}", table=f"dev-auth-{suffix}",
    )  # fmt: skip
    stack = DevStack(options, echo=lambda line: None).start()
    try:
        assert "IAM auth: SigV4" in stack.banner()[1]
        assert requests.get(f"{stack.api_url}/topics").status_code == 403
        assert signed("GET", f"{stack.api_url}/topics", identities.reader).status_code == 200
    finally:
        stack.stop()


def test_objectlog_dev_refuses_jwt_auth_without_an_issuer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OBJECTLOG_JWT_ISSUER", raising=False)
    monkeypatch.delenv("OBJECTLOG_JWT_AUDIENCE", raising=False)
    result = CliRunner().invoke(main, ["dev", "--in-memory", "--api-auth", "jwt"])
    assert result.exit_code == 1
    assert "OBJECTLOG_JWT_ISSUER" in result.output


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param("x", "x", id="string"),
        pytest.param(1700000000, "1700000000", id="int"),
        pytest.param(1.7e9, "1700000000", id="integral float"),
        pytest.param(True, "true", id="bool"),
        pytest.param(["a", 2], "[a 2]", id="array"),
        pytest.param({"k": 1}, '{"k":1}', id="object"),
    ],
)
def test_claims_are_strings(value: Any, text: str) -> None:
    assert claim_string(value) == text


# ---- objectlog dev's principal header -------------------------------------------------------


def test_the_principal_header_names_the_caller_only_where_the_gateway_honours_it(
    log: ObjectLog,
) -> None:
    """objectlog dev's gateway (principal_header=True) hands the functions the header's
    principal as an authorizer would; the default gateway, like API Gateway, ignores it."""
    log.create_topic("orders")
    named = {"x-objectlog-principal": "User:alice"}
    for served in serve(local_api(lambda: log, principal_header=True)):
        assert requests.get(f"{served.url}/topics", headers=named).status_code == 200
        assert served.authorizer() == {
            "lambda": {"principal": "User:alice", "method": "dev-header"}
        }
        bad = requests.get(f"{served.url}/topics", headers={"x-objectlog-principal": "alice"})
        assert bad.status_code == 400 and "User:<name>" in bad.json()["message"]
    for served in serve(local_api(lambda: log)):
        assert requests.get(f"{served.url}/topics", headers=named).status_code == 200
        assert "authorizer" not in served.events[-1]["requestContext"]


def test_objectlog_dev_says_when_acls_are_enforced(aws_endpoint: str) -> None:
    from objectlog.services.access import AccessSettings
    from objectlog.services.authorization import Settings

    suffix = uuid.uuid4().hex[:8]
    access = AccessSettings(True, Settings(super_users=frozenset({"User:admin"})))
    options = DevOptions(
        port=0, api_port=0, kafka_port=None, data_dir=None, access=access,
        bucket=f"dev-acls-{suffix}", table=f"dev-acls-{suffix}",
    )  # fmt: skip
    stack = DevStack(options, echo=lambda line: None).start()
    try:
        assert "Kafka ACLs enforced on every door (super users: User:admin" in stack.banner()[0]
    finally:
        stack.stop()


def test_the_asyncio_client_signs_as_the_gateway_verifies(
    iam_api: Served, identities: Identities, monkeypatch: pytest.MonkeyPatch
) -> None:
    from objectlog.aio import AIOObjectLog

    writer = identities.writer
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", writer.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", writer.secret_key)
    monkeypatch.setenv("AWS_SESSION_TOKEN", writer.token)

    async def produce() -> int:
        remote = await AIOObjectLog.connect(iam_api.url, sign=True, region=REGION)
        async with remote, remote.producer() as producer:
            return (await producer.send_and_wait("orders", b"signed")).offset

    assert asyncio.run(produce()) == 0
    assert ":assumed-role/writer-" in iam_api.authorizer()["iam"]["userArn"]


def test_both_clients_send_a_bearer_token_the_jwt_authorizer_takes(
    jwt_api: Served, issuer: LoopbackIssuer, log: ObjectLog
) -> None:
    from objectlog.aio import AIOObjectLog
    from objectlog.clients.http import HttpObjectLog
    from objectlog.errors import ObjectLogError

    calls = itertools.count(1)

    def token() -> str:  # a new one every request, as a refreshing token source may
        return issuer.token(f"svc-async-{next(calls)}")

    async def produce() -> list[str]:
        async with await AIOObjectLog.connect(jwt_api.url, token=token) as remote:
            async with remote.producer() as producer:
                await producer.send_and_wait("orders", b"with a token")
            return await remote.list_topics()

    assert asyncio.run(produce()) == ["orders"]
    last = next(calls) - 1
    assert last > 2 and jwt_api.authorizer()["jwt"]["claims"]["sub"] == f"svc-async-{last}"
    with HttpObjectLog(jwt_api.url, token=issuer.token("svc-threads")) as remote:
        assert remote.list_topics() == ["orders"]
    assert jwt_api.authorizer()["jwt"]["claims"]["sub"] == "svc-threads"
    with HttpObjectLog(jwt_api.url) as anonymous, pytest.raises(ObjectLogError):
        anonymous.list_topics()
    assert stored(log) == 1
