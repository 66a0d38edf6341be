"""Fault injection on real botocore clients, on top of any endpoint.

Used by the test suite and by `objectlog verify` (the reliability workload).

Faults are botocore event handlers, so they take the code path a real AWS failure would:

- ``throttle``: ``before-send`` answers with a canned 503 SlowDown (S3) or 400
  ThrottlingException (DynamoDB), which botocore's retry handler retries like a real one;
- ``lose_answer``: ``after-call`` raises ReadTimeoutError: the call was applied, its answer lost;
- ``lose_answer_in_sdk``: ``before-send`` sends the call, then raises ReadTimeoutError inside
  botocore's retry loop: the call was applied and botocore's retry handler sends it again;
- ``crash_before``: ``before-call`` raises: the process stopped between two calls (say after
  the PUT and before the commit), so this call never left;
- ``pause``: holds a call (before it is sent, or after it was applied) until the test releases it;
- ``delay``: slows calls down, to widen race windows;
- ``watch``: injects nothing and only counts calls.

The clients may be botocore's or aiobotocore's (the asyncio client's, under
adapters.aio_clients.BridgedClient): on the latter a canned answer is aiobotocore's response
type, and a fault that waits (slow, delay, pause, a send of its own) is a coroutine the client
awaits, so it holds that call only and never the event loop. A call's parameters pass from
before-parameter-build to before-send in a ContextVar: each thread, and each asyncio task, has
its own.

Every fault applies to a share of the calls it matches (drawn from one seeded random.Random),
can be limited to ``times`` injections and to calls whose parameters pass ``when``, can be
switched off and on, and is counted: ``FaultInjector.counts`` by name, ``Fault.injected`` each.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import botocore.exceptions
from botocore.awsrequest import AWSResponse

Params = Mapping[str, Any]
Predicate = Callable[[Params], bool]

S3_SLOWDOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)
DYNAMODB_THROTTLING = (
    b'{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException",'
    b'"message":"Rate of requests exceeds the allowed throughput."}'
)
S3_INTERNAL_ERROR = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code>'
    b"<Message>We encountered an internal error. Please try again.</Message></Error>"
)
DYNAMODB_INTERNAL_ERROR = (
    b'{"__type":"com.amazon.coral.service#InternalServerError","message":"Internal server error"}'
)
_PARAMS = "objectlog_fault_params"
# A call's parameters, from before-parameter-build to before-send (which gets no context): a
# call stays on its thread, or in its asyncio task, and each has its own context.
_CALL_PARAMS: ContextVar[Params | None] = ContextVar(_PARAMS, default=None)


class InjectedCrash(botocore.exceptions.BotoCoreError):
    """The process stopped before this call was sent: it never reached the service."""

    fmt = "injected crash before {operation}"


# ---- predicates on a call's parameters, for ``when`` -------------------------------------


def commits(params: Params) -> bool:
    """The UpdateItem that commits a ref to a partition head (it appends to the tail, or
    replaces it when it carries a spill)."""
    return "list_append(tail" in str(params.get("UpdateExpression", "")) or carried_spills(params)


def carried_spills(params: Params) -> bool:
    """A commit that carries a spill (stores.dynamo_metadata: it sets the whole tail)."""
    return "tail = :tail" in str(params.get("UpdateExpression", ""))


def spills(params: Params) -> bool:
    """The UpdateItem of a spill made on its own, moving tail refs into a manifest."""
    return "REMOVE tail[" in str(params.get("UpdateExpression", ""))


def swaps(params: Params) -> bool:
    """The compaction swap's UpdateItem on a partition head."""
    return "SET ml = :ml, lso = :lso" in str(params.get("UpdateExpression", ""))


def on_partition(partition: int) -> Predicate:
    """Calls on one partition head (any topic)."""
    return lambda params: str(params.get("Key", {}).get("pk", {}).get("S", "")).endswith(
        f"#{partition}"
    )


def from_producer(producer_id: str | None) -> Predicate:
    """Commits carrying this producer id (its sequence is kept under "<id>s" in the head)."""
    return lambda params: (
        params.get("ExpressionAttributeNames", {}).get("#ks") == (f"{producer_id}s")
    )


def l0_objects(params: Params) -> bool:
    """S3 calls on L0 intake objects (not manifests)."""
    return str(params.get("Key", "")).endswith(".l0")


def both(*predicates: Predicate) -> Predicate:
    return lambda params: all(p(params) for p in predicates)


