"""The Schema Registry routes' authorizer: basic auth against the SCRAM users, bearer JWTs
against an issuer's keys, the in-process cache, the Lambda handler's answers, and the local
gateway running a route's authorizer as API Gateway does. In-memory stores; the issuer's JWKS
is handed to PyJWT without HTTP (tests/functional/test_registry_auth.py serves it for real)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Request

from objectlog.clock import ManualClock
from objectlog.errors import InvalidRequest, IssuerUnavailable, NotAuthenticated
from objectlog.functions.authorize import authorizer_handler
from objectlog.http.authentication import Authenticator, AuthSettings, parse_basic
from objectlog.http.tokens import JwtSettings, TokenVerifier
from objectlog.kafka.users import Users, password_matches
from objectlog.stores.documents import MemoryDocumentStore
from objectlog.tools.gateway import LambdaContext, LocalGateway, RequestAuthorizer, Route
from tests.token_issuer import AUDIENCE, TokenIssuer

PASSWORD = "correct horse"


class CountingDocuments(MemoryDocumentStore):
    """The in-memory documents, counting reads (each would be a DynamoDB GetItem)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def read(self, kind: str, name: str) -> tuple[str | None, int]:
        self.reads += 1
        return super().read(kind, name)


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture
def documents() -> CountingDocuments:
    store = CountingDocuments()
    Users(store).add("alice", PASSWORD)
    store.reads = 0
    return store


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def issuer(monkeypatch: pytest.MonkeyPatch) -> TokenIssuer:
    """An issuer whose JWKS PyJWT gets from here (as if fetched from its URL)."""
    issuer = TokenIssuer()
    monkeypatch.setattr(jwt.PyJWKClient, "fetch_data", lambda self: issuer.jwks())
    return issuer


def authenticator(
    documents: CountingDocuments, clock: ManualClock, issuer: TokenIssuer | None = None, **env: str
) -> Authenticator:
    if issuer is not None:
        env |= {"OBJECTLOG_JWT_ISSUER": issuer.issuer, "OBJECTLOG_JWT_AUDIENCE": AUDIENCE}
        env["OBJECTLOG_JWT_JWKS_URL"] = "https://issuer.test/keys"
    return Authenticator(Users(documents), AuthSettings.from_env(env), clock=clock)


# ---- passwords and headers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("password", "matches"),
    [
        pytest.param(PASSWORD, True, id="the-password"),
        pytest.param("correct horse ", False, id="one-space-more"),
        pytest.param("Correct horse", False, id="case"),
        pytest.param("", False, id="empty"),
        pytest.param("\u0007bell", False, id="refused-by-saslprep"),
    ],
)
def test_a_password_matches_only_the_stored_keys_it_was_made_from(
    password: str, matches: bool
) -> None:
    users = Users(MemoryDocumentStore())
    users.add("alice", PASSWORD)
    info = users.auth_info("alice")
    assert info is not None
    assert password_matches(info, password) is matches


def test_saslprep_maps_a_password_as_scram_did() -> None:
    users = Users(MemoryDocumentStore())
    users.add("bob", "I\u00adX")  # a soft hyphen: SASLprep maps it to nothing
    info = users.auth_info("bob")
    assert info is not None and password_matches(info, "IX")


@pytest.mark.parametrize(
    "credentials",
    [
        pytest.param("not base64!", id="not-base64"),
        pytest.param(base64.b64encode(b"no-colon").decode(), id="no-colon"),
        pytest.param(base64.b64encode(b":password").decode(), id="no-user"),
        pytest.param(base64.b64encode(b"\xff\xfe:x").decode(), id="not-utf8"),
    ],
)
def test_malformed_basic_credentials_are_refused(credentials: str) -> None:
    with pytest.raises(NotAuthenticated, match="malformed basic credentials"):
        parse_basic(credentials)


def test_a_password_may_hold_colons() -> None:
    assert parse_basic(base64.b64encode(b"alice:a:b").decode()) == ("alice", "a:b")


