"""What a produce through the HTTP API costs per request, counted: dollars per million requests
of 1, 100 and 1,000 records, and per GB, at AWS list prices (us-east-1).

    .venv/bin/python -m bench.http_requests            # 3 sizes x 6 s (~30 s)

The produce function's handler (http.app.lambda_handler) serves API Gateway payload 2.0 events
in this process, as one warm Lambda container, on `objectlog dev`'s moto endpoint (bench.server),
at REQUESTS_PER_S in real time: the topic's activity touch (services.activity) is sent at most
once a second per container, so its share depends on time. Every S3 and DynamoDB request the
handler's log sends is counted (bench.meter: botocore hooks), the head items' sizes read back
to price each write by its units. The first request of each size (the container's topic read)
is left out: the figures are a warm container's.

Prices: API Gateway HTTP API $1.00 per million requests (first 300 million a month), Lambda
$0.20 per million requests and $0.0000133334 per GB-second on arm64, at the deployment's
memory (api_memory_mb, 1769 MB) and the handler's measured duration here (moto; AWS's S3 PUT
takes longer, so the duration line is a floor), https://aws.amazon.com/api-gateway/pricing/,
https://aws.amazon.com/lambda/pricing/; S3 PUT and DynamoDB on-demand write and read units
are bench.run's (S3_PUT_PER_1000, DDB_WRU_PER_MILLION, DDB_RRU_PER_MILLION:
https://aws.amazon.com/s3/pricing/, https://aws.amazon.com/dynamodb/pricing/on-demand/).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.meter import Requests
from bench.report import Report, console
from bench.run import (
    DDB_RRU_PER_MILLION,
    DDB_WRU_PER_MILLION,
    ITEM_WRITES,
    S3_PUT_PER_1000,
    connect,
    read_units,
    write_units,
)
from bench.server import add_endpoint_argument, embedded_endpoint
from objectlog.http.app import lambda_handler
from objectlog.http.routes import PRODUCE
from objectlog.tools.gateway import LambdaContext

API_GATEWAY_PER_MILLION = 1.00
LAMBDA_REQUESTS_PER_MILLION = 0.20
LAMBDA_GB_SECOND_ARM = 0.0000133334
MEMORY_MB = 1769  # infra/terraform: api_memory_mb's default
VALUE_BYTES = 1024
SIZES = (1, 100, 1000)
REQUESTS_PER_S = 4.0
SECONDS = 6.0
TOPIC = "http"


def produce_event(records: int) -> dict[str, Any]:
    value = base64.b64encode(b"x" * VALUE_BYTES).decode()
    body = json.dumps({"records": [{"value": value} for _ in range(records)]})
    path = f"/topics/{TOPIC}/records"
    return {
        "version": "2.0",
        "routeKey": "POST /topics/{topic}/records",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"content-type": "application/json"},
        "pathParameters": {"topic": TOPIC},
        "requestContext": {
            "stage": "$default",
            "requestId": "bench",
            "http": {"method": "POST", "path": path, "sourceIp": "192.0.2.1"},
        },
        "body": body,
        "isBase64Encoded": False,
    }


def measure(
    handler: Callable[..., Any], meter: Requests, records: int, seconds: float
) -> dict[str, Any]:
    """Requests of records each at REQUESTS_PER_S for seconds: per request, the AWS requests
    by kind, the DynamoDB units, the handler's duration."""
    event = produce_event(records)
    handler(event, LambdaContext(function_name="produce"))  # the container's first: left out
    meter.take()
    durations: list[float] = []
    started = time.monotonic()
    with meter.sizing_heads():
        while (n := len(durations)) < seconds * REQUESTS_PER_S:
            time.sleep(max(0.0, started + n / REQUESTS_PER_S - time.monotonic()))
            began = time.perf_counter()
            result = handler(event, LambdaContext(function_name="produce"))
            durations.append(time.perf_counter() - began)
            if result["statusCode"] != 200:
                raise RuntimeError(f"produce failed: {result}")
    tally = meter.take()
    n = len(durations)
    writes = sum(tally.counts[op] for op in ITEM_WRITES)
    return {
        "records": records,
        "requests": n,
        "counts": {kind: count / n for kind, count in sorted(tally.counts.items())},
        "wru": writes * write_units(tally) / n,
        "rru": read_units(tally.read) / n,
        "duration_s": statistics.median(durations),
    }


def dollars_per_million(figures: dict[str, Any]) -> dict[str, float]:
    """Each line's dollars per million HTTP requests."""
    gb_s = MEMORY_MB / 1024 * figures["duration_s"]
    puts = sum(c for kind, c in figures["counts"].items() if kind.startswith("PutObject"))
    return {
        "API Gateway": API_GATEWAY_PER_MILLION,
        "Lambda requests": LAMBDA_REQUESTS_PER_MILLION,
        "Lambda duration": gb_s * LAMBDA_GB_SECOND_ARM * 1e6,
        "S3 PUT": puts * S3_PUT_PER_1000 * 1000,
        "DynamoDB writes": figures["wru"] * DDB_WRU_PER_MILLION,
        "DynamoDB reads": figures["rru"] * DDB_RRU_PER_MILLION,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_endpoint_argument(parser)
    parser.add_argument("--seconds", type=float, default=SECONDS)
    args = parser.parse_args(argv)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")  # no EMF line per request
    report = Report()
    with embedded_endpoint(args.dynamodb) as endpoint:
        report.endpoint(endpoint.description)
        log = connect(endpoint)
        log.create_topic(TOPIC, 1)
        meter = Requests(log)
        handler = lambda_handler(PRODUCE, lambda: log)
        results = []
        for records in SIZES:
            results.append(measure(handler, meter, records, args.seconds))
            console.print(f"  {records} record(s) a request: {results[-1]['counts']}")
        handler.services.close()
    section = report.section(
        f"produce through the HTTP API, {VALUE_BYTES} B records, one warm container at "
        f"{REQUESTS_PER_S:g} requests/s (AWS list prices, us-east-1)",
        "records / request",
        "AWS requests / request",
        "WRU / request",
        "handler ms",
        "$ / million requests (API GW, Lambda req, Lambda GB-s, S3 PUT, DDB W, DDB R)",
        "$ / million requests",
        "$ / GB",
    )
    for figures in results:
        lines = dollars_per_million(figures)
        total = sum(lines.values())
        gb_per_million = figures["records"] * VALUE_BYTES / 1e9 * 1e6
        section.rows.append(
            (
                str(figures["records"]),
                ", ".join(f"{kind} {count:.2f}" for kind, count in figures["counts"].items()),
                f"{figures['wru']:.2f}",
                f"{figures['duration_s'] * 1000:.0f}",
                " + ".join(f"{v:.2f}" for v in lines.values()),
                f"{total:.2f}",
                f"{total / gb_per_million:.4f}",
            )
        )
    report.note(
        "per GB: the request's dollars over its records' value bytes; Lambda duration at "
        f"{MEMORY_MB} MB and the median handler time measured here"
    )
    report.print()


if __name__ == "__main__":
    main()
