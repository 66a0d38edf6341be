"""Powertools Logger (structured JSON), Metrics (EMF) and Tracer shared by the functions."""

import functools
import numbers
from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

SERVICE = "objectlog"
logger = Logger(service=SERVICE)
metrics = Metrics(namespace="objectlog", service=SERVICE)

HandlerT = TypeVar("HandlerT", bound=Callable[..., Any])


class Tracing:
    """Powertools' Tracer, built only when tracing is on.

    ``Tracer()`` imports the X-Ray SDK and patches botocore even when tracing is off (125-230
    ms of a cold start, bench.cold_start). Whether it is on is Powertools' own rule
    (``Tracer._is_tracer_disabled``): off when POWERTOOLS_TRACE_DISABLED is true (infra/
    terraform sets it when the functions' X-Ray tracing is off) and outside Lambda (no
    LAMBDA_TASK_ROOT, or SAM's and Chalice's local modes). Decided once, when this module is
    imported, as the Tracer decides when it is built; while off the decorator returns the
    handler itself and annotations are dropped."""

    def __init__(self, service: str) -> None:
        self.service = service
        self.enabled = not Tracer._is_tracer_disabled()

    @functools.cached_property
    def tracer(self) -> Tracer:
        return Tracer(service=self.service)

    def capture_lambda_handler(self, handler: HandlerT) -> HandlerT:
        if not self.enabled:
            return handler
        return self.tracer.capture_lambda_handler(handler)  # type: ignore[return-value]

    def put_annotation(self, key: str, value: str | numbers.Number | bool) -> None:
        if self.enabled:
            self.tracer.put_annotation(key=key, value=value)


tracer = Tracing(SERVICE)


def log_metrics(handler: HandlerT) -> HandlerT:
    """metrics.log_metrics, keeping nothing while POWERTOOLS_METRICS_DISABLED is set: Powertools'
    flush then neither prints nor clears what was added, and once a metric holds 100 values it
    prints them anyway (on a local stack's stdout, or a CLI's)."""
    flushing = metrics.log_metrics(handler)

    @functools.wraps(handler)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return flushing(*args, **kwargs)
        finally:
            if is_metrics_disabled():
                metrics.clear_metrics()

    return run  # type: ignore[return-value]
