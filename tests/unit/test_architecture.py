"""The layers of DESIGN.md section 10, checked on the source: no import cycle in the runtime,
botocore and boto3 only in the adapters, every import pointing down, tooling outside the
runtime, no runtime module that grew past 500 lines without a reason."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "lib" / "objectlog"
# Lower number = lower layer. A module may import only from its own layer or below.
LAYERS = {
    "objectlog.errors": 0,
    "objectlog.clock": 0,
    "objectlog.config": 0,
    "objectlog.cache": 0,
    "objectlog.fan_out": 0,
    "objectlog.concurrency": 0,
    "objectlog.format": 0,
    "objectlog.adapters": 1,
    "objectlog.stores": 2,
    "objectlog.services": 3,
    "objectlog.compaction": 3,
    "objectlog.groups": 3,
    "objectlog.schemas": 3,  # the Schema Registry's rules, the compactor's typed columns
    "objectlog.clients": 4,
    "objectlog.aio": 4,  # the asyncio client, on the threaded client's ObjectLog
    "objectlog": 4,  # the package's public names are the clients'
    "objectlog.telemetry": 5,
    "objectlog.http": 5,
    "objectlog.functions": 5,
    "objectlog.spark": 5,
    "objectlog.kafka": 5,
    "objectlog.tools": 6,
}
AWS_SDKS = ("botocore", "boto3", "aiobotocore")
# boto3 is allowed above the adapters only where a library takes a boto3 client or session.
SDK_ALLOWED = {"objectlog.adapters"}
# module -> why it may pass 500 lines (each a candidate to split next)
LONG_MODULES: dict[str, str] = {
    "objectlog.clients.consumer": "poll, fetch-ahead, commits and rebalance callbacks share "
    "the member's position state",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runtime_modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield module_name(path), path


def imports(
    path: Path, modules: set[str], *, type_checking: bool = False
) -> Iterator[tuple[str, int]]:
    """Every import in the file (module level or inside functions; under TYPE_CHECKING only
    if type_checking), as the objectlog module it names, or the top-level name of a
    third-party package."""
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if (
            not type_checking
            and isinstance(node, ast.If)
            and "TYPE_CHECKING" in ast.unparse(node.test)
        ):
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                yield (candidate if candidate in modules else base), node.lineno


def layer_of(module: str) -> int:
    best = max((name for name in LAYERS if module == name or module.startswith(name + ".")),
               key=len)  # fmt: skip
    return LAYERS[best]


def graph(*, type_checking: bool = False) -> dict[str, set[str]]:
    modules = {name for name, _ in runtime_modules()}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in runtime_modules():
        for imported, _ in imports(path, modules, type_checking=type_checking):
            if imported in modules and imported != name:
                edges[name].add(imported)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_in_the_package() -> None:
    edges = graph()
    # The package's own __init__ re-exports the clients; importing a submodule from below it
    # is the normal parent-package step, not an edge back.
    assert cycles(edges) == []


def test_no_import_cycle_even_through_type_hints() -> None:
    """Imports under TYPE_CHECKING form no cycle either: a type-only cycle is a dependency
    loop all the same, hidden until someone needs the import at run time."""
    assert cycles(graph(type_checking=True)) == []


def test_every_import_points_down_the_layers() -> None:
    modules = {name for name, _ in runtime_modules()}
    upward = [
        f"{name}:{line} imports {imported}"
        for name, path in runtime_modules()
        for imported, line in imports(path, modules)
        if imported in modules and layer_of(imported) > layer_of(name)
    ]
    assert upward == []


def test_only_the_adapters_import_the_aws_sdks() -> None:
    modules = {name for name, _ in runtime_modules()}
    leaks = [
        f"{name}:{line} imports {imported}"
        for name, path in runtime_modules()
        if not any(name.startswith(allowed) for allowed in SDK_ALLOWED)
        and not name.startswith("objectlog.tools")
        for imported, line in imports(path, modules)
        if imported.split(".")[0] in AWS_SDKS
    ]
    assert leaks == []


@pytest.mark.parametrize("name", ["objectlog.http", "objectlog.compaction", "objectlog.spark"])
def test_no_runtime_module_imports_the_tooling(name: str) -> None:
    modules = {n for n, _ in runtime_modules()}
    tooling = [
        f"{module}:{line}"
        for module, path in runtime_modules()
        if module.startswith(name)
        for imported, line in imports(path, modules)
        if imported.startswith("objectlog.tools")
    ]
    assert tooling == []


def test_runtime_modules_stay_small() -> None:
    long = [
        f"{name}: {len(path.read_text().splitlines())} lines"
        for name, path in runtime_modules()
        if not name.startswith("objectlog.tools")
        and name not in LONG_MODULES
        and len(path.read_text().splitlines()) > 500
    ]
    assert long == []
