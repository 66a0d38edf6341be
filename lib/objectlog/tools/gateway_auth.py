"""The local gateway's route authentication, as API Gateway's HTTP API does it: IAM (SigV4) and
JWT authorizers, each answering a request with what API Gateway puts in
``requestContext.authorizer`` or refusing it with API Gateway's answer.

IAM (``AWS_IAM``): the ``Authorization`` header's SigV4 signature (service ``execute-api``, the
API's region) is recomputed with botocore's canonical-request rules over the request as it
arrived (method, raw path and query, the headers named in ``SignedHeaders``, the SHA-256 of the
body) and the secret of the request's access key, found by a ``CredentialLookup``. The
signature's date (``X-Amz-Date``) must be within 15 minutes of now and match its credential
scope; a temporary key needs its session token in ``X-Amz-Security-Token`` (a long-term key
none); expired temporary credentials are refused. Every refusal is 403
``{"message":"Forbidden"}``. Only the header form is verified (no presigned query strings).

JWT: ``Authorization: Bearer <jwt>`` (or the bare token, which API Gateway also takes) verified
by http.tokens' TokenVerifier (the issuer's JWKS, iss, aud, exp, nbf). Refusals are 401
``{"message":"Unauthorized"}``, with API Gateway's ``www-authenticate`` header when a token was
sent. Claims reach the function as strings; scopes from ``scope`` or ``scp``, else null.

``moto_credentials`` is the lookup for the embedded endpoint (tools.embedded), whose moto
backends live in this process: keys of STS AssumeRole sessions and of IAM users'
CreateAccessKey, with their secrets, session tokens and ARNs.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.compat import HTTPHeaders
from botocore.credentials import ReadOnlyCredentials
from werkzeug.wrappers import Request

from objectlog.errors import IssuerUnavailable, NotAuthenticated

if TYPE_CHECKING:  # PyJWT is the lambda extra's; the gateway imports it only for JWT routes
    from objectlog.http.tokens import TokenVerifier

ALGORITHM = "AWS4-HMAC-SHA256"
SERVICE = "execute-api"
AMZ_DATE_FORMAT = "%Y%m%dT%H%M%SZ"
MAX_SKEW_S = 15 * 60  # SigV4: a signature is good for 15 minutes either side of its date


@dataclass(frozen=True)
class Credential:
    """An access key an endpoint issued, with what verifying and naming its caller needs."""

    access_key_id: str
    secret_access_key: str
    account_id: str
    user_arn: str  # an assumed role's session ARN: arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION
    user_id: str  # AIDA... for a user, AROA...:SESSION for an assumed role
    session_token: str | None = None  # temporary credentials only
    expires_at: float | None = None  # epoch seconds; None: long-term


CredentialLookup = Callable[[str], Credential | None]


@dataclass(eq=False)  # an exception stays hashable
class Refused(Exception):
    """A request the route's authorizer refuses: API Gateway's status and message, the reason
    (for the gateway's log only, as API Gateway's answer does not say it) and extra headers."""

    status: int
    message: str
    reason: str
    headers: dict[str, str] = field(default_factory=dict)


class Authenticator(Protocol):
    def authenticate(self, request: Request) -> dict[str, Any]:
        """The request's ``requestContext.authorizer``; raises Refused."""
        ...


def forbidden(reason: str) -> Refused:
    return Refused(403, "Forbidden", reason)


class IamAuthenticator:
    """API Gateway's AWS_IAM authorization: a valid SigV4 signature of a known access key."""

    def __init__(
        self,
        credentials: CredentialLookup,
        region: str,
        *,
        now: Callable[[], float] | None = None,
    ) -> None:
        self.credentials = credentials
        self.region = region
        self._now = now or (lambda: datetime.now(UTC).timestamp())

    def authenticate(self, request: Request) -> dict[str, Any]:
        fields = parse_authorization(request.headers.get("authorization", ""))
        scope = fields["Credential"].split("/")
        if len(scope) != 5 or scope[4] != "aws4_request":
            raise forbidden(f"malformed credential scope {fields['Credential']!r}")
        key_id, day, region, service, _ = scope
        if service != SERVICE or region != self.region:
            raise forbidden(f"credential scoped to {region}/{service}, not {self.region}/{SERVICE}")
        signed = fields["SignedHeaders"].split(";")
        if "host" not in signed or any(request.headers.get(name) is None for name in signed):
            raise forbidden("a signed header is missing, or host is not signed")
        amz_date = request.headers.get("x-amz-date", "")
        signed_at = parse_amz_date(amz_date)
        if amz_date[:8] != day:
            raise forbidden(f"X-Amz-Date {amz_date} is not of the credential scope's day {day}")
        now = self._now()
        if abs(now - signed_at) > MAX_SKEW_S:
            raise forbidden(f"signature date {amz_date} is more than 15 minutes from now")
        credential = self.credentials(key_id)
        if credential is None:
            raise forbidden(f"unknown access key {key_id}")
        if credential.expires_at is not None and now >= credential.expires_at:
            raise forbidden(f"the credentials of {key_id} expired")
        token = request.headers.get("x-amz-security-token")
        if (token is None) != (credential.session_token is None) or not hmac.compare_digest(
            token or "", credential.session_token or ""
        ):
            raise forbidden(f"the security token is not that of {key_id}")
        body = request.get_data()
        # the signature is recomputed over the body's real hash whatever this header says;
        # refusing a false one here only names the reason
        claimed = request.headers.get("x-amz-content-sha256")
        if claimed is not None and claimed != hashlib.sha256(body).hexdigest():
            raise forbidden("X-Amz-Content-SHA256 is not the body's hash")
        expected = signature(request, body, signed, amz_date, credential, self.region)
        if not hmac.compare_digest(expected, fields["Signature"]):
            raise forbidden("the signature does not match")
        return {
            "iam": {
                "accessKey": key_id,
                "accountId": credential.account_id,
                "callerId": credential.user_id,
                "cognitoIdentity": None,
                "principalOrgId": None,
                "userArn": credential.user_arn,
                "userId": credential.user_id,
            }
        }


