"""Build the Lambda artifacts: one layer (objectlog and its dependencies) and one small zip per
function, reproducibly.

    python -m objectlog.tools.packaging          # build/lambda: wheels for linux arm64, py3.12
    python -m objectlog.tools.packaging --light  # build/lambda-light: no dependencies (tests)
    python -m objectlog.tools.packaging --no-pyc # without the .pyc files (see below)

Run from an objectlog checkout (or pass ``--project DIR``). The layer is built from what the
handlers import: ``layer.zip`` holds ``python/objectlog/`` with only the modules of
``lib/objectlog`` in the import closure of ``functions/*/handler.py`` (so no ``objectlog.tools``
module, no ``objectlog.spark``), and the distributions that closure imports, as declared in
``pyproject.toml`` (its dependencies and the ``lambda`` extra), installed with their own
dependencies from manylinux wheels for the target platform (``pip download --platform``), never
from this machine's own build. Versions are pinned to the ones installed in the running
environment (the versions the test suite ran with), so a rebuild picks the same wheels.
``<function>.zip`` holds ``functions/<function>/`` at its root, so every handler is
``handler.handler``.

The layer (not a light one) ships the ``.pyc`` of every module the handlers' init imports
(their import and SnapStart ``prepare``, run here first), compiled by an interpreter of the
target Python version with hash-based, unchecked invalidation (objectlog.tools.bytecode):
Lambda mounts layers read-only, so without them every cold start compiles those modules again.
No interpreter of that version here is an error (``--pyc-python`` names one; ``--no-pyc``
builds without).

The zips are reproducible: entries sorted, timestamps fixed (1980-01-01), permissions 0644
(0755 where the file is executable), no ``__pycache__`` but the layer's own ``.pyc`` files, no
console scripts (their shebang names this machine's interpreter). Building twice gives
byte-identical zips.

Lambda allows 250 MB unzipped for a function and its layers together; the build fails if the
layer and the largest function exceed it (for arm64, what is deployed), and prints every size.
"""

from __future__ import annotations

import argparse
import base64
import fnmatch
import hashlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from objectlog.tools.bytecode import (
    BytecodeError,
    Compiler,
    compile_entries,
    find_compiler,
    init_modules,
)
from objectlog.tools.imports import Closure, import_closure
from objectlog.tools.project import Project, ProjectNotFound, find_project

