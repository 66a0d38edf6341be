"""Cold starts of the Lambda functions: each handler's import and init beside the import floor of
its dependencies, and its first request beside its second, in fresh processes.

    .venv/bin/python -m bench.cold_start                 # 5 rounds (~1 minute), with .pyc
    .venv/bin/python -m bench.cold_start --no-pyc        # no .pyc: every module compiled

What Lambda's init phase does, per function (functions/<name>/handler.py): import the handler
module, then its ``prepare`` (what the functions register as SnapStart's before-snapshot hook:
the clients, pyarrow's first-use paths, functions.snapstart). Each is a fresh ``python -c``;
its floor, measured in the same round in another fresh process, imports what the handler cannot
do without and builds what it must: pyarrow's Parquet module, boto3 with its S3 and DynamoDB
clients, and the Powertools modules the handler uses (Logger, Metrics, and a Tracer when
tracing is on, as objectlog.telemetry decides by Powertools' rule: off in these processes,
which are not in Lambda; the HTTP functions also the API Gateway resolver with its pydantic
validation). Target: the handler within 1.25x of its floor; objectlog's own share is the
difference.

Bytecode: the layer ships .pyc files (objectlog.tools.packaging), so by default every process
reads fresh ones from a cache directory of this run's own (PYTHONPYCACHEPREFIX), filled by one
unmeasured run of each process first: this tree's own __pycache__ may be stale (its sources
change under other work, and PYTHONDONTWRITEBYTECODE may be set), and a stale .pyc means the
module is compiled again in every process. ``--no-pyc`` reads and writes none: every module is
compiled, as on a layer without them.

The handler processes then serve their first request and a second one, in-process, with API
Gateway payload 2.0 events against `objectlog dev`'s moto endpoint (bench.server): a produce of
one record (produce), a fetch of it (fetch), a dry-run compaction of the topic (compact), a
basic-auth check (authorize). The first minus the second is what a cold environment still pays
after init (connections, topic metadata).

pandas is hidden in every process (a finder that refuses it): the Lambda layer does not
ship it (objectlog.tools.packaging), and pyarrow's first conversion of Python lists imports it
when it is installed (0.3-0.5 s here). Rounds alternate which of handler and floor runs first;
figures are medians; the load average is printed before and after. Beside the wall-clock
times, the main thread's CPU time (``time.thread_time``) of init and floor: on this shared
2-CPU machine the wall clock moves by a quarter between runs with other jobs' load, the CPU
time much less (it leaves out the time spent waiting for a CPU); the target is on the wall
clock, as Lambda bills it.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.report import Report, Row, console
from bench.server import DEV_BUCKET, DEV_TABLE, Endpoint, add_endpoint_argument, embedded_endpoint
from objectlog import ObjectLog
from objectlog.http.routes import FETCH, PRODUCE

REPO = Path(__file__).resolve().parents[1]
ROUNDS = 5
TARGET = 1.25
TOPIC = "cold"
HIDE_PANDAS = """
import sys
class NoPandas:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "pandas":
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, NoPandas())
"""

# The floors: what each handler must import and build whatever objectlog does.
BOTO3 = """
import boto3, botocore.config
session = boto3.Session(region_name="us-east-1")
cfg = botocore.config.Config(retries={"mode": "standard"})
CLIENTS
"""
S3_AND_DYNAMODB = 'session.client("s3", config=cfg)\nsession.client("dynamodb", config=cfg)\n'
POWERTOOLS = """
from aws_lambda_powertools import Logger, Metrics, Tracer
Logger(service="floor"); Metrics(namespace="floor")
if not Tracer._is_tracer_disabled():
    Tracer(service="floor")
