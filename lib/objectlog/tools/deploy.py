"""Deploy infra/terraform to an AWS-compatible endpoint and serve the *deployed* API locally.

    python -m objectlog.tools.deploy apply   --endpoint http://127.0.0.1:4566  # init + apply
    python -m objectlog.tools.deploy serve   --endpoint http://127.0.0.1:4566  # API on :8081
    python -m objectlog.tools.deploy destroy --endpoint http://127.0.0.1:4566

moto (and LocalStack without Docker) cannot run Lambda functions, so the deployed API is served
by the local gateway (objectlog.tools.gateway) from what the deployment itself says:

- the routes, their authorization and their integrations come from API Gateway (apigatewayv2);
- each integration's function, its handler name, environment and code hash from Lambda;
- the handler module is read from the deployed package (the zip whose hash Lambda reports) and
  resolved as Lambda's Python runtime does (``dir/module.function`` in the function's code, then
  in its layers' ``python/``); the layer's ``objectlog`` must be this tree's, since the handler's
  own imports resolve to the objectlog this process runs;
- it runs with the function's environment (``OBJECTLOG_*`` only from there) and only if the
  function's resource policy lets API Gateway (or the EventBridge rule) invoke it.

So a wrong route, handler path, environment variable or invoke permission in Terraform fails.
moto does not evaluate IAM policies, so every AWS call a handler makes is recorded as
(action, resource ARN) through a botocore event hook, and ``check_policies`` evaluates each one
against the policies attached to the function's role, and flags grants nothing used.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
import uuid
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import boto3
import botocore.handlers
from werkzeug.wrappers import Request
from werkzeug.wrappers import Response as WsgiResponse

from objectlog.adapters import aws
from objectlog.config import Config
from objectlog.tools.gateway import LambdaContext, LocalGateway, Route, json_error

REPO_ROOT = Path(__file__).resolve().parents[3]
TERRAFORM_DIR = REPO_ROOT / "infra" / "terraform"
STATE_ROOT = REPO_ROOT / "build" / "terraform"
ENV_PLUGIN_DIR = "OBJECTLOG_TF_PLUGIN_DIR"
ENV_TERRAFORM = "OBJECTLOG_TERRAFORM"  # another binary, e.g. tflocal for LocalStack
ENV_TF_REGISTRY = "OBJECTLOG_TF_REGISTRY"  # "1": no mirror, install from the public registry
DEFAULT_MIRROR = Path("/opt/tf-plugins")
MIRROR_SEARCH = (
    Path.home() / ".terraform.d" / "plugins",
    Path("/usr/local/share/terraform/plugins"),
    Path("/usr/share/terraform/plugins"),
    Path("/opt"),
)
APP_ENV_PREFIX = "OBJECTLOG_"
LOCAL_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}


class DeployError(RuntimeError):
    pass


# ---- Terraform ------------------------------------------------------------------------------


def find_terraform() -> str:
    name = os.environ.get(ENV_TERRAFORM, "terraform")
    found = shutil.which(name)
    if not found:
        raise DeployError(
            f"{name!r} is not on PATH: install Terraform >= 1.5 "
            "(https://developer.hashicorp.com/terraform/install), or set "
            f"{ENV_TERRAFORM} to the binary to use (e.g. tflocal)"
        )
    return found


def find_provider_mirror() -> Path | None:
    """The directory holding ``registry.terraform.io/hashicorp/aws/...`` (a filesystem mirror),
    or None when OBJECTLOG_TF_REGISTRY=1 allows installing from the public registry."""
    configured = os.environ.get(ENV_PLUGIN_DIR)
    if configured:
        path = Path(configured)
        if not any(path.glob("registry.terraform.io/hashicorp/aws/*/*/terraform-provider-aws_*")):
            raise DeployError(
                f"{ENV_PLUGIN_DIR}={configured} holds no "
                "registry.terraform.io/hashicorp/aws/<version>/<os_arch>/terraform-provider-aws_*"
            )
        return path
    candidates = [DEFAULT_MIRROR, *MIRROR_SEARCH]
    for depth in range(3):  # the mirror itself, or up to two directories below a candidate
        for base in candidates:
            pattern = (
                "*/" * depth + "registry.terraform.io/hashicorp/aws/*/*/terraform-provider-aws_*"
            )
            for binary in base.glob(pattern):
                # <mirror>/registry.terraform.io/hashicorp/aws/<version>/<os_arch>/<binary>
                return binary.parents[5]
    if os.environ.get(ENV_TF_REGISTRY) == "1":
        return None
    raise DeployError(
        "no Terraform provider mirror with hashicorp/aws was found (looked at "
        f"${ENV_PLUGIN_DIR}, {', '.join(str(c) for c in candidates)}): set {ENV_PLUGIN_DIR} to "
        "the directory holding registry.terraform.io/, or set "
        f"{ENV_TF_REGISTRY}=1 to install the provider from the public registry"
    )


def cli_config(mirror: Path | None) -> str:
    if mirror is None:
        return "# providers from the public registry\n"
    return (
        "provider_installation {\n"
        f'  filesystem_mirror {{\n    path    = "{mirror}"\n'
        '    include = ["registry.terraform.io/*/*"]\n  }\n'
        '  direct {\n    exclude = ["registry.terraform.io/*/*"]\n  }\n}\n'
    )


@dataclass
class Workspace:
    """One deployment's Terraform data dir, variables and state (under build/terraform/<name>):
    the source tree (infra/terraform) stays free of state."""

    name: str
    variables: dict[str, Any]
    state_dir: Path | None = None
    config_dir: Path = TERRAFORM_DIR
    terraform: str = field(default_factory=find_terraform)
    mirror: Path | None = field(default_factory=find_provider_mirror)
    timings: dict[str, float] = field(default_factory=dict)
    last_output: str = ""

    def __post_init__(self) -> None:
        self.state_dir = self.state_dir or STATE_ROOT / self.name
        self.state_dir.mkdir(parents=True, exist_ok=True)

    @property
    def state_file(self) -> Path:
        assert self.state_dir is not None
        return self.state_dir / "terraform.tfstate"

    def env(self) -> dict[str, str]:
        assert self.state_dir is not None
        rc = self.state_dir / "terraform.rc"
        rc.write_text(cli_config(self.mirror))
        env = dict(os.environ)
        env.update(
            TF_CLI_CONFIG_FILE=str(rc),
            TF_DATA_DIR=str(self.state_dir / ".terraform"),
            TF_IN_AUTOMATION="1",
            TF_INPUT="0",
            CHECKPOINT_DISABLE="1",
        )
        if self.variables.get("local_endpoint"):
            for key, value in LOCAL_CREDENTIALS.items():
                env.setdefault(key, value)
        return env

    def run(self, *args: str, step: str | None = None) -> str:
        command = [self.terraform, f"-chdir={self.config_dir}", *args]
        started = time.monotonic()
        result = subprocess.run(
            command, env=self.env(), capture_output=True, text=True, check=False, timeout=900
        )
        if step:
            self.timings[step] = time.monotonic() - started
            self.last_output = result.stdout
        if result.returncode != 0:
            raise DeployError(
                f"{' '.join(command[:3])} failed ({result.returncode}):\n"
                f"{result.stderr[-6000:] or result.stdout[-6000:]}"
            )
        return result.stdout

    def _var_file(self) -> str:
        assert self.state_dir is not None
        path = self.state_dir / "terraform.tfvars.json"
        path.write_text(json.dumps(self.variables, indent=2, sort_keys=True) + "\n")
        return f"-var-file={path}"

    def init(self) -> None:
        self.run("init", "-no-color", "-upgrade=false", step="init")

    def apply(self) -> dict[str, Any]:
        self.init()
        self.run(
            "apply",
            "-no-color",
            "-auto-approve",
            f"-state={self.state_file}",
            self._var_file(),
            step="apply",
        )
        return self.outputs()

    def outputs(self) -> dict[str, Any]:
        if not self.state_file.exists():
            raise DeployError(f"no state at {self.state_file}: apply first")
        raw = json.loads(self.run("output", "-no-color", "-json", f"-state={self.state_file}"))
        return {name: value["value"] for name, value in raw.items()}

    def destroy(self) -> None:
        if not self.state_file.exists():
            return
        self.init()
        self.run(
            "destroy",
            "-no-color",
            "-auto-approve",
            f"-state={self.state_file}",
            self._var_file(),
            step="destroy",
        )

    def validate(self) -> str:
        self.init()
        return self.run("validate", "-no-color")


def require_endpoint(url: str) -> None:
    """Fail at once, saying what to start, when nothing listens at the AWS endpoint."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=2):
            return
    except OSError as e:
        raise DeployError(
            f"nothing answers at {url} ({e}): start the embedded stack with `make run` in "
            "another terminal (or LocalStack: docker compose -f localstack/docker-compose.yml "
            "up), or pass --endpoint"
        ) from None