LAMBDA_UNZIPPED_LIMIT = 250 * 2**20  # a function and all its layers, unzipped (262,144,000 B)
LAMBDA_DIRECT_UPLOAD_LIMIT = 50 * 1024 * 1024  # larger zips must go through S3
FIXED_DATE = (1980, 1, 1, 0, 0, 0)
DEFAULT_PYTHON = "3.12"
# Lambda's python3.12 runtime is Amazon Linux 2023 (glibc 2.34): manylinux2014 and
# manylinux_2_28 wheels both run there (pyarrow publishes only the latter for arm64 now).
# x86_64 exists for the smoke test, which runs the layer on this machine.
PLATFORMS = {
    "arm64": ("manylinux2014_aarch64", "manylinux_2_28_aarch64"),
    "x86_64": ("manylinux2014_x86_64", "manylinux_2_28_x86_64"),
}
DEFAULT_ARCH = DEPLOYED_ARCH = "arm64"
LAYER = "layer"
# Not needed at run time; left out of the layer to save space (measured in docs/deploy.md).
PRUNED_DIRS = {"__pycache__", "tests", "test"}
PRUNED_PATHS = ("pyarrow/include/", "pyarrow/src/", "numpy/_core/include/", "numpy/f2py/")
PRUNED_SUFFIXES = (".pyc", ".pyx", ".pxd", ".pxi", ".h", ".hpp", ".cc", ".c")
# pyarrow's Arrow Flight RPC (30 MB): objectlog never imports pyarrow.flight. (pyarrow's S3
# filesystem stays: the compact function writes the topics' Iceberg table metadata through
# pyiceberg's PyArrowFileIO.) tests/e2e/test_terraform.py runs the handlers from an x86_64
# layer pruned the same way, tables included, so a needed file pruned here fails a test.
PRUNED_GLOBS = (
    "pyarrow/libarrow_flight.so*",
    "pyarrow/libarrow_python_flight.so*",
    "pyarrow/_flight.cpython-*.so",
    # a wheel holds each library three times (no links in zips); the loader wants the soname
    "pyarrow/libarrow_python*.so",
    "pyarrow/libarrow_python*.so.*.*.*",
    # zstandard's CFFI backend (11 MiB), loaded only when PYTHON_ZSTANDARD_IMPORT_POLICY asks
    # for it; its C extension (the default) stays
    "zstandard/_cffi.cpython-*.so",
    "zstandard/backend_cffi.py",
)
# botocore's models of the services the handlers call (the X-Ray SDK's and the credential
# chain's too); the other 400 or so (24 MiB) never load. The packaged smoke test runs every
# handler from the layer, so a model left out that a handler needs fails it.
BOTOCORE_DATA = "botocore/data/"
BOTOCORE_SERVICES = frozenset({"s3", "dynamodb", "glue", "sts", "sso", "sso-oidc", "xray"})
# Installed as dependencies of pyiceberg (its command line) and rich (syntax highlighting,
# Markdown) that nothing the handlers run imports: taken out of the layer again. rich itself
# stays: pyiceberg's schema check renders its mismatch table with rich.console and rich.table.
# grpcio (the gRPC runtime, 16.5 MiB) and setuptools (2.8 MiB) come with grpcio-tools, whose
# protoc the registry compiles Protobuf schemas with: protoc imports neither (its compiler is
# one extension module), and the packaged smoke test compiles a schema from the layer.
LEFT_OUT_DISTRIBUTIONS = ("click", "pygments", "markdown-it-py", "mdurl", "grpcio", "setuptools")
CONSOLE_SCRIPT_DIR = "bin/"


class PackagingError(RuntimeError):
    pass


@dataclass
class Artifact:
    name: str
    path: Path
    files: int
    unzipped_bytes: int
    zipped_bytes: int
    sha256: str  # base64, as Lambda's CodeSha256 and Terraform's filebase64sha256

    def to_dict(self) -> dict[str, object]:
        return {
            "file": self.path.name,
            "files": self.files,
            "unzipped_bytes": self.unzipped_bytes,
            "zipped_bytes": self.zipped_bytes,
            "sha256_base64": self.sha256,
        }


