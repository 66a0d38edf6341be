"""What a person sees in the terminal: no raw CloudWatch EMF line among a command's output.

The commands that run the function handlers in process (verify and dev, through the local API)
would print Powertools' EMF JSON, one line per invocation, unless the command turns metrics off
(cli.quiet_handler_metrics). tests/conftest.py turns them off for the whole test process, so
the commands' own tests run them with POWERTOOLS_METRICS_DISABLED unset, as from a shell, and
find no such line: test_cli.py (dev) and test_verify.py (verify).
"""

from __future__ import annotations

import os

import pytest

from objectlog.tools.cli import quiet_handler_metrics


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        pytest.param({}, "true", id="a shell: off"),
        pytest.param({"POWERTOOLS_METRICS_DISABLED": "false"}, "false", id="asked for: kept"),
        pytest.param({"AWS_LAMBDA_FUNCTION_NAME": "produce"}, None, id="in Lambda: untouched"),
    ],
)
def test_metrics_are_off_outside_lambda_unless_asked_for(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], expected: str | None
) -> None:
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    quiet_handler_metrics()
    assert os.environ.get("POWERTOOLS_METRICS_DISABLED") == expected
