"""REST Proxy's consumer instances: Consumers whose state lives in DynamoDB between requests.

An instance is a versioned document (stores.documents, kind ``rest-consumer``, name
``<group>/<instance>``) holding its settings (embedded format, auto.offset.reset,
auto.commit.enable, fetch.min.bytes, the request and instance timeouts, isolation.level), its
topic pattern and its Consumer's state (clients.consumer_state). Each request reads the
document, restores a Consumer, runs, and writes the document back conditional on the version it
read: any function instance serves any request, and of two requests on one instance at once the
loser runs again.

A subscribed instance is a member of its group whose session is the instance timeout
(``consumer.instance.timeout.ms``, 5 minutes by default): an instance that stops polling lapses,
its partitions move to the group's other members, and its document answers
ConsumerInstanceNotFound once idle for longer than the timeout (REST Proxy's expiry).

An instance answers only the principal that created it (issue 37, docs/security.md): its
document keeps its ``owner``; with authorization on, another principal is refused (Caller). One
made before owners were kept answers anyone until it expires.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from objectlog.clients.consumer import AUTO_OFFSET_RESETS, Consumer, record_bytes
from objectlog.clients.consumer_state import ConsumerState
from objectlog.clients.direct import ObjectLog
from objectlog.errors import (
    ConcurrentModification,
    ConsumerFormatMismatch,
    ConsumerInstanceExists,
    ConsumerInstanceNotFound,
    InvalidConsumerConfig,
    InvalidRequest,
    NotAuthorized,
    ObjectLogError,
)
from objectlog.format.records import Record
from objectlog.groups.values import OffsetAndMetadata, validate_group_name
from objectlog.services.isolation import ISOLATION_LEVELS, READ_UNCOMMITTED
from objectlog.stores.documents import ABSENT
from objectlog.stores.groups import TopicPartition

KIND = "rest-consumer"
FORMATS = ("binary", "json", "avro", "jsonschema", "protobuf")  # REST Proxy's embedded formats
DEFAULT_REQUEST_TIMEOUT_MS = 1_000  # REST Proxy's consumer.request.timeout.ms
MAX_REQUEST_TIMEOUT_MS = 20_000  # a read must answer within API Gateway's 30 s
MIN_INSTANCE_TIMEOUT_MS = 1_000
MAX_INSTANCE_TIMEOUT_MS = 3_600_000
HEARTBEAT_INTERVAL_MS = 3_000  # Kafka's heartbeat.interval.ms
METADATA_MAX_AGE_MS = 300_000  # Kafka's metadata.max.age.ms: how often a pattern is re-matched
EXPIRY_GRACE_S = 3_600  # the TTL removes an abandoned document this long after it expired
ATTEMPTS = 5

T = TypeVar("T")
log = logging.getLogger(__name__)

INSTANCE_NAME = re.compile(r"^[A-Za-z0-9._\-]{1,249}$")


@dataclass(frozen=True)
class InstanceSettings:
    """What REST Proxy's create request sets (the names are its own)."""

    format: str = "binary"
    auto_offset_reset: str = "latest"
    auto_commit: bool = True
    fetch_min_bytes: int = 1
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS
    instance_timeout_ms: int = 300_000  # REST Proxy's consumer.instance.timeout.ms
    isolation_level: str = READ_UNCOMMITTED  # Kafka's isolation.level (docs/transactions.md)

    def __post_init__(self) -> None:
        _one_of("format", self.format, FORMATS)
        _one_of("auto.offset.reset", self.auto_offset_reset, AUTO_OFFSET_RESETS)
        _one_of("isolation.level", self.isolation_level, ISOLATION_LEVELS)
        _within("fetch.min.bytes", self.fetch_min_bytes, 1, 1 << 30)
        _within("consumer.request.timeout.ms", self.request_timeout_ms, 0, MAX_REQUEST_TIMEOUT_MS)
        _within(
            "consumer.instance.timeout.ms",
            self.instance_timeout_ms,
            MIN_INSTANCE_TIMEOUT_MS,
            MAX_INSTANCE_TIMEOUT_MS,
        )


