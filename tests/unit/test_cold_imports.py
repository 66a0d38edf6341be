"""What a Lambda cold start imports (issue 38, item 5): ``objectlog``'s public names load on
first use, so the authorizer loads no pyarrow; Powertools' Tracer (the X-Ray SDK) is built only
when tracing is on. Each case runs in a fresh interpreter: this one has imported everything."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import objectlog

LOADED = """
import json, sys
{code}
print(json.dumps({{m: m in sys.modules for m in {modules!r}}} | {{"result": {result}}}))
"""


def fresh(code: str, modules: list[str], result: str = "None", **env: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "LAMBDA_"))}
    done = subprocess.run(
        [sys.executable, "-c", LOADED.format(code=code, modules=modules, result=result)],
        env=clean | env | {"POWERTOOLS_METRICS_DISABLED": "true"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answer: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def test_the_package_loads_its_public_names_on_first_use() -> None:
    heavy = ["pyarrow", "numpy", "boto3", "objectlog.clients.direct"]
    assert fresh("import objectlog", heavy) == dict.fromkeys(heavy, False) | {"result": None}
    # each public name still there, from the module that defines it
    for name in objectlog.__all__:
        value = getattr(objectlog, name)
        assert value.__name__ == name and value.__module__.startswith("objectlog."), name
    assert set(objectlog.__all__) <= set(dir(objectlog))
    loaded = fresh(
        "from objectlog import ObjectLog, TopicNotFound", ["pyarrow"], "ObjectLog.__module__"
    )
    assert loaded == {"pyarrow": True, "result": "objectlog.clients.direct"}
    with pytest.raises(AttributeError, match="module 'objectlog' has no attribute 'Nothing'"):
        objectlog.Nothing  # noqa: B018


def test_the_authorizer_loads_no_pyarrow_and_no_xray_outside_lambda() -> None:
    heavy = ["pyarrow", "numpy", "aws_xray_sdk"]
    loaded = fresh(
        "from objectlog.functions.authorize import handler\nfrom objectlog.telemetry import tracer",
        heavy,
        "tracer.enabled",
    )
    assert loaded == dict.fromkeys(heavy, False) | {"result": False}


def test_the_tracer_is_built_only_when_tracing_is_on() -> None:
    code = (
        "from objectlog.telemetry import tracer\n"
        "def handler(event, context): return 1\n"
        "wrapped = tracer.capture_lambda_handler(handler)\n"
        "tracer.put_annotation(key='k', value=True)"
    )
    result = "[tracer.enabled, wrapped is handler]"
    # in Lambda (its task root set) with tracing on: Powertools' Tracer, with the X-Ray SDK
    on = fresh(code, ["aws_xray_sdk"], result, LAMBDA_TASK_ROOT="/var/task")
    assert on == {"aws_xray_sdk": True, "result": [True, False]}
    # Terraform's tracing = false sets POWERTOOLS_TRACE_DISABLED: nothing built, nothing wrapped
    off = fresh(
        code,
        ["aws_xray_sdk"],
        result,
        LAMBDA_TASK_ROOT="/var/task",
        POWERTOOLS_TRACE_DISABLED="true",
    )
    assert off == {"aws_xray_sdk": False, "result": [False, True]}
