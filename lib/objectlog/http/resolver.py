"""The HTTP API's resolver: Powertools' APIGatewayHttpResolver with the request it is resolving
kept per thread.

Powertools keeps the request being resolved on a class attribute (``BaseRouter.current_event``,
``BaseRouter.lambda_context``) and the route it matched in one dict per resolver (``context``):
right in Lambda, where an execution environment answers one request at a time, wrong when one
process answers several at once, as the local API gateway does (``objectlog dev``, the test
suite): there a handler read another request's event about once in eight concurrent calls and
answered it (another topic, another Accept header). Powertools' own HttpResolver (its ASGI
adapter) directs the same three attributes to per-task state; this does it for the payload v2
resolver. In Lambda it changes nothing: one request per environment either way.

A ContextVar, not a thread-local: each thread starts with its own context, and
``contextvars.copy_context().run`` or ``asyncio.to_thread`` carry the request to work a handler
hands on. Outside ``resolve`` (at build time, in a thread a handler started without copying its
context) the attributes fall back to what Powertools set, as before.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.api_gateway import BaseRouter
from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent


@dataclass
class _Request:
    """What Powertools keeps of the request being resolved."""

    lambda_context: Any = None
    event: BaseProxyEvent | None = None
    context: dict[str, Any] = field(default_factory=dict)


class HttpApiResolver(APIGatewayHttpResolver):
    """APIGatewayHttpResolver whose current event, Lambda context and routing context belong to
    the request being resolved in the calling thread."""

    def __init__(self, **options: Any) -> None:
        self._building = _Request()  # before any request: what include_router merges
        self._request: ContextVar[_Request | None] = ContextVar("objectlog_request", default=None)
        super().__init__(**options)

    def resolve(self, event: Any, context: Any) -> dict[str, Any]:
        request = _Request(lambda_context=context, context=dict(self._building.context))
        token = self._request.set(request)
        try:
            return super().resolve(event, context)
        finally:
            self._request.reset(token)

    def _to_proxy_event(self, event: dict) -> BaseProxyEvent:
        proxy = super()._to_proxy_event(event)
        self._state.event = proxy
        return proxy

    @property
    def _state(self) -> _Request:
        return self._request.get() or self._building

    @property  # type: ignore[override]
    def current_event(self) -> BaseProxyEvent:
        return self._state.event or BaseRouter.current_event

    @current_event.setter
    def current_event(self, value: BaseProxyEvent) -> None:
        self._state.event = value

    @property
    def lambda_context(self) -> Any:
        return self._state.lambda_context or BaseRouter.lambda_context

    @lambda_context.setter
    def lambda_context(self, value: Any) -> None:
        self._state.lambda_context = value

    @property
    def context(self) -> dict[str, Any]:
        return self._state.context

    @context.setter
    def context(self, value: dict[str, Any]) -> None:
        self._state.context = value