# ---- the authenticator -----------------------------------------------------------------------


def test_basic_auth_names_the_user(documents: CountingDocuments, clock: ManualClock) -> None:
    principal = authenticator(documents, clock).authenticate(basic("alice", PASSWORD))
    assert principal.context() == {"principal": "User:alice", "method": "basic"}
    lower_case = authenticator(documents, clock).authenticate(
        basic("alice", PASSWORD).replace("Basic", "basic")
    )
    assert lower_case.name == "User:alice"  # schemes are case-insensitive (RFC 7235)


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        pytest.param(None, "no Authorization header", id="none"),
        pytest.param("  ", "no Authorization header", id="blank"),
        pytest.param(basic("alice", "wrong"), "unknown user or wrong password", id="wrong"),
        pytest.param(basic("mallory", PASSWORD), "unknown user or wrong password", id="unknown"),
        pytest.param("Basic", "no credentials", id="scheme-only"),
        pytest.param("Digest username=alice", "not accepted", id="other-scheme"),
        pytest.param("AWS4-HMAC-SHA256 Credential=x", "not accepted", id="sigv4"),
        pytest.param("Bearer abc.def.ghi", "no issuer is configured", id="token-no-issuer"),
    ],
)
def test_anything_else_is_refused(
    documents: CountingDocuments, clock: ManualClock, header: str | None, reason: str
) -> None:
    with pytest.raises(NotAuthenticated, match=reason):
        authenticator(documents, clock).authenticate(header)


def test_a_steady_caller_reads_the_users_once_per_ttl(
    documents: CountingDocuments, clock: ManualClock
) -> None:
    """The positive cache: 100 requests with one header cost one users-document read (and one
    PBKDF2); after the TTL, one more."""
    checks = authenticator(documents, clock, OBJECTLOG_AUTH_CACHE_S="60")
    header = basic("alice", PASSWORD)
    for _ in range(100):
        checks.authenticate(header)
        clock.advance(500)  # 50 s in all
    assert documents.reads == 1
    clock.advance(10_001)
    checks.authenticate(header)
    assert documents.reads == 2


def test_refusals_and_other_users_are_not_served_from_the_cache(
    documents: CountingDocuments, clock: ManualClock
) -> None:
    checks = authenticator(documents, clock)
    checks.authenticate(basic("alice", PASSWORD))
    for _ in range(3):
        with pytest.raises(NotAuthenticated):
            checks.authenticate(basic("alice", "wrong"))
    assert documents.reads == 4  # each refusal checked afresh
    Users(documents).delete("alice")
    assert checks.authenticate(basic("alice", PASSWORD)).name == "User:alice"  # within the TTL
    clock.advance(300_001)
    with pytest.raises(NotAuthenticated):
        checks.authenticate(basic("alice", PASSWORD))


def test_no_cache_with_a_ttl_of_zero(documents: CountingDocuments, clock: ManualClock) -> None:
    checks = authenticator(documents, clock, OBJECTLOG_AUTH_CACHE_S="0")
    for _ in range(3):
        checks.authenticate(basic("alice", PASSWORD))
    assert documents.reads == 3