def local_variables(
    endpoint: str, name: str, package_dir: Path, **overrides: Any
) -> dict[str, Any]:
    """Variables for a throw-away deployment on moto server or LocalStack."""
    return {
        "local_endpoint": endpoint,
        "name": name,
        "package_dir": str(package_dir.resolve()),
        "force_destroy": True,
        "deletion_protection": False,
        # moto applies a bucket policy's conditioned Deny to every request (it never evaluates
        # aws:SecureTransport), which would lock everyone out of the bucket
        "deny_insecure_transport": False,
        **overrides,
    }


# ---- recording the AWS calls handlers make --------------------------------------------------


@dataclass(frozen=True, order=True)
class Call:
    action: str  # s3:GetObject
    resource: str  # arn:aws:s3:::bucket/key


def iam_calls(
    service: str, operation: str, params: Mapping[str, Any], region: str, account: str
) -> list[Call]:
    """The (IAM action, resource ARN) pairs an API call is authorized as."""
    if service == "s3":
        bucket = params.get("Bucket", "")
        bucket_arn = f"arn:aws:s3:::{bucket}"
        if operation in ("GetObject", "HeadObject"):
            return [Call("s3:GetObject", f"{bucket_arn}/{params['Key']}")]
        if operation == "PutObject":
            return [Call("s3:PutObject", f"{bucket_arn}/{params['Key']}")]
        if operation == "DeleteObject":
            return [Call("s3:DeleteObject", f"{bucket_arn}/{params['Key']}")]
        if operation == "DeleteObjects":
            return [
                Call("s3:DeleteObject", f"{bucket_arn}/{item['Key']}")
                for item in params.get("Delete", {}).get("Objects", [])
            ]
        if operation in ("ListObjectsV2", "ListObjects", "HeadBucket"):
            return [Call("s3:ListBucket", bucket_arn)]
        return [Call(f"s3:{operation}", bucket_arn)]
    if service == "dynamodb":

        def table(name: str) -> str:
            return f"arn:aws:dynamodb:{region}:{account}:table/{name}"

        if operation in ("BatchGetItem", "BatchWriteItem"):
            return [Call(f"dynamodb:{operation}", table(t)) for t in params.get("RequestItems", {})]
        if operation in ("TransactWriteItems", "TransactGetItems"):
            kinds = {
                "Put": "PutItem",
                "Update": "UpdateItem",
                "Delete": "DeleteItem",
                "ConditionCheck": "ConditionCheckItem",
                "Get": "GetItem",
            }
            return [
                Call(f"dynamodb:{kinds[kind]}", table(body["TableName"]))
                for item in params.get("TransactItems", [])
                for kind, body in item.items()
            ]
        return [Call(f"dynamodb:{operation}", table(params.get("TableName", "")))]
    return [Call(f"{service}:{operation}", "*")]


