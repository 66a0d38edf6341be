"""Authorization of the Schema Registry's routes (issue 37, docs/security.md "The Schema
Registry"): the ACL each route needs (ROUTES) and the guard its handler passes before it reads
or changes anything. http.access decides, with the door ``schema-registry``; nothing here
decides on its own.

Kafka has no subject resource: a subject is authorized on a TOPIC, named by Confluent's
TopicNameStrategy (``subject_topic``): ``<topic>-key`` and ``<topic>-value`` on ``<topic>``;
any other subject (RecordNameStrategy's ``com.acme.Order``, TopicRecordNameStrategy's
``orders-com.acme.Order``, a hand-made name) on the topic named by the whole subject, so
PREFIXED ACLs cover families of them (``--topic com.acme. --resource-pattern-type prefixed``).

What ROUTES' scopes mean:

- SUBJECT: the operation on the subject's topic. Reading a subject (versions, schemas, lookup,
  compatibility tests) takes DESCRIBE, which READ, WRITE and ALTER imply, so a topic's
  producers and consumers read its schemas as their serializers need; registering takes WRITE
  (Confluent's serializers register on produce with auto.register.schemas=true); deleting a
  subject or a version ALTER; a subject's config and mode DESCRIBE_CONFIGS to read and
  ALTER_CONFIGS to set or drop. A schema given in the body (register, lookup, compatibility)
  also takes DESCRIBE on the topic of each subject its references name.
- CLUSTER: the operation on the cluster (the global config and mode).
- SCHEMA: a schema by id or guid: any authenticated principal, since a consumer's deserializer
  fetches by id and a schema is not a record; User:ANONYMOUS (a route without an authorizer)
  needs DESCRIBE on the topic of one of the subjects the schema is a version of. With
  ``?subject=``, DESCRIBE on that subject's topic first.
- LISTED: the answer lists only the subjects whose topic the principal may DESCRIBE, silently.
- OPEN: nothing; the answer tells nothing about any subject.

A refusal answers 403 with Confluent's error code 40301 (schema_registry.error_status).
With authorization off (the default) every check allows and reads nothing.
"""

from __future__ import annotations

import enum
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import unquote

from aws_lambda_powertools.event_handler.api_gateway import Router

from objectlog.errors import NotAuthorized
from objectlog.format.acls import Operation, ResourceType
from objectlog.http.access import HttpAccess
from objectlog.http.principals import authenticated_principal

DOOR = "schema-registry"
FORBIDDEN_CODE = 40301  # Confluent's error code for a request its authorizer refuses
KEY_SUFFIX, VALUE_SUFFIX = "-key", "-value"

Handler = TypeVar("Handler", bound=Callable[..., Any])


class Scope(enum.Enum):
    """What a route's operation is asked on (module docstring)."""

    SUBJECT = "the subject's topic"
    CLUSTER = "the cluster"
    SCHEMA = "any authenticated principal"
    LISTED = "the subjects listed"
    OPEN = "nothing"


@dataclass(frozen=True)
class Need:
    scope: Scope
    operation: Operation | None = None


def _subject(operation: Operation) -> Need:
    return Need(Scope.SUBJECT, operation)


def _cluster(operation: Operation) -> Need:
    return Need(Scope.CLUSTER, operation)


OPEN, SCHEMA, LISTED = Need(Scope.OPEN), Need(Scope.SCHEMA), Need(Scope.LISTED)
DESCRIBE = _subject(Operation.DESCRIBE)

# (method, path under /schema-registry): what the route needs; one entry per route, and a
# route registered without one fails when the router is built (``guarded_route``).
ROUTES: Mapping[tuple[str, str], Need] = {
    ("GET", ""): OPEN,
    ("GET", "/schemas/types"): OPEN,
    ("GET", "/schemas/ids/<schema_id>"): SCHEMA,
    ("GET", "/schemas/ids/<schema_id>/schema"): SCHEMA,
    ("GET", "/schemas/guids/<guid>"): SCHEMA,
    ("GET", "/schemas/ids/<schema_id>/subjects"): LISTED,
    ("GET", "/schemas/ids/<schema_id>/versions"): LISTED,
    ("GET", "/subjects"): LISTED,
    ("GET", "/subjects/<subject>/versions"): DESCRIBE,
    ("GET", "/subjects/<subject>/versions/<version>"): DESCRIBE,
    ("GET", "/subjects/<subject>/versions/<version>/schema"): DESCRIBE,
    ("GET", "/subjects/<subject>/versions/<version>/referencedby"): DESCRIBE,
    ("GET", "/subjects/<subject>/metadata"): DESCRIBE,
    ("POST", "/subjects/<subject>"): DESCRIBE,  # lookup
    ("POST", "/compatibility/subjects/<subject>/versions"): DESCRIBE,
    ("POST", "/compatibility/subjects/<subject>/versions/<version>"): DESCRIBE,
    ("POST", "/subjects/<subject>/versions"): _subject(Operation.WRITE),  # register
    ("DELETE", "/subjects/<subject>"): _subject(Operation.ALTER),
    ("DELETE", "/subjects/<subject>/versions/<version>"): _subject(Operation.ALTER),
    ("GET", "/config/<subject>"): _subject(Operation.DESCRIBE_CONFIGS),
    ("GET", "/mode/<subject>"): _subject(Operation.DESCRIBE_CONFIGS),
    ("PUT", "/config/<subject>"): _subject(Operation.ALTER_CONFIGS),
    ("DELETE", "/config/<subject>"): _subject(Operation.ALTER_CONFIGS),
    ("PUT", "/mode/<subject>"): _subject(Operation.ALTER_CONFIGS),
    ("DELETE", "/mode/<subject>"): _subject(Operation.ALTER_CONFIGS),
    ("GET", "/config"): _cluster(Operation.DESCRIBE_CONFIGS),
    ("GET", "/mode"): _cluster(Operation.DESCRIBE_CONFIGS),
    ("PUT", "/config"): _cluster(Operation.ALTER_CONFIGS),
    ("DELETE", "/config"): _cluster(Operation.ALTER_CONFIGS),
    ("PUT", "/mode"): _cluster(Operation.ALTER_CONFIGS),
    ("GET", "/associations/resources/<namespace>/<name>"): OPEN,  # always [] (no associations)
}


