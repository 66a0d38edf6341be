"""Fault injection on real botocore clients, on top of the moto server.

Faults are botocore event handlers, so they hit the same code path AWS errors would:
- ``before-send`` returning a canned 503 SlowDown / 400 ThrottlingException response goes
  through botocore's retry handler like a real one;
- ``after-call`` raising ReadTimeoutError is "the write was applied, the answer was lost";
- ``before-call`` raising is a crash between two calls (after the PUT, before the commit);
- a pause holds a call until the test releases it.
Each kind is switchable, applies to a seeded share of calls and is counted.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import botocore.exceptions
from botocore.awsrequest import AWSResponse

S3_SLOWDOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)
DYNAMO_THROTTLE = (
    b'{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException",'
    b'"message":"Rate of requests exceeds the allowed throughput."}'
)


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Any:
        yield self.body


def canned(status: int, body: bytes, content_type: str) -> AWSResponse:
    return AWSResponse("http://fault", status, {"Content-Type": content_type}, _Raw(body))


class InjectedCrash(Exception):
    """The process 'died' here: nothing after this call ran."""


@dataclass
class FaultInjector:
    """Registers faults on clients; ``counts`` says how many of each kind were injected."""

    seed: int = 7
    counts: Counter[str] = field(default_factory=Counter)
    _rng: random.Random = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def _roll(self, share: float) -> bool:
        with self._lock:
            return self._rng.random() < share

    def _count(self, kind: str) -> None:
        with self._lock:
            self.counts[kind] += 1

    def s3_slowdown(self, client: Any, operation: str, share: float) -> None:
        def handler(**_: Any) -> AWSResponse | None:
            if self._roll(share):
                self._count(f"s3-503:{operation}")
                return canned(503, S3_SLOWDOWN, "application/xml")
            return None

        client.meta.events.register(f"before-send.s3.{operation}", handler)

    def dynamodb_throttle(self, client: Any, operation: str, share: float) -> None:
        def handler(**_: Any) -> AWSResponse | None:
            if self._roll(share):
                self._count(f"ddb-throttle:{operation}")
                return canned(400, DYNAMO_THROTTLE, "application/x-amz-json-1.0")
            return None

        client.meta.events.register(f"before-send.dynamodb.{operation}", handler)

    def lose_answer(
        self, client: Any, service: str, operation: str, times: int = 1
    ) -> Callable[[], None]:
        """The call is applied, then its answer is lost (a read timeout), ``times`` times.

        Returns a function that stops the fault early.
        """
        left = {"n": times}

        def handler(**_: Any) -> None:
            with self._lock:
                if left["n"] <= 0:
                    return
                left["n"] -= 1
            self._count(f"lost-answer:{operation}")
            raise botocore.exceptions.ReadTimeoutError(endpoint_url="http://fault")

        client.meta.events.register(f"after-call.{service}.{operation}", handler)

        def stop() -> None:
            with self._lock:
                left["n"] = 0

        return stop

    def crash_before(
        self, client: Any, service: str, operation: str, when: Callable[[], bool]
    ) -> None:
        """Raise before the call is sent while ``when()`` is true."""

        def handler(**_: Any) -> None:
            if when():
                self._count(f"crash-before:{operation}")
                raise InjectedCrash(f"crashed before {operation}")

        client.meta.events.register(f"before-call.{service}.{operation}", handler)

    def pause_before(
        self,
        client: Any,
        service: str,
        operation: str,
        reached: threading.Event,
        release: threading.Event,
        times: int = 1,
    ) -> None:
        left = {"n": times}

        def handler(**_: Any) -> None:
            with self._lock:
                if left["n"] <= 0:
                    return
                left["n"] -= 1
            self._count(f"pause:{operation}")
            reached.set()
            release.wait(timeout=30)

        client.meta.events.register(f"before-call.{service}.{operation}", handler)
