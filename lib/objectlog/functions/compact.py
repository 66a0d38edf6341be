"""The compact function: one maintenance run (compaction of every partition, the transaction
sweep, then garbage collection) per invocation.

EventBridge invokes it on a schedule (``"detail-type": "Scheduled Event"``, every topic). A
direct invoke may narrow or rehearse the run with a JSON payload::

    {"topics": ["orders", "payments"], "dry_run": true}

The run stops before starting a partition once the invocation is close to its timeout; the
next run starts from the first partition again and finds the finished ones idle.

Settings come from the environment (all optional):

    OBJECTLOG_COMPACT_TARGET_MIB       L1 file size              (CompactionSettings default)
    OBJECTLOG_COMPACT_ROW_GROUP_MIB    L1 row group size
    OBJECTLOG_COMPACT_MAX_MIB_PER_RUN  input bytes per partition per run
    OBJECTLOG_GC_MIN_AGE_MS            how old an unreferenced object must be to be deleted
    OBJECTLOG_VERSIONED_FUNCTIONS      functions whose versions older than the one
    OBJECTLOG_FUNCTION_ALIAS           this alias serves are deleted after each run (SnapStart:
                                       a superseded version's snapshot is billed while it exists)
    OBJECTLOG_VERSION_GRACE_S          none while the alias's version is younger than this
                                       (default 900: requests may still run on the old one)

Metrics (EMF, namespace objectlog): segments_merged, bytes_rewritten, write_amplification,
objects_deleted, records_undecodable (values a typed table's columns could not decode: they
keep their bytes and their reason, docs/schemas.md), duration, partitions_skipped (any
partition with a skip reason, "idle" included; the reasons are in the metadata), and the
transaction sweep's (services.transaction_sweep): transactions_aborted (Ongoing past their
deadline), transactions_completed (decided ones a dead agent left), txn_entries_closed
(leftover head entries closed with an abort marker), txn_entries_adopted (handed to their
producer's transaction under way), txn_sweep_failures (logged; the next run retries), and
versions_deleted (superseded Lambda versions, adapters.lambda_versions). A dry run emits only
duration and sweeps nothing: what it would do must not add to what was done.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from aws_lambda_powertools.metrics import MetricUnit

from objectlog.adapters.lambda_versions import GRACE_S, delete_superseded_versions, lambda_client
from objectlog.clients.direct import ObjectLog
from objectlog.compaction.compactor import CompactionSettings, PartitionReport
from objectlog.compaction.gc import GcReport
from objectlog.compaction.maintenance import MaintenanceReport, run_maintenance
from objectlog.compaction.planning import MIB
from objectlog.errors import InvalidRequest, ObjectLogError
from objectlog.functions import snapstart
from objectlog.telemetry import log_metrics, logger, metrics, tracer

ENV_TARGET_MIB = "OBJECTLOG_COMPACT_TARGET_MIB"
ENV_ROW_GROUP_MIB = "OBJECTLOG_COMPACT_ROW_GROUP_MIB"
ENV_MAX_MIB_PER_RUN = "OBJECTLOG_COMPACT_MAX_MIB_PER_RUN"
ENV_GC_MIN_AGE_MS = "OBJECTLOG_GC_MIN_AGE_MS"
# SnapStart (infra/terraform): the deployment's functions whose superseded versions each run
# deletes (comma-separated), and the alias that names the version they serve
ENV_VERSIONED_FUNCTIONS = "OBJECTLOG_VERSIONED_FUNCTIONS"
ENV_FUNCTION_ALIAS = "OBJECTLOG_FUNCTION_ALIAS"
ENV_VERSION_GRACE_S = "OBJECTLOG_VERSION_GRACE_S"

# Stop starting partitions this long before the Lambda timeout (a quarter of the remaining
# time when that is shorter): one partition's run, then garbage collection, must still fit.
DEADLINE_MARGIN_S = 60.0
PAYLOAD_KEYS = frozenset({"topics", "dry_run"})


class CompactEnv(NamedTuple):
    """The function's settings, as the environment gives them."""

    compaction: CompactionSettings
    gc_min_age_ms: int | None  # None: the collector's default


def settings_from_env(env: Mapping[str, str]) -> CompactEnv:
    """CompactionSettings and the GC minimum age from the OBJECTLOG_* variables set in env;
    defaults for those unset or empty. ValueError names a variable that is not a number."""
    sizes = {
        "target_file_bytes": ENV_TARGET_MIB,
        "row_group_bytes": ENV_ROW_GROUP_MIB,
        "max_bytes_per_run": ENV_MAX_MIB_PER_RUN,
    }
    overrides: dict[str, Any] = {}
    for name, variable in sizes.items():
        raw = env.get(variable, "").strip()
        if raw:
            overrides[name] = _mib(variable, raw)
    gc_min_age_ms: int | None = None
    raw_age = env.get(ENV_GC_MIN_AGE_MS, "").strip()
    if raw_age:
        try:
            gc_min_age_ms = int(raw_age)
        except ValueError:
            raise ValueError(f"{ENV_GC_MIN_AGE_MS}={raw_age!r} is not a whole number") from None
        if gc_min_age_ms < 0:
            raise ValueError(f"{ENV_GC_MIN_AGE_MS}={raw_age!r} is negative")
    return CompactEnv(replace(CompactionSettings(), **overrides), gc_min_age_ms)


