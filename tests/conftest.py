"""Shared fixtures: one embedded AWS endpoint per test session, reached over real HTTP.

Set AWS_ENDPOINT_URL before running pytest to target another endpoint instead (AWS, or an
emulator: `make test-localstack` does it for LocalStack); otherwise moto's server app runs on
loopback with every request serialized (objectlog.tools.embedded).

Tests show their kind by folder, and each folder is also a marker (``pytest -m unit``):
    unit/        in-memory stores, no server of any kind (make test-unit, under a minute)
    contract/    one suite per Protocol, on the in-memory stores and on the AWS endpoint
    functional/  the library, handlers and CLI against the AWS endpoint over real HTTP
    e2e/         Terraform deploys, Chromium, Spark
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator

import pytest

from objectlog import ObjectLog
from objectlog.clock import ManualClock
from objectlog.config import Config
from objectlog.tools.embedded import EmbeddedAWS
from objectlog.tools.gateway import LocalGateway, local_api
from tests.e2e.early_deployment import EarlyDeployment

KINDS = ("unit", "contract", "functional", "e2e")
# The files that take longest, longest first (seconds on make test's two workers, --durations):
# collected first, so that pytest-xdist (--dist loadfile --no-loadscope-reorder, Makefile) starts
# them at once. Its default order, files with the most tests first, started these few-test files
# last, and a worker ran the 155 s verify alone while the other had nothing left.
LONG_FILES = (
    "functional/test_verify.py",  # 90 on a quiet box (the short objectlog verify), 260 loaded
    "e2e/test_terraform.py",  # 150 (a Terraform apply and destroy)
    "functional/test_tables.py",  # 80
    "functional/test_dev_persistence.py",  # 70 (objectlog dev and DynamoDB Local processes)
    "functional/test_compaction_model.py",  # 47
    "functional/test_compaction.py",  # 45
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        kind = item.path.parent.name
        if kind in KINDS:
            item.add_marker(kind)
    items.sort(key=long_files_first)  # stable: the order within a file and of the rest holds


def long_files_first(item: pytest.Item) -> int:
    path = item.path.as_posix()
    return next((i for i, name in enumerate(LONG_FILES) if path.endswith(name)), len(LONG_FILES))


@pytest.fixture(scope="session")
def aws_endpoint(embedded_aws: str) -> str:
    """The AWS endpoint for a test (tests/unit/conftest.py refuses it to unit tests)."""
    return embedded_aws


@pytest.fixture(scope="session")
def embedded_aws() -> Iterator[str]:
    """The AWS endpoint: AWS_ENDPOINT_URL when preset (LocalStack, DynamoDB Local beside moto
    with AWS_ENDPOINT_URL_DYNAMODB, AWS), else the embedded server started here. Either way the
    tests get dummy credentials (unless real ones are set) and no EMF metric lines."""
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    # EMF metrics print one JSON line per invocation; test_http_api turns them back on.
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    preset = os.environ.get("AWS_ENDPOINT_URL")
    if preset:
        yield preset
        return
    server = EmbeddedAWS(port=0).start()
    os.environ["AWS_ENDPOINT_URL"] = server.endpoint_url
    try:
        yield server.endpoint_url
    finally:
        os.environ.pop("AWS_ENDPOINT_URL", None)
        server.stop()


@pytest.fixture(scope="session", autouse=True)
def early_deployment(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EarlyDeployment | None]:
    """The Terraform deployment of tests/e2e/test_terraform.py, applied in the background from
    the session's first test when a selected test uses it (tests/e2e/early_deployment.py)."""
    if not any("deployed" in item.fixturenames for item in request.session.items):
        yield None
        return
    # not aws_endpoint: the session's first test on this worker may be a unit test, which
    # may not ask for it (tests/unit/conftest.py); the deployment needs the endpoint anyway
    endpoint = request.getfixturevalue("embedded_aws")
    deployment = EarlyDeployment(endpoint, tmp_path_factory.mktemp("deployment"))
    if "PYTEST_XDIST_WORKER" not in os.environ:  # a worker starts it with test_terraform.py
        deployment.start()
    try:
        yield deployment
    finally:
        deployment.destroy()  # unless the deployed test already did


@pytest.fixture
def log_config(aws_endpoint: str) -> Config:
    """A bucket and table of this test's own."""
    suffix = uuid.uuid4().hex[:12]
    return Config.from_env(bucket=f"objectlog-test-{suffix}", table=f"objectlog-test-{suffix}")


@pytest.fixture
def log(log_config: Config) -> Iterator[ObjectLog]:
    with ObjectLog(log_config) as objectlog:
        objectlog.ensure_resources()
        yield objectlog


@pytest.fixture
def log_env(log: ObjectLog) -> dict[str, str]:
    """The environment that points the CLI, ObjectLog.connect() and the handlers at this test's
    log: its endpoints (per service: DynamoDB may live elsewhere than S3), bucket and table."""
    return {
        "AWS_ENDPOINT_URL_S3": log.config.s3_endpoint or "",
        "AWS_ENDPOINT_URL_DYNAMODB": log.config.dynamodb_endpoint or "",
        "OBJECTLOG_BUCKET": log.config.bucket,
        "OBJECTLOG_TABLE": log.config.table,
    }


@pytest.fixture
def clock() -> ManualClock:
    """A clock the test moves (leases, session timeouts), starting now."""
    return ManualClock(start_ms=int(time.time() * 1000))


@pytest.fixture
def clocked_log(log_config: Config, clock: ManualClock) -> Iterator[ObjectLog]:
    """A log whose leases and session timeouts follow the test's clock."""
    with ObjectLog(log_config, clock=clock) as objectlog:
        objectlog.ensure_resources()
        yield objectlog


@pytest.fixture
def gateway(log: ObjectLog) -> Iterator[LocalGateway]:
    gw = local_api(lambda: log)
    gw.url = gw.start(port=0)  # type: ignore[attr-defined]
    yield gw
    gw.stop()


@pytest.fixture
def api(gateway: LocalGateway) -> str:
    return gateway.url  # type: ignore[attr-defined,no-any-return]
