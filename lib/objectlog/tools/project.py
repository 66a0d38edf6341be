"""The objectlog checkout the build and deploy tools work on: functions/, lib/objectlog/,
infra/terraform/ and build/, found from an explicit directory or the current one, never from
where this module happens to be installed."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

PROJECT_NAME = "objectlog"


class ProjectNotFound(RuntimeError):
    """Not run from (or pointed at) an objectlog source checkout."""


@dataclass(frozen=True)
class Project:
    """A source checkout: pyproject.toml naming objectlog, functions/*/handler.py, lib/objectlog."""

    root: Path

    @property
    def pyproject(self) -> Path:
        return self.root / "pyproject.toml"

    @property
    def functions(self) -> Path:
        return self.root / "functions"

    @property
    def lib(self) -> Path:
        """The directory objectlog is imported from (what a layer's python/ holds)."""
        return self.root / "lib"

    @property
    def library(self) -> Path:
        return self.lib / "objectlog"

    @property
    def terraform(self) -> Path:
        return self.root / "infra" / "terraform"

    @property
    def build(self) -> Path:
        return self.root / "build"

    def handlers(self) -> list[Path]:
        return sorted(self.functions.glob("*/handler.py"))


def _is_checkout(directory: Path) -> bool:
    try:
        name = tomllib.loads((directory / "pyproject.toml").read_text())["project"]["name"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return False
    return (
        name == PROJECT_NAME
        and (directory / "functions").is_dir()
        and (directory / "lib" / PROJECT_NAME).is_dir()
    )


def find_project(directory: Path | str | None = None) -> Project:
    """The checkout at directory (exactly there), or else the one holding the current directory
    (it or a parent, as git finds its repository); ProjectNotFound saying what to do."""
    if directory is not None:
        root = Path(directory).resolve()
        if not _is_checkout(root):
            raise ProjectNotFound(
                f"{root} is not an objectlog checkout (a pyproject.toml naming {PROJECT_NAME}, "
                "functions/ and lib/objectlog/)"
            )
        return Project(root)
    start = Path.cwd().resolve()
    for candidate in (start, *start.parents):
        if _is_checkout(candidate):
            return Project(candidate)
    raise ProjectNotFound(
        f"{start} is not inside an objectlog checkout (a pyproject.toml naming {PROJECT_NAME}, "
        "functions/ and lib/objectlog/): run from the source tree, or pass --project DIR"
    )
