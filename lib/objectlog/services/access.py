"""Access control on every door (issue 37, DESIGN.md section 17, docs/security.md): whether
authorization is on, the bindings held in memory (services.acl_cache), the one decision
(services.authorization.authorize) and the record of every refusal. The Kafka agent, the HTTP
API, the REST Proxy and the Schema Registry each hold one AccessControl and ask it.

What turns it on: ``OBJECTLOG_AUTHORIZER=acls`` (Kafka's ``authorizer.class.name``; unset or
``none``: every request allowed, as a Kafka broker without an authorizer, and no ACL read at
all), with ``OBJECTLOG_SUPER_USERS`` (Kafka's ``super.users``: principals separated by ``;``)
and ``OBJECTLOG_ALLOW_EVERYONE_IF_NO_ACL_FOUND`` (``true``/``false``, default false). Off in
``objectlog dev`` unless asked (``--authorizer acls``); on in the Terraform module.

A refusal is logged at INFO (the principal, host, operation, resource and the rule that
decided, as Kafka's kafka.authorizer.logger logs denials) and counted: one CloudWatch EMF line
per refusal, metric ``AuthorizationFailures`` by door, operation and resource type, with the
principal and resource as properties (searchable in CloudWatch Logs Insights, not dimensions,
so a stray client cannot multiply the metric's cost) where the process's stdout goes to
CloudWatch Logs (Lambda, the standalone agent). ``refusals`` counts them in process.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from objectlog.clock import Clock
from objectlog.format.acls import CLUSTER_NAME, Operation, ResourceType
from objectlog.services.acl_cache import REFRESH_S, AclCache
from objectlog.services.authorization import (
    Decision,
    Request,
    Settings,
    authorize,
    authorized_operations,
)
from objectlog.stores.acls import AclStore

log = logging.getLogger(__name__)

ENV_AUTHORIZER = "OBJECTLOG_AUTHORIZER"  # "acls" turns authorization on; "none" or unset: off
ENV_SUPER_USERS = "OBJECTLOG_SUPER_USERS"  # "User:admin;User:ops", as Kafka's super.users
ENV_ALLOW_EVERYONE = "OBJECTLOG_ALLOW_EVERYONE_IF_NO_ACL_FOUND"
ENV_REFRESH_S = "OBJECTLOG_ACL_REFRESH_S"  # how stale a process's ACLs may be (default 5 s)
AUTHORIZERS = ("none", "acls")
NAMESPACE = "objectlog/authorization"

Emit = Callable[[str], None]
KAFKA_DEFAULTS = Settings()  # no super users, allow.everyone.if.no.acl.found false


@dataclass(frozen=True)
class AccessSettings:
    """What turns authorization on and Kafka's two settings for it."""

    enabled: bool = False
    rules: Settings = KAFKA_DEFAULTS
    refresh_s: float = REFRESH_S  # the ACLs' staleness bound (services.acl_cache)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AccessSettings:
        authorizer = env.get(ENV_AUTHORIZER, "none").strip().lower() or "none"
        if authorizer not in AUTHORIZERS:
            raise ValueError(
                f"{ENV_AUTHORIZER}={authorizer!r}: expected one of {', '.join(AUTHORIZERS)}"
            )
        return cls(
            enabled=authorizer == "acls",
            rules=Settings(
                super_users=parse_super_users(env.get(ENV_SUPER_USERS, "")),
                allow_everyone_if_no_acl_found=_flag(env.get(ENV_ALLOW_EVERYONE, "")),
            ),
            refresh_s=float(env.get(ENV_REFRESH_S) or REFRESH_S),
        )


OFF = AccessSettings()  # authorization off: every request allowed, no ACL read


def parse_super_users(value: str) -> frozenset[str]:
    """Kafka's super.users: ``User:a;User:b`` (spaces around names ignored)."""
    users = frozenset(u.strip() for u in value.split(";") if u.strip())
    for user in users:
        if not user.startswith("User:") or user == "User:":
            raise ValueError(f"super user {user!r} is not a principal User:<name>")
    return users


def _flag(value: str) -> bool:
    value = value.strip().lower()
    if value in ("", "false", "0", "no"):
        return False
    if value in ("true", "1", "yes"):
        return True
    raise ValueError(f"{ENV_ALLOW_EVERYONE}={value!r}: expected true or false")