# ---- canned responses --------------------------------------------------------------------


class _Body:
    """A response body botocore can stream."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


class _AioBody:
    """A response body aiobotocore can read."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    async def read(self, *_: Any) -> bytes:
        return self.data


def canned(status: int, body: bytes, content_type: str, *, aio: bool = False) -> AWSResponse:
    """An answer for before-send to return: aiobotocore's type for an aiobotocore client."""
    headers: Any = {"Content-Type": content_type, "Content-Length": str(len(body))}
    if aio:
        from aiobotocore.awsrequest import AioAWSResponse  # the aio extra's

        return AioAWSResponse("http://injected.fault", status, headers, _AioBody(body))
    return AWSResponse("http://injected.fault", status, headers, _Body(body))


def is_aio(client: Any) -> bool:
    """Whether client is aiobotocore's (its event handlers may be coroutines): its endpoint
    sends with a coroutine."""
    return inspect.iscoroutinefunction(client._endpoint.http_session.send)


def _waited(client: Any, seconds: float) -> Coroutine[Any, Any, None] | None:
    """Wait seconds in a handler: blocking the calling thread, or, for an aiobotocore client,
    as a coroutine its caller awaits (the loop runs on meanwhile)."""
    if is_aio(client):
        return asyncio.sleep(seconds)
    time.sleep(seconds)
    return None


# ---- faults ------------------------------------------------------------------------------


@dataclass(eq=False)
class Fault:
    """One registered fault: switch it with ``enabled`` (or off()/on()), read ``injected``."""

    name: str
    share: float = 1.0
    times: int | None = None
    when: Predicate | None = None
    enabled: bool = True
    injected: int = 0

    def off(self) -> None:
        self.enabled = False

    def on(self) -> None:
        self.enabled = True


@dataclass(eq=False)
class Pause(Fault):
    """A fault that holds the call: ``reached`` is set when one is held, release() lets it go."""

    reached: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)
    hold_s: float = 30.0

    def wait_reached(self, timeout: float = 10.0) -> bool:
        return self.reached.wait(timeout)

    def release(self) -> None:
        self.released.set()


