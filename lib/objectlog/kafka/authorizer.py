"""How the agent asks services.access about one request (issue 37, docs/security.md): a Gate
holds the request's principal and the connection's host, and answers the questions the
guards (kafka.guards) and the handlers ask: may it do this, which of these may it see, which
authorized-operations bits does it have. The helpers below build the answers Kafka gives for
what a principal may not do: the request's own resources, mirrored, each with the error.

The host is the client's address as the agent's socket sees it: behind the load balancer, the
balancer's own (a Network Load Balancer with client IP preservation off, as the Terraform
module deploys it), so only ``*`` hosts are meaningful in ACLs there (docs/security.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from objectlog.format.acls import CLUSTER_NAME, Operation, ResourceType
from objectlog.kafka import operations
from objectlog.kafka.context import ApiContext, request_principal
from objectlog.kafka.wire import Request
from objectlog.services.access import AccessControl
from objectlog.services.authorization import operations_bits

# The address of the connection the request being answered came on (server.py sets it).
HOST: ContextVar[str] = ContextVar("objectlog_kafka_host", default="*")

Handler = Callable[[Request], Awaitable[Any]]
Guard = Callable[["Guarded", Request, Handler], Awaitable[Any]]
TOPIC_FAILED = ErrorCode.topic_authorization_failed
GROUP_FAILED = ErrorCode.group_authorization_failed
CLUSTER_FAILED = ErrorCode.cluster_authorization_failed
TXN_FAILED = ErrorCode.transactional_id_authorization_failed
FAILED_FOR = {
    ResourceType.TOPIC: TOPIC_FAILED,
    ResourceType.GROUP: GROUP_FAILED,
    ResourceType.CLUSTER: CLUSTER_FAILED,
    ResourceType.TRANSACTIONAL_ID: TXN_FAILED,
}
OPERATIONS_OFF = {
    ResourceType.TOPIC: operations.TOPIC,
    ResourceType.GROUP: operations.GROUP,
    ResourceType.CLUSTER: operations.CLUSTER,
}


@dataclass(frozen=True)
class Gate:
    """One request's principal and host before the door's AccessControl."""

    access: AccessControl
    principal: str
    host: str

    @classmethod
    def current(cls, access: AccessControl) -> Gate:
        """The gate of the request being answered (the server's context variables)."""
        return cls(access, request_principal(), HOST.get())

    def allows(
        self, operation: Operation, kind: ResourceType, name: str, *, quiet: bool = False
    ) -> bool:
        return self.access.allows(self.principal, self.host, operation, kind, name, quiet=quiet)

    def allows_cluster(self, operation: Operation, *, quiet: bool = False) -> bool:
        return self.allows(operation, ResourceType.CLUSTER, CLUSTER_NAME, quiet=quiet)

    def may_create_topic(self, name: str) -> bool:
        """CreateTopics' and auto-creation's rule (services.access, shared with the HTTP
        doors): CREATE on the cluster, or on the topic."""
        return self.access.may_create_topic(self.principal, self.host, name)

    def visible(self, operation: Operation, kind: ResourceType, names: Iterable[str]) -> set[str]:
        """The names the principal may see (refusals not logged: a list left short)."""
        return {n for n in set(names) if self.allows(operation, kind, n, quiet=True)}

    def bits(self, kind: ResourceType, name: str, asked: object) -> int:
        """The authorized-operations field: NOT_ASKED unless asked; with authorization off,
        every operation Kafka defines for the resource type."""
        if not asked:
            return operations.NOT_ASKED
        allowed = self.access.operations(self.principal, self.host, kind, name)
        if allowed is None:
            return operations.authorized(OPERATIONS_OFF[kind], True)
        return operations_bits(allowed)


# ---- the answers for refused resources --------------------------------------------------------


@dataclass(frozen=True)
class TopicShape:
    """Where an API keeps its topics and partitions, in the request and in the answer, so a
    refused topic is answered partition by partition as Kafka answers it."""

    topics: str  # the request's list of topics
    partitions: str  # a request topic's partitions: entities, or partition numbers
    answers: str  # the response's list of topics
    answer_partitions: str  # a response topic's partitions
    name: str = "name"  # a request topic's name field
    index: str | None = "partition_index"  # a request partition's number (None: numbers)
    answer_name: str = "name"
    answer_index: str = "partition_index"
    error: str = "error_code"
    extra: tuple[tuple[str, Any], ...] = ()  # fields a refused partition answers besides

    def refused_topic(self, topic: Any, code: ErrorCode) -> dict[str, Any]:
        parts = getattr(topic, self.partitions) or ()
        return {
            self.answer_name: getattr(topic, self.name),
            **({"topic_id": topic.topic_id} if hasattr(topic, "topic_id") else {}),
            self.answer_partitions: [
                {
                    self.answer_index: p if self.index is None else getattr(p, self.index),
                    self.error: code,
                    **dict(self.extra),
                }
                for p in parts
            ],
        }

    def refused_all(self, body: Any, code: ErrorCode, **top: Any) -> dict[str, Any]:
        """The whole request refused: every topic's partitions answer ``code``."""
        topics = getattr(body, self.topics) or ()
        return {
            "throttle_time": 0,
            **top,
            self.answers: [self.refused_topic(t, code) for t in topics],
        }


Ask = Callable[[Any], bool]


def split(items: Sequence[Any], allowed: Ask) -> tuple[list[Any], list[Any]]:
    """The items allowed and the items refused, each in the request's order."""
    yes: list[Any] = []
    no: list[Any] = []
    for item in items:
        (yes if allowed(item) else no).append(item)
    return yes, no


def narrowed(body: Any, **fields: Any) -> Any:
    """The request body with some fields replaced (the refused resources left out)."""
    return dataclasses.replace(body, **fields)


# ---- what the guards (kafka.guards, kafka.group_guards) share ------------------------------


class Guarded:
    """What a guard works with: the request's gate and the handlers' context."""

    def __init__(self, ctx: ApiContext, gate: Gate) -> None:
        self.ctx = ctx
        self.gate = gate


def with_body(request: Request, body: Any) -> Request:
    return Request(
        request.api_key, request.api_version, request.correlation_id, request.client_id, body
    )


async def each(
    request: Request,
    handler: Handler,
    field: str,
    answers: str,
    allowed: Callable[[Any], bool],
    refused_answer: Callable[[Any], dict[str, Any]],
    *,
    empty: dict[str, Any] | None = None,
    changes: dict[str, Any] | None = None,
) -> Any:
    """The items of the request's list ``field`` that ``allowed`` refuses answered by
    ``refused_answer`` in the answer's list ``answers``; the rest by the handler, asked with
    the request without them (and ``changes``), or not asked when none is left (the answer's
    other fields then ``empty``)."""
    body = request.body
    yes, no = split(getattr(body, field) or (), allowed)
    if not no:
        return await handler(request)
    if yes:
        answer = await handler(
            with_body(request, narrowed(body, **{field: yes}, **(changes or {})))
        )
        if answer is None:  # Produce with acks=0 is not answered
            return None
    else:
        answer = {"throttle_time": 0, **(empty or {}), answers: []}
    answer[answers] = [*answer[answers], *(refused_answer(item) for item in no)]
    return answer


def refused(code: ErrorCode, **fields: Any) -> dict[str, Any]:
    """A whole request refused by its top-level error (the rest of its answer zero)."""
    return {"throttle_time": 0, "error_code": code, **fields}


async def per_topic(
    request: Request,
    handler: Handler,
    shape: TopicShape,
    allowed: Callable[[Any], bool],
    *,
    empty: dict[str, Any] | None = None,
    when_refused: dict[str, Any] | None = None,
) -> Any:
    """The topics ``allowed`` refuses answered TOPIC_AUTHORIZATION_FAILED partition by
    partition, the rest by the handler (``each``); ``when_refused``: fields of the body
    changed when any topic was refused (Fetch answers at once)."""

    def refused_topic(topic: Any) -> dict[str, Any]:
        return shape.refused_topic(topic, TOPIC_FAILED)

    return await each(
        request,
        handler,
        shape.topics,
        shape.answers,
        allowed,
        refused_topic,
        empty=empty,
        changes=when_refused,
    )


def topic_allows(
    g: Guarded, operation: Operation, name_field: str = "name"
) -> Callable[[Any], bool]:
    return lambda topic: g.gate.allows(operation, ResourceType.TOPIC, getattr(topic, name_field))
