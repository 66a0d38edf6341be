"""objectlog.http.resolver: two requests resolved at once in two threads each see their own
event, Lambda context, path parameters and Accept header, as the local API gateway needs
(Powertools keeps them on the BaseRouter class and one dict per resolver)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import Router

from objectlog.http.app import warm_event
from objectlog.http.resolver import HttpApiResolver


def seen_by_a_route(first_inside: threading.Event, second_done: threading.Event) -> Any:
    """A resolver whose route answers what it reads of its request: the first request to arrive
    waits inside its route until the second has been resolved whole."""
    app = HttpApiResolver()
    router = Router()

    @router.get("/items/<item>")
    def item(item: str) -> dict[str, Any]:
        if not first_inside.is_set():
            first_inside.set()
            assert second_done.wait(10)
        event = router.current_event
        return {
            "item": item,
            "path": event.path,
            "accept": event.headers.get("accept"),
            "request": router.lambda_context,
            "route": router.context["_route_args"],
        }

    app.include_router(router)
    return app


def request(item: str) -> dict[str, Any]:
    event = warm_event("GET", f"/items/{item}")
    event["headers"] = {"accept": f"application/{item}"}
    return event


def test_two_requests_resolved_at_once_each_see_their_own() -> None:
    first_inside, second_done = threading.Event(), threading.Event()
    app = seen_by_a_route(first_inside, second_done)

    def resolve(item: str) -> str:
        return str(app.resolve(request(item), f"context-{item}")["body"])

    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(resolve, "first")
        assert first_inside.wait(10)
        second = resolve("second")
        second_done.set()
        first_body = first.result(10)
    for body, item in ((first_body, "first"), (second, "second")):
        assert f'"item":"{item}"' in body
        assert f'"path":"/items/{item}"' in body
        assert f'"accept":"application/{item}"' in body
        assert f'"request":"context-{item}"' in body
        assert f'"route":{{"item":"{item}"}}' in body
