"""Every third-party import is declared in pyproject.toml, where the code that imports it may
rely on it: the runtime on the base dependencies plus the extra owning its subpackage, the
tooling on the base dependencies plus the tooling extras; click and rich never in the runtime.
Read from the source (every import, lazy ones included, ``if TYPE_CHECKING:`` left out); each
import is mapped to the distribution installed here that provides it."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from objectlog.tools.extras import EXTRAS
from objectlog.tools.imports import file_imports, library_modules, third_party_top

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "lib"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

# Which extras, beyond the base dependencies, each part of the code may import from (the longest
# matching prefix decides; "functions" is functions/*/handler.py, the Lambda entry points).
ALLOWED_EXTRAS: dict[str, tuple[str, ...]] = {
    "objectlog": (),
    "objectlog.http": ("lambda",),
    "objectlog.functions": ("lambda",),
    "objectlog.telemetry": ("lambda",),
    "functions": ("lambda",),
    "objectlog.spark": ("spark",),
    "objectlog.aio": ("aio",),
    "objectlog.adapters.aio_clients": ("aio",),
    "objectlog.kafka": ("agent",),
    "objectlog.schemas": ("schemas",),
    "objectlog.tools": ("cli", "server", "agent", "kafka-clients", "aio"),
}
TOOLING_ONLY = {"click", "rich"}  # distributions no runtime module may import


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, requirement
    return canonical(match.group(1))


def declared(extras: tuple[str, ...]) -> set[str]:
    """The distributions the base dependencies and these extras name."""
    groups = [PROJECT["dependencies"], *(PROJECT["optional-dependencies"][e] for e in extras)]
    return {requirement_name(r) for group in groups for r in group}


def owner(module: str) -> str:
    return max(
        (
            prefix
            for prefix in ALLOWED_EXTRAS
            if module == prefix or module.startswith(prefix + ".")
        ),
        key=len,
    )


def sources() -> Iterator[tuple[str, Path, bool]]:
    """(module name, file, is a package) of every module under lib/objectlog and every
    handler (named functions.<name>.handler)."""
    yield from library_modules(LIB)
    for handler in sorted((ROOT / "functions").glob("*/handler.py")):
        yield f"functions.{handler.parent.name}.handler", handler, False


def third_party_imports() -> Iterator[tuple[str, str, set[str]]]:
    """(module, top-level import, the distributions providing it) for every third-party import."""
    provided = importlib.metadata.packages_distributions()
    for module, path, is_package in sources():
        tops = {third_party_top(n) for n in file_imports(path, module, is_package)} - {None}
        for top in sorted(t for t in tops if t):
            yield module, top, {canonical(d) for d in provided.get(top, [])}


def test_every_module_is_scanned() -> None:
    modules = {module for module, _, _ in sources()}
    assert {"objectlog.tools.cli", "objectlog.http.app", "functions.fetch.handler"} <= modules
    assert {"objectlog.spark.source", "objectlog.adapters.aws"} <= modules


def test_every_third_party_import_is_declared_where_it_is_used() -> None:
    problems = []
    for module, top, distributions in third_party_imports():
        extras = ALLOWED_EXTRAS[owner(module)]
        if not distributions:
            problems.append(f"{module} imports {top}, which no installed distribution provides")
        elif not distributions & declared(extras):
            where = "the base dependencies" + "".join(f" or the {e!r} extra" for e in extras)
            problems.append(
                f"{module} imports {top} ({', '.join(sorted(distributions))}), not in {where}"
            )
    assert problems == []


def test_no_runtime_module_imports_the_tooling_dependencies() -> None:
    leaks = [
        f"{module} imports {top}"
        for module, top, distributions in third_party_imports()
        if not module.startswith("objectlog.tools") and distributions & TOOLING_ONLY
    ]
    assert leaks == []
    assert not TOOLING_ONLY & declared(("lambda", "spark")), "tooling deps in runtime deps"


def test_extras_named_by_the_tooling_are_pyproject_extras() -> None:
    """objectlog.tools.extras names each extra's modules for its one-line errors."""
    provided = importlib.metadata.packages_distributions()
    extras = PROJECT["optional-dependencies"]
    dev = extras["dev"][0]
    for extra, modules in EXTRAS.items():
        assert extra in extras and extra in dev, f"{extra} is not an extra included in dev"
        names = {requirement_name(r) for r in extras[extra]}
        for module in modules:
            assert {canonical(d) for d in provided[module]} & names, f"{module} not in {extra}"


@pytest.mark.parametrize(
    ("blocked", "args", "message"),
    [
        pytest.param(
            "click",
            [],
            "error: the objectlog command needs objectlog's 'cli' extra: "
            "pip install 'objectlog[cli]'",
            id="no-cli-extra",
        ),
        pytest.param(
            "moto",
            ["dev"],
            "error: objectlog dev needs objectlog's 'server' extra: "
            "pip install 'objectlog[server]'",
            id="dev-without-server-extra",
        ),
    ],
)
def test_the_command_without_its_extra_says_which_to_install(
    blocked: str, args: list[str], message: str
) -> None:
    """As the console script runs it (``from objectlog.tools.cli import main``), with the
    extra's module made unimportable: one line on stderr, exit status 1, no traceback."""
    script = (
        f"import sys; sys.modules[{blocked!r}] = None\n"
        "from objectlog.tools.cli import main\nsys.exit(main())"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=60
    )
    assert (result.returncode, result.stderr, result.stdout) == (1, message + "\n", "")