class FaultInjector:
    """Registers faults on clients; ``counts`` says how many of each name were injected."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.counts: Counter[str] = Counter()
        self.faults: list[Fault] = []
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._registered: list[tuple[Any, str, Callable[..., Any]]] = []
        self._param_hooks: set[tuple[int, str]] = set()

    # ---- the kinds ---------------------------------------------------------------------

    def throttle(
        self,
        client: Any,
        operation: str,
        *,
        share: float = 1.0,
        times: int | None = None,
        when: Predicate | None = None,
    ) -> Fault:
        """503 SlowDown from S3, 400 ThrottlingException from DynamoDB (botocore retries)."""
        responses = {
            "s3": (503, S3_SLOWDOWN, "application/xml"),
            "dynamodb": (400, DYNAMODB_THROTTLING, "application/x-amz-json-1.0"),
        }
        return self._error_response("throttle", responses, client, operation, share, times, when)

    def server_error(
        self,
        client: Any,
        operation: str,
        *,
        share: float = 1.0,
        times: int | None = None,
        when: Predicate | None = None,
    ) -> Fault:
        """500 InternalError from S3, 500 InternalServerError from DynamoDB: the call was not
        applied (botocore retries it)."""
        responses = {
            "s3": (500, S3_INTERNAL_ERROR, "application/xml"),
            "dynamodb": (500, DYNAMODB_INTERNAL_ERROR, "application/x-amz-json-1.0"),
        }
        return self._error_response("5xx", responses, client, operation, share, times, when)

    def _error_response(
        self,
        name: str,
        responses: Mapping[str, tuple[int, bytes, str]],
        client: Any,
        operation: str,
        share: float,
        times: int | None,
        when: Predicate | None,
    ) -> Fault:
        service = _service(client)
        if service not in responses:
            raise ValueError(f"no {name} response for {service}")
        status, body, content_type = responses[service]
        fault = self._add(Fault(f"{name}:{operation}", share, times, when), client, operation)
        aio = is_aio(client)

        def handler(**_: Any) -> AWSResponse | None:
            if self._fire(fault, _CALL_PARAMS.get()):
                return canned(status, body, content_type, aio=aio)
            return None

        self._register(client, f"before-send.{service}.{operation}", handler)
        return fault

    def lose_answer(
        self,
        client: Any,
        operation: str,
        *,
        share: float = 1.0,
        times: int | None = None,
        when: Predicate | None = None,
    ) -> Fault:
        """The call was applied, then its answer was lost (a read timeout)."""
        fault = self._add(Fault(f"lost-answer:{operation}", share, times, when), client, operation)

        def handler(context: dict[str, Any], **_: Any) -> None:
            if self._fire(fault, context.get(_PARAMS, {})):
                raise botocore.exceptions.ReadTimeoutError(endpoint_url="http://injected.fault")

        self._register(client, f"after-call.{_service(client)}.{operation}", handler)
        return fault

    def lose_answer_in_sdk(
        self,
        client: Any,
        operation: str,
        *,
        share: float = 1.0,
        times: int | None = None,
        when: Predicate | None = None,
    ) -> Fault:
        """The call was applied and its answer timed out inside botocore, whose retry handler
        then decides what follows (by default it sends the call again, and a conditional
        write's resend fails its condition against its own first attempt)."""
        fault = self._add(
            Fault(f"sdk-lost-answer:{operation}", share, times, when), client, operation
        )
        endpoint = client._endpoint

        def lost(request: Any, response: AWSResponse) -> AWSResponse:
            if response.status_code >= 300:
                return response  # not applied: botocore sees the real answer
            raise botocore.exceptions.ReadTimeoutError(endpoint_url=request.url)

        def handler(request: Any, **_: Any) -> AWSResponse | None:
            if not _first_attempt(request) or not self._fire(fault, _CALL_PARAMS.get()):
                return None
            return lost(request, endpoint.http_session.send(request))

        async def aio_handler(request: Any, **_: Any) -> AWSResponse | None:
            if not _first_attempt(request) or not self._fire(fault, _CALL_PARAMS.get()):
                return None
            response = await endpoint.http_session.send(request)
            await response.content  # read whole: its connection goes back to the pool
            return lost(request, response)

        event = f"before-send.{_service(client)}.{operation}"
        self._register(client, event, aio_handler if is_aio(client) else handler)
        return fault

    def slow_answer(
        self,
        client: Any,
        operation: str,
        seconds: float,
        *,
        share: float = 1.0,
        times: int | None = None,
        when: Predicate | None = None,
    ) -> Fault:
        """The call was applied, but its answer came after the client's timeout: the caller
        waits ``seconds`` and then gets a read timeout."""
        fault = self._add(Fault(f"slow:{operation}", share, times, when), client, operation)

        def timed_out() -> None:
            raise botocore.exceptions.ReadTimeoutError(endpoint_url="http://injected.slow")

        def handler(context: dict[str, Any], **_: Any) -> None:
            if self._fire(fault, context.get(_PARAMS, {})):
                time.sleep(seconds)
                timed_out()

        async def aio_handler(context: dict[str, Any], **_: Any) -> None:
            if self._fire(fault, context.get(_PARAMS, {})):
                await asyncio.sleep(seconds)
                timed_out()

        event = f"after-call.{_service(client)}.{operation}"
        self._register(client, event, aio_handler if is_aio(client) else handler)
        return fault

    def crash_before(
        self,
        client: Any,
        operation: str,
        *,
        share: float = 1.0,
        times: int | None = None,
        when: Predicate | None = None,
        error: Callable[[], BaseException] | None = None,
    ) -> Fault:
        """The call is never sent: by default an InjectedCrash (a botocore error, so the
        library sees "nothing left"); ``error`` raises something else instead."""
        fault = self._add(Fault(f"crash:{operation}", share, times, when), client, operation)

        def handler(context: dict[str, Any], **_: Any) -> None:
            if self._fire(fault, context.get(_PARAMS, {})):
                raise error() if error is not None else InjectedCrash(operation=operation)

        self._register(client, f"before-call.{_service(client)}.{operation}", handler)
        return fault

    def pause(
        self,
        client: Any,
        operation: str,
        *,
        after: bool = False,
        share: float = 1.0,
        times: int | None = 1,
        when: Predicate | None = None,
        hold_s: float = 30.0,
    ) -> Pause:
        """Hold matching calls until release(): before they are sent, or (after=True) once
        they were applied and before their answer is returned."""
        stage = "after-call" if after else "before-call"
        pause = Pause(f"pause:{operation}", share, times, when, hold_s=hold_s)
        self._add(pause, client, operation)

        def handler(context: dict[str, Any], **_: Any) -> None:
            if self._fire(pause, context.get(_PARAMS, {})):
                pause.reached.set()
                pause.released.wait(pause.hold_s)

        async def aio_handler(context: dict[str, Any], **_: Any) -> None:
            # the wait on a worker thread: it holds this call, never the event loop
            if self._fire(pause, context.get(_PARAMS, {})):
                pause.reached.set()
                await asyncio.to_thread(pause.released.wait, pause.hold_s)

        event = f"{stage}.{_service(client)}.{operation}"
        self._register(client, event, aio_handler if is_aio(client) else handler)
        return pause

    def delay(
        self,
        client: Any,
        operation: str,
        seconds: float,
        *,
        share: float = 1.0,
        times: int | None = None,
        when: Predicate | None = None,
    ) -> Fault:
        """Sleep before sending: it blocks the calling thread (an aiobotocore client's call
        awaits it)."""
        fault = self._add(Fault(f"delay:{operation}", share, times, when), client, operation)

        def handler(**_: Any) -> Coroutine[Any, Any, None] | None:
            if self._fire(fault, _CALL_PARAMS.get()):
                return _waited(client, seconds)
            return None

        self._register(client, f"before-send.{_service(client)}.{operation}", handler)
        return fault

    def watch(self, client: Any, operation: str, *, when: Predicate | None = None) -> Fault:
        """Inject nothing, only count the matching calls (once per call, not per attempt)."""
        fault = self._add(Fault(f"call:{operation}", when=when), client, operation)

        def handler(context: dict[str, Any], **_: Any) -> None:
            self._fire(fault, context.get(_PARAMS, {}))

        self._register(client, f"before-call.{_service(client)}.{operation}", handler)
        return fault

    # ---- bookkeeping -------------------------------------------------------------------

    def injected(self, prefix: str = "") -> int:
        """Injections so far whose name starts with prefix (all of them by default)."""
        with self._lock:
            return sum(n for name, n in self.counts.items() if name.startswith(prefix))

    def off(self) -> None:
        """Switch every fault off (pauses are released)."""
        for fault in self.faults:
            fault.off()
            if isinstance(fault, Pause):
                fault.release()

    def remove(self) -> None:
        """Unregister every handler from its client."""
        self.off()
        for events, event_name, handler in self._registered:
            events.unregister(event_name, handler)
        self._registered.clear()

    def _add(self, fault: Fault, client: Any, operation: str) -> Fault:
        if fault.when is not None:
            self._capture_params(client, operation)
        self.faults.append(fault)
        return fault

    def _fire(self, fault: Fault, params: Params | None) -> bool:
        """Whether this call gets the fault; counts it if so."""
        if not fault.enabled:
            return False
        if fault.when is not None and (params is None or not fault.when(params)):
            return False
        with self._lock:
            if fault.times is not None and fault.injected >= fault.times:
                return False
            if fault.share < 1.0 and self._rng.random() >= fault.share:
                return False
            fault.injected += 1
            self.counts[fault.name] += 1
            return True

    def _capture_params(self, client: Any, operation: str) -> None:
        """Keep each call's API parameters where later hooks of the same call find them."""
        key = (id(client), operation)
        if key in self._param_hooks:
            return
        self._param_hooks.add(key)

        def handler(params: Params, context: dict[str, Any], **_: Any) -> None:
            context[_PARAMS] = params
            _CALL_PARAMS.set(params)  # before-send gets no context

        self._register(client, f"before-parameter-build.{_service(client)}.{operation}", handler)

    def _register(self, client: Any, event_name: str, handler: Callable[..., Any]) -> None:
        client.meta.events.register(event_name, handler)
        self._registered.append((client.meta.events, event_name, handler))


def _first_attempt(request: Any) -> bool:
    """Whether botocore sends this request for the first time (its amz-sdk-request header)."""
    header = request.headers.get("amz-sdk-request", b"")
    text = header.decode() if isinstance(header, bytes) else str(header)
    return text.split(";")[0].strip() == "attempt=1"


def _service(client: Any) -> str:
    return str(client.meta.service_model.service_id.hyphenize())


def fast_retries(monkeypatch: Any, delay_s: float = 0.001) -> None:
    """Make botocore's retry backoff tiny, so throttling tests stay fast.

    The retry decisions and attempt limits are unchanged; only the sleep between attempts is.
    """
    from botocore.retries import standard

    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", lambda self, ctx: delay_s)
