"""Running an asyncio client's test: an AIOObjectLog on the test's log, on asyncio's loop or
uvloop's, failing on any warning asyncio or aiohttp report once it is closed."""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import uvloop

from objectlog import ObjectLog
from objectlog.aio import AIOObjectLog

LOOPS = {"asyncio": asyncio.run, "uvloop": uvloop.run}
# A test's loops: make test runs it on asyncio's, make test-aio on uvloop's too.
ON_EACH_LOOP = ["asyncio", pytest.param("uvloop", marks=pytest.mark.aio_full)]


def run(
    log: ObjectLog, test: Callable[[AIOObjectLog], Awaitable[Any]], loop: str = "asyncio"
) -> Any:
    """Run test with an AIOObjectLog on log's bucket and table; fail on any warning asyncio or
    aiohttp report once it is closed (an unclosed session, a task destroyed pending, an
    exception never retrieved)."""
    reported: list[str] = []

    async def main() -> Any:
        asyncio.get_running_loop().set_exception_handler(
            lambda _, context: reported.append(context["message"])
        )
        async with await AIOObjectLog.from_config(log.config) as aio:
            result = await test(aio)
        assert {t for t in asyncio.all_tasks() if t is not asyncio.current_task()} == set()
        gc.collect()
        return result

    with warnings.catch_warnings():  # earlier tests' garbage warns now, not in the window
        warnings.simplefilter("ignore")
        gc.collect()
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        result = LOOPS[loop](main())
        gc.collect()
    leaks = [w for w in warned if issubclass(w.category, ResourceWarning | RuntimeWarning)]
    assert not leaks, [
        f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in leaks
    ]
    assert reported == [], reported
    return result
