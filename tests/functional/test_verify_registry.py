"""The Schema Registry's reliability workload (objectlog verify --registry-operations), and
the registry anomalies it found, each reproduced on its own."""

from __future__ import annotations

import threading

import pytest
from rich.console import Console

from objectlog import ObjectLog
from objectlog.config import Config
from objectlog.errors import (
    IncompatibleSchema,
    ObjectLogError,
    OperationNotPermitted,
    SchemaNotFound,
)
from objectlog.schemas.parsing import SchemaInput
from objectlog.schemas.registry import SchemaRegistry, SubjectVersion
from objectlog.tools.verify.faults import FaultInjector, Params
from objectlog.tools.verify.registry_checker import REGISTRY_ANOMALIES
from objectlog.tools.verify.registry_history import OK, REGISTER
from objectlog.tools.verify.registry_report import registry_report
from objectlog.tools.verify.registry_workload import (
    RegistryConfig,
    record,
    run_registry_workload,
)


def test_a_short_run_with_faults_finds_no_anomaly(aws_endpoint: str) -> None:
    history, verdict = run_registry_workload(
        RegistryConfig(operations=150, seconds=60), Config.from_env()
    )
    registry_report(history, verdict, Console(width=160))  # pytest -s shows the tables
    assert len(history.ops) == 150
    assert history.faults["lost-answer"] > 0 and history.faults["crash-before-write"] > 0
    assert history.faults["dynamodb-throttle"] > 0
    assert any(op.kind == REGISTER and op.outcome == OK for op in history.ops)
    assert any(op.client.startswith("http") and op.outcome == OK for op in history.ops)
    assert set(verdict.counts) == set(REGISTRY_ANOMALIES)
    assert verdict.ok, verdict.summary()


# ---- the anomalies the workload found in the first registry, each reproduced (fixed since) ---

V1 = record([])
WITH_INT = record([("f0", "int", True)])
WITH_STRING = record([("f0", "string", True)])


def _subject_document_put(params: Params) -> bool:
    return str(params.get("Item", {}).get("pk", {}).get("S", "")).startswith("doc#schema-subject#")


def _schema_item_put(params: Params) -> bool:
    return str(params.get("Item", {}).get("sk", {}).get("S", "")) == "schema"


def _uses_update(params: Params) -> bool:
    return "uses" in str(params.get("UpdateExpression", ""))


def _registry(log: ObjectLog) -> SchemaRegistry:
    return SchemaRegistry(log.items.schemas, log.items.documents)


def test_a_version_registered_meanwhile_is_not_checked_against(log: ObjectLog) -> None:
    """register() checks the new schema against the latest version it read, then appends it
    in SubjectDocuments.update, which re-reads the document when another writer came first
    and appends without checking again: two registrations that each fit version 1 both land,
    the second unable to read the first's data (the workload's "incompatible version")."""
    first = ObjectLog(log.config)
    faults = FaultInjector()
    held = faults.pause(first.metadata.client, "PutItem", when=_subject_document_put)
    other = _registry(log)
    other.register("s", SchemaInput(V1))
    answers: dict[str, SubjectVersion | Exception] = {}

    def register_int() -> None:
        try:
            answers["int"] = _registry(first).register("s", SchemaInput(WITH_INT))
        except IncompatibleSchema as e:
            answers["int"] = e

    thread = threading.Thread(target=register_int)
    thread.start()
    assert held.wait_reached()  # checked against version 1, its document write held
    other.register("s", SchemaInput(WITH_STRING))  # version 2
    held.release()
    thread.join(10)
    assert isinstance(answers["int"], IncompatibleSchema), f"registered: {answers['int']}"


def test_a_registration_cut_after_its_version_leaves_its_id_unreadable(log: ObjectLog) -> None:
    """register() writes the subject's document, then the schema's use (and the subject
    list): a crash (or a lost answer on the document write) in between leaves a version whose
    id GET /schemas/ids/{id} does not find, and the client's retry is answered ok from the
    version already there, so its acknowledged id stays unreadable."""
    cut = ObjectLog(log.config)
    faults = FaultInjector()
    faults.crash_before(cut.metadata.client, "UpdateItem", when=_uses_update, times=1)
    with pytest.raises(ObjectLogError):
        _registry(cut).register("s", SchemaInput(V1))
    again = _registry(cut).register("s", SchemaInput(V1))  # the retry: ok
    registry = _registry(log)
    assert registry.version("s", again.version).schema.id == again.schema.id
    try:
        registry.schema_by_id(again.schema.id)
    except SchemaNotFound:
        pytest.fail(f"id {again.schema.id}, answered ok for s version {again.version}, not found")


def test_a_lost_answer_on_the_schema_item_refuses_the_registration(log: ObjectLog) -> None:
    """The schema item's PutItem is repeatable in the adapter: after a lost answer it is sent
    again, fails its condition against its own first attempt, and put_schema's False becomes
    OperationNotPermitted (422, 42205: not retriable) for a valid registration."""
    lossy = ObjectLog(log.config)
    faults = FaultInjector()
    faults.lose_answer(lossy.metadata.client, "PutItem", when=_schema_item_put, times=1)
    try:
        _registry(lossy).register("s", SchemaInput(V1))
    except OperationNotPermitted as e:
        pytest.fail(f"a valid registration refused after a lost answer: {e}")
