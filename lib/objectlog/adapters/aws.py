"""The only place that builds AWS clients and translates botocore's errors into objectlog's."""

from __future__ import annotations

import platform
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from typing import Any, TypeVar

import boto3
import botocore.config
import botocore.exceptions

from objectlog.config import Config
from objectlog.errors import (
    ObjectExists,
    ObjectLogError,
    ObjectNotFound,
    StorageUnavailable,
    UnknownOutcome,
)

LOCAL_CREDENTIALS = {"aws_access_key_id": "test", "aws_secret_access_key": "test"}
THROTTLING_CODES = {
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "SlowDown",
    "ServiceUnavailable",
    "InternalError",
    "InternalServerError",
    "TransactionInProgressException",
}
NOT_FOUND_CODES = {"NoSuchKey", "404", "NotFound", "ResourceNotFoundException", "NoSuchBucket"}
# A create or put-if-absent found what it would create already there.
EXISTS_CODES = {
    "PreconditionFailed",  # S3 PutObject If-None-Match: *
    "ConditionalRequestConflict",  # S3: a concurrent If-None-Match put
    "BucketAlreadyOwnedByYou",
    "BucketAlreadyExists",
    "ResourceInUseException",  # DynamoDB CreateTable
}
T = TypeVar("T")
S = TypeVar("S")  # a session: boto3's or aiobotocore's


def user_agent() -> str:
    """A fixed User-Agent: botocore builds its standard one (user agent 2.0) twice for every
    request unless the client's config supplies one, 0.15-0.18 ms of client CPU a call here
    (docs/benchmarks.md). A client's user_agent_extra is still appended; an SDK app id is not.
    The Lambda layer holds objectlog's modules, not its distribution, so there may be no
    version to name."""
    try:
        version = metadata.version("objectlog")
    except metadata.PackageNotFoundError:
        version = "unpackaged"
    return f"objectlog/{version} Python/{platform.python_version()}"


USER_AGENT = user_agent()


def botocore_config(
    config: Config,
    *,
    pool: int = 32,
    kind: type[botocore.config.Config] = botocore.config.Config,
) -> botocore.config.Config:
    """The clients' settings; ``kind`` is aiobotocore's AioConfig for the asyncio client."""
    return kind(
        region_name=config.region,
        user_agent=USER_AGENT,
        retries={"mode": "standard", "max_attempts": config.max_attempts},
        connect_timeout=config.connect_timeout_s,
        read_timeout=config.read_timeout_s,
        max_pool_connections=pool,
        s3={"addressing_style": "path"} if config.s3_endpoint else None,
        tcp_keepalive=True,
        # Segments are written once with If-None-Match; skip the extra checksum pass over each
        # body unless the operation requires one (SigV4 still signs the payload hash).
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )


def session_kwargs(config: Config) -> dict[str, Any]:
    """Credentials from the usual chain; dummy ones when only local endpoints are used."""
    if config.is_local and boto3.Session().get_credentials() is None:
        return dict(LOCAL_CREDENTIALS, region_name=config.region)
    return {"region_name": config.region}


SessionKey = tuple[tuple[str, Any], ...]
_SESSIONS: dict[SessionKey, boto3.Session] = {}
_SESSIONS_LOCK = threading.Lock()


def make_session(config: Config) -> boto3.Session:
    """One boto3 session per set of settings: building a session loads every service model."""
    return cached_session(config, _SESSIONS, lambda kwargs: boto3.Session(**kwargs))


def cached_session(
    config: Config, sessions: dict[SessionKey, S], build: Callable[[dict[str, Any]], S]
) -> S:
    """The session in sessions for config's settings (session_kwargs), built the first time:
    a session's loader caches the service models its clients are built from."""
    kwargs = session_kwargs(config)
    key = tuple(sorted(kwargs.items()))
    with _SESSIONS_LOCK:
        session = sessions.get(key)
        if session is None:
            session = sessions[key] = build(kwargs)
        return session


def _client(session: boto3.Session, service: str, **kwargs: Any) -> Any:
    with _SESSIONS_LOCK:  # creating clients from one session is not thread-safe
        make_client: Any = session.client
        return make_client(service, **kwargs)


def s3_client(config: Config, session: boto3.Session | None = None) -> Any:
    session = session or make_session(config)
    return _client(session, "s3", endpoint_url=config.s3_endpoint, config=botocore_config(config))


def dynamodb_client(config: Config, session: boto3.Session | None = None) -> Any:
    session = session or make_session(config)
    return _client(
        session, "dynamodb", endpoint_url=config.dynamodb_endpoint, config=botocore_config(config)
    )


def error_code(error: botocore.exceptions.ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def translate(error: Exception, *, what: str, idempotent: bool) -> ObjectLogError:
    """Map a botocore failure to objectlog's error kinds.

    A timeout after the request was sent leaves a write's outcome unknown; a connection that
    never opened, throttling and 5xx (after botocore's own retries) changed nothing.
    """
    if isinstance(error, ObjectLogError):
        return error
    if isinstance(error, botocore.exceptions.ClientError):
        code = error_code(error)
        if code in NOT_FOUND_CODES:
            return ObjectNotFound(f"{what}: not found ({code})")
        if code in EXISTS_CODES:
            return ObjectExists(f"{what}: already exists ({code})")
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if code in THROTTLING_CODES or status >= 500:
            return StorageUnavailable(f"{what}: {code or status} after retries")
        return StorageUnavailable(f"{what}: unexpected {code}: {error}")
    if isinstance(
        error, botocore.exceptions.EndpointConnectionError | botocore.exceptions.ConnectTimeoutError
    ):
        return StorageUnavailable(f"{what}: cannot connect: {error}")
    if isinstance(
        error,
        botocore.exceptions.ReadTimeoutError
        | botocore.exceptions.ConnectionClosedError
        | botocore.exceptions.HTTPClientError,
    ):
        if idempotent:
            return StorageUnavailable(f"{what}: {error}")
        return UnknownOutcome(f"{what}: sent, but the answer was lost: {error}")
    return StorageUnavailable(f"{what}: {type(error).__name__}: {error}")


@contextmanager
def translated(what: str, *, idempotent: bool = True) -> Iterator[None]:
    try:
        yield
    except ObjectLogError:
        raise
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
        raise translate(e, what=what, idempotent=idempotent) from e


def applied(call: Callable[[], Any], *, what: str, idempotent: bool) -> bool:
    """Run a conditional write: True if it applied, False if its condition did not hold; any
    other failure (ClientError or BotoCoreError) becomes objectlog's error."""
    try:
        call()
    except botocore.exceptions.ClientError as e:
        if error_code(e) == "ConditionalCheckFailedException":
            return False
        raise translate(e, what=what, idempotent=idempotent) from e
    except botocore.exceptions.BotoCoreError as e:
        raise translate(e, what=what, idempotent=idempotent) from e
    return True