def _mib(variable: str, raw: str) -> int:
    try:
        mib = float(raw)
    except ValueError:
        raise ValueError(f"{variable}={raw!r} is not a number of MiB") from None
    if not mib > 0 or mib == float("inf"):
        raise ValueError(f"{variable}={raw!r}: expected a positive number of MiB")
    return max(1, int(mib * MIB))


@dataclass(frozen=True)
class CompactRequest:
    topics: list[str] | None = None  # None: every topic
    dry_run: bool = False


def parse_event(event: Any) -> CompactRequest:
    """The run an event asks for: an EventBridge event's detail (empty for a scheduled event)
    or a direct invoke's payload. InvalidRequest if it is malformed."""
    if event is None:
        return CompactRequest()
    if not isinstance(event, Mapping):
        raise InvalidRequest(
            f"the payload must be a JSON object, got {type(event).__name__}", field="payload"
        )
    payload: Any = event
    if "detail-type" in event:  # an EventBridge event: the options would be in its detail
        payload = event.get("detail") or {}
        if not isinstance(payload, Mapping):
            raise InvalidRequest("the event's detail must be a JSON object", field="detail")
    unknown = sorted(str(key) for key in payload if key not in PAYLOAD_KEYS)
    if unknown:
        raise InvalidRequest(
            f"unknown field(s) {', '.join(unknown)}: the payload takes topics (a list of topic "
            "names) and dry_run (true or false)",
            field=unknown[0],
        )
    topics = payload.get("topics")
    if topics is not None:
        if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
            raise InvalidRequest("topics must be a list of topic names (strings)", field="topics")
        if not topics:
            raise InvalidRequest(
                "topics is empty: name at least one topic, or leave topics out for all",
                field="topics",
            )
        topics = list(dict.fromkeys(topics))
    dry_run = payload.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise InvalidRequest("dry_run must be true or false", field="dry_run")
    return CompactRequest(topics, dry_run)


