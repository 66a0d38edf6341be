"""Authorization on the HTTP doors (issue 37, docs/security.md): the routes of the HTTP API, the
REST Proxy and the Schema Registry ask ``require`` (or ``visible`` for lists) with the
request's principal (http.principals) before they read or change anything. The decision is
services.access's, from the ACLs held in memory by the Lambda container (one AccessControl per
container and door, built at the first request; no DynamoDB read per request in steady
state). A refusal raises NotAuthorized: 403 with a JSON body naming the principal, operation
and resource, in each door's own error shape (app.py, rest_proxy.py, schema_registry.py).

Settings come from the function's environment (services.access: ``OBJECTLOG_AUTHORIZER``,
``OBJECTLOG_SUPER_USERS``, ``OBJECTLOG_ALLOW_EVERYONE_IF_NO_ACL_FOUND``), read once per
container; with authorization off ``require`` allows everything and reads nothing.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from objectlog.clients.direct import ObjectLog
from objectlog.errors import NotAuthorized
from objectlog.format.acls import CLUSTER_NAME, Operation, ResourceType
from objectlog.http.principals import principal_of, source_host
from objectlog.services.access import AccessControl, AccessSettings, print_line

DOORS = ("http", "rest-proxy", "schema-registry")


def refusal(
    principal: str, operation: Operation, resource_type: ResourceType, name: str
) -> NotAuthorized:
    """The error a refused request raises: 403, its message naming who, what and on what."""
    return NotAuthorized(
        f"{principal} is not authorized to {operation.name} {resource_type.name} {name}",
        field=f"{resource_type.name}:{name}",
    )


class HttpAccess:
    """The AccessControl of each HTTP door of one container, built at first use."""

    def __init__(
        self,
        log: Callable[[], ObjectLog],
        settings: AccessSettings | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._log = log
        self._settings = settings
        self._env = env
        self._doors: dict[str, AccessControl] = {}
        self._lock = threading.Lock()

    @property
    def settings(self) -> AccessSettings:
        if self._settings is None:
            self._settings = AccessSettings.from_env(os.environ if self._env is None else self._env)
        return self._settings

    def door(self, name: str) -> AccessControl:
        """The door's AccessControl; every door of the container shares one ACL cache."""
        with self._lock:
            access = self._doors.get(name)
            if access is None:
                log = self._log()
                shared = next(iter(self._doors.values()), None)
                access = AccessControl(
                    log.items.acls,
                    log.clock,
                    self.settings,
                    door=name,
                    emit=print_line,
                    cache=shared.cache if shared is not None else None,
                )
                self._doors[name] = access
            return access

    def require(
        self,
        event: Mapping[str, Any],
        operation: Operation,
        resource_type: ResourceType,
        name: str,
        *,
        door: str = "http",
    ) -> str:
        """The request's principal, if it may do ``operation`` on the resource; NotAuthorized
        (logged and counted by services.access) if not."""
        principal = principal_of(event)
        if not self.settings.enabled:
            return principal
        access = self.door(door)
        if not access.allows(principal, source_host(event), operation, resource_type, name):
            raise refusal(principal, operation, resource_type, name)
        return principal

    def require_cluster(
        self, event: Mapping[str, Any], operation: Operation, *, door: str = "http"
    ) -> str:
        return self.require(event, operation, ResourceType.CLUSTER, CLUSTER_NAME, door=door)

    def allows(
        self,
        event: Mapping[str, Any],
        operation: Operation,
        resource_type: ResourceType,
        name: str,
        *,
        door: str = "http",
    ) -> bool:
        """Whether the request may, without logging a refusal (a choice between answers)."""
        if not self.settings.enabled:
            return True
        return self.door(door).allows(
            principal_of(event), source_host(event), operation, resource_type, name, quiet=True
        )

    def visible(
        self,
        event: Mapping[str, Any],
        operation: Operation,
        resource_type: ResourceType,
        names: Iterable[str],
        *,
        door: str = "http",
    ) -> list[str]:
        """The names the principal may see, in their order (a list left short, silently)."""
        return [n for n in names if self.allows(event, operation, resource_type, n, door=door)]