def parse_authorization(header: str) -> dict[str, str]:
    """Credential, SignedHeaders and Signature of a SigV4 Authorization header."""
    if not header.startswith(ALGORITHM + " "):
        raise forbidden("no SigV4 Authorization header" if not header else "not a SigV4 header")
    fields: dict[str, str] = {}
    for part in header[len(ALGORITHM) + 1 :].split(","):
        name, _, value = part.strip().partition("=")
        fields[name] = value
    if not all(fields.get(name) for name in ("Credential", "SignedHeaders", "Signature")):
        raise forbidden("the Authorization header lacks Credential, SignedHeaders or Signature")
    return fields


def parse_amz_date(value: str) -> float:
    try:
        return datetime.strptime(value, AMZ_DATE_FORMAT).replace(tzinfo=UTC).timestamp()
    except ValueError:
        raise forbidden(f"X-Amz-Date {value!r} is missing or malformed") from None


class _Recompute(SigV4Auth):
    """botocore's signer over exactly the headers the client signed (botocore itself would
    pick the request's headers, leaving out some, such as user-agent, that others sign)."""

    def __init__(self, credentials: ReadOnlyCredentials, region: str, signed: HTTPHeaders):
        super().__init__(credentials, SERVICE, region)
        self._signed = signed

    def headers_to_sign(self, request: AWSRequest) -> HTTPHeaders:
        return self._signed


def signature(
    request: Request,
    body: bytes,
    signed: list[str],
    amz_date: str,
    credential: Credential,
    region: str,
) -> str:
    """The signature the request would carry were it signed with credential's secret."""
    headers = HTTPHeaders()
    for name in signed:  # werkzeug lists no empty Content-Type, which a client may have signed
        for value in request.headers.getlist(name) or [request.headers.get(name, "")]:
            headers[name] = value
    raw_uri = request.environ.get("RAW_URI") or request.environ.get("REQUEST_URI")
    target = raw_uri or request.full_path.rstrip("?")
    aws_request = AWSRequest(
        method=request.method, url=f"http://{request.host}{target}", data=body or None
    )
    aws_request.context["timestamp"] = amz_date
    secrets = ReadOnlyCredentials(
        credential.access_key_id, credential.secret_access_key, credential.session_token
    )
    signer = _Recompute(secrets, region, headers)
    canonical = signer.canonical_request(aws_request)
    return str(signer.signature(signer.string_to_sign(aws_request, canonical), aws_request))


class JwtAuthenticator:
    """API Gateway's JWT authorizer, verifying with http.tokens' TokenVerifier."""

    def __init__(self, verifier: TokenVerifier) -> None:
        self.verifier = verifier

    def authenticate(self, request: Request) -> dict[str, Any]:
        header = request.headers.get("authorization", "").strip()
        if not header:  # the identity source is missing: API Gateway answers at once
            raise Refused(401, "Unauthorized", "no Authorization header")
        token = header[7:].strip() if header[:7].lower() == "bearer " else header
        try:
            claims = self.verifier.verify(token)
        except NotAuthenticated as e:
            description = str(e).replace('"', "'")
            challenge = f'Bearer scope="" error="invalid_token" error_description="{description}"'
            raise Refused(401, "Unauthorized", str(e), {"www-authenticate": challenge}) from None
        except IssuerUnavailable as e:
            raise Refused(500, "Internal Server Error", str(e)) from None
        return {
            "jwt": {
                "claims": {name: claim_string(value) for name, value in claims.items()},
                "scopes": scopes_of(claims),
            }
        }


def claim_string(value: Any) -> str:
    """A claim as API Gateway hands it to the function: every value a string, numbers as
    written (1700000000, not 1.7e9), arrays as ``[a b]``."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return "[" + " ".join(claim_string(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def scopes_of(claims: Mapping[str, Any]) -> list[str] | None:
    """The token's scopes: ``scope`` (space-separated, OAuth 2.0) or ``scp`` (a list or a
    string); None when it has neither."""
    found = claims.get("scope", claims.get("scp"))
    if isinstance(found, str):
        return found.split() or None
    if isinstance(found, list):
        return [str(item) for item in found] or None
    return None


def moto_credentials(access_key_id: str) -> Credential | None:
    """The credential moto issued with this key in this process (an STS AssumeRole session or
    an IAM user's active access key), or None."""
    from moto.iam.models import iam_backends
    from moto.sts.models import sts_backends

    for account_id, partitions in list(iam_backends.items()):
        for partition, backend in list(partitions.items()):
            key = backend.access_keys.get(access_key_id)
            if key is None or key.status != "Active":
                continue
            if key.role_arn is not None:
                session = sts_backends[account_id][partition].get_assumed_role_from_access_key(
                    access_key_id
                )
                if session is None:
                    return None
                expires = session.expiration.replace(tzinfo=UTC).timestamp()
                return Credential(
                    access_key_id,
                    key.secret_access_key,
                    account_id,
                    session.arn,
                    session.user_id,
                    session.session_token,
                    expires,
                )
            if key.user_name is None:
                return None
            user = backend.get_user(key.user_name)
            return Credential(access_key_id, key.secret_access_key, account_id, user.arn, user.id)
    return None
