"""The Lambda layer is built from what the handlers import: only the objectlog modules in the
import closure of functions/*/handler.py (no objectlog.tools, no objectlog.spark), and only
the distributions that closure imports. The project is found from a directory, never from
where the packager is installed."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from objectlog.tools import packaging
from objectlog.tools.packaging import handler_library_files, layer_requirements, requirement_name
from objectlog.tools.project import ProjectNotFound, find_project

ROOT = Path(__file__).resolve().parents[2]
PROJECT = find_project(ROOT)
NOT_IN_THE_LAYER = {"click", "rich", "moto", "werkzeug", "pyspark", "pandas", "flask"}


def test_the_light_layer_holds_the_handlers_import_closure_only(tmp_path: Path) -> None:
    build = packaging.build(tmp_path, light=True, project=PROJECT)
    with zipfile.ZipFile(tmp_path / "layer.zip") as layer:
        names = set(layer.namelist())
    closure = {
        "python/" + path.relative_to(PROJECT.lib).as_posix()
        for path in handler_library_files(PROJECT)
    }
    assert names == closure
    assert build.library_files == len(closure)
    assert not [
        n for n in names if n.startswith(("python/objectlog/tools/", "python/objectlog/spark/"))
    ]
    assert {"python/objectlog/__init__.py", "python/objectlog/http/app.py"} <= names
    assert "python/objectlog/functions/compact.py" in names
    # the web console's page and scripts, which the fetch function serves
    assert {
        "python/objectlog/console/static/index.html",
        "python/objectlog/console/static/console.js",
    } <= names


def test_the_layer_requires_only_what_the_handlers_import() -> None:
    requirements, undeclared = layer_requirements(PROJECT)
    names = {requirement_name(r) for r in requirements}
    assert {
        "boto3",
        "botocore",
        "pyarrow",
        "aws-lambda-powertools",
        "pydantic",
    } <= names
    assert not names & NOT_IN_THE_LAYER
    assert undeclared == [], "pyproject.toml must declare what the handlers import"
    # the declared form is kept: Powertools with its tracer and validation extras
    assert any(r.startswith("aws-lambda-powertools[tracer,validation]") for r in requirements)


def test_the_project_is_found_from_a_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT / "infra" / "terraform")
    assert find_project() == PROJECT  # a parent of the current directory
    assert PROJECT.terraform == ROOT / "infra" / "terraform"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ProjectNotFound, match=r"not inside an objectlog checkout.*--project"):
        find_project()
    with pytest.raises(ProjectNotFound, match="is not an objectlog checkout"):
        find_project(tmp_path)
    assert packaging.main(["--light", "--out", str(tmp_path / "out")]) == 1
    assert not (tmp_path / "out").exists()


def test_the_layers_modules_name_a_user_agent_without_the_distribution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The layer holds python/objectlog/ and no objectlog dist-info, so on Lambda the package's
    version cannot be looked up: adapters.aws must still import (every handler imports it)."""
    from objectlog.adapters import aws

    def not_installed(name: str) -> str:
        raise aws.metadata.PackageNotFoundError(name)

    assert aws.user_agent().startswith("objectlog/0.")  # installed here: the version
    monkeypatch.setattr(aws.metadata, "version", not_installed)
    assert aws.user_agent().startswith("objectlog/unpackaged Python/3.")