"""
RESOLVER = """
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
import pydantic
APIGatewayHttpResolver(enable_validation=True)
"""
PARQUET = "import pyarrow as pa, pyarrow.parquet as pq\n"

FLOORS = {
    PRODUCE: PARQUET + BOTO3.replace("CLIENTS", S3_AND_DYNAMODB) + POWERTOOLS + RESOLVER,
    FETCH: PARQUET + BOTO3.replace("CLIENTS", S3_AND_DYNAMODB) + POWERTOOLS + RESOLVER,
    "compact": PARQUET + BOTO3.replace("CLIENTS", S3_AND_DYNAMODB) + POWERTOOLS,
    "authorize": BOTO3.replace("CLIENTS", 'session.client("dynamodb", config=cfg)\n') + POWERTOOLS,
}
FLOOR_NAMES = {
    PRODUCE: "pyarrow.parquet + boto3 (S3, DynamoDB clients) + Powertools (resolver, pydantic)",
    FETCH: "the same as produce",
    "compact": "pyarrow.parquet + boto3 (S3, DynamoDB clients) + Powertools",
    "authorize": "boto3 (DynamoDB client) + Powertools",
}

# A handler process: import, prepare, then two requests; prints one JSON line.
HANDLER = """
import json, sys, time
started, started_cpu = time.perf_counter(), time.thread_time()
sys.path.insert(0, {directory!r})
import handler as module
imported = time.perf_counter()
module.handler.prepare()
prepared, prepared_cpu = time.perf_counter(), time.thread_time()
from objectlog.tools.gateway import LambdaContext
events = {events!r}
took = []
for n, event in enumerate(events):
    began = time.perf_counter()
    result = module.handler(json.loads(event), LambdaContext(function_name={name!r}))
    took.append(time.perf_counter() - began)
    if isinstance(result, dict) and result.get("statusCode", 200) >= 400:
        raise SystemExit(f"request {{n}} failed: {{result}}")
print(json.dumps({{"import": imported - started, "init": prepared - started,
                  "init_cpu": prepared_cpu - started_cpu, "requests": took}}))
"""
FLOOR = """
import json, time
started, started_cpu = time.perf_counter(), time.thread_time()
{body}
done, done_cpu = time.perf_counter(), time.thread_time()
print(json.dumps({{"init": done - started, "init_cpu": done_cpu - started_cpu}}))
"""


def http_event(method: str, path: str, body: str | None = None, query: str = "") -> str:
    """An API Gateway HTTP API payload 2.0 event."""
    return json.dumps(
        {
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": path,
            "rawQueryString": query,
            "queryStringParameters": dict(p.split("=", 1) for p in query.split("&") if p),
            "headers": {"content-type": "application/json", "host": "api.example.com"},
            "requestContext": {
                "stage": "$default",
                "requestId": "cold",
                "http": {"method": method, "path": path, "sourceIp": "192.0.2.1"},
            },
            "body": body,
            "isBase64Encoded": False,
        }
    )


def request_events() -> dict[str, list[str]]:
    """Each function's first and second request."""
    record = json.dumps({"records": [{"value": base64.b64encode(b"v" * 100).decode()}]})
    produce = http_event("POST", f"/topics/{TOPIC}/records", record)
    fetch = http_event("GET", f"/topics/{TOPIC}/partitions/0/records", query="offset=0")
    compact = json.dumps({"topics": [TOPIC], "dry_run": True})
    auth = "Basic " + base64.b64encode(b"nobody:secret").decode()
    authorize = json.dumps({"headers": {"authorization": auth}, "routeKey": "GET /x"})
    return {
        PRODUCE: [produce, produce],
        FETCH: [fetch, fetch],
        "compact": [compact, compact],
        "authorize": [authorize, authorize],
    }


@dataclass
class Samples:
    init: list[float]
    imported: list[float]
    first: list[float]
    second: list[float]
    floor: list[float]
    init_cpu: list[float]  # the main thread's CPU time: what the load of other jobs moves least
    floor_cpu: list[float]


