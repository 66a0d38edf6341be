"""The web console as deployed on AWS (issue 39): the API takes only the JWT issuer's bearer
tokens, so the page signs its user in there (authorization code with PKCE, S256) and sends the
token with every call; its own page routes are public, as the Terraform module routes them.

Against the local gateway guarded as the module guards it with a JWT authorizer
(tools.gateway.local_api api_auth="jwt"), and a loopback OpenID provider (tests.oidc_issuer)
that refuses a code whose verifier does not hash to its challenge."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests
from playwright.sync_api import sync_playwright

from objectlog import ObjectLog
from objectlog.http import console_routes
from objectlog.http.tokens import JwtSettings
from objectlog.tools.gateway import LocalGateway, local_api
from tests.e2e.test_console import FLAGS
from tests.e2e.test_docs_ui import chromium
from tests.oidc_issuer import PkceIssuer, s256

CLIENT_ID = "objectlog-console"


@pytest.fixture
def issuer() -> Iterator[PkceIssuer]:
    with PkceIssuer(user="alice") as issuer:
        yield issuer


@pytest.fixture
def deployed_api(
    log: ObjectLog, issuer: PkceIssuer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """The API as Terraform deploys it with var.console: the fetch function told where the
    console's user signs in (console_routes' settings), every API route behind the JWT
    authorizer whose audience names the console's client."""
    monkeypatch.setenv(console_routes.ENV_CLIENT_ID, CLIENT_ID)
    monkeypatch.setenv(console_routes.ENV_ISSUER, issuer.issuer)
    monkeypatch.setenv(console_routes.ENV_SCOPES, "openid profile")
    log.create_topic("payments")
    settings = JwtSettings(issuer.issuer, (CLIENT_ID,))
    gateway: LocalGateway = local_api(lambda: log, api_auth="jwt", jwt_settings=settings)
    url = gateway.start(port=0)
    try:
        yield url
    finally:
        gateway.stop()


def test_the_page_is_public_and_the_api_is_not(deployed_api: str, issuer: PkceIssuer) -> None:
    page = requests.get(f"{deployed_api}/console/topics", timeout=10)
    assert page.status_code == 200 and "<main" in page.text
    policy = page.headers["Content-Security-Policy"]
    assert f"connect-src 'self' {issuer.issuer};" in policy  # its discovery and token requests
    config = requests.get(f"{deployed_api}/console/config.json", timeout=10).json()
    assert config == {
        "auth": "oidc",
        "issuer": issuer.issuer,
        "client_id": CLIENT_ID,
        "scopes": ["openid", "profile"],
    }
    assert requests.get(f"{deployed_api}/topics", timeout=10).status_code == 401
    tokened = {"Authorization": f"Bearer {issuer.token(aud=CLIENT_ID)}"}
    assert requests.get(f"{deployed_api}/topics", headers=tokened, timeout=10).status_code == 200


def test_a_user_signs_in_with_pkce_and_the_api_answers_them(
    deployed_api: str, issuer: PkceIssuer
) -> None:
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=FLAGS, headless=True)
        try:
            page = browser.new_page()
            page.on("pageerror", lambda error: errors.append(str(error)))
            sent: list[dict[str, Any]] = []
            page.on("request", lambda r: sent.append({"url": r.url, **r.headers}))
            page.goto(f"{deployed_api}/console/topics")
            page.wait_for_selector("main[aria-busy='false'] h1:has-text('Topics')")
            page.wait_for_selector("a:has-text('payments')")
            assert page.url == f"{deployed_api}/console/topics"  # back where the user asked
        finally:
            browser.close()
    assert errors == []
    authorize = [query for path, query in issuer.requests if path == "/authorize"]
    token = [form for path, form in issuer.requests if path == "/token"]
    assert len(authorize) == 1 and len(token) == 1
    assert authorize[0]["code_challenge_method"] == "S256"
    assert authorize[0]["code_challenge"] == s256(token[0]["code_verifier"])
    assert authorize[0]["redirect_uri"] == f"{deployed_api}/console/callback"
    assert (authorize[0]["client_id"], authorize[0]["scope"]) == (CLIENT_ID, "openid profile")
    listed = [r for r in sent if r["url"] == f"{deployed_api}/overview/topics"]  # the topics list
    assert listed and all(r.get("authorization", "").startswith("Bearer ") for r in listed)
