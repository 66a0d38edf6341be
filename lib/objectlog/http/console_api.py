"""The read routes a console needs beyond the topic and group routes (issue 39): the log's
overview, the topics list's rows, a topic's records produced per minute and its Iceberg table,
a partition's details, its records decoded through the schema registry, and the partition a
key goes to. The fetch function serves them (GET routes). Each checks the caller's ACLs first
(http.guards): DESCRIBE on the topic, and the overview counts only the topics and groups the
caller may DESCRIBE."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from objectlog.errors import GroupNotFound, InvalidRequest, UndecodableRecord, UnknownPartition
from objectlog.format.acls import Operation as O
from objectlog.format.partitioner import partition_for_key
from objectlog.format.schema_ids import framed_id
from objectlog.http.console_models import (
    ActivityMinute,
    ActivityOut,
    CompactorSummary,
    DecodedFetchOut,
    DecodedOut,
    GroupsSummary,
    KeyPartitionOut,
    LevelOut,
    OverviewOut,
    PartitionDetailsOut,
    ProduceRate,
    TableOut,
    TablesSummary,
    TopicRowOut,
    TopicRowsOut,
)
from objectlog.http.group_routes import visible_groups
from objectlog.http.guards import TOPIC
from objectlog.http.models import b64decode, record_out
from objectlog.http.routes import (
    MAX_FETCH_BYTES,
    PartitionNumber,
    Services,
    TopicName,
    route_guard,
)
from objectlog.schemas import serde
from objectlog.schemas.registry import SchemaRegistry
from objectlog.services.activity_chart import MINUTE_MS, spans_since, spread, window_start
from objectlog.services.overview import (
    MAX_SUMMED_PARTITIONS,
    NO_L0,
    TopicTotals,
    log_totals,
    summarize_topics,
)
from objectlog.services.partition_levels import LevelTotals, level_split

MAX_KEY_CHARS = 100_000
# The overview sums the lag of this many groups at most (by name): each costs a describe (the
# group's items and its topics' heads), so a log with thousands of groups answers in bounded
# time; a console shows each group's lag from GET /groups/{group}.
MAX_LAG_GROUPS = 20
MAX_DECODED_RECORDS = 1_000  # a page of the record browser; each record is decoded in Python


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
        f"per group for the first {MAX_LAG_GROUPS} (its items and the heads of its topics). "
        "The produce rate and the compactor's backlog come from those heads' tails and manifest "
        "lists' inline manifests (services.overview), with no other read; the tables' count "
        "from the topics' config (no table is loaded: GET /topics/{topic}/table).",
    )
    def overview() -> OverviewOut:
        log = services.log
        now = log.clock.now_ms()
        totals = log_totals(log.metadata, log.index, visible_topics, now_ms=now)
        groups = visible_groups(guard, log.groups.list_groups())
        summed = sorted(groups)[:MAX_LAG_GROUPS]  # each describe reads the group, its heads
        lag = sum(_total_lag(services, g) for g in summed)
        waiting = totals.oldest_l0_ms != NO_L0
        return OverviewOut(
            topics=totals.topics,
            partitions=totals.partitions,
            records=totals.records,
            bytes=totals.bytes,
            segments=totals.segments,
            summed_partitions=totals.summed_partitions,
            groups=GroupsSummary(count=len(groups), total_lag=lag, lag_groups=len(summed)),
            produce_rate=ProduceRate(
                last_minute=round(totals.last_minute, 3),
                last_5_minutes=round(totals.last_5_minutes, 3),
            ),
            compactor=CompactorSummary(
                l0_refs=totals.l0_refs,
                oldest_l0_age_ms=max(0, now - totals.oldest_l0_ms) if waiting else None,
            ),
            tables=TablesSummary(catalog=bool(log.config.catalog), topics=totals.tables),
        )

    def visible_topics(names: list[str]) -> list[str]:
        return guard.visible(O.DESCRIBE, TOPIC, names)

    @router.get(
        "/overview/topics",
        summary="Every topic the caller may DESCRIBE, with its records and bytes held",
        description="The topics list's rows in one request (never one per topic), read as "
        "GET /overview reads them: topics are summed whole, by name, while the heads read stay "
        f"within {MAX_SUMMED_PARTITIONS}; the others have null records, bytes and segments "
        "(GET /topics/{topic} for them).",
    )
    def topic_rows() -> TopicRowsOut:
        log = services.log
        found = summarize_topics(log.metadata, log.index, visible_topics)
        return TopicRowsOut(topics=[_row(found, name) for name in found.partitions])

    @router.get(
        "/topics/<topic>/table",
        summary="The topic's Iceberg table: its snapshot, files and how far it trails the log",
        description='{"table": null} when no catalog is configured or the compactor has not '
        "registered the topic's table. Requests: the topic, its heads (1 BatchGetItem per 100 "
        "partitions), every partition's manifest list and manifests (S3, cached) for its live "
        "L1 files, and the table's metadata from the catalog.",
    )
    def table(topic: TopicName) -> TableOut:
        guard.topic(O.DESCRIBE, topic)
        log = services.log
        enabled = log.topic(topic, fresh=True).config.table_enabled
        state = log.table_state(topic)
        if state is None:
            return TableOut(table=None, table_enabled=enabled)
        return TableOut(
            table=state.table,
            table_enabled=enabled,
            snapshot_id=state.snapshot_id,
            snapshot_ms=state.snapshot_ms,
            files=state.files,
            missing_files=state.missing,
            stale_files=state.stale,
            offsets_behind=state.offsets_behind,
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
        "/topics/<topic>/partitions/<partition>/decoded",
        summary="Fetch records with keys and values decoded through the schema registry",
        description="As GET .../records, plus key_decoded and value_decoded: bytes in the "
        "Schema Registry's wire format (magic byte 0, a 4-byte schema id) decoded to JSON as "
        "REST Proxy answers them (Avro, JSON Schema, Protobuf); a key or value not in the wire "
        "format, or naming a schema the registry does not hold, has a note instead. Each "
        "schema is read from the registry once (then kept), never once per record.",
    )
    def decoded(
        topic: TopicName,
        partition: PartitionNumber,
        offset: Annotated[int, Query(ge=0, le=2**63 - 1)],
        max_bytes: Annotated[int, Query(ge=1, le=MAX_FETCH_BYTES)] = 1 << 20,
        max_records: Annotated[int | None, Query(ge=1, le=MAX_DECODED_RECORDS)] = None,
    ) -> DecodedFetchOut:
        guard.topic(O.READ, topic)
        log = services.log
        result = log.fetch(topic, partition, offset, max_bytes=max_bytes, max_records=max_records)
        registry = services.registry
        records = [
            record_out(r)
            | {
                "key_decoded": _decoded(registry, r.key),
                "value_decoded": _decoded(registry, r.value),
            }
            for r in result.records
        ]
        return DecodedFetchOut.answer(result, records)

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


def _row(found: TopicTotals, name: str) -> TopicRowOut:
    totals = found.summed.get(name)
    return TopicRowOut(
        topic=name,
        partitions=found.partitions[name],
        records=totals.records if totals else None,
        bytes=totals.bytes if totals else None,
        segments=totals.segments if totals else None,
    )


def _decoded(registry: SchemaRegistry, data: bytes | None) -> DecodedOut | None:
    """The bytes decoded through the registry, or why they were not (a note)."""
    if data is None:
        return None
    schema_id = framed_id(data)
    try:
        return DecodedOut(decoded=serde.decode(registry, data), schema_id=schema_id)
    except UndecodableRecord as e:
        return DecodedOut(schema_id=schema_id, note=e.message)


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