@dataclass
class BuildResult:
    out_dir: Path
    light: bool
    python: str
    arch: str
    layer: Artifact = field(init=False)
    functions: dict[str, Artifact] = field(default_factory=dict)
    distributions: dict[str, str] = field(default_factory=dict)
    # imported by the handlers, not declared in pyproject.toml (added to the layer anyway)
    undeclared: list[str] = field(default_factory=list)
    library_files: int = 0  # objectlog's modules in the layer (the handlers' import closure)
    pyc_tag: str | None = None  # the .pyc files' cache tag (cpython-312); None: none shipped
    pyc_files: int = 0
    seconds: float = 0.0

    @property
    def largest_total_unzipped(self) -> int:
        """The layer and the largest function together: what Lambda's 250 MB limit applies to."""
        return self.layer.unzipped_bytes + max(a.unzipped_bytes for a in self.functions.values())

    def manifest(self) -> dict[str, object]:
        return {
            "light": self.light,
            "python": self.python,
            "arch": self.arch,
            "platforms": [] if self.light else list(PLATFORMS[self.arch]),
            "layer": self.layer.to_dict(),
            "pyc": {"cache_tag": self.pyc_tag, "files": self.pyc_files},
            "functions": {name: a.to_dict() for name, a in sorted(self.functions.items())},
            "distributions": dict(sorted(self.distributions.items())),
            "largest_total_unzipped_bytes": self.largest_total_unzipped,
            "lambda_unzipped_limit_bytes": LAMBDA_UNZIPPED_LIMIT,
        }

    def report(self) -> str:
        rows = [("artifact", "files", "unzipped", "zipped")]
        for artifact in [self.layer, *(self.functions[n] for n in sorted(self.functions))]:
            rows.append(
                (
                    artifact.path.name,
                    str(artifact.files),
                    _mb(artifact.unzipped_bytes),
                    _mb(artifact.zipped_bytes),
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        lines = [
            "  ".join(
                cell.rjust(w) if i else cell.ljust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
            for row in rows
        ]
        kind = "light: no dependencies" if self.light else f"python{self.python} linux {self.arch}"
        lines.append(
            f"python/objectlog: {self.library_files} files, the handlers' import closure "
            "(no objectlog.tools module)"
        )
        lines.append(
            f"bytecode: {self.pyc_files} .pyc files ({self.pyc_tag}, unchecked-hash)"
            if self.pyc_tag
            else "bytecode: none (every module compiles from source at each cold start)"
        )
        lines.append(
            f"layer + largest function: {_mb(self.largest_total_unzipped)} unzipped of Lambda's "
            f"{_mb(LAMBDA_UNZIPPED_LIMIT)} limit ({kind}; built in {self.seconds:.1f} s)"
        )
        if self.layer.zipped_bytes > LAMBDA_DIRECT_UPLOAD_LIMIT:
            lines.append(
                f"layer.zip is over Lambda's {_mb(LAMBDA_DIRECT_UPLOAD_LIMIT)} direct-upload "
                "limit: Terraform uploads it to the artifact bucket (S3) first"
            )
        if self.undeclared:
            lines.append(
                "note: the handlers import these distributions, which pyproject.toml's "
                "dependencies and lambda extra do not declare directly (added to the layer): "
                + ", ".join(self.undeclared)
            )
        lines.append(f"-> {self.out_dir}")
        return "\n".join(lines)


def _mb(size: int) -> str:
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size / 2**10:.1f} KiB"


# ---- dependencies ---------------------------------------------------------------------------


def runtime_requirements(project: Project) -> list[str]:
    """pyproject.toml's dependencies plus the ``lambda`` extra, with the project's own extras it
    names (``objectlog[schemas]``) spelled out: what the functions may import."""
    metadata = tomllib.loads(project.pyproject.read_text())["project"]
    extras = metadata["optional-dependencies"]
    return [*metadata["dependencies"], *_spelled_out(extras["lambda"], extras, metadata["name"])]


def _spelled_out(requirements: list[str], extras: dict[str, list[str]], project: str) -> list[str]:
    spelled: list[str] = []
    for requirement in requirements:
        own = re.fullmatch(rf"\s*{re.escape(project)}\[([^\]]+)\]\s*", requirement)
        if own is None:
            spelled.append(requirement)
            continue
        for extra in own.group(1).split(","):
            spelled += _spelled_out(extras[extra.strip()], extras, project)
    return spelled


def layer_requirements(project: Project) -> tuple[list[str], list[str]]:
    """(requirements, undeclared): the declared requirement of every distribution the handlers'
    import closure imports (with its version range and extras, e.g. Powertools' tracer), plus
    the distributions it imports that pyproject.toml does not declare. Nothing else: a
    dependency only the tooling or Spark imports stays out of the layer."""
    declared = runtime_requirements(project)
    preferred = {requirement_name(r) for r in declared}
    imported = set(distributions_of(handler_imports(project), preferred).values())
    chosen = [r for r in declared if requirement_name(r) in imported]
    undeclared = sorted(imported - {requirement_name(r) for r in declared})
    return [*chosen, *undeclared], undeclared


def installed_pins(exclude: Iterable[str] = ("objectlog",)) -> dict[str, str]:
    """name -> version of every distribution installed here (the versions tests ran with)."""
    skip = {_canonical(name) for name in exclude}
    pins: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name and _canonical(name) not in skip:
            pins[_canonical(name)] = dist.version
    return dict(sorted(pins.items()))


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pip(args: Sequence[str], *, isolated: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pip", *(["--isolated"] if isolated else []), *args]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise PackagingError(
            f"pip failed ({result.returncode}): {' '.join(command)}\n{result.stdout[-3000:]}"
            f"\n{result.stderr[-3000:]}"
        )
    return result


def _target_args(python: str, arch: str) -> list[str]:
    abi = "cp" + python.replace(".", "")
    args = ["--only-binary=:all:", "--python-version", python, "--implementation", "cp"]
    args += ["--abi", abi]
    for platform in PLATFORMS[arch]:
        args += ["--platform", platform]
    return args


def fetch_wheels(
    python: str, arch: str, cache: Path, requirements: Path, constraints: Path
) -> None:
    """Wheels for the target platform into cache: offline from the cache when it already holds
    them all, else from the package index."""
    cache.mkdir(parents=True, exist_ok=True)
    common = ["download", "--quiet", "--dest", str(cache), *_target_args(python, arch)]
    common += ["-r", str(requirements), "-c", str(constraints)]
    try:
        _pip([*common, "--no-index", "--find-links", str(cache)], isolated=True)
    except PackagingError:
        _pip(common)


def install_wheels(
    python: str, arch: str, cache: Path, requirements: Path, constraints: Path, target: Path
) -> None:
    _pip(
        [
            "install",
            "--quiet",
            "--no-index",
            "--find-links",
            str(cache),
            "--target",
            str(target),
            "--no-compile",
            *_target_args(python, arch),
            "-r",
            str(requirements),
            "-c",
            str(constraints),
        ],
        isolated=True,
    )


def remove_distributions(site: Path, names: Iterable[str]) -> None:
    """Delete what these distributions installed into site (the files their RECORD lists)."""
    wanted = {_canonical(name) for name in names}
    for info in site.glob("*.dist-info"):
        name = re.search(r"^Name: (.+)$", (info / "METADATA").read_text(errors="replace"), re.M)
        if name is None or _canonical(name.group(1).strip()) not in wanted:
            continue
        for line in (info / "RECORD").read_text().splitlines():
            path = site / line.split(",", 1)[0]
            if path.is_file() and path.resolve().is_relative_to(site.resolve()):
                path.unlink()
        for directory in sorted(site.rglob("*"), reverse=True):  # now-empty package folders
            if directory.is_dir() and not any(directory.iterdir()):
                directory.rmdir()


def installed_distributions(site: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for info in site.glob("*.dist-info"):
        metadata = (info / "METADATA").read_text(errors="replace")
        name = re.search(r"^Name: (.+)$", metadata, re.M)
        version = re.search(r"^Version: (.+)$", metadata, re.M)
        if name and version:
            found[_canonical(name.group(1).strip())] = version.group(1).strip()
    return dict(sorted(found.items()))


# ---- what the handlers import -----------------------------------------------------------


def handler_closure(project: Project | None = None) -> Closure:
    """What functions/*/handler.py can import, following objectlog's own modules."""
    project = project or find_project()
    return import_closure(project.handlers(), project.lib)


def handler_imports(project: Project | None = None) -> set[str]:
    """Top-level names of the third-party modules the functions' handlers can import, following
    objectlog's own modules from functions/*/handler.py (stdlib left out)."""
    return set(handler_closure(project).third_party)


def handler_library_files(project: Project | None = None) -> set[Path]:
    """The files of lib/objectlog the functions' handlers can import, with the static files of
    those packages (the web console's, objectlog/console/static): the layer's objectlog."""
    modules = set(handler_closure(project).files)
    return modules | static_files(modules)


def static_files(modules: Iterable[Path]) -> set[Path]:
    """The files under the static/ folder of each package among modules (by its __init__.py)."""
    folders = {m.parent / "static" for m in modules if m.name == "__init__.py"}
    return {
        path
        for folder in folders
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def distributions_of(modules: Iterable[str], preferred: Iterable[str] = ()) -> dict[str, str]:
    """module -> the distribution installed here that provides it: among several (a namespace
    package such as google), a preferred one (a declared requirement) if one is."""
    chosen = set(preferred)
    provided = importlib.metadata.packages_distributions()
    found: dict[str, str] = {}
    for module in sorted(modules):
        names = provided.get(module)
        if not names:
            raise PackagingError(
                f"the handlers import {module!r}, which no installed distribution provides"
            )
        canonical = [_canonical(name) for name in names]
        found[module] = next((name for name in canonical if name in chosen), canonical[0])
    return found


def requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if not match:
        raise PackagingError(f"cannot read the requirement {requirement!r}")
    return _canonical(match.group(1))


def layer_has_module(site: Path, module: str) -> bool:
    return (
        (site / module).is_dir()
        or any(site.glob(f"{module}.py"))
        or any(site.glob(f"{module}.*.so"))
    )


# ---- zips -----------------------------------------------------------------------------------


def _pruned(relative: str) -> bool:
    parts = relative.split("/")
    if any(part in PRUNED_DIRS for part in parts[:-1]):
        return True
    if relative.startswith(BOTOCORE_DATA) and len(parts) > 3:  # botocore/data/<service>/...
        return parts[2] not in BOTOCORE_SERVICES
    if relative.endswith(PRUNED_SUFFIXES) or relative.startswith(PRUNED_PATHS):
        return True
    return any(fnmatch.fnmatchcase(relative, pattern) for pattern in PRUNED_GLOBS)


def collect(source: Path, prefix: str = "", *, prune: bool = False) -> list[tuple[str, Path]]:
    """(archive name, file) for every file below source, sorted by archive name."""
    entries: list[tuple[str, Path]] = []
    for path in source.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        relative = path.relative_to(source).as_posix()
        if "__pycache__" in relative.split("/") or relative.endswith(".pyc"):
            continue
        if prune and (_pruned(relative) or relative.startswith(CONSOLE_SCRIPT_DIR)):
            continue
        entries.append((prefix + relative, path))
    return sorted(entries)


def write_zip(name: str, entries: list[tuple[str, Path]], path: Path) -> Artifact:
    """A reproducible zip: sorted entries, fixed timestamps and permissions, fixed compression."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".zip.tmp")
    unzipped = 0
    with zipfile.ZipFile(temporary, "w") as archive:
        for arcname, source in sorted(entries):
            info = zipfile.ZipInfo(arcname, date_time=FIXED_DATE)
            mode = 0o755 if source.stat().st_mode & 0o111 else 0o644
            info.external_attr = (0o100000 | mode) << 16
            info.create_system = 3  # Unix, so the permissions above are honoured
            info.compress_type = zipfile.ZIP_DEFLATED
            data = source.read_bytes()
            unzipped += len(data)
            archive.writestr(info, data, compresslevel=6)
    temporary.replace(path)
    digest = hashlib.sha256(path.read_bytes()).digest()
    return Artifact(
        name=name,
        path=path,
        files=len(entries),
        unzipped_bytes=unzipped,
        zipped_bytes=path.stat().st_size,
        sha256=base64.b64encode(digest).decode(),
    )


# ---- the build ------------------------------------------------------------------------------


def function_names(project: Project | None = None) -> list[str]:
    return sorted(p.parent.name for p in (project or find_project()).handlers())


def build(
    out_dir: Path | None = None,
    *,
    light: bool = False,
    python: str = DEFAULT_PYTHON,
    arch: str = DEFAULT_ARCH,
    project: Project | None = None,
    wheel_cache: Path | None = None,
    pin: bool = True,
    pyc: bool = True,
    pyc_python: str | None = None,
) -> BuildResult:
    """Build layer.zip and <function>.zip into out_dir and write manifest.json beside them.
    A layer with dependencies ships .pyc files compiled by pyc_python (found by
    tools.bytecode.find_compiler when None) unless pyc is False; a light one never does."""
    started = time.monotonic()
    if not re.fullmatch(r"3\.1[1-9]", python):
        raise PackagingError(f"python must be 3.11 or newer, like 3.12; got {python!r}")
    if arch not in PLATFORMS:
        raise PackagingError(f"arch must be one of {', '.join(PLATFORMS)}; got {arch!r}")
    project = project or find_project()
    out_dir = out_dir or project.build / ("lambda-light" if light else "lambda")
    functions = function_names(project)
    if not functions:
        raise PackagingError(f"no functions/*/handler.py under {project.root}")
    result = BuildResult(out_dir=out_dir, light=light, python=python, arch=arch)
    compiler: Compiler | None = None
    if pyc and not light:  # before the downloads: a missing interpreter fails at once
        try:
            compiler = find_compiler(python, pyc_python)
        except BytecodeError as e:
            raise PackagingError(str(e)) from None
    with tempfile.TemporaryDirectory(prefix="objectlog-layer-") as staging_name:
        site = Path(staging_name) / "python"
        site.mkdir()
        if not light:
            result.distributions, result.undeclared = _install_dependencies(
                site, Path(staging_name), python, arch, project, wheel_cache, pin
            )
        if (site / "objectlog").exists():
            raise PackagingError("a dependency installed a package named objectlog")
        library = [
            ("python/" + path.relative_to(project.lib).as_posix(), path)
            for path in handler_library_files(project)
        ]
        result.library_files = len(library)
        entries = collect(site, "python/", prune=True) + sorted(library)
        if compiler is not None:
            try:
                modules = init_modules({n: project.functions / n for n in functions})
                compiled = compile_entries(
                    compiler, entries, Path(staging_name) / "pyc", modules, prefix="python/"
                )
            except BytecodeError as e:
                raise PackagingError(str(e)) from None
            entries += compiled
            result.pyc_tag, result.pyc_files = compiler.cache_tag, len(compiled)
        result.layer = write_zip(LAYER, entries, out_dir / f"{LAYER}.zip")
    result.functions = {
        name: write_zip(name, collect(project.functions / name), out_dir / f"{name}.zip")
        for name in functions
    }
    # Lambda's limit binds what infra/terraform deploys (arm64); an x86_64 build is the smoke
    # test's, run on this machine, whose wheels are larger (pyarrow alone by 12 MiB)
    if arch == DEPLOYED_ARCH and result.largest_total_unzipped > LAMBDA_UNZIPPED_LIMIT:
        raise PackagingError(
            f"the layer and the largest function are {_mb(result.largest_total_unzipped)} "
            f"unzipped, over Lambda's {_mb(LAMBDA_UNZIPPED_LIMIT)} limit"
        )
    (out_dir / "manifest.json").write_text(json.dumps(result.manifest(), indent=2) + "\n")
    result.seconds = time.monotonic() - started
    return result


def _install_dependencies(
    site: Path,
    staging: Path,
    python: str,
    arch: str,
    project: Project,
    wheel_cache: Path | None,
    pin: bool,
) -> tuple[dict[str, str], list[str]]:
    """Install the dependencies into site; (distribution -> version installed, distributions
    the handlers import that pyproject.toml does not declare directly)."""
    wanted, undeclared = layer_requirements(project)
    imported = handler_imports(project)
    requirements = staging / "requirements.txt"
    requirements.write_text("\n".join(wanted) + "\n")
    constraints = staging / "constraints.txt"
    pins = installed_pins() if pin else {}
    constraints.write_text("".join(f"{n}=={v}\n" for n, v in pins.items()))
    tag = f"cp{python.replace('.', '')}-{arch}"
    cache = wheel_cache or project.build / "wheels" / tag
    fetch_wheels(python, arch, cache, requirements, constraints)
    install_wheels(python, arch, cache, requirements, constraints, site)
    remove_distributions(site, LEFT_OUT_DISTRIBUTIONS)
    missing = sorted(m for m in imported if not layer_has_module(site, m))
    if missing:
        raise PackagingError(f"the layer lacks modules the handlers import: {', '.join(missing)}")
    return installed_distributions(site), undeclared


# ---- smoke test: run the handlers from a built layer, on this machine ----------------------

SMOKE_SCRIPT = r"""
import base64, json, os, sys, time, uuid, importlib.util

function_dirs, out = json.loads(sys.argv[1]), sys.argv[2]


class Context:
    def __init__(self, name):
        self.function_name = name
        self.function_version = "$LATEST"
        self.aws_request_id = str(uuid.uuid4())
        self.memory_limit_in_mb = 1024
        self.invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:" + name
        self.log_group_name = "/aws/lambda/" + name
        self.log_stream_name = "smoke"
        self._deadline = time.monotonic() + 300

    def get_remaining_time_in_millis(self):
        return int((self._deadline - time.monotonic()) * 1000)


def load(name):
    spec = importlib.util.spec_from_file_location(
        "smoke_" + name, os.path.join(function_dirs[name], "handler.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.handler


def http(method, path, route, body=None, params=None, query=None):
    event = {
        "version": "2.0", "routeKey": route, "rawPath": path,
        "rawQueryString": "&".join(f"{k}={v}" for k, v in (query or {}).items()),
        "headers": {"content-type": "application/json"},
        "requestContext": {
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": "smoke"},
            "requestId": uuid.uuid4().hex, "routeKey": route, "stage": "$default",
            "accountId": "000000000000", "apiId": "smoke", "domainName": "smoke",
            "domainPrefix": "smoke", "time": "01/Jan/2026:00:00:00 +0000", "timeEpoch": 0,
        },
        "isBase64Encoded": False,
    }
    if body is not None:
        event["body"] = json.dumps(body)
    if params:
        event["pathParameters"] = params
    if query:
        event["queryStringParameters"] = query
    return event


from objectlog import ObjectLog

ObjectLog.connect().ensure_resources()
produce, fetch, compact = load("produce"), load("fetch"), load("compact")
topic = "smoke-" + uuid.uuid4().hex[:8]
results = {}
# every flush old enough for the table at once: the compact function registers all three
new_topic = {"name": topic, "partitions": 1, "config": {"objectlog.table.lag.ms": "0"}}
r = produce(http("POST", "/topics", "POST /topics", new_topic), Context("produce"))
results["create"] = r["statusCode"]
value = base64.b64encode(b"hello").decode()
for _ in range(3):
    r = produce(http("POST", f"/topics/{topic}/records", "POST /topics/{topic}/records",
                     {"records": [{"value": value, "partition": 0}]}, {"topic": topic}),
                Context("produce"))
    results.setdefault("produce", []).append(r["statusCode"])
r = fetch(http("GET", f"/topics/{topic}/partitions/0/records",
               "GET /topics/{topic}/partitions/{partition}/records", None,
               {"topic": topic, "partition": "0"}, {"offset": "0"}), Context("fetch"))
results["fetch"] = r["statusCode"]
results["fetched"] = len(json.loads(r["body"])["records"])
summary = compact({"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}},
                  Context("compact"))
results["compact_finished"] = summary["finished"]
# the authorizer: basic auth against a user (scramp's SASLprep), PyJWT with cryptography's keys
from objectlog.kafka.users import Users
Users(ObjectLog.connect().items.documents).add("smoke", "smoke-password")
basic = "Basic " + base64.b64encode(b"smoke:smoke-password").decode()
answer = load("authorize")({"headers": {"authorization": basic}}, Context("authorize"))
results["authorized"] = answer["isAuthorized"]
from jwt.algorithms import has_crypto
results["jwt_crypto"] = has_crypto
# the registry's Protobuf compiler (grpcio-tools' protoc) from the layer
from objectlog.schemas.protobuf_schemas import parse
results["protobuf"] = type(parse('syntax = "proto3"; message M { int32 a = 1; }', {})).__name__
if os.environ.get("OBJECTLOG_CATALOG"):  # the table, read back through pyiceberg's S3 FileIO
    results["table_rows"] = ObjectLog.connect().table(topic).scan().to_arrow().num_rows
import pyarrow, pydantic
results["modules"] = {m.__name__: m.__file__ for m in (pyarrow, pydantic, sys.modules["objectlog"])}
with open(out, "w") as f:
    json.dump(results, f)
"""


def smoke(build_dir: Path, env: dict[str, str]) -> dict[str, object]:
    """Run the handlers of a build on this machine, importing only from its zips (python -S:
    no site-packages), against the AWS endpoint in env; the handlers' answers. The build must
    be for this machine's platform and Python (``--arch x86_64 --python 3.11`` here)."""
    import zipfile as _zipfile

    with tempfile.TemporaryDirectory(prefix="objectlog-smoke-") as work_name:
        work = Path(work_name)
        with _zipfile.ZipFile(build_dir / f"{LAYER}.zip") as archive:
            archive.extractall(work / "opt")
        function_dirs = {}
        manifest = json.loads((build_dir / "manifest.json").read_text())
        for name in sorted(manifest["functions"]):
            target = work / "task" / name
            with _zipfile.ZipFile(build_dir / f"{name}.zip") as archive:
                archive.extractall(target)
            function_dirs[name] = str(target)
        out = work / "results.json"
        child_env = {k: v for k, v in env.items() if not k.startswith("PYTHON")}
        child_env["PYTHONPATH"] = str(work / "opt" / "python")  # Lambda's /opt/python
        child_env["PYTHONNOUSERSITE"] = "1"
        result = subprocess.run(
            [sys.executable, "-S", "-c", SMOKE_SCRIPT, json.dumps(function_dirs), str(out)],
            env=child_env,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        if result.returncode != 0 or not out.exists():
            raise PackagingError(
                f"the handlers failed when run from {build_dir}:\n{result.stderr[-4000:]}"
            )
        answers: dict[str, object] = json.loads(out.read_text())
        return answers


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m objectlog.tools.packaging", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--light",
        action="store_true",
        help="no dependencies: the library and handlers only (for moto, which never runs them)",
    )
    parser.add_argument("--out", type=Path, help="output directory (build/lambda[-light])")
    parser.add_argument("--python", default=DEFAULT_PYTHON, help="target Python (3.12)")
    parser.add_argument(
        "--arch",
        default=DEFAULT_ARCH,
        choices=sorted(PLATFORMS),
        help="target architecture (arm64; x86_64 only for the local smoke test)",
    )
    parser.add_argument(
        "--project",
        type=Path,
        help="the objectlog checkout to package (default: the one holding the current directory)",
    )
    parser.add_argument(
        "--no-pyc",
        action="store_true",
        help="ship no .pyc files in the layer (every cold start then compiles every module)",
    )
    parser.add_argument(
        "--pyc-python",
        metavar="PATH",
        help="the interpreter of the target version to compile the .pyc files with "
        "(default: python3.12 on PATH, or pyenv's)",
    )
    parser.add_argument(
        "--no-pin",
        action="store_true",
        help="resolve the newest versions instead of pinning to this environment's",
    )
    args = parser.parse_args(argv)
    try:
        result = build(
            args.out,
            light=args.light,
            python=args.python,
            arch=args.arch,
            project=find_project(args.project),
            pin=not args.no_pin,
            pyc=not args.no_pyc,
            pyc_python=args.pyc_python,
        )
    except (PackagingError, ProjectNotFound) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(result.report())
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