def subject_topic(subject: str) -> str:
    """The topic whose ACLs authorize a subject (TopicNameStrategy, module docstring)."""
    for suffix in (KEY_SUFFIX, VALUE_SUFFIX):
        topic = subject.removesuffix(suffix)
        if topic and topic != subject:
            return topic
    return subject


class RegistryGuard:
    """The checks of the registry's routes on the request being served."""

    def __init__(
        self, access: Callable[[], HttpAccess], event: Callable[[], Mapping[str, Any]]
    ) -> None:
        self._access = access
        self._event = event

    def before(self, need: Need, params: Mapping[str, str]) -> None:
        """What a route checks before it reads anything: its SUBJECT or CLUSTER operation, or
        SCHEMA's ``?subject=`` (NotAuthorized)."""
        if need.scope is Scope.SUBJECT and need.operation is not None:
            self.subject(need.operation, unquote(params["subject"]))
        elif need.scope is Scope.CLUSTER and need.operation is not None:
            self._access().require_cluster(self._event(), need.operation, door=DOOR)
        elif need.scope is Scope.SCHEMA:
            asked = (self._event().get("queryStringParameters") or {}).get("subject")
            if asked:
                self.subject(Operation.DESCRIBE, asked)

    def subject(self, operation: Operation, subject: str) -> None:
        """NotAuthorized unless the principal may do the operation on the subject's topic."""
        try:
            self._access().require(
                self._event(), operation, ResourceType.TOPIC, subject_topic(subject), door=DOOR
            )
        except NotAuthorized as refused:
            if subject == subject_topic(subject):
                raise
            named = f"{refused.message} (subject {subject})"
            raise NotAuthorized(named, field=refused.field) from None

    def references(self, subjects: Iterable[str]) -> None:
        """A schema's references: DESCRIBE on each subject they name."""
        for subject in dict.fromkeys(subjects):
            self.subject(Operation.DESCRIBE, subject)

    def subjects(self, names: Iterable[str]) -> list[str]:
        """LISTED: the subjects whose topic the principal may DESCRIBE, in their order."""
        access, event = self._access(), self._event()
        return [
            name
            for name in names
            if access.allows(
                event, Operation.DESCRIBE, ResourceType.TOPIC, subject_topic(name), door=DOOR
            )
        ]

    def schema(self, subjects: Iterable[str]) -> None:
        """SCHEMA, the schema found (``subjects``: those it is a version of): any authenticated
        principal; User:ANONYMOUS if it may DESCRIBE one of them (a refusal logged once)."""
        if not self._access().settings.enabled or authenticated_principal(self._event()):
            return
        names = sorted(set(subjects))
        if not self.subjects(names):
            for first in names[:1]:
                self.subject(Operation.DESCRIBE, first)


def guarded_route(
    router: Router, guard: RegistryGuard, base: str, **options: Any
) -> Callable[[str, str, str], Callable[[Handler], Handler]]:
    """``route(method, path, summary)``: a decorator registering a handler at ``base + path``
    that passes ``guard.before`` with the route's ROUTES entry first (KeyError here, when the
    router is built, for a route without one)."""

    def route(method: str, path: str, summary: str) -> Callable[[Handler], Handler]:
        need = ROUTES[(method, path)]

        def register(handler: Handler) -> Handler:
            @functools.wraps(handler)
            def guarded(**params: str) -> Any:
                guard.before(need, params)
                return handler(**params)

            # the handler's signature, annotations resolved in its module, for OpenAPI
            guarded.__signature__ = inspect.signature(handler, eval_str=True)  # type: ignore[attr-defined]
            router.route(base + path, method, summary=summary, **options)(guarded)
            return handler

        return register

    return route