@dataclass(frozen=True)
class Caller:
    """Who asks (the HTTP doors' principal, http.guards): the instances it creates are its
    own; with ``enforce`` (authorization on) it may use only those, ``require_read`` (raising
    NotAuthorized) is asked of every topic a read reads, and a pattern subscribes to the
    topics ``may_read``."""

    principal: str
    enforce: bool = False
    require_read: Callable[[str], object] = lambda topic: None
    may_read: Callable[[str], bool] = lambda topic: True


@dataclass
class Instance:
    """One consumer instance as its document stores it."""

    settings: InstanceSettings
    last_seen_ms: int
    consumer: ConsumerState = field(default_factory=ConsumerState)
    pattern: str | None = None
    pattern_matched_ms: int = 0
    owner: str | None = None  # the principal that created it (None: created before owners)

    def expires_ms(self) -> int:
        return self.last_seen_ms + self.settings.instance_timeout_ms

    def to_json(self) -> str:
        return json.dumps(
            {
                "settings": asdict(self.settings),
                "last_seen_ms": self.last_seen_ms,
                "consumer": self.consumer.to_json(),
                "pattern": self.pattern,
                "pattern_matched_ms": self.pattern_matched_ms,
                "owner": self.owner,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Instance:
        data = json.loads(text)
        return cls(
            settings=InstanceSettings(**data["settings"]),
            last_seen_ms=int(data["last_seen_ms"]),
            consumer=ConsumerState.from_json(data["consumer"]),
            pattern=data["pattern"],
            pattern_matched_ms=int(data["pattern_matched_ms"]),
            owner=data.get("owner"),
        )


class ConsumerInstances:
    """Create, use and delete consumer instances (the HTTP API's /kafka/consumers routes)."""

    def __init__(self, log: ObjectLog) -> None:
        self.log = log
        self.documents = log.items.documents
        self.clock = log.clock
        # the default of instances created without one (the API's consumer.instance.timeout.ms)
        self.instance_timeout_ms = log.config.consumer_instance_timeout_ms
        self.caller: Caller | None = None  # None: the library's own use, no owner

    def serving(self, caller: Caller) -> ConsumerInstances:
        """These instances as ``caller`` uses them (one request's view; the state is shared)."""
        view = copy.copy(self)
        view.caller = caller
        return view

    # ---- lifecycle ---------------------------------------------------------------------

    def create(self, group: str, name: str | None, settings: InstanceSettings) -> str:
        """A new instance in the group; its name (a generated one when name is None)."""
        validate_group_name(group)
        name = validate_instance_name(name or f"rest-consumer-{uuid.uuid4()}")
        owner = None if self.caller is None else self.caller.principal
        instance = Instance(settings, self.clock.now_ms(), owner=owner)
        for _ in range(ATTEMPTS):
            body, version = self.documents.read(KIND, _key(group, name))
            if body is None:
                if self._write(group, name, instance, ABSENT):
                    return name
                continue
            existing = Instance.from_json(body)
            if not self._expired(existing):
                raise ConsumerInstanceExists(
                    f"consumer instance {name!r} already exists in group {group!r}",
                    field="name",
                )
            self._retire(group, name, existing, version)
        raise ConcurrentModification(f"consumer instance {name!r} kept changing; retry")

    def delete(self, group: str, name: str) -> None:
        """Close the instance: leave the group (committing positions with auto-commit)."""
        for _ in range(ATTEMPTS):
            instance, version = self._load(group, name)
            consumer = self._consumer(group, name, instance)
            consumer.close()
            if self.documents.delete(KIND, _key(group, name), seen=version):
                return
        raise ConcurrentModification(f"consumer instance {name!r} kept changing; retry")

    def default_settings(self, **given: Any) -> InstanceSettings:
        """Settings from a create request: the API's instance timeout unless one is given."""
        return InstanceSettings(**{"instance_timeout_ms": self.instance_timeout_ms, **given})

    # ---- subscription and assignment ---------------------------------------------------

    def subscribe(
        self, group: str, name: str, topics: list[str] | None, pattern: str | None
    ) -> None:
        """Subscribe to topics, or to every topic whose whole name matches pattern."""
        if (topics is None) == (pattern is None):
            raise InvalidRequest("give either topics or topic_pattern", field="topics")
        compiled = _compile(pattern) if pattern is not None else None

        def run(instance: Instance, consumer: Consumer) -> None:
            instance.pattern = pattern
            if compiled is not None:
                self._match_pattern(instance, consumer, compiled)
            else:
                assert topics is not None
                for topic in topics:
                    self.log.topic(topic)  # TopicNotFound now rather than at the first read
                consumer.subscribe(topics)

        self._use(group, name, run)

    def subscription(self, group: str, name: str) -> list[str]:
        return self._use(group, name, lambda _, consumer: list(consumer.subscription()))

    def unsubscribe(self, group: str, name: str) -> None:
        def run(instance: Instance, consumer: Consumer) -> None:
            instance.pattern = None
            consumer.unsubscribe()

        self._use(group, name, run)

    def assign(self, group: str, name: str, partitions: Iterable[TopicPartition]) -> None:
        wanted = list(partitions)
        self._use(group, name, lambda _, consumer: consumer.assign(wanted))

    def assignment(self, group: str, name: str) -> list[TopicPartition]:
        return self._use(group, name, lambda _, consumer: sorted(consumer.assignment()))

    # ---- positions ---------------------------------------------------------------------

    def seek(self, group: str, name: str, offsets: Mapping[TopicPartition, int]) -> None:
        def run(_: Instance, consumer: Consumer) -> None:
            for tp, offset in offsets.items():
                consumer.seek(tp, offset)

        self._use(group, name, run)

    def seek_to_beginning(
        self, group: str, name: str, partitions: Iterable[TopicPartition]
    ) -> None:
        wanted = list(partitions)
        self._use(group, name, lambda _, consumer: consumer.seek_to_beginning(wanted))

    def seek_to_end(self, group: str, name: str, partitions: Iterable[TopicPartition]) -> None:
        wanted = list(partitions)
        self._use(group, name, lambda _, consumer: consumer.seek_to_end(wanted))

    # ---- records and offsets -----------------------------------------------------------

    def records(
        self,
        group: str,
        name: str,
        render: Callable[[str, list[Record]], T],
        *,
        format_: str | None = None,
        timeout_ms: int | None = None,
        max_bytes: int | None = None,
        max_records: int | None = None,
    ) -> T:
        """Read records as REST Proxy does: wait up to timeout_ms (the instance's
        consumer.request.timeout.ms by default) until fetch.min.bytes have come, returning at
        most max_bytes of keys and values. render(format, records) builds the answer before the
        new positions are stored, so an answer that cannot be built stores nothing.
        ConsumerFormatMismatch when format_ is not the instance's."""

        def run(instance: Instance, consumer: Consumer) -> T:
            settings = instance.settings
            if format_ is not None and format_ != settings.format:
                raise ConsumerFormatMismatch(
                    f"the consumer instance's format is {settings.format}, not {format_}: "
                    f"ask for application/vnd.kafka.{settings.format}.v2+json",
                    field="accept",
                )
            if instance.pattern is not None and self._pattern_due(instance):
                self._match_pattern(instance, consumer, _compile(instance.pattern))
            self._require_reads(consumer)  # Kafka's Fetch: READ on each topic read
            wait_ms = settings.request_timeout_ms if timeout_ms is None else timeout_ms
            wait_ms = min(wait_ms, MAX_REQUEST_TIMEOUT_MS)
            records = _read(consumer, wait_ms, settings, max_bytes, max_records)
            return render(settings.format, records)

        return self._use(group, name, run)

    def commit(
        self, group: str, name: str, offsets: Mapping[TopicPartition, OffsetAndMetadata] | None
    ) -> None:
        """Commit the given offsets, or (None) the position of every partition read (READ on
        their topics, as OffsetCommit)."""

        def run(_: Instance, consumer: Consumer) -> None:
            if offsets is None:
                self._require_reads(consumer)
            consumer.commit(offsets)

        self._use(group, name, run)

    def committed(
        self, group: str, name: str, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        wanted = list(partitions)
        return self._use(group, name, lambda _, consumer: consumer.committed(wanted))

    # ---- the document ------------------------------------------------------------------

    def _use(self, group: str, name: str, action: Callable[[Instance, Consumer], T]) -> T:
        """Load the instance, run action on its Consumer, store what changed (or run again
        when another request on the instance stored first)."""
        for _ in range(ATTEMPTS):
            instance, version = self._load(group, name)
            consumer = self._consumer(group, name, instance)
            try:
                result = action(instance, consumer)
            except BaseException:
                self._abandon(group, name, consumer)  # a membership joined here is not kept
                raise
            instance.consumer = consumer.state()
            instance.last_seen_ms = self.clock.now_ms()
            if self._write(group, name, instance, version):
                return result
            self._abandon(group, name, consumer)
        raise ConcurrentModification(f"consumer instance {name!r} kept changing; retry")

    def _load(self, group: str, name: str) -> tuple[Instance, int]:
        validate_group_name(group)
        validate_instance_name(name)
        body, version = self.documents.read(KIND, _key(group, name))
        if body is not None:
            instance = Instance.from_json(body)
            if not self._expired(instance):
                self._check_owner(group, name, instance)
                return instance, version
            self._retire(group, name, instance, version)
        raise ConsumerInstanceNotFound(
            f"consumer instance {name!r} does not exist in group {group!r} (deleted, or idle "
            "for longer than its consumer.instance.timeout.ms)",
            field="instance",
        )

    def _require_reads(self, consumer: Consumer) -> None:
        """The caller's READ on every topic the consumer reads (NotAuthorized if not)."""
        if self.caller is not None:
            read = consumer.subscription() or {tp.topic for tp in consumer.assignment()}
            for topic in sorted(read):
                self.caller.require_read(topic)

    def _check_owner(self, group: str, name: str, instance: Instance) -> None:
        """Another principal's instance is refused (403, REST Proxy's 40301): its name is no
        secret from who may READ the group (it is its member's client id), and a 404 would
        tell the caller to make it again under a name that is taken."""
        caller = self.caller
        if caller is None or not caller.enforce or instance.owner in (None, caller.principal):
            return
        log.info(
            "instance %s/%s of %s refused to %s", group, name, instance.owner, caller.principal
        )
        raise NotAuthorized(
            f"{caller.principal} may not use consumer instance {name!r} of group {group!r}: "
            "an instance answers only the principal that created it",
            field="instance",
        )

    def _write(self, group: str, name: str, instance: Instance, version: int) -> bool:
        expires_s = instance.expires_ms() // 1000 + EXPIRY_GRACE_S
        return self.documents.write(
            KIND, _key(group, name), instance.to_json(), seen=version, expires_s=expires_s
        )

    def _expired(self, instance: Instance) -> bool:
        return self.clock.now_ms() > instance.expires_ms()

    def _retire(self, group: str, name: str, instance: Instance, version: int) -> None:
        """An expired instance goes as REST Proxy closes it: its consumer leaves the group
        (with auto-commit's final commit, unless its partitions already moved)."""
        with contextlib.suppress(ObjectLogError):  # its partitions moved: nothing is left
            self._consumer(group, name, instance).close()
        self.documents.delete(KIND, _key(group, name), seen=version)

    def _abandon(self, group: str, name: str, consumer: Consumer) -> None:
        """A run whose state lost the race leaves a group membership it created."""
        member = consumer.member_id
        if member is None:
            return
        body, _ = self.documents.read(KIND, _key(group, name))
        stored = None if body is None else Instance.from_json(body).consumer.membership
        if stored is None or stored.member_id != member:
            with contextlib.suppress(ObjectLogError):  # gone already; it would lapse anyway
                self.log.groups.leave(group, member)

    def _consumer(self, group: str, name: str, instance: Instance) -> Consumer:
        settings = instance.settings
        consumer = Consumer(
            self.log,
            group=group,
            auto_offset_reset=settings.auto_offset_reset,
            enable_auto_commit=settings.auto_commit,
            session_timeout_ms=settings.instance_timeout_ms,
            heartbeat_interval_ms=min(HEARTBEAT_INTERVAL_MS, settings.instance_timeout_ms // 3),
            client_id=name,
            fetch_ahead_bytes=0,  # one poll per request: nothing to fetch ahead for
            isolation_level=settings.isolation_level,
        )
        consumer.restore(instance.consumer)
        return consumer

    # ---- topic patterns ----------------------------------------------------------------

    def _pattern_due(self, instance: Instance) -> bool:
        return self.clock.now_ms() >= instance.pattern_matched_ms + METADATA_MAX_AGE_MS

    def _match_pattern(
        self, instance: Instance, consumer: Consumer, pattern: re.Pattern[str]
    ) -> None:
        """Subscribe to the topics the pattern matches now (none: not a member until some
        topic matches, as a Kafka consumer with a pattern that matches nothing)."""
        may_read = (lambda _: True) if self.caller is None else self.caller.may_read
        matched = [t for t in self.log.list_topics() if pattern.fullmatch(t) and may_read(t)]
        instance.pattern_matched_ms = self.clock.now_ms()
        if not matched:
            consumer.unsubscribe()
        elif tuple(sorted(matched)) != consumer.subscription():
            consumer.subscribe(matched)


def validate_instance_name(name: str) -> str:
    """A REST Proxy consumer instance's name: it is a path segment of its base_uri."""
    if not isinstance(name, str) or not INSTANCE_NAME.match(name):
        raise InvalidRequest(
            f"invalid consumer instance name {name!r}: use 1-249 characters from A-Z a-z 0-9 . _ -",
            field="name",
        )
    return name


def _read(
    consumer: Consumer,
    wait_ms: int,
    settings: InstanceSettings,
    max_bytes: int | None,
    max_records: int | None,
) -> list[Record]:
    """Poll until fetch.min.bytes have come or the wait is over, within the limits."""
    deadline = time.monotonic() + wait_ms / 1000
    records: list[Record] = []
    got = 0
    while True:
        bytes_left = None if max_bytes is None else max_bytes - got
        records_left = None if max_records is None else max_records - len(records)
        batch = consumer.poll(
            max(0.0, deadline - time.monotonic()), max_records=records_left, max_bytes=bytes_left
        )
        records.extend(batch)
        got += sum(map(record_bytes, batch))
        full = (max_bytes is not None and got >= max_bytes) or (
            max_records is not None and len(records) >= max_records
        )
        if full or got >= settings.fetch_min_bytes or time.monotonic() >= deadline:
            return records


def _key(group: str, name: str) -> str:
    return f"{group}/{name}"


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except (re.error, TypeError) as e:
        raise InvalidRequest(
            f"topic_pattern {pattern!r} is not a regular expression: {e}", field="topic_pattern"
        ) from None


def _one_of(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise InvalidConsumerConfig(
            f"{name} must be one of {list(allowed)}, got {value!r}", field=name
        )


def _within(name: str, value: object, low: int, high: int) -> None:
    if type(value) is not int or not low <= value <= high:
        raise InvalidConsumerConfig(
            f"{name} must be an integer from {low} to {high}, got {value!r}", field=name
        )
