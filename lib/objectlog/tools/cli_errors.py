"""How the CLI's commands end on an objectlog error: one line on stderr, exit status 1."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from objectlog.errors import ObjectLogError

F = TypeVar("F", bound=Callable[..., Any])


def clear_errors(command: F) -> F:
    """objectlog errors become one line on stderr and exit status 1."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except ObjectLogError as e:
            click.echo(f"error: {e.message}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]
