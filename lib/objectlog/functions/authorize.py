"""The authorize function: API Gateway's Lambda REQUEST authorizer on the Schema Registry's routes
(payload format 2.0, simple responses); the rules are http.authentication's.

API Gateway calls it with the request (identity source: the Authorization header) and takes
``{"isAuthorized": bool, "context": {...}}``; the context reaches the route's function as
``requestContext.authorizer.lambda`` (the principal, which the registry's handler logs). API
Gateway itself answers 401 without calling it when the header is missing, 403 when it says no,
and 500 when it fails (an unreachable table or token issuer: nothing is cached then).

Settings from the environment, read at the first invocation:

    OBJECTLOG_TABLE          the table holding the users (``objectlog users``)
    OBJECTLOG_AUTH_CACHE_S   how long this process reuses a positive answer (300)
    OBJECTLOG_JWT_ISSUER, OBJECTLOG_JWT_AUDIENCE (comma-separated), OBJECTLOG_JWT_JWKS_URL
                             bearer tokens (http.tokens); no issuer: every bearer token refused

Its role may read the users' document item and nothing else (infra/terraform iam.tf).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from objectlog.adapters import aws
from objectlog.adapters.dynamodb import DynamoTable
from objectlog.config import Config
from objectlog.errors import NotAuthenticated
from objectlog.functions import snapstart
from objectlog.http.authentication import Authenticator, AuthSettings
from objectlog.kafka.users import Users
from objectlog.stores.documents import DocumentStore, DynamoDocumentStore
from objectlog.telemetry import log_metrics, logger, metrics

FUNCTION = "authorize"  # its name among the functions (infra/terraform, the local gateway)
IDENTITY_HEADER = "authorization"


def table_documents() -> DocumentStore:
    """The documents of the table the environment names (where the users are)."""
    config = Config.from_env()
    return DynamoDocumentStore(DynamoTable(aws.dynamodb_client(config), config.table))


@dataclass
class AuthorizerServices:
    """The authenticator, built once per Lambda container (or per local gateway)."""

    documents_factory: Callable[[], DocumentStore]
    env: Mapping[str, str] | None = None  # None: os.environ
    _authenticator: Authenticator | None = field(default=None, repr=False)

    @property
    def authenticator(self) -> Authenticator:
        if self._authenticator is None:
            settings = AuthSettings.from_env(os.environ if self.env is None else self.env)
            self._authenticator = Authenticator(Users(self.documents_factory()), settings)
        return self._authenticator


def identity(event: Mapping[str, Any]) -> str | None:
    """The Authorization header of an authorizer event (payload 2.0 lower-cases the names)."""
    headers = event.get("headers") or {}
    found = headers.get(IDENTITY_HEADER)
    if found is None and event.get("identitySource"):
        found = event["identitySource"][0]
    return str(found) if found is not None else None


def authorizer_handler(
    documents_factory: Callable[[], DocumentStore] = table_documents,
    env: Mapping[str, str] | None = None,
) -> Callable[..., dict[str, Any]]:
    """A Lambda entry point for the authorizer."""
    services = AuthorizerServices(documents_factory, env)

    @logger.inject_lambda_context
    @log_metrics
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            principal = services.authenticator.authenticate(identity(event))
        except NotAuthenticated as e:
            logger.info("refused", extra={"reason": e.message, "route": event.get("routeKey")})
            metrics.add_metric(name="refused", unit=MetricUnit.Count, value=1)
            return {"isAuthorized": False}
        metrics.add_metric(name="authorized", unit=MetricUnit.Count, value=1)
        return {"isAuthorized": True, "context": principal.context()}

    def prepare() -> None:
        """Before a SnapStart snapshot: the authenticator and its DynamoDB client, no request
        (functions.snapstart; no pyarrow work here)."""
        _ = services.authenticator

    snapstart.register(prepare, snapstart.restored)
    handler.services = services  # type: ignore[attr-defined]
    handler.prepare = prepare  # type: ignore[attr-defined]
    return handler


handler = authorizer_handler()
