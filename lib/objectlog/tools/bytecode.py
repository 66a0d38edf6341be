"""Bytecode for the Lambda layer: ``.pyc`` files compiled by the target runtime's Python.

Lambda mounts a layer read-only at /opt, so a layer without ``.pyc`` files has every module
compiled from source in every new execution environment, and the result thrown away: the
produce handler's import and init took 3.1 s without them and 1.0 s with them here
(bench.cold_start --no-pyc, and without). The layer therefore ships them, beside each source
as ``__pycache__/<module>.<cache tag>.pyc``, for the modules the handlers' init imports (all
of them would put the layer over Lambda's 250 MB: 265 MiB against 248.5 MiB):

- compiled by an interpreter of the layer's Python version (``python3.12`` for the python3.12
  runtime): a ``.pyc`` holds its version's magic number and bytecode, and any other version
  ignores it and compiles the source again. ``find_compiler`` looks for one and checks its
  cache tag; none found is an error, never a ``.pyc`` of another version;
- ``unchecked-hash`` (PEP 552): the header holds a hash of the source instead of its mtime,
  so building twice gives the same bytes, and the importer trusts it without reading the
  source (a layer never changes once published);
- each code object's file name is where Lambda mounts it (/opt/python/...), as tracebacks
  show it there, not the build's temporary directory.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

MOUNT = "/opt"  # where Lambda extracts a layer: its python/ is on sys.path
PYENV_ROOT = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
PYCACHE = "__pycache__"

# Run by the target interpreter: [[source, cfile, dfile], ...] on stdin, the sources that did
# not compile (a wheel's Python 2 example, a template) on stdout; those ship as source only.
COMPILE_SCRIPT = """
import json, py_compile, sys
failed = []
for source, cfile, dfile in json.load(sys.stdin):
    try:
        py_compile.compile(source, cfile=cfile, dfile=dfile, doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    except py_compile.PyCompileError:
        failed.append(source)
print(json.dumps(failed))
"""
VERSION_SCRIPT = "import sys; print(sys.implementation.cache_tag)"

# Run by this interpreter (whose distributions are the layer's, pinned): each handler imported
# and its ``prepare`` run (Lambda's init, and SnapStart's before-snapshot hook), Powertools'
# Tracer built as with tracing on (the module's default); the source files of every module then
# loaded, relative to their sys.path entry.
INIT_SCRIPT = """
import importlib.util, json, sys
for name, directory in sorted(json.loads(sys.argv[1]).items()):
    spec = importlib.util.spec_from_file_location("handler_" + name, directory + "/handler.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    prepare = getattr(module.handler, "prepare", None)
    if prepare is not None:
        prepare()
from aws_lambda_powertools import Tracer
Tracer(service="init", disabled=False)
files = set()
for name, module in list(sys.modules.items()):
    path = getattr(module, "__file__", None) or ""
    if path.endswith(".py"):
        leaf = "/__init__.py" if path.endswith("__init__.py") else ".py"
        files.add(name.replace(".", "/") + leaf)
print(json.dumps(sorted(files)))
"""
INIT_ENV = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "layer-init",
    "AWS_SECRET_ACCESS_KEY": "layer-init",
    "OBJECTLOG_BUCKET": "layer-init",
    "OBJECTLOG_TABLE": "layer-init",
    "POWERTOOLS_METRICS_DISABLED": "true",
    "PYTHONHASHSEED": "0",
}


class BytecodeError(RuntimeError):
    pass


@dataclass(frozen=True)
class Compiler:
    """An interpreter of the layer's Python version."""

    executable: str
    cache_tag: str  # cpython-312

    def pyc_name(self, arcname: str) -> str:
        """The archive name of a source's .pyc: pkg/mod.py -> pkg/__pycache__/mod.TAG.pyc."""
        source = PurePosixPath(arcname)
        return str(source.parent / PYCACHE / f"{source.stem}.{self.cache_tag}.pyc")


def cache_tag_of(python: str) -> str:
    """3.12 -> cpython-312."""
    return "cpython-" + python.replace(".", "")


def find_compiler(python: str, executable: str | None = None) -> Compiler:
    """An interpreter for Python ``python`` (3.12): ``executable`` if given, else this one if
    it is that version, else ``python3.12`` on PATH, else pyenv's. BytecodeError if none is
    (or ``executable`` is another version)."""
    wanted = cache_tag_of(python)
    if executable is not None:
        candidates = [executable]
    else:
        candidates = [sys.executable]
        on_path = shutil.which(f"python{python}")
        if on_path:
            candidates.append(on_path)
        pattern = str(PYENV_ROOT / "versions" / f"{python}.*" / "bin" / f"python{python}")
        candidates += sorted(glob.glob(pattern), reverse=True)
    seen = []
    for candidate in candidates:
        tag = _cache_tag(candidate)
        seen.append(f"{candidate} ({tag or 'did not run'})")
        if tag == wanted:
            return Compiler(candidate, tag)
    raise BytecodeError(
        f"no Python {python} interpreter to compile the layer's .pyc files with (tried "
        f"{', '.join(seen)}): install python{python}, name one with --pyc-python, or build "
        "with --no-pyc (every module then compiles from source at each cold start)"
    )


def _cache_tag(executable: str) -> str | None:
    try:
        done = subprocess.run(
            [executable, "-I", "-c", VERSION_SCRIPT],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    except OSError:
        return None
    tag = done.stdout.strip()
    return tag if done.returncode == 0 and re.fullmatch(r"cpython-\d+", tag) else None


def init_modules(handler_dirs: Mapping[str, Path]) -> set[str]:
    """The source files (relative to their sys.path entry: ``botocore/client.py``) of every
    module the handlers' init imports, run here in a fresh process with no AWS endpoint (init
    sends no request)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "OBJECTLOG_"))}
    env = {k: v for k, v in env.items() if not k.startswith(("AWS_", "POWERTOOLS_"))}
    env.update(INIT_ENV)
    dirs = {name: str(path) for name, path in handler_dirs.items()}
    done = subprocess.run(
        [sys.executable, "-c", INIT_SCRIPT, json.dumps(dirs)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )
    if done.returncode != 0:
        raise BytecodeError(f"the handlers' init failed:\n{done.stderr[-3000:]}")
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def compile_entries(
    compiler: Compiler,
    entries: Sequence[tuple[str, Path]],
    out: Path,
    modules: Collection[str] | None = None,
    prefix: str = "",
) -> list[tuple[str, Path]]:
    """(archive name, .pyc file) for each .py entry (archive name, source) that compiles,
    written below out; each code object names its source as MOUNT/<archive name>. modules:
    only the entries whose archive name is prefix + one of these (None: every one)."""
    wanted = None if modules is None else {prefix + name for name in modules}
    jobs: list[list[str]] = []
    names: dict[str, str] = {}
    for arcname, source in entries:
        if not arcname.endswith(".py") or (wanted is not None and arcname not in wanted):
            continue
        pyc = compiler.pyc_name(arcname)
        cfile = out / pyc
        jobs.append([str(source), str(cfile), f"{MOUNT}/{arcname}"])
        names[str(source)] = pyc
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONHASHSEED"] = "0"  # sets and frozensets of constants marshal in one order
    done = subprocess.run(
        [compiler.executable, "-I", "-c", COMPILE_SCRIPT],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise BytecodeError(f"{compiler.executable} failed compiling:\n{done.stderr[-3000:]}")
    failed = set(json.loads(done.stdout.strip().splitlines()[-1]))
    return sorted(
        (names[source], out / names[source]) for source, _, _ in jobs if source not in failed
    )
