"""A deployed Lambda function loaded in this process: its package found by the hash Lambda
reports, its handler resolved as the Python runtime does and imported afresh (a cold start),
and run with the function's own environment."""

from __future__ import annotations

import base64
import hashlib
import os
import sys
import threading
import types
import uuid
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from objectlog.adapters import aws
from objectlog.config import Config
from objectlog.tools.deploy import DeployError
from objectlog.tools.deploy.recording import install_hook

APP_ENV_PREFIX = "OBJECTLOG_"
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