def deadline_for(context: Any, now: float | None = None) -> float | None:
    """When to stop starting partitions, on the monotonic clock; None without a context that
    knows its remaining time."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if not callable(remaining):
        return None
    remaining_s = max(0.0, remaining() / 1000)
    now = time.monotonic() if now is None else now
    return now + remaining_s - min(DEADLINE_MARGIN_S, remaining_s / 4)


def partition_row(report: PartitionReport) -> dict[str, Any]:
    return {
        "topic": report.topic,
        "partition": report.partition,
        "skipped": report.skipped,
        "log_start_before": report.log_start_before,
        "log_start_after": report.log_start_after,
        "refs_in": report.refs_in,
        "bytes_in": report.bytes_in,
        "bytes_out": report.bytes_out,
        "records_in": report.records_in,
        "records_out": report.records_out,
        "records_undecodable": report.records_undecodable,
        "files_written": report.files_written,
        "retired": len(report.retired),
        "write_amplification": round(report.write_amplification, 4),
    }


def gc_summary(report: GcReport) -> dict[str, Any]:
    return {
        "horizon_ms": report.horizon_ms,
        "dry_run": report.dry_run,
        "referenced": report.referenced,
        "scanned": report.scanned,
        "deleted": len(report.deleted),
        "deleted_bytes": report.deleted_bytes,
    }


def summarize(report: MaintenanceReport, request: CompactRequest) -> dict[str, Any]:
    """The JSON-able summary the function returns (and logs, without idle partitions)."""
    return {
        "dry_run": report.dry_run,
        "topics": request.topics,
        # False when the deadline stopped the run: some partitions and the GC were left over.
        "finished": report.gc is not None,
        "seconds": round(report.seconds, 3),
        "segments_merged": report.segments_merged,
        "bytes_read": report.bytes_read,
        "bytes_rewritten": report.bytes_rewritten,
        "write_amplification": round(report.write_amplification, 4),
        "objects_deleted": report.objects_deleted,
        "records_undecodable": report.records_undecodable,
        "partitions_skipped": sum(1 for p in report.partitions if p.skipped),
        "partitions": [partition_row(p) for p in report.partitions],
        "gc": gc_summary(report.gc) if report.gc is not None else None,
        # the topics' Iceberg tables (OBJECTLOG_CATALOG): what each reconcile did
        "tables": [vars(table) for table in report.tables],
        "tables_dropped": report.tables_dropped,
        # the transaction sweep: None in a dry run
        "transactions": report.sweep.summary() if report.sweep is not None else None,
    }


def emit_metrics(report: MaintenanceReport) -> None:
    metrics.add_metadata(key="function", value="compact")
    metrics.add_metadata(key="dry_run", value=report.dry_run)
    metrics.add_metric(name="duration", unit=MetricUnit.Milliseconds, value=report.seconds * 1000)
    if report.dry_run:
        return
    reasons = Counter(p.skipped for p in report.partitions if p.skipped)
    metrics.add_metadata(key="skipped", value=dict(reasons))
    metrics.add_metric(name="segments_merged", unit=MetricUnit.Count, value=report.segments_merged)
    metrics.add_metric(name="bytes_rewritten", unit=MetricUnit.Bytes, value=report.bytes_rewritten)
    metrics.add_metric(
        name="write_amplification", unit=MetricUnit.NoUnit, value=report.write_amplification
    )
    metrics.add_metric(name="objects_deleted", unit=MetricUnit.Count, value=report.objects_deleted)
    metrics.add_metric(
        name="records_undecodable", unit=MetricUnit.Count, value=report.records_undecodable
    )
    metrics.add_metric(
        name="partitions_skipped", unit=MetricUnit.Count, value=sum(reasons.values())
    )
    if report.sweep is not None:
        swept = report.sweep
        for name, value in (
            ("transactions_aborted", swept.aborted),
            ("transactions_completed", swept.completed),
            ("txn_entries_closed", swept.entries_closed),
            ("txn_entries_adopted", swept.entries_adopted),
            ("txn_sweep_failures", swept.failed),
        ):
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def delete_superseded(log: ObjectLog, env: Mapping[str, str]) -> dict[str, list[str]]:
    """Each versioned function's superseded versions deleted (adapters.lambda_versions), by
    function; a function that failed is logged and left to the next run."""
    names = [n.strip() for n in env.get(ENV_VERSIONED_FUNCTIONS, "").split(",") if n.strip()]
    alias = env.get(ENV_FUNCTION_ALIAS, "").strip()
    if not names or not alias:
        return {}
    grace_s = version_grace_s(env)
    client = lambda_client(log.config)
    deleted: dict[str, list[str]] = {}
    for name in names:
        try:
            cleanup = delete_superseded_versions(client, name, alias, grace_s=grace_s)
            deleted[name] = list(cleanup.deleted)
        except ObjectLogError as e:
            logger.warning(
                "superseded versions not deleted", extra={"function": name, "error": e.to_dict()}
            )
    return deleted


def version_grace_s(env: Mapping[str, str]) -> float:
    """OBJECTLOG_VERSION_GRACE_S, or the adapter's default; ValueError if it is not a
    number of seconds, 0 or more."""
    raw = env.get(ENV_VERSION_GRACE_S, "").strip()
    if not raw:
        return GRACE_S
    try:
        grace_s = float(raw)
    except ValueError:
        raise ValueError(f"{ENV_VERSION_GRACE_S}={raw!r} is not a number of seconds") from None
    if not 0 <= grace_s < float("inf"):
        raise ValueError(f"{ENV_VERSION_GRACE_S}={raw!r}: expected 0 or more seconds")
    return grace_s


@dataclass
class CompactServices:
    """The log, built once per Lambda container (as api.routes.Services)."""

    log_factory: Callable[[], ObjectLog]
    _log: ObjectLog | None = field(default=None, repr=False)

    @property
    def log(self) -> ObjectLog:
        if self._log is None:
            self._log = self.log_factory()
        return self._log

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


def compact_handler(
    log_factory: Callable[[], ObjectLog] = ObjectLog.connect,
    env: Mapping[str, str] | None = None,
) -> Callable[..., dict[str, Any]]:
    """A Lambda entry point for the compact function; env defaults to os.environ, read at
    each invocation."""
    services = CompactServices(log_factory)

    @logger.inject_lambda_context
    @log_metrics
    @tracer.capture_lambda_handler
    def handler(event: Any, context: Any) -> dict[str, Any]:
        request = parse_event(event)
        environment = os.environ if env is None else env
        settings = settings_from_env(environment)
        tracer.put_annotation(key="dry_run", value=request.dry_run)
        report = run_maintenance(
            services.log,
            request.topics,
            dry_run=request.dry_run,
            settings=settings.compaction,
            gc_min_age_ms=settings.gc_min_age_ms,
            deadline_s=deadline_for(context),
        )
        emit_metrics(report)
        summary = summarize(report, request)
        if not request.dry_run:
            versions = delete_superseded(services.log, environment)
            summary["versions_deleted"] = versions
            count = sum(len(v) for v in versions.values())
            metrics.add_metric(name="versions_deleted", unit=MetricUnit.Count, value=count)
        logged = summary | {"partitions": [p for p in summary["partitions"] if not p["skipped"]]}
        logged["partitions_idle"] = sum(1 for p in report.partitions if p.skipped == "idle")
        logger.info("maintenance run" + (" (dry run)" if request.dry_run else ""), extra=logged)
        return summary

    def prepare() -> None:
        """Before a SnapStart snapshot: the log's clients and pyarrow's first-use paths, no
        request (functions.snapstart)."""
        _ = services.log
        snapstart.warm_arrow()

    snapstart.register(prepare, snapstart.restored)
    handler.services = services  # type: ignore[attr-defined]
    handler.prepare = prepare  # type: ignore[attr-defined]
    return handler


handler = compact_handler()
