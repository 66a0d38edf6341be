"""What the HTTP functions' init does without (issue 38, item 5, third increment): numpy.ma
(``pa.array`` of a numpy array imports it; ``segment.numbers`` does not), Powertools' OpenAPI
models (the Swagger UI built at the first /docs request), and the validators of models no
warmed route uses (http.models builds them at first use). Import checks run in a fresh
interpreter, pandas hidden as in the Lambda layer (it has none): this one has imported
everything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from objectlog.format.segment import numbers

NO_PANDAS = """
import sys
class NoPandas:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "pandas":
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, NoPandas())
"""
OPENAPI_MODELS = "aws_lambda_powertools.event_handler.openapi.models"
APP = """
from objectlog.http.app import build_app, warm_resolver, TITLE, API_VERSION
from objectlog.http.routes import Services
app = build_app({function!r}, Services(lambda: None))
"""
PRINT_DOCUMENT = """
import json
print(json.dumps(app.get_openapi_json_schema(title=TITLE, version=API_VERSION)))
"""


def fresh(code: str) -> Any:
    """Run code in a new interpreter; it prints one JSON line, returned."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "LAMBDA_"))}
    done = subprocess.run(
        [sys.executable, "-c", NO_PANDAS + code],
        env=env | {"POWERTOOLS_METRICS_DISABLED": "true"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def docs_event(path: str) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"host": "api.example.com"},
        "requestContext": {
            "stage": "$default",
            "requestId": "docs",
            "http": {"method": "GET", "path": path},
        },
        "isBase64Encoded": False,
    }


@pytest.mark.parametrize(
    "values",
    [
        pytest.param(np.arange(5, dtype=np.int64), id="int64"),
        pytest.param(np.full(3, 7, dtype=np.int32), id="int32"),
        pytest.param(np.arange(10, dtype=np.int64)[::3], id="strided"),
        pytest.param(np.array([0.5, -1.0]), id="float64"),
        pytest.param(np.array([], dtype=np.int32), id="empty"),
    ],
)
def test_numbers_are_the_array_pyarrow_would_build(values: np.ndarray) -> None:
    built = numbers(values)
    assert built.equals(pa.array(values)) and built.type == pa.array(values).type
    assert built.null_count == 0 and built.to_pylist() == values.tolist()


@pytest.mark.parametrize(
    "values", [np.array([True, False]), np.zeros((2, 2), dtype=np.int32)], ids=["bool", "2-d"]
)
def test_numbers_refuse_what_has_no_plain_buffer(values: np.ndarray) -> None:
    with pytest.raises(TypeError, match="1-d array of integers or floats"):
        numbers(values)


def test_a_slice_and_its_table_batches_import_no_numpy_ma() -> None:
    code = """
import json, sys
import numpy as np
from objectlog.format.segment import decode_parquet, encode_parquet, slice_table
from objectlog.format.topics import Topic, TopicConfig
from objectlog.services.columnar import RecordColumns, table_batches
import pyarrow as pa
table = slice_table("t", 0, [b"k", None], [b"v", b""], [0, 1], 0)
decode_parquet(encode_parquet(table))
columns = RecordColumns(pa.array([b"a", b"b"]), pa.array([b"1", b"2"]))
batches = table_batches(Topic("t", "id", 2, TopicConfig(), 0), columns, np.array([1, 0]), 1000)
print(json.dumps(["numpy.ma" in sys.modules, [b.partition for _, b in batches]]))
"""
    assert fresh(code) == [False, [0, 1]]


def test_the_fetch_function_builds_swagger_ui_at_its_first_docs_request() -> None:
    code = (
        APP.format(function="fetch")
        + f"""
import json, sys
from objectlog.tools.gateway import LambdaContext
built = {OPENAPI_MODELS!r} in sys.modules
page = app.resolve({docs_event("/docs")!r}, LambdaContext(function_name="fetch"))
# Powertools' own route, enabled as before on another app with the same routes
eager = build_app("fetch", Services(lambda: None))
eager.enable_swagger(path="/eager", title=TITLE, version=API_VERSION)
reference = eager.resolve({docs_event("/eager")!r}, LambdaContext(function_name="fetch"))
print(json.dumps([built, page, reference]))
"""
    )
    built_at_init, page, reference = fresh(code)
    assert built_at_init is False
    assert page["statusCode"] == 200 and "swagger-ui" in page["body"]
    assert page["headers"]["Content-Type"] == "text/html"
    assert page["body"] == reference["body"]


def test_the_openapi_document_does_not_depend_on_when_models_are_built() -> None:
    document = APP.format(function="fetch") + PRINT_DOCUMENT
    built_first = APP.format(function="fetch") + (
        "import pydantic, objectlog.http.models as m\n"
        "for v in vars(m).values():\n"
        "    if isinstance(v, type) and issubclass(v, m.Model):\n"
        "        v.model_rebuild(force=True)\n" + PRINT_DOCUMENT
    )
    deferred, eager = json.loads(fresh(document)), json.loads(fresh(built_first))
    assert (
        deferred == eager and "/topics/{topic}/partitions/{partition}/records" in deferred["paths"]
    )


@pytest.mark.parametrize(
    ("function", "complete"),
    [("produce", [False, True, False]), ("fetch", [False, False, True])],
)
def test_prepare_builds_the_models_of_the_functions_main_route(
    function: str, complete: list[bool]
) -> None:
    code = APP.format(function=function) + (
        "import json\n"
        "from objectlog.http.models import FetchResponse, ProduceResponse\n"
        "before = FetchResponse.__pydantic_complete__ or ProduceResponse.__pydantic_complete__\n"
        f"warm_resolver(app, {function!r})\n"
        "print(json.dumps([before, ProduceResponse.__pydantic_complete__, "
        "FetchResponse.__pydantic_complete__]))"
    )
    assert fresh(code) == complete
