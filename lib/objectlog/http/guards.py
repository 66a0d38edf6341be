"""What the routes of the HTTP API and the REST Proxy check before they read or change anything
(issue 37, docs/security.md): the operation Kafka's broker checks for the same action, asked of
http.access with the request's principal. A refusal raises NotAuthorized (http.access.refusal):
403, the HTTP API's body ``{"error": "NotAuthorized", "message": "User:alice is not authorized
to WRITE TOPIC payments", "field": "TOPIC:payments"}``, the REST Proxy's ``{"error_code":
40301, "message": ...}``. With authorization off every check allows and reads nothing.

What each action needs (the HTTP API's route; the REST Proxy's /kafka route for the same):

- produce (POST /topics/{t}/records, POST /topics/{t}; POST /kafka/topics/{t} and
  .../partitions/{p}): WRITE on the topic; a topic the produce creates (auto-creation) also
  CREATE on the cluster or the topic. The REST Proxy's schema formats register the schemas
  under the topic's subjects on that WRITE, as the Schema Registry authorizes registering.
- list topics (GET /topics, /kafka/topics): only those it may DESCRIBE are listed.
- describe (GET /topics/{t}; /kafka/topics/{t}, its partitions and a partition): DESCRIBE; the
  configs in the answer only with DESCRIBE_CONFIGS (else ``{}``), as Kafka's CreateTopics.
- create (POST /topics): CREATE on the cluster or the topic.
- alter (PATCH /topics/{t}): ALTER to add partitions, ALTER_CONFIGS to set or delete configs.
- delete (DELETE /topics/{t}), delete records (POST /topics/{t}/delete-records): DELETE.
- fetch (GET /topics/{t}/partitions/{p}/records): READ.
- offsets (GET .../offsets, by time too; GET /kafka/.../offsets): DESCRIBE.
- list groups (GET /groups): all with DESCRIBE on the cluster, else those it may DESCRIBE.
- describe a group (GET /groups/{g}): DESCRIBE; the offsets of topics it may not DESCRIBE are
  left out (Kafka's OffsetFetch of every partition).
- delete a group (DELETE /groups/{g}): DELETE on the group.
- join (POST /groups/{g}/members): READ on the group, DESCRIBE on each topic (as KIP-848's
  ConsumerGroupHeartbeat); heartbeat, leave: READ on the group, and READ on each topic whose
  offset a release commits.
- committed offsets (GET /groups/{g}/offsets): DESCRIBE on the group and each topic named.
- commit (POST /groups/{g}/offsets), reset (POST /groups/{g}/offsets/reset, dry run too): READ
  on the group and each topic (OffsetCommit, which AdminClient.alterConsumerGroupOffsets sends).
- REST Proxy consumer instances: READ on the group for every route; READ on each topic named
  (subscribe, assign, positions, commit, committed offsets); a read, or a commit of all read,
  READ on each topic subscribed to or assigned.

A topic pattern subscribes to the matching topics the principal may READ. A consumer instance
answers only the principal that created it (clients.instances): another gets 403 (40301).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from objectlog.clients.direct import ObjectLog
from objectlog.clients.instances import Caller
from objectlog.errors import TopicNotFound
from objectlog.format.acls import Operation, ResourceType
from objectlog.http.access import HttpAccess, refusal
from objectlog.http.principals import principal_of, source_host

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER


class RouteGuard:
    """The checks of one router's routes: the request being answered, one door."""

    def __init__(
        self, access: HttpAccess, event: Callable[[], Mapping[str, Any]], door: str = "http"
    ) -> None:
        self.access = access
        self.event = event  # the current request's payload v2 event
        self.door = door

    @property
    def enabled(self) -> bool:
        return self.access.settings.enabled

    def require(self, operation: Operation, kind: ResourceType, name: str) -> str:
        return self.access.require(self.event(), operation, kind, name, door=self.door)

    def topic(self, operation: Operation, name: str) -> str:
        return self.require(operation, TOPIC, name)

    def group(self, operation: Operation, name: str) -> str:
        return self.require(operation, GROUP, name)

    def topics(self, operation: Operation, names: Iterable[str]) -> None:
        """Every topic named, in order; the first refused raises."""
        for name in dict.fromkeys(names):
            self.topic(operation, name)

    def may(self, operation: Operation, kind: ResourceType, name: str) -> bool:
        """Whether it may, quietly (a choice between answers, not a refusal)."""
        return self.access.allows(self.event(), operation, kind, name, door=self.door)

    def visible(self, operation: Operation, kind: ResourceType, names: Iterable[str]) -> list[str]:
        return self.access.visible(self.event(), operation, kind, names, door=self.door)

    def create_topic(self, name: str) -> str:
        """CREATE on the cluster or the topic (services.access.may_create_topic, the agent's
        rule too)."""
        event = self.event()
        principal = principal_of(event)
        if self.enabled and not self.access.door(self.door).may_create_topic(
            principal, source_host(event), name
        ):
            raise refusal(principal, Operation.CREATE, TOPIC, name)
        return principal

    def produce(self, log: ObjectLog, topic: str, *, may_create: bool = True) -> str:
        """WRITE on the topic; when the produce would create it (Config.auto_create_topics),
        CREATE too. WRITE implies DESCRIBE, so learning that it does not exist reveals nothing
        the principal may not know."""
        principal = self.topic(Operation.WRITE, topic)
        if self.enabled and may_create and log.config.auto_create_topics:
            try:
                log.topic(topic)
            except TopicNotFound:
                self.create_topic(topic)
        return principal

    def config_shown(self, topic: str) -> bool:
        """Whether a topic's answer may carry its configs (DESCRIBE_CONFIGS, as Kafka's
        CreateTopics answers configs only to who may describe them)."""
        return self.may(Operation.DESCRIBE_CONFIGS, TOPIC, topic)

    def caller(self) -> Caller:
        """The REST Proxy consumer instances' view of the request's principal."""
        return Caller(
            principal_of(self.event()),
            enforce=self.enabled,
            require_read=lambda topic: self.topic(Operation.READ, topic),
            may_read=lambda topic: self.may(Operation.READ, TOPIC, topic),
        )
