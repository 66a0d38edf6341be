"""Per-API request counts, errors and latency of a Kafka agent, as CloudWatch metrics.

The agent records every request it answers; every interval it prints one CloudWatch Embedded
Metric Format line (JSON on stdout, which ECS's awslogs driver ships to CloudWatch Logs, where
the metrics appear) with, per API, Requests, Errors (requests whose answer carried an error
code, or that failed) and the latency's sum, max and count; then it starts counting afresh.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from kio.schema.index import api_key_map

NAMESPACE = "objectlog/kafka-agent"


@dataclass
class _Counts:
    requests: int = 0
    errors: int = 0
    latency_sum_ms: float = 0.0
    latency_max_ms: float = 0.0


class ApiMetrics:
    def __init__(self) -> None:
        self._counts: dict[str, _Counts] = defaultdict(_Counts)
        self._lock = threading.Lock()

    def record(self, api_key: int, seconds: float, *, error: bool) -> None:
        name = api_key_map.get(api_key, str(api_key))
        millis = seconds * 1000
        with self._lock:
            counts = self._counts[name]
            counts.requests += 1
            counts.errors += int(error)
            counts.latency_sum_ms += millis
            counts.latency_max_ms = max(counts.latency_max_ms, millis)

    def snapshot(self) -> dict[str, _Counts]:
        """The counts since the last snapshot, by API name; counting starts afresh."""
        with self._lock:
            taken, self._counts = dict(self._counts), defaultdict(_Counts)
        return taken

    def emf_lines(self, service: str) -> list[str]:
        """One EMF line per API with requests since the last call."""
        lines = []
        stamp = int(time.time() * 1000)
        for api, counts in sorted(self.snapshot().items()):
            document: dict[str, Any] = {
                "_aws": {
                    "Timestamp": stamp,
                    "CloudWatchMetrics": [
                        {
                            "Namespace": NAMESPACE,
                            "Dimensions": [["Service", "Api"]],
                            "Metrics": [
                                {"Name": "Requests", "Unit": "Count"},
                                {"Name": "Errors", "Unit": "Count"},
                                {"Name": "Latency", "Unit": "Milliseconds"},
                            ],
                        }
                    ],
                },
                "Service": service,
                "Api": api,
                "Requests": counts.requests,
                "Errors": counts.errors,
                "Latency": {
                    "Sum": round(counts.latency_sum_ms, 3),
                    "Max": round(counts.latency_max_ms, 3),
                    "Min": 0,
                    "Count": counts.requests,
                },
            }
            lines.append(json.dumps(document, separators=(",", ":")))
        return lines


def carries_error(values: Any) -> bool:
    """Whether a response (the handlers' mapping) carries a non-zero error code anywhere."""
    if isinstance(values, dict):
        code = values.get("error_code")
        if code is not None and int(code) != 0:
            return True
        return any(carries_error(v) for v in values.values() if isinstance(v, dict | list))
    if isinstance(values, list):
        return any(carries_error(v) for v in values)
    return False