def run_python(code: str, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", HIDE_PANDAS + code],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        check=False,
        timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(f"a measured process failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def child_env(endpoint: Endpoint, cache: str, no_pyc: bool) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_DYNAMODB"):
        env.pop(name, None)
    env.update(
        AWS_ENDPOINT_URL=endpoint.url,
        AWS_ENDPOINT_URL_DYNAMODB=endpoint.dynamodb_url,
        AWS_ACCESS_KEY_ID="test",
        AWS_SECRET_ACCESS_KEY="test",
        AWS_DEFAULT_REGION="us-east-1",
        OBJECTLOG_BUCKET=DEV_BUCKET,
        OBJECTLOG_TABLE=DEV_TABLE,
        POWERTOOLS_METRICS_DISABLED="true",
        POWERTOOLS_LOG_LEVEL="WARNING",
    )
    env["PYTHONPYCACHEPREFIX"] = cache  # this run's own .pyc files (module docstring)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if no_pyc:  # read no .pyc and write none: every module compiled
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def measure(endpoint: Endpoint, rounds: int, no_pyc: bool) -> dict[str, Samples]:
    events = request_events()
    samples = {name: Samples([], [], [], [], [], [], []) for name in events}
    codes = {
        name: (
            HANDLER.format(
                directory=str(REPO / "functions" / name), events=events[name], name=name
            ),
            FLOOR.format(body=FLOORS[name]),
        )
        for name in samples
    }
    with tempfile.TemporaryDirectory() as cache:
        env = child_env(endpoint, cache, no_pyc)
        if not no_pyc:  # fill the cache: one unmeasured run of each
            for both in codes.values():
                for code in both:
                    run_python(code, env)
        for n in range(rounds):
            for name in samples:
                handler_code, floor_code = codes[name]
                order = [handler_code, floor_code] if n % 2 == 0 else [floor_code, handler_code]
                for code in order:
                    result = run_python(code, env)
                    if code is floor_code:
                        samples[name].floor.append(result["init"])
                        samples[name].floor_cpu.append(result["init_cpu"])
                        continue
                    samples[name].init.append(result["init"])
                    samples[name].init_cpu.append(result["init_cpu"])
                    samples[name].imported.append(result["import"])
                    samples[name].first.append(result["requests"][0])
                    samples[name].second.append(result["requests"][1])
            console.print(f"  round {n + 1}/{rounds} done (load average {_load()})")
    return samples


def prepare_topic(endpoint: Endpoint) -> None:
    """The topic the requests use, with a record for the first fetch."""
    from bench.server import bench_config

    with ObjectLog(bench_config(endpoint, DEV_BUCKET, DEV_TABLE)) as log:
        log.ensure_resources()
        if TOPIC not in log.list_topics():
            log.create_topic(TOPIC, 1)
        with log.producer() as producer:
            producer.send(TOPIC, value=b"first")


def report_figures(report: Report, samples: dict[str, Samples]) -> None:
    section = report.section(
        "cold start per function (medians, ms)",
        "function",
        "import",
        "import + prepare",
        "floor",
        "objectlog's share",
        "CPU: init / floor",
        "first request",
        "second request",
    )
    for name, s in samples.items():
        init, floor = statistics.median(s.init) * 1000, statistics.median(s.floor) * 1000
        first, second = statistics.median(s.first) * 1000, statistics.median(s.second) * 1000
        cpu, floor_cpu = statistics.median(s.init_cpu) * 1000, statistics.median(s.floor_cpu) * 1000
        section.rows.append(
            (
                name,
                f"{statistics.median(s.imported) * 1000:.0f}",
                f"{init:.0f}",
                f"{floor:.0f}",
                f"{init - floor:.0f} ({(init - floor) / init:.0%})",
                f"{cpu:.0f} / {floor_cpu:.0f} ({cpu / floor_cpu:.2f}x)",
                f"{first:.0f}",
                f"{second:.0f}",
            )
        )
        report.add(
            Row(
                f"{name}: import + init",
                init,
                "ms",
                floor,
                f"floor: {FLOOR_NAMES[name]}",
                f"<= {TARGET}x",
                init <= TARGET * floor,
            )
        )
        report.add(Row(f"{name}: first request", first, "ms", second, "second request"))


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_endpoint_argument(parser)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument(
        "--no-pyc",
        action="store_true",
        help="compile every module from source, as on a layer without .pyc files",
    )
    args = parser.parse_args(argv)
    report = Report()
    report.header(f"load average before: {_load()} on {os.cpu_count()} CPUs")
    with embedded_endpoint(args.dynamodb) as endpoint:
        report.endpoint(endpoint.description)
        prepare_topic(endpoint)
        samples = measure(endpoint, args.rounds, args.no_pyc)
    report.header(f"load average after: {_load()}")
    report_figures(report, samples)
    report.note(
        f"{args.rounds} rounds, each process fresh, handler and floor alternating first; "
        f"{'no .pyc read or written' if args.no_pyc else 'fresh .pyc files (as the layer ships)'}; "
        "pandas hidden (the layer has none)"
    )
    report.print()


if __name__ == "__main__":
    main()
