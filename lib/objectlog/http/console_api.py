"""The read routes a console needs beyond the topic and group routes (issue 39): the log's
overview, a topic's records produced per minute, a partition's details, and the partition a
key goes to. The fetch function serves them (GET routes). Each checks the caller's ACLs first
(http.guards): DESCRIBE on the topic, and the overview counts only the topics and groups the
caller may DESCRIBE."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from objectlog.errors import GroupNotFound, InvalidRequest, UnknownPartition
from objectlog.format.acls import CLUSTER_NAME
from objectlog.format.acls import Operation as O
from objectlog.format.partitioner import partition_for_key
from objectlog.http.console_models import (
    ActivityMinute,
    ActivityOut,
    GroupsSummary,
    KeyPartitionOut,
    LevelOut,
    OverviewOut,
    PartitionDetailsOut,
)
from objectlog.http.guards import CLUSTER, GROUP, TOPIC, RouteGuard
from objectlog.http.models import b64decode
from objectlog.http.routes import PartitionNumber, Services, TopicName, route_guard
from objectlog.services.activity_chart import MINUTE_MS, spans_since, spread, window_start
from objectlog.services.overview import MAX_SUMMED_PARTITIONS, log_totals
from objectlog.services.partition_levels import LevelTotals, level_split

MAX_KEY_CHARS = 100_000
# The overview sums the lag of this many groups at most (by name): each costs a describe (the
# group's items and its topics' heads), so a log with thousands of groups answers in bounded
# time; a console shows each group's lag from GET /groups/{group}.
MAX_LAG_GROUPS = 20


def console_api_router(services: Services) -> Router:
    router = Router()
    guard = route_guard(services, router)

    @router.get(
        "/overview",
        summary="The log at a glance: topics, partitions, records and bytes held, groups' lag",
        description="Counts only the topics and groups the caller may DESCRIBE. Requests: the "
        "topic registry and topics, each summed topic's heads (1 BatchGetItem per 100 "
        f"partitions, {MAX_SUMMED_PARTITIONS} heads at most: summed_partitions), each summed "
        "partition's manifest list (S3, cached); the group registry and one describe "
        f"per group for the first {MAX_LAG_GROUPS} (its items and the heads of its topics).",
    )
    def overview() -> OverviewOut:
        log = services.log
        totals = log_totals(
            log.metadata, log.index, lambda names: guard.visible(O.DESCRIBE, TOPIC, names)
        )
        groups = _visible_groups(guard, log.groups.list_groups())
        summed = sorted(groups)[:MAX_LAG_GROUPS]  # each describe reads the group, its heads
        lag = sum(_total_lag(services, g) for g in summed)
        return OverviewOut(
            topics=totals.topics,
            partitions=totals.partitions,
            records=totals.records,
            bytes=totals.bytes,
            segments=totals.segments,
            summed_partitions=totals.summed_partitions,
            groups=GroupsSummary(count=len(groups), total_lag=lag, lag_groups=len(summed)),
        )

    @router.get(
        "/topics/<topic>/activity",
        summary="Records produced per minute, from the index (a ref's count spread over its "
        "time span)",
    )
    def activity(
        topic: TopicName,
        minutes: Annotated[int, Query(ge=1, le=1440, description="the window, in minutes")] = 60,
    ) -> ActivityOut:
        guard.topic(O.DESCRIBE, topic)
        log = services.log
        info = log.topic(topic)
        start = window_start(log.clock.now_ms(), minutes)
        heads = log.metadata.get_heads(topic, range(info.partitions))
        counts = spread(spans_since(log.index, heads.values(), start), start, minutes)
        return ActivityOut(
            topic=topic,
            resolution_seconds=MINUTE_MS // 1000,
            minutes=[
                ActivityMinute(start_ms=start + i * MINUTE_MS, records=round(count, 3))
                for i, count in enumerate(counts)
            ],
        )

    @router.get(
        "/topics/<topic>/partitions/<partition>/details",
        summary="A partition's log start, high watermark, bytes and L0/L1 split",
        description="The split walks the partition's whole index (its manifests, cached).",
    )
    def partition_details(topic: TopicName, partition: PartitionNumber) -> PartitionDetailsOut:
        guard.topic(O.DESCRIBE, topic)
        log = services.log
        info = log.topic(topic)
        head = None
        if partition < info.partitions:
            head = log.metadata.get_heads(topic, [partition]).get(partition)
        if head is None:
            raise UnknownPartition(
                f"topic {topic!r} has {info.partitions} partitions; no partition {partition}",
                field="partition",
            )
        levels = level_split(log.index, head)
        return PartitionDetailsOut(
            topic=topic,
            partition=partition,
            log_start_offset=head.log_start_offset,
            high_watermark=head.next_offset,
            last_stable_offset=head.last_stable_offset,
            records=head.next_offset - head.log_start_offset,
            bytes=levels["l0"].bytes + levels["l1"].bytes,
            l0=_level_out(levels["l0"]),
            l1=_level_out(levels["l1"]),
            markers=levels["markers"].refs,
        )

    @router.get(
        "/topics/<topic>/key-partition",
        summary="The partition a key goes to (Kafka's default partitioner: murmur2)",
    )
    def key_partition(
        topic: TopicName,
        key: Annotated[
            str | None, Query(max_length=MAX_KEY_CHARS, description="the key as UTF-8 text")
        ] = None,
        key_b64: Annotated[
            str | None, Query(max_length=MAX_KEY_CHARS, description="the key's bytes, base64")
        ] = None,
    ) -> KeyPartitionOut:
        if (key is None) == (key_b64 is None):
            raise InvalidRequest(
                "give the key as key (text) or key_b64 (base64), one of them", field="key"
            )
        guard.topic(O.DESCRIBE, topic)
        data = _utf8(key) if key is not None else b64decode(key_b64, "key_b64")
        info = services.log.topic(topic)
        return KeyPartitionOut(
            topic=topic,
            partitions=info.partitions,
            partition=partition_for_key(data or b"", info.partitions),
        )

    return router


def _visible_groups(guard: RouteGuard, groups: list[str]) -> list[str]:
    """All with DESCRIBE on the cluster, else those it may DESCRIBE (as GET /groups)."""
    if guard.may(O.DESCRIBE, CLUSTER, CLUSTER_NAME):
        return groups
    return guard.visible(O.DESCRIBE, GROUP, groups)


def _utf8(text: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError:  # a lone surrogate: no UTF-8 for it
        raise InvalidRequest("key is not valid UTF-8 text: send key_b64", field="key") from None


def _total_lag(services: Services, group: str) -> int:
    try:
        return services.log.groups.describe(group).total_lag
    except GroupNotFound:  # deleted since it was listed
        return 0


def _level_out(level: LevelTotals) -> LevelOut:
    return LevelOut(
        refs=level.refs, objects=len(level.objects), bytes=level.bytes, records=level.records
    )