class CallRecorder:
    """(action, resource) pairs per function, from every botocore client in this process.

    A ``provide-client-params`` hook sees each API call of a boto3 or aioboto3 client (sessions
    made after ``install_hook()`` get it from botocore's built-in handler list, and the session
    objectlog.adapters.aws caches gets it explicitly). It records only while an invocation is active
    (``recording(function)``); invocations are serialized by the environment lock, so every call
    in that window is that function's.
    """

    def __init__(self, account: str) -> None:
        self.account = account
        self.calls: dict[str, set[Call]] = defaultdict(set)
        self.counts: dict[str, int] = defaultdict(int)
        self.async_counts: dict[str, int] = defaultdict(int)  # from aioboto3 clients

    @contextmanager
    def recording(self, function: str) -> Iterator[None]:
        global _ACTIVE
        previous = _ACTIVE
        _ACTIVE = (self, function)
        try:
            yield
        finally:
            _ACTIVE = previous

    def record(
        self, function: str, service: str, operation: str, params: Mapping[str, Any], region: str
    ) -> None:
        for call in iam_calls(service, operation, params, region, self.account):
            self.calls[function].add(call)
        self.counts[function] += 1
        if _in_event_loop():
            self.async_counts[function] += 1


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


_ACTIVE: tuple[CallRecorder, str] | None = None
HOOK_ID = "objectlog-deploy-recorder"


def _hook(params: Mapping[str, Any], model: Any, context: Any = None, **kwargs: Any) -> None:
    active = _ACTIVE
    if active is None:
        return
    recorder, function = active
    service = model.service_model.endpoint_prefix
    region = (context or {}).get("client_region") or "us-east-1"
    recorder.record(function, service, model.name, params, region)


def install_hook(session: boto3.Session | None = None) -> None:
    """Put the recording hook on every botocore session made from now on, and on session."""
    entry = ("provide-client-params", _hook)
    if entry not in botocore.handlers.BUILTIN_HANDLERS:
        botocore.handlers.BUILTIN_HANDLERS.append(entry)
    if session is not None:
        session.events.register("provide-client-params", _hook, unique_id=HOOK_ID)


# ---- IAM policies ---------------------------------------------------------------------------

# Calls the Lambda service and the runtime make for a function, never its handler, so no
# recording sees them: CloudWatch Logs (the runtime ships stdout), X-Ray (the tracing daemon),
# KMS (S3 and DynamoDB on the function's behalf, with a customer key).
RUNTIME_ACTIONS = frozenset(
    {
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        "kms:Decrypt",
        "kms:GenerateDataKey",
    }
)
# Actions whose API takes no resource-level permissions: "*" is the only resource they accept.
RESOURCE_STAR_ACTIONS = frozenset({"xray:PutTraceSegments", "xray:PutTelemetryRecords"})


