"""Powertools Logger (structured JSON), Metrics (EMF) and Tracer shared by the functions."""

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

SERVICE = "objectlog"
logger = Logger(service=SERVICE)
metrics = Metrics(namespace="objectlog", service=SERVICE)
tracer = Tracer(service=SERVICE)

HandlerT = TypeVar("HandlerT", bound=Callable[..., Any])


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
