"""What a module imports, read from its source: every import statement (lazy ones inside
functions included, ``if TYPE_CHECKING:`` blocks left out), and the import closure of entry
files through objectlog's own modules. The Lambda layer is built from the closure of
functions/*/handler.py; tests/unit/test_dependencies.py checks the imports are declared."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "objectlog"


def _is_type_checking(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_names(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """Absolute names of every module imported anywhere in tree (for ``from a import b``, both
    ``a`` and ``a.b``), except under ``if TYPE_CHECKING:``."""
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.stmt) and _is_type_checking(node):
            pending.extend(node.orelse)  # type: ignore[attr-defined]
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if is_package else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)
        pending.extend(ast.iter_child_nodes(node))


def file_imports(path: Path, module: str, is_package: bool) -> Iterator[str]:
    yield from imported_names(parse(path.read_text(), str(path)), module, is_package)


PARSE_ATTEMPTS = 3


def parse(source: str, filename: str) -> ast.Module:
    """ast.parse, again after CPython 3.11's "AST constructor recursion depth mismatch": its
    AST conversion keeps one recursion counter for all threads, so a parse racing another
    thread's (pytest rewriting a test module while the test run's early deployment packages
    in the background) can fail spuriously (reported upstream as python/cpython#106905)."""
    for attempt in range(PARSE_ATTEMPTS):
        try:
            return ast.parse(source, filename)
        except SystemError:
            if attempt == PARSE_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def third_party_top(name: str) -> str | None:
    """The top-level name of an import outside the standard library and objectlog, else None."""
    top = name.split(".")[0]
    if not top or top == PACKAGE or top == "__future__" or top in sys.stdlib_module_names:
        return None
    return top


def library_modules(lib: Path) -> Iterator[tuple[str, Path, bool]]:
    """(module name, file, is a package) of every module of objectlog under lib."""
    for path in sorted((lib / PACKAGE).rglob("*.py")):
        parts = path.relative_to(lib).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        yield ".".join(parts[:-1] if is_package else parts), path, is_package


@dataclass(frozen=True)
class Closure:
    """What entry files can import: third-party top-level modules, and objectlog's files."""

    third_party: frozenset[str]
    files: frozenset[Path]


def import_closure(entries: Iterable[Path], lib: Path) -> Closure:
    """Follow the imports of entries (top-level scripts) through objectlog's modules under lib
    (parent packages included, since importing a module runs its packages' __init__)."""
    queue: list[tuple[Path, str, bool]] = [(path, path.stem, False) for path in entries]
    seen: set[Path] = set()
    third_party: set[str] = set()
    while queue:
        path, module, is_package = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in file_imports(path, module, is_package):
            top = third_party_top(name)
            if top is not None:
                third_party.add(top)
            if name.split(".")[0] != PACKAGE:
                continue
            parts = name.split(".")
            for depth in range(1, len(parts) + 1):
                dotted = ".".join(parts[:depth])
                as_package = lib.joinpath(*parts[:depth], "__init__.py")
                as_module = lib.joinpath(*parts[: depth - 1], parts[depth - 1] + ".py")
                if as_package.exists():
                    queue.append((as_package, dotted, True))
                elif as_module.exists():
                    queue.append((as_module, dotted, False))
    library = lib / PACKAGE
    return Closure(frozenset(third_party), frozenset(p for p in seen if library in p.parents))
