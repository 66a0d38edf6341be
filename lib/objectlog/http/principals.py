"""Who calls the HTTP API, the REST Proxy and the Schema Registry (issue 37, docs/security.md):
the principal comes from what the request's authorizer put in the payload v2 event, never from
anything the caller sends itself.

- IAM (SigV4): ``requestContext.authorizer.iam.userArn``. An assumed role's session ARN
  (``arn:aws:sts::ACCOUNT:assumed-role/NAME/SESSION``) is normalized to the role,
  ``arn:aws:iam::ACCOUNT:role/NAME``, so an ACL names a role, not each of its sessions; a
  role's path is not in the session ARN, so a role is named without it. Other ARNs (IAM
  users, the account root) are taken as they are. Principal ``User:<arn>``.
- JWT: ``requestContext.authorizer.jwt.claims[<claim>]``, the claim named by
  ``OBJECTLOG_JWT_PRINCIPAL_CLAIM`` (``sub`` by default). Principal ``User:<value>``.
- A Lambda authorizer (functions.authorize: basic auth with objectlog's users, or bearer
  tokens): ``requestContext.authorizer.lambda.principal``, already ``User:<name>``.
- None of them (a route without an authorizer): User:ANONYMOUS, subject to ACLs like anyone.

``objectlog dev``'s gateway may put a principal in the Lambda authorizer's place from a header
(tools/gateway.py); the deployed functions cannot tell and need not: API Gateway never lets a
caller write the authorizer's context.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from objectlog.format.acls import ANONYMOUS

ENV_PRINCIPAL_CLAIM = "OBJECTLOG_JWT_PRINCIPAL_CLAIM"
DEFAULT_CLAIM = "sub"
_ASSUMED_ROLE = re.compile(r"^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role/([^/]+)/.+$")


def principal_of(event: Mapping[str, Any], claim: str | None = None) -> str:
    """The request's principal, ``User:<...>`` (module docstring)."""
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    iam = authorizer.get("iam") or {}
    if iam.get("userArn"):
        return f"User:{normalize_arn(str(iam['userArn']))}"
    claims = (authorizer.get("jwt") or {}).get("claims") or {}
    name = claims.get(claim or os.environ.get(ENV_PRINCIPAL_CLAIM) or DEFAULT_CLAIM)
    if name:
        return f"User:{name}"
    given = (authorizer.get("lambda") or {}).get("principal")
    if given:
        return str(given)
    return ANONYMOUS


def authenticated_principal(event: Mapping[str, Any]) -> str | None:
    """The principal when an authorizer named one, else None (for log lines)."""
    principal = principal_of(event)
    return None if principal == ANONYMOUS else principal


def normalize_arn(arn: str) -> str:
    """An assumed role's session ARN as its role's ARN; any other ARN as it is."""
    match = _ASSUMED_ROLE.match(arn)
    if match is None:
        return arn
    partition, account, role = match.groups()
    return f"arn:{partition}:iam::{account}:role/{role}"


def source_host(event: Mapping[str, Any]) -> str:
    """The caller's address as API Gateway saw it (``requestContext.http.sourceIp``)."""
    http = (event.get("requestContext") or {}).get("http") or {}
    return str(http.get("sourceIp") or "*")
