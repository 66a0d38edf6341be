"""Swagger UI at /docs renders in headless Chromium with every route, from local assets only.

docs/images/swagger-ui.png is the screenshot this test takes (kept from a run by hand).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from objectlog.http.routes import ROUTES
from objectlog.tools.chromium import HEADLESS_FLAGS

CHROMIUM_FLAGS = [*HEADLESS_FLAGS, "--virtual-time-budget=8000"]


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:  # make test installs it; failing here says what is missing
        pytest.fail("Chromium is not installed: run `make test` (it installs Debian's chromium)")
    return path


def run_chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_docs_render_every_route(api: str, tmp_path: Path) -> None:
    dom = run_chromium(["--dump-dom", f"{api}/docs"], tmp_path / "profile-dom").stdout
    assert "swagger-ui" in dom, dom[:500]
    for method, path, _ in ROUTES:
        if path in ("/docs", "/openapi.json"):
            continue
        if path.endswith("/{proxy+}"):  # a greedy route: the routes under it are shown
            path = path.removesuffix("{proxy+}")
            assert f'data-path="{path}' in dom, f"no route under {path} is shown in /docs"
            continue
        assert f'data-path="{path}"' in dom, f"{method} {path} is not shown in /docs"
    screenshot = tmp_path / "swagger-ui.png"
    run_chromium(
        ["--window-size=1280,2200", f"--screenshot={screenshot}", f"{api}/docs"],
        tmp_path / "profile-shot",
    )
    assert screenshot.exists() and screenshot.stat().st_size > 20_000