class AccessControl:
    """The decisions of one door of one process. ``door`` names it in logs and metrics
    (``kafka``, ``http``, ``rest-proxy``, ``schema-registry``)."""

    def __init__(
        self,
        store: AclStore,
        clock: Clock,
        settings: AccessSettings,
        *,
        door: str,
        emit: Emit | None = None,
        cache: AclCache | None = None,
    ) -> None:
        """``emit``: where a refusal's EMF line goes (print_line on Lambda and the standalone
        agent, whose stdout CloudWatch Logs reads); None: logged only."""
        self.settings = settings
        self.door = door
        # doors of one process may share one cache (http.access): one load, one check per 5 s
        self.cache = cache or AclCache(store, clock, settings.refresh_s)
        self.refusals = 0
        self._emit = emit
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    def due(self) -> bool:
        """Whether the next decision would first read the store (a caller on an event loop
        runs ``refresh`` on a worker thread first, so decisions never block the loop)."""
        return self.enabled and self.cache.due()

    def refresh(self) -> None:
        self.cache.refresh_if_due()

    def decide(
        self,
        principal: str,
        host: str,
        operation: Operation,
        resource_type: ResourceType,
        name: str,
    ) -> Decision:
        """The decision, without logging it (services.authorization's rules)."""
        if not self.enabled:
            return Decision(True, 0, "authorization is off")
        request = Request(principal, host, operation, resource_type, name)
        bindings = self.cache.bindings_for(resource_type, name)
        if operation is Operation.IDEMPOTENT_WRITE:  # rule 9 reads every topic binding
            bindings = bindings + self.cache.bindings_of_type(ResourceType.TOPIC)
        return authorize(request, bindings, self.settings.rules)

    def allows(
        self,
        principal: str,
        host: str,
        operation: Operation,
        resource_type: ResourceType,
        name: str,
        *,
        quiet: bool = False,
    ) -> bool:
        """Whether the request is allowed; a refusal is logged and counted unless ``quiet``
        (a resource left out of a list the principal may not see, as Kafka logs those at
        DEBUG only)."""
        decision = self.decide(principal, host, operation, resource_type, name)
        if not decision.allowed:
            if quiet:
                log.debug("%s: %s", self.door, decision)
            else:
                self.refused(principal, host, operation, resource_type, name, decision)
        return decision.allowed

    def may_create_topic(self, principal: str, host: str, name: str) -> bool:
        """Kafka's rule for CreateTopics and for a topic created on first use (Metadata's
        auto-creation on the agent, a produce on the HTTP doors): CREATE on the cluster, or on
        the topic; a refusal is logged against the topic."""
        cluster = ResourceType.CLUSTER
        return self.allows(
            principal, host, Operation.CREATE, cluster, CLUSTER_NAME, quiet=True
        ) or self.allows(principal, host, Operation.CREATE, ResourceType.TOPIC, name)

    def operations(
        self, principal: str, host: str, resource_type: ResourceType, name: str
    ) -> frozenset[Operation] | None:
        """The operations the principal may do on the resource (authorized-operations bits);
        None when authorization is off (every operation)."""
        if not self.enabled:
            return None
        return authorized_operations(
            principal,
            host,
            resource_type,
            name,
            self.cache.bindings_for(resource_type, name),
            self.settings.rules,
        )

    def refused(
        self,
        principal: str,
        host: str,
        operation: Operation,
        resource_type: ResourceType,
        name: str,
        decision: Decision,
    ) -> None:
        with self._lock:
            self.refusals += 1
        log.info(
            "%s: principal %s from %s denied %s on %s:%s: %s",
            self.door,
            principal,
            host,
            operation.name,
            resource_type.name,
            name,
            decision,
        )
        if self._emit is not None:
            self._emit(
                refusal_emf(self.door, principal, host, operation, resource_type, name, decision)
            )


def refusal_emf(
    door: str,
    principal: str,
    host: str,
    operation: Operation,
    resource_type: ResourceType,
    name: str,
    decision: Decision,
) -> str:
    """One refusal as a CloudWatch EMF line."""
    document = {
        "_aws": {
            "Timestamp": int(time.time() * 1000),
            "CloudWatchMetrics": [
                {
                    "Namespace": NAMESPACE,
                    "Dimensions": [["Door", "Operation", "ResourceType"]],
                    "Metrics": [{"Name": "AuthorizationFailures", "Unit": "Count"}],
                }
            ],
        },
        "Door": door,
        "Operation": operation.name,
        "ResourceType": resource_type.name,
        "AuthorizationFailures": 1,
        "Principal": principal,
        "Host": host,
        "Resource": name,
        "Reason": decision.reason,
        "Rule": decision.rule,
    }
    return json.dumps(document, separators=(",", ":"))


def print_line(line: str) -> None:
    print(line, file=sys.stdout, flush=True)
