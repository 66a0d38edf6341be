"""The layer's .pyc files (objectlog.tools.bytecode): compiled by an interpreter of the target
version only, hash-based and unchecked (reproducible, trusted without reading the source),
naming their source where Lambda mounts the layer; and only for what the handlers' init
imports."""

from __future__ import annotations

import marshal
import subprocess
import sys
from pathlib import Path

import pytest

from objectlog.tools import bytecode
from objectlog.tools.bytecode import BytecodeError, compile_entries, find_compiler, init_modules
from objectlog.tools.project import find_project

PROJECT = find_project(Path(__file__).resolve().parents[2])
HERE = f"{sys.version_info.major}.{sys.version_info.minor}"
TAG = sys.implementation.cache_tag


def package(root: Path) -> list[tuple[str, Path]]:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("VALUE = 'compiled'\n")
    (root / "pkg" / "other.py").write_text("X = {1, 2, 3}\n")
    (root / "pkg" / "broken.py").write_text("print 'python 2'\n")
    (root / "pkg" / "data.txt").write_text("not python\n")
    names = ["pkg/__init__.py", "pkg/broken.py", "pkg/data.txt", "pkg/other.py"]
    return [(f"python/{name}", root / name) for name in names]


def test_each_module_compiles_once_reproducibly_and_names_its_layer_path(tmp_path: Path) -> None:
    compiler = find_compiler(HERE)
    assert (compiler.executable, compiler.cache_tag) == (sys.executable, TAG)
    entries = package(tmp_path / "src")
    first = compile_entries(compiler, entries, tmp_path / "a")
    second = compile_entries(compiler, entries, tmp_path / "b")
    # the source that does not compile ships without one; no file but .py gets one
    assert [name for name, _ in first] == [
        f"python/pkg/__pycache__/__init__.{TAG}.pyc",
        f"python/pkg/__pycache__/other.{TAG}.pyc",
    ]
    for (_, one), (_, two) in zip(first, second, strict=True):
        assert one.read_bytes() == two.read_bytes()
    data = first[0][1].read_bytes()
    assert int.from_bytes(data[4:8], "little") == 0b01  # PEP 552: hash-based, unchecked
    assert marshal.loads(data[16:]).co_filename == "/opt/python/pkg/__init__.py"
    only = compile_entries(compiler, entries, tmp_path / "c", {"pkg/other.py"}, "python/")
    assert [name for name, _ in only] == [f"python/pkg/__pycache__/other.{TAG}.pyc"]


def test_the_importer_trusts_the_pyc_without_reading_the_source(tmp_path: Path) -> None:
    """What Lambda's read-only /opt needs: the shipped bytecode runs as it is."""
    entries = package(tmp_path / "site" / "python")
    for name, pyc in compile_entries(find_compiler(HERE), entries, tmp_path / "out"):
        target = tmp_path / "site" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(pyc.read_bytes())
    (tmp_path / "site" / "python" / "pkg" / "__init__.py").write_text("VALUE = 'source'\n")
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-B",
            "-c",
            "import sys; sys.path.insert(0, '.'); import pkg; print(pkg.VALUE)",
        ],
        cwd=tmp_path / "site" / "python",
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "compiled"


def test_no_pyc_of_another_version(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(BytecodeError, match=r"no Python 3\.99 interpreter.*--no-pyc"):
        find_compiler("3.99", sys.executable)  # named, but of this version
    monkeypatch.setattr(bytecode, "PYENV_ROOT", Path("/nonexistent"))
    with pytest.raises(BytecodeError, match=r"--pyc-python"):
        find_compiler("3.99")  # nothing on PATH or in pyenv
    with pytest.raises(BytecodeError, match="did not run"):
        find_compiler(HERE, "/nonexistent/python")


def test_the_handlers_init_imports_what_the_layer_compiles() -> None:
    modules = init_modules({p.parent.name: p.parent for p in PROJECT.handlers()})
    assert {
        "objectlog/__init__.py",
        "objectlog/functions/snapstart.py",
        "objectlog/http/app.py",
        "botocore/client.py",
        "pyarrow/parquet/core.py",
        "aws_xray_sdk/core/recorder.py",  # the Tracer, as with tracing on
    } <= modules
    assert not [m for m in modules if m.startswith(("objectlog/tools/", "objectlog/spark/"))]