@pytest.mark.parametrize(
    ("env", "message"),
    [
        pytest.param({"OBJECTLOG_AUTH_CACHE_S": "-1"}, "from 0 to 3600", id="negative-ttl"),
        pytest.param({"OBJECTLOG_AUTH_CACHE_S": "soon"}, "from 0 to 3600", id="ttl-not-number"),
        pytest.param({"OBJECTLOG_JWT_ISSUER": "https://i"}, "need both", id="no-audience"),
        pytest.param({"OBJECTLOG_JWT_AUDIENCE": "a"}, "need both", id="no-issuer"),
        pytest.param(
            {"OBJECTLOG_JWT_ISSUER": "issuer", "OBJECTLOG_JWT_AUDIENCE": "a"},
            "must be a URL",
            id="issuer-not-url",
        ),
    ],
)
def test_bad_settings_say_what_is_wrong(env: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        AuthSettings.from_env(env)


def test_settings_from_the_environment() -> None:
    env = {"OBJECTLOG_JWT_ISSUER": "https://i/", "OBJECTLOG_JWT_AUDIENCE": "a, b"}
    settings = AuthSettings.from_env(env | {"OBJECTLOG_AUTH_CACHE_S": "30"})
    assert settings.ttl_s == 30
    assert settings.jwt == JwtSettings("https://i/", ("a", "b"), None)
    assert AuthSettings.from_env({}) == AuthSettings()


# ---- bearer tokens ---------------------------------------------------------------------------


def test_a_valid_token_names_its_subject(
    documents: CountingDocuments, clock: ManualClock, issuer: TokenIssuer
) -> None:
    principal = authenticator(documents, clock, issuer).authenticate(
        "Bearer " + issuer.token("svc-42")
    )
    assert principal.context() == {"principal": "User:svc-42", "method": "bearer"}
    assert documents.reads == 0


@pytest.mark.parametrize(
    ("make_token", "reason"),
    [
        pytest.param(lambda i: TokenIssuer(i.issuer).token(), "Signature", id="forged"),
        pytest.param(lambda i: i.token(expires_in_s=-3600), "expired", id="expired"),
        pytest.param(lambda i: i.token(aud="someone-else"), "(?i)audience", id="wrong-audience"),
        pytest.param(lambda i: i.token(iss="https://other.test"), "(?i)issuer", id="wrong-issuer"),
        pytest.param(lambda i: i.token(nbf=int(time.time()) + 3600), "not yet", id="not-yet"),
        pytest.param(lambda i: i.token(sub=""), "sub", id="empty-subject"),
        pytest.param(
            lambda i: jwt.encode({"sub": "x"}, "s" * 32, algorithm="HS256"),
            "bearer token refused",
            id="hmac",
        ),
        pytest.param(lambda i: "not-a-token", "bearer token refused", id="garbage"),
    ],
)
def test_forged_expired_and_foreign_tokens_are_refused(
    documents: CountingDocuments,
    clock: ManualClock,
    issuer: TokenIssuer,
    make_token: Any,
    reason: str,
) -> None:
    with pytest.raises(NotAuthenticated, match=reason):
        authenticator(documents, clock, issuer).authenticate("Bearer " + make_token(issuer))


def test_a_token_is_not_reused_past_its_expiry(
    documents: CountingDocuments, clock: ManualClock, issuer: TokenIssuer
) -> None:
    """Reused for the TTL, but never past exp: then it is verified again (and refused)."""
    checks = authenticator(documents, clock, issuer)
    exp_s = clock.now_ms() // 1000 + 60  # the manual clock's now: PyJWT would find it long past
    verified: list[str] = []

    def verify(token: str) -> dict[str, Any]:
        verified.append(token)
        return {"sub": "alice", "exp": exp_s}

    checks.tokens = type("Verifier", (), {"verify": staticmethod(verify)})()  # type: ignore[assignment]
    for step_ms in (0, 59_000, 2_000):  # the last request comes past exp
        clock.advance(step_ms)
        checks.authenticate("Bearer t")
    assert verified == ["t", "t"]


def test_keys_are_found_by_discovery_or_at_the_conventional_place() -> None:
    asked: list[str] = []

    def discovery(url: str) -> Any:
        asked.append(url)
        return {"jwks_uri": "https://keys.test/jwks"}

    settings = JwtSettings("https://issuer.test/", (AUDIENCE,))
    assert TokenVerifier(settings, fetch=discovery)._jwks_url() == "https://keys.test/jwks"
    assert asked == ["https://issuer.test/.well-known/openid-configuration"]

    def missing(url: str) -> Any:
        raise ValueError("not JSON")

    fallback = TokenVerifier(settings, fetch=missing)._jwks_url()
    assert fallback == "https://issuer.test/.well-known/jwks.json"

    def unreachable(url: str) -> Any:
        raise ConnectionRefusedError("refused")

    with pytest.raises(IssuerUnavailable, match="could not be reached"):
        TokenVerifier(settings, fetch=unreachable)._jwks_url()


# ---- the Lambda handler and the local gateway --------------------------------------------------


def authorizer_event(header: str | None) -> dict[str, Any]:
    headers = {} if header is None else {"authorization": header}
    return {"version": "2.0", "type": "REQUEST", "routeKey": "POST /x", "headers": headers}


def test_the_handler_answers_in_api_gateways_simple_response(
    documents: CountingDocuments,
) -> None:
    handler = authorizer_handler(lambda: documents, env={})
    context = LambdaContext(function_name="authorize")
    allowed = handler(authorizer_event(basic("alice", PASSWORD)), context)
    assert allowed == {
        "isAuthorized": True,
        "context": {"principal": "User:alice", "method": "basic"},
    }
    assert handler(authorizer_event(basic("alice", "no")), context) == {"isAuthorized": False}
    assert handler(authorizer_event(None), context) == {"isAuthorized": False}


@pytest.fixture
def gateway_calls() -> Iterator[tuple[LocalGateway, list[dict[str, Any]], dict[str, Any]]]:
    """A gateway with one authorized route; the events its two targets got; how the
    authorizer answers (set by each test)."""
    seen: list[dict[str, Any]] = []
    answer: dict[str, Any] = {}

    def authorizer(event: dict[str, Any], context: Any) -> Any:
        seen.append(event)
        if "raise" in answer:
            raise RuntimeError("authorizer failed")
        return answer["value"]

    def route(event: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(event)
        return {"statusCode": 200, "body": "ok"}

    gateway = LocalGateway(
        [Route("POST", "/guarded/{proxy+}", "route"), Route("GET", "/open", "route")],
        {"route": route, "authorize": authorizer},
        authorizers={"POST /guarded/{proxy+}": RequestAuthorizer("authorize")},
    )
    yield gateway, seen, answer


def call(gateway: LocalGateway, path: str, method: str = "POST", **headers: str) -> Any:
    return gateway.dispatch(
        Request(EnvironBuilder(path=path, method=method, headers=headers).get_environ())
    )


def test_the_local_gateway_runs_a_routes_authorizer_as_api_gateway_does(
    gateway_calls: tuple[LocalGateway, list[dict[str, Any]], dict[str, Any]],
) -> None:
    gateway, seen, answer = gateway_calls
    assert call(gateway, "/guarded/a/b").status_code == 401  # no identity: not invoked
    assert call(gateway, "/guarded/a", Authorization=" ").status_code == 401
    assert seen == []
    answer["value"] = {"isAuthorized": False}
    refused = call(gateway, "/guarded/a", Authorization="Basic eA==")
    assert (refused.status_code, json.loads(refused.get_data())) == (403, {"message": "Forbidden"})
    (asked,) = seen
    assert (asked["type"], asked["identitySource"], asked["routeKey"]) == (
        "REQUEST",
        ["Basic eA=="],
        "POST /guarded/{proxy+}",
    )
    assert asked["routeArn"].endswith("/$default/POST/guarded/a") and "body" not in asked
    answer["value"] = {"isAuthorized": True, "context": {"principal": "User:alice"}}
    assert call(gateway, "/guarded/a", Authorization="Basic eA==").status_code == 200
    assert seen[-1]["requestContext"]["authorizer"] == {"lambda": {"principal": "User:alice"}}
    answer["value"] = {"allow": True}  # not a simple response
    assert call(gateway, "/guarded/a", Authorization="Basic eA==").status_code == 500
    answer["raise"] = True
    assert call(gateway, "/guarded/a", Authorization="Basic eA==").status_code == 500
    seen.clear()
    assert call(gateway, "/open", method="GET").status_code == 200  # no authorizer there
    assert "authorizer" not in seen[0]["requestContext"]