def _pattern(glob: str, *, ignore_case: bool) -> re.Pattern[str]:
    parts = (".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob)
    return re.compile("^" + "".join(parts) + "$", re.IGNORECASE if ignore_case else 0)


def wildcard_match(glob: str, value: str, *, ignore_case: bool = False) -> bool:
    """IAM's matching: ``*`` any run of characters (``/`` included), ``?`` one character."""
    return bool(_pattern(glob, ignore_case=ignore_case).match(value))


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


@dataclass(frozen=True)
class Statement:
    effect: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    sid: str = ""
    has_condition: bool = False

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Statement:
        for unsupported in ("NotAction", "NotResource", "NotPrincipal"):
            if unsupported in raw:
                raise DeployError(f"policy statement uses {unsupported}, which is not evaluated")
        return cls(
            effect=raw.get("Effect", "Allow"),
            actions=tuple(_as_list(raw.get("Action"))),
            resources=tuple(_as_list(raw.get("Resource"))),
            sid=raw.get("Sid", ""),
            has_condition=bool(raw.get("Condition")),
        )

    def matches(self, call: Call) -> bool:
        return any(wildcard_match(a, call.action, ignore_case=True) for a in self.actions) and any(
            wildcard_match(r, call.resource) for r in self.resources
        )


def parse_policy(document: str | Mapping[str, Any]) -> list[Statement]:
    """The statements of a policy document (IAM may hand it back URL-encoded)."""
    parsed: Mapping[str, Any] = (
        json.loads(unquote(document) if document.startswith("%7B") else document)
        if isinstance(document, str)
        else document
    )
    return [Statement.parse(s) for s in _as_list_of_dicts(parsed.get("Statement"))]


def _as_list_of_dicts(value: Any) -> list[Mapping[str, Any]]:
    return [value] if isinstance(value, Mapping) else list(value or [])


def allowed(statements: Sequence[Statement], call: Call) -> bool:
    """Explicit deny wins, then any allow; conditions are not evaluated (see check_policies)."""
    if any(s.effect == "Deny" and s.matches(call) for s in statements):
        return False
    return any(s.effect == "Allow" and s.matches(call) for s in statements)


@dataclass
class PolicyReport:
    function: str
    role: str
    calls: list[Call]
    denied: list[Call]  # recorded calls the policies do not allow
    unused_actions: list[str]  # granted, never called, not a runtime action
    unused_grants: list[tuple[str, str]]  # (action, resource pattern) no call matched
    wildcard_problems: list[str]  # "*" actions, "*" resources where the API takes others
    conditions: list[str]  # sids of statements with conditions (not evaluated)

    @property
    def ok(self) -> bool:
        return not (
            self.denied
            or self.unused_actions
            or self.unused_grants
            or self.wildcard_problems
            or self.conditions  # an Allow this check cannot prove applies
        )

    def describe(self, *, complete_run: bool = True) -> str:
        """The findings; complete_run=False (a partial session, e.g. ``serve``) reports unused
        grants as not exercised rather than as problems."""
        lines = [f"{self.function} ({self.role}): {len(self.calls)} distinct calls"]
        unused = "granted but never called" if complete_run else "not exercised this session"
        unused_grants = "grant no call used" if complete_run else "grants not exercised"
        for title, items in (
            (
                "NOT ALLOWED by the role's policies",
                [f"{c.action} {c.resource}" for c in self.denied],
            ),
            (unused, self.unused_actions),
            (unused_grants, [f"{a} on {r}" for a, r in self.unused_grants]),
            ("wildcards", self.wildcard_problems),
            (
                "conditions this check cannot evaluate (statements)",
                [sid or "?" for sid in self.conditions],
            ),
        ):
            if items:
                lines.append(f"  {title}:")
                lines += [f"    {item}" for item in items]
        return "\n".join(lines)


def role_statements(iam: Any, role_name: str) -> list[Statement]:
    """Every statement of the role's inline and attached policies."""
    statements: list[Statement] = []
    for name in iam.list_role_policies(RoleName=role_name)["PolicyNames"]:
        document = iam.get_role_policy(RoleName=role_name, PolicyName=name)["PolicyDocument"]
        statements += parse_policy(document)
    for attached in iam.list_attached_role_policies(RoleName=role_name)["AttachedPolicies"]:
        policy = iam.get_policy(PolicyArn=attached["PolicyArn"])["Policy"]
        version = iam.get_policy_version(
            PolicyArn=attached["PolicyArn"], VersionId=policy["DefaultVersionId"]
        )["PolicyVersion"]
        statements += parse_policy(version["Document"])
    return statements


def check_policy(
    function: str, role: str, statements: Sequence[Statement], calls: Iterable[Call]
) -> PolicyReport:
    recorded = sorted(set(calls))
    called_actions = {c.action.lower() for c in recorded}
    granted: list[tuple[str, str]] = []
    wildcard_problems: list[str] = []
    for statement in statements:
        if statement.effect != "Allow":
            continue
        for action in statement.actions:
            if "*" in action or "?" in action:
                wildcard_problems.append(f"{statement.sid or '?'}: action {action!r}")
            for resource in statement.resources:
                granted.append((action, resource))
                if resource == "*" and action not in RESOURCE_STAR_ACTIONS:
                    wildcard_problems.append(
                        f"{statement.sid or '?'}: {action} on '*' (its API takes resource ARNs)"
                    )
    unused_actions = sorted(
        {a for a, _ in granted if a.lower() not in called_actions and a not in RUNTIME_ACTIONS}
    )
    unused_grants = sorted(
        {
            (a, r)
            for a, r in granted
            if a not in RUNTIME_ACTIONS
            and a not in unused_actions
            and not any(
                wildcard_match(a, c.action, ignore_case=True) and wildcard_match(r, c.resource)
                for c in recorded
            )
        }
    )
    return PolicyReport(
        function=function,
        role=role,
        calls=recorded,
        denied=[c for c in recorded if not allowed(statements, c)],
        unused_actions=unused_actions,
        unused_grants=unused_grants,
        wildcard_problems=wildcard_problems,
        conditions=[s.sid for s in statements if s.has_condition],
    )


# ---- the function's environment -------------------------------------------------------------

_ENV_LOCK = threading.RLock()


@contextmanager
def lambda_environment(variables: Mapping[str, str], region: str) -> Iterator[None]:
    """os.environ as the function sees it, for the duration: OBJECTLOG_* only from the
    function's configuration, AWS_REGION its region; everything else (the endpoint,
    credentials) from this process. Serialized: one function runs at a time."""
    with _ENV_LOCK:
        saved = dict(os.environ)
        try:
            for key in [k for k in os.environ if k.startswith(APP_ENV_PREFIX)]:
                del os.environ[key]
            os.environ.update(variables)
            os.environ["AWS_REGION"] = region
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)


