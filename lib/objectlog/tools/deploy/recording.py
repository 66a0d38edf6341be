"""Recording the AWS calls handlers make: a botocore hook on every client of this process,
each call kept as the (IAM action, resource ARN) it is authorized as, per function."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import boto3
import botocore.handlers

from objectlog.tools.deploy.policies import Call, iam_calls, leading_keys


class CallRecorder:
    """(action, resource) pairs per function, from every botocore client in this process.

    A ``provide-client-params`` hook sees each API call of a boto3 client (sessions
    made after ``install_hook()`` get it from botocore's built-in handler list, and the session
    objectlog.adapters.aws caches gets it explicitly). It records only while an invocation is active
    (``recording(function)``); invocations are serialized by the environment lock, so every call
    in that window is that function's, on whichever thread (a fetch reads slices on several).
    """

    def __init__(self, account: str) -> None:
        self.account = account
        self.calls: dict[str, set[Call]] = defaultdict(set)
        # the partition keys each call named (IAM's dynamodb:LeadingKeys), per function
        self.leading_keys: dict[str, dict[Call, set[str]]] = defaultdict(lambda: defaultdict(set))
        self.counts: dict[str, int] = defaultdict(int)
        # calls made on other threads than the invocation's (a fetch's concurrent reads)
        self.other_thread_counts: dict[str, int] = defaultdict(int)
        self._invocation_thread = 0

    def recording(self, function: str) -> AbstractContextManager[None]:
        self._invocation_thread = threading.get_ident()
        return _active((self, function))

    def paused(self) -> AbstractContextManager[None]:
        """Nobody's calls recorded for the duration (the harness's own, amid a recording)."""
        return _active(None)

    def record(
        self, function: str, service: str, operation: str, params: Mapping[str, Any], region: str
    ) -> None:
        keys = leading_keys(service, operation, params)
        for call in iam_calls(service, operation, params, region, self.account):
            self.calls[function].add(call)
            self.leading_keys[function][call] |= keys
        self.counts[function] += 1
        if threading.get_ident() != self._invocation_thread:
            self.other_thread_counts[function] += 1


_ACTIVE: tuple[CallRecorder, str] | None = None


@contextmanager
def _active(active: tuple[CallRecorder, str] | None) -> Iterator[None]:
    """Whose calls are recorded for the duration (None: nobody's)."""
    global _ACTIVE
    previous = _ACTIVE
    _ACTIVE = active
    try:
        yield
    finally:
        _ACTIVE = previous


HOOK_ID = "objectlog-deploy-recorder"


def _hook(params: Mapping[str, Any], model: Any, context: Any = None, **kwargs: Any) -> None:
    active = _ACTIVE
    if active is None:
        return
    recorder, function = active
    service = model.service_model.endpoint_prefix
    region = (context or {}).get("client_region") or "us-east-1"
    recorder.record(function, service, model.name, params, region)


def install_hook(session: boto3.Session | None = None) -> None:
    """Put the recording hook on every botocore session made from now on, and on session."""
    entry = ("provide-client-params", _hook)
    if entry not in botocore.handlers.BUILTIN_HANDLERS:
        botocore.handlers.BUILTIN_HANDLERS.append(entry)
    if session is not None:
        session.events.register("provide-client-params", _hook, unique_id=HOOK_ID)
