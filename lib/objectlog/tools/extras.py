"""The tooling's optional dependencies, by the pyproject.toml extra that installs them, so a
command run without its extra stops with one line naming it instead of a traceback.
tests/unit/test_dependencies.py checks this table against pyproject.toml."""

from __future__ import annotations

import importlib.util
from typing import NoReturn

# extra -> the top-level modules it provides
EXTRAS: dict[str, tuple[str, ...]] = {
    "cli": ("click", "rich"),
    "server": ("moto", "werkzeug", "waitress"),
    "lambda": ("aws_lambda_powertools", "pydantic"),
    "agent": ("kio", "aiokafka", "cramjam", "scramp"),
    "aio": ("aiobotocore", "aiohttp"),
    "kafka-clients": ("kafka", "confluent_kafka"),
}


def missing_extras(*extras: str) -> list[str]:
    """The extras among these with a module that cannot be imported here."""
    return [
        extra
        for extra in extras
        if any(importlib.util.find_spec(module) is None for module in EXTRAS[extra])
    ]


def exit_without(*extras: str, what: str) -> NoReturn:
    """Stop the program: what needs these extras, and the command that installs them."""
    names = ", ".join(repr(extra) for extra in extras)
    plural = "s" if len(extras) > 1 else ""
    raise SystemExit(
        f"error: {what} needs objectlog's {names} extra{plural}: "
        f"pip install 'objectlog[{','.join(extras)}]'"
    )


def require(*extras: str, what: str) -> None:
    """Stop the program with one line when any of these extras is not installed."""
    missing = missing_extras(*extras)
    if missing:
        exit_without(*missing, what=what)