# ---- the deployment -------------------------------------------------------------------------


def code_sha256(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


class Packages:
    """The zips of the package dirs, by the base64 SHA-256 Lambda reports as CodeSha256."""

    def __init__(self, dirs: Sequence[Path]) -> None:
        self.by_hash: dict[str, Path] = {}
        for directory in dirs:
            for path in sorted(Path(directory).glob("*.zip")):
                self.by_hash[code_sha256(path.read_bytes())] = path

    def find(self, sha: str, what: str) -> zipfile.ZipFile:
        path = self.by_hash.get(sha)
        if path is None:
            known = ", ".join(str(p) for p in self.by_hash.values()) or "none"
            raise DeployError(
                f"{what}: the deployed code (CodeSha256 {sha}) is none of the built zips "
                f"({known}); rebuild and apply again"
            )
        return zipfile.ZipFile(path)


def resolve_handler(
    handler: str, roots: Sequence[tuple[zipfile.ZipFile, str]]
) -> tuple[str, str, str]:
    """(zip member, module name, function name) of a Lambda Python handler string, searched as
    the runtime does: the function's code first, then each layer's python/ directory."""
    if "." not in handler:
        raise DeployError(f"handler {handler!r} is not module.function")
    module, function = handler.rsplit(".", 1)
    relative = module.replace(".", "/")
    for archive, prefix in roots:
        names = set(archive.namelist())
        for candidate in (f"{prefix}{relative}.py", f"{prefix}{relative}/__init__.py"):
            if candidate in names:
                return candidate, module.replace("/", "."), function
    searched = ", ".join(f"{a.filename}:{p or '/'}" for a, p in roots)
    raise DeployError(f"handler {handler!r}: no module {module!r} in {searched}")


@dataclass
class DeployedFunction:
    """A deployed function as Lambda describes it, with its handler loaded in this process (one
    "container": ``cold_start`` loads a fresh one, as a new Lambda execution environment)."""

    name: str
    arn: str
    handler_name: str
    environment: dict[str, str]
    role_arn: str
    region: str
    timeout_s: float
    runtime: str
    architectures: list[str]
    archive: zipfile.ZipFile
    member: str  # the handler module's file in archive
    module_name: str
    attribute: str
    entry: Callable[[dict[str, Any], Any], Any] | None = None
    invoke: Callable[[dict[str, Any], Any], Any] = field(init=False)

    def load(self) -> None:
        """Import the handler module (a fresh copy) with the function's environment, as a cold
        start does, and take its handler."""
        self.close()
        with lambda_environment(self.environment, self.region):
            # the session objectlog.adapters.aws hands the function's ObjectLog: its clients copy
            # the session's hooks when they are made, at the first invocation
            install_hook(aws.make_session(Config.from_env()))
            module = _load_module(self.archive, self.member, self.module_name, self.name)
        entry = getattr(module, self.attribute, None)
        if not callable(entry):
            raise DeployError(
                f"function {self.name}: handler {self.handler_name!r} is not callable"
            )
        self.entry = entry

    def close(self) -> None:
        """Close what the handler holds (its ObjectLog's readers), if it says how."""
        services = getattr(self.entry, "services", None)
        if services is not None and callable(getattr(services, "close", None)):
            with lambda_environment(self.environment, self.region):
                services.close()


def _load_module(archive: zipfile.ZipFile, member: str, module_name: str, function: str) -> Any:
    source = archive.read(member).decode()
    unique = f"objectlog_deployed_{function}_{uuid.uuid4().hex[:8]}_{module_name.replace('.', '_')}"
    module = types.ModuleType(unique)
    module.__file__ = f"{archive.filename}/{member}"
    sys.modules[unique] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)  # our own package's code
    return module


def invoke_allowed(policy: Mapping[str, Any], service: str, source_arn: str) -> bool:
    """Whether a function's resource policy lets an AWS service principal invoke it from
    source_arn (its AWS:SourceArn condition, with IAM wildcards)."""
    for statement in _as_list_of_dicts(policy.get("Statement")):
        principal = statement.get("Principal", {})
        services = _as_list(principal.get("Service") if isinstance(principal, dict) else principal)
        actions = _as_list(statement.get("Action"))
        if statement.get("Effect") != "Allow" or service not in services:
            continue
        if not any(wildcard_match(a, "lambda:InvokeFunction", ignore_case=True) for a in actions):
            continue
        conditions = statement.get("Condition", {})
        patterns = [
            v
            for test in ("ArnLike", "ArnEquals", "StringEquals", "StringLike")
            for k, values in conditions.get(test, {}).items()
            if k.lower() == "aws:sourcearn"
            for v in _as_list(values)
        ]
        if not patterns or any(wildcard_match(p, source_arn) for p in patterns):
            return True
    return False


class DeployedGateway(LocalGateway):
    """The local gateway with the deployed routes' authorization: an AWS_IAM route needs a SigV4
    Authorization header and a JWT route a bearer token (neither is verified: there are no
    real credentials here), as API Gateway answers 403 / 401 without them."""

    def __init__(
        self, *args: Any, authorization: Mapping[str, str], require_auth: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.authorization = dict(authorization)
        self.require_auth = require_auth

    def dispatch(self, request: Request) -> WsgiResponse:
        if not self.require_auth:
            return super().dispatch(request)
        route, _ = self._route(request.method, request.path)
        kind = self.authorization.get(route.key if route else "$default", "NONE")
        header = request.headers.get("authorization", "")
        if kind == "AWS_IAM" and not header.startswith("AWS4-HMAC-SHA256 "):
            return json_error(403, "Forbidden")
        if kind == "JWT" and not header.lower().startswith("bearer "):
            return json_error(401, "Unauthorized")
        return super().dispatch(request)


class Deployment:
    """A deployed objectlog, read back from the endpoint: the API's routes and the functions
    behind them, invocable in this process with their own handler and environment."""

    def __init__(
        self,
        outputs: Mapping[str, Any],
        package_dirs: Sequence[Path],
        *,
        endpoint_url: str | None = None,
        region: str = "us-east-1",
        library: Path = REPO_ROOT / "lib" / "objectlog",
    ) -> None:
        self.outputs = dict(outputs)
        self.endpoint_url = endpoint_url
        session = boto3.Session(region_name=region)
        install_hook(session)

        def client(service: str) -> Any:
            make: Any = session.client
            return make(service, endpoint_url=endpoint_url)

        self.apigw, self.awslambda = client("apigatewayv2"), client("lambda")
        self.iam, self.events = client("iam"), client("events")
        self.account = client("sts").get_caller_identity()["Account"]
        self.region = region
        self.recorder = CallRecorder(self.account)
        self.packages = Packages(package_dirs)
        self.library = library
        self.functions: dict[str, DeployedFunction] = {}
        self.api_id = str(self.outputs["api_id"])
        self.routes: list[Route] = []
        self.authorization: dict[str, str] = {}
        self.default_target: str | None = None
        self._read_api()

    # ---- reading the deployment --------------------------------------------------------

    def _read_api(self) -> None:
        integrations = {
            i["IntegrationId"]: i for i in self._all(self.apigw.get_integrations, ApiId=self.api_id)
        }
        for route in self._all(self.apigw.get_routes, ApiId=self.api_id):
            key = route["RouteKey"]
            target = route.get("Target", "")
            if not target.startswith("integrations/"):
                raise DeployError(f"route {key!r} has no integration target ({target!r})")
            integration = integrations.get(target.removeprefix("integrations/"))
            if integration is None:
                raise DeployError(f"route {key!r} targets a missing integration {target!r}")
            function = self._integration_function(key, integration)
            self.authorization[key] = route.get("AuthorizationType", "NONE")
            self._check_invoke_permission(
                function, "apigateway.amazonaws.com", self._route_arn(key)
            )
            if key == "$default":
                self.default_target = function.name
                continue
            method, _, path = key.partition(" ")
            self.routes.append(Route(method, path, function.name))
        # Literal segments before parameters, as API Gateway prefers the most specific route.
        self.routes.sort(key=lambda r: (r.path.count("{"), -r.path.count("/"), r.path, r.method))

    @staticmethod
    def _all(call: Callable[..., Any], **kwargs: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            response = call(**kwargs, **({"NextToken": token} if token else {}))
            items += response.get("Items", [])
            token = response.get("NextToken")
            if not token:
                return items

    def _route_arn(self, route_key: str) -> str:
        base = f"arn:aws:execute-api:{self.region}:{self.account}:{self.api_id}/$default"
        if route_key == "$default":
            return f"{base}/$default"
        method, _, path = route_key.partition(" ")
        return f"{base}/{method}{path}"

    def _integration_function(self, key: str, integration: Mapping[str, Any]) -> DeployedFunction:
        if integration.get("IntegrationType") != "AWS_PROXY":
            raise DeployError(
                f"route {key!r}: integration type {integration.get('IntegrationType')}"
            )
        if integration.get("PayloadFormatVersion") != "2.0":
            raise DeployError(
                f"route {key!r}: payload format {integration.get('PayloadFormatVersion')}, but "
                "the handlers take version 2.0 events"
            )
        uri = integration.get("IntegrationUri", "")
        found = re.search(r"functions/(arn:[^/]+)/invocations", uri)
        return self.function(found.group(1) if found else uri)

    def function(self, name_or_arn: str) -> DeployedFunction:
        """The deployed function, its handler loaded from its package (once)."""
        name = name_or_arn.split(":function:")[-1].split(":")[0]
        if name in self.functions:
            return self.functions[name]
        config = self.awslambda.get_function_configuration(FunctionName=name)
        region = config["FunctionArn"].split(":")[3]
        code = self.packages.find(config["CodeSha256"], f"function {name}")
        roots: list[tuple[zipfile.ZipFile, str]] = [(code, "")]
        for layer in config.get("Layers", []):
            # arn:aws:lambda:<region>:<account>:layer:<name>:<version> (moto has no
            # GetLayerVersionByArn)
            layer_name, version = layer["Arn"].rsplit(":", 2)[-2:]
            content = self.awslambda.get_layer_version(
                LayerName=layer_name, VersionNumber=int(version)
            )["Content"]
            archive = self.packages.find(content["CodeSha256"], f"layer {layer['Arn']}")
            self._check_library(archive, layer["Arn"])
            roots.append((archive, "python/"))
        member, module_name, attribute = resolve_handler(config["Handler"], roots)
        function = DeployedFunction(
            name=name,
            arn=config["FunctionArn"],
            handler_name=config["Handler"],
            environment=dict(config.get("Environment", {}).get("Variables", {})),
            role_arn=config["Role"],
            region=region,
            timeout_s=float(config.get("Timeout", 3)),
            runtime=config.get("Runtime", ""),
            architectures=list(config.get("Architectures", [])),
            archive=next(a for a, p in roots if member.startswith(p) and member in a.namelist()),
            member=member,
            module_name=module_name,
            attribute=attribute,
        )
        function.load()
        function.invoke = self._invoker(function)
        self.functions[name] = function
        return function

    def _check_library(self, archive: zipfile.ZipFile, layer_arn: str) -> None:
        """The layer's objectlog must be this tree's wherever the handlers reach: their imports
        run this process's objectlog, so a stale layer would test other code than it ships."""
        from objectlog.tools.packaging import handler_library_files

        prefix = "python/objectlog/"
        names = set(archive.namelist())
        package_root = self.library.parent
        stale = []
        for path in sorted(handler_library_files(package_root.parent)):
            member = prefix + path.relative_to(self.library).as_posix()
            if member not in names or archive.read(member) != path.read_bytes():
                stale.append(path.relative_to(self.library).as_posix())
        if stale:
            raise DeployError(
                f"layer {layer_arn}: its objectlog differs from {self.library} in "
                f"{', '.join(stale[:5])}{' ...' if len(stale) > 5 else ''}: rebuild the package "
                "(make package) and apply again"
            )

    def _invoker(self, function: DeployedFunction) -> Callable[[dict[str, Any], Any], Any]:
        def invoke(event: dict[str, Any], context: Any) -> Any:
            with (
                lambda_environment(function.environment, function.region),
                self.recorder.recording(function.name),
            ):
                assert function.entry is not None
                return function.entry(event, context)

        return invoke

    def cold_start(self, name: str) -> None:
        """A new execution environment for the function: its handler is imported afresh, so
        nothing the old one cached (manifests, topics) is known."""
        self.functions[name].load()

    def close(self) -> None:
        for function in self.functions.values():
            function.close()

    def _check_invoke_permission(
        self, function: DeployedFunction, service: str, source_arn: str
    ) -> None:
        """The function's resource policy must let service invoke it from source_arn."""
        try:
            policy = json.loads(self.awslambda.get_policy(FunctionName=function.name)["Policy"])
        except self.awslambda.exceptions.ResourceNotFoundException:
            policy = {"Statement": []}
        if not invoke_allowed(policy, service, source_arn):
            raise DeployError(
                f"function {function.name}: its resource policy does not let {service} invoke "
                f"it from {source_arn} (a missing aws_lambda_permission?)"
            )

    # ---- using it ----------------------------------------------------------------------

    def gateway(self, *, require_auth: bool = True) -> DeployedGateway:
        targets = {name: f.invoke for name, f in self.functions.items()}
        timeout = max((f.timeout_s for f in self.functions.values()), default=30.0)
        return DeployedGateway(
            self.routes,
            targets,
            default_target=self.default_target,
            timeout_s=timeout,
            authorization=self.authorization,
            require_auth=require_auth,
        )

    def run_schedule(self, rule: str) -> list[Any]:
        """Invoke the targets of an EventBridge schedule rule as EventBridge would (a Scheduled
        Event, or the target's Input), checking each function lets the rule invoke it."""
        described = self.events.describe_rule(Name=rule)
        if not described.get("ScheduleExpression"):
            raise DeployError(f"rule {rule} has no schedule expression")
        if described.get("State") != "ENABLED":
            raise DeployError(f"rule {rule} is {described.get('State')}")
        targets = self.events.list_targets_by_rule(Rule=rule)["Targets"]
        if not targets:
            raise DeployError(f"rule {rule} has no targets")
        results = []
        for target in targets:
            function = self.function(target["Arn"])
            self._check_invoke_permission(function, "events.amazonaws.com", described["Arn"])
            event: Any = (
                json.loads(target["Input"])
                if target.get("Input")
                else {
                    "version": "0",
                    "id": str(uuid.uuid4()),
                    "detail-type": "Scheduled Event",
                    "source": "aws.events",
                    "account": self.account,
                    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "region": self.region,
                    "resources": [described["Arn"]],
                    "detail": {},
                }
            )
            context = LambdaContext(function_name=function.name, timeout_s=function.timeout_s)
            results.append(function.invoke(event, context))
        return results

    def check_policies(self) -> list[PolicyReport]:
        """Each invoked function's recorded calls against its role's policies."""
        reports = []
        for name, function in sorted(self.functions.items()):
            role = function.role_arn.rsplit("/", 1)[-1]
            statements = role_statements(self.iam, role)
            reports.append(check_policy(name, role, statements, self.recorder.calls.get(name, ())))
        return reports


# ---- command line ---------------------------------------------------------------------------


def _workspace(args: argparse.Namespace) -> Workspace:
    package_dir = Path(args.package_dir)
    variables = (
        local_variables(args.endpoint, args.name, package_dir)
        if args.endpoint
        else {
            "name": args.name,
            "package_dir": str(package_dir.resolve()),
        }
    )
    for assignment in args.var or []:
        key, _, value = assignment.partition("=")
        try:
            variables[key] = json.loads(value)
        except json.JSONDecodeError:
            variables[key] = value
    return Workspace(args.name, variables)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m objectlog.tools.deploy", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "command", choices=["apply", "destroy", "outputs", "serve", "validate", "routes"]
    )
    parser.add_argument(
        "--endpoint",
        default=os.environ.get("AWS_ENDPOINT_URL", "http://127.0.0.1:4566"),
        help="AWS endpoint (moto server, LocalStack); '' for AWS itself",
    )
    parser.add_argument("--name", default="objectlog-local", help="deployment name")
    parser.add_argument(
        "--package-dir", default=str(REPO_ROOT / "build" / "lambda"), help="from make package"
    )
    parser.add_argument("--var", action="append", help="extra Terraform variable, name=value")
    parser.add_argument("--port", type=int, default=8081, help="serve: the local port")
    parser.add_argument(
        "--require-auth",
        action="store_true",
        help="serve: answer 403/401 without a SigV4 / bearer Authorization header, as the "
        "deployed routes would (the Python client signs only non-loopback URLs)",
    )
    args = parser.parse_args(argv)
    if args.command == "routes":
        from objectlog.http.routes import ROUTES

        print(json.dumps({f"{m} {p}": f for m, p, f in ROUTES}, indent=2))
        return 0
    try:
        if args.command == "validate":
            with tempfile.TemporaryDirectory(prefix="objectlog-validate-") as state_dir:
                print(Workspace("validate", {}, state_dir=Path(state_dir)).validate().strip())
            return 0
        workspace = _workspace(args)
        if args.endpoint and args.command in ("apply", "destroy", "serve"):
            require_endpoint(args.endpoint)
        if args.command == "apply":
            outputs = workspace.apply()
            print(json.dumps(outputs, indent=2))
            print(
                f"applied in {workspace.timings['apply']:.1f} s (init "
                f"{workspace.timings['init']:.1f} s); state in {workspace.state_dir}",
                file=sys.stderr,
            )
        elif args.command == "destroy":
            workspace.destroy()
            print(f"destroyed in {workspace.timings.get('destroy', 0):.1f} s", file=sys.stderr)
        elif args.command == "outputs":
            print(json.dumps(workspace.outputs(), indent=2))
        else:
            return _serve(workspace, args)
    except DeployError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def _serve(workspace: Workspace, args: argparse.Namespace) -> int:
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")  # no EMF lines on stdout
    if args.endpoint:
        os.environ["AWS_ENDPOINT_URL"] = args.endpoint
        for key, value in LOCAL_CREDENTIALS.items():
            os.environ.setdefault(key, value)
    deployment = Deployment(
        workspace.outputs(), [Path(args.package_dir)], endpoint_url=args.endpoint or None
    )
    gateway = deployment.gateway(require_auth=args.require_auth)
    url = gateway.start(port=args.port)
    print(f"the deployed API {deployment.api_id} is served on {url} (Ctrl-C to stop)")
    print(f"  export OBJECTLOG_API_URL={url}", flush=True)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        stop.wait()
    finally:
        gateway.stop()
        deployment.close()
        print("AWS calls the handlers made, against their roles' policies:")
        for report in deployment.check_policies():
            print(report.describe(complete_run=False))
            if report.denied or report.wildcard_problems:
                print("  -> change the role policy: infra/terraform/modules/objectlog/iam.tf")
    return 0


if __name__ == "__main__":
    sys.exit(main())
