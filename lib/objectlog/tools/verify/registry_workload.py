"""The registry workload: the Schema Registry under concurrent clients and DynamoDB faults, then
checked (tools.verify.registry_checker).

Against one deployment's DynamoDB endpoint (the embedded moto server by default; the table is
the workload's own), for a bounded number of operations or seconds, concurrently:

- registrants, each a thread with its own ObjectLog clients and its own FaultInjector, calling
  schemas.registry.SchemaRegistry directly, and one or more through the HTTP API's
  /schema-registry routes (the local gateway running the produce and fetch functions'
  handlers, whose own DynamoDB calls get the faults);
- each picking, at random, a subject of a few and one of: the same schema again (to be
  deduplicated: a schema already answered ok, in its subject or another), a new compatible
  version (the latest Avro record with a field added, with a default), an incompatible one
  (a field added without a default: refused under BACKWARD), a lookup, a read by id, a soft
  delete of a live version, a permanent delete of a soft-deleted one;
- each operation recorded with what it was told (registry_history).

Compatible versions add the first field name their latest version lacks, with a random type,
so two registrants that read the same latest version race to add one field with two types:
each alone is compatible, the second after the first is not.

Faults (REGISTRY_FAULT_KINDS, each switchable and counted) are faults.py's botocore hooks on
the registrants' DynamoDB clients. After the run a client with no faults reads every subject's
versions, every id, and every schema's fingerprint: ``check_registry`` finds the anomalies.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol
from urllib.parse import quote

from objectlog.clients.direct import ObjectLog
from objectlog.config import Config
from objectlog.errors import ErrorKind, ObjectLogError, SchemaNotFound, SchemaRegistryError
from objectlog.schemas.parsing import SchemaInput, fingerprint, schema_type
from objectlog.schemas.registry import SchemaRegistry
from objectlog.schemas.types import AVRO
from objectlog.tools.verify.checker import Verdict
from objectlog.tools.verify.faults import FaultInjector
from objectlog.tools.verify.registry_checker import FinalVersion, RegistryFinal, check_registry
from objectlog.tools.verify.registry_history import (
    COMPATIBLE,
    INCOMPATIBLE,
    LOOKUP,
    OK,
    PERMANENT_DELETE,
    READ_ID,
    REFUSED,
    REGISTER,
    SAME,
    SOFT_DELETE,
    UNKNOWN,
    RegistryHistory,
    RegistryOp,
)
from objectlog.tools.verify.threads import guarded_thread

REGISTRY_FAULT_KINDS = ("dynamodb-throttle", "lost-answer", "slow-call", "crash-before-write")
WRITES = ("PutItem", "UpdateItem")  # every registry write is one of these
FIELDS = tuple(f"f{i}" for i in range(8))  # the names compatible versions add, in this order
# what a registrant does, and how often
ACTIONS = (SAME, COMPATIBLE, INCOMPATIBLE, LOOKUP, READ_ID, SOFT_DELETE, PERMANENT_DELETE)
WEIGHTS = (24, 26, 10, 14, 10, 9, 7)
HTTP_MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"
_ERROR_NAMES = {cls.code: cls.__name__ for cls in SchemaRegistryError.__subclasses__()}


@dataclass(frozen=True)
class RegistryConfig:
    operations: int = 300  # the run stops after these or after seconds, whichever comes first
    seconds: float = 120.0
    registrants: int = 4  # direct, each its own clients and faults
    http_registrants: int = 1  # through the local gateway's /schema-registry
    subjects: int = 3
    seed: int = 0
    faults: frozenset[str] = frozenset(REGISTRY_FAULT_KINDS)
    share: float = 0.05  # of matching calls, per fault kind (slow calls: a fifth of it)
    read_timeout_s: float = 1.0


def registry_faults(names: str) -> frozenset[str]:
    """The registry's fault kinds among those `objectlog verify --faults` names ("all",
    "none", or a list; crash-before-commit, the main workload's crash, names
    crash-before-write here too)."""
    if names == "all":
        return frozenset(REGISTRY_FAULT_KINDS)
    chosen = {n.strip() for n in names.split(",")}
    if "crash-before-commit" in chosen:
        chosen.add("crash-before-write")
    return frozenset(chosen & set(REGISTRY_FAULT_KINDS))


def run_registry_workload(
    config: RegistryConfig, aws: Config | None = None
) -> tuple[RegistryHistory, Verdict]:
    """Run the workload against aws's DynamoDB endpoint (an embedded moto server when None;
    the table is the workload's own); check it."""
    with contextlib.ExitStack() as stack:
        if aws is None:
            from objectlog.tools.embedded import EmbeddedAWS

            endpoint = stack.enter_context(EmbeddedAWS(port=0)).endpoint_url
            aws = Config.from_env(s3_endpoint=endpoint, dynamodb_endpoint=endpoint)
        return RegistryWorkload(config, aws).run()


# ---- schemas: Avro records with optional fields ------------------------------------------


def record(fields: list[tuple[str, str, bool]]) -> str:
    """An Avro record with an id and these fields, each (name, "int" or "string", whether it
    has a default)."""
    out: list[dict[str, Any]] = [{"name": "id", "type": "string"}]
    for name, kind, has_default in fields:
        entry: dict[str, Any] = {"name": name, "type": kind}
        if has_default:
            entry["default"] = 0 if kind == "int" else ""
        out.append(entry)
    schema = {"type": "record", "name": "Event", "namespace": "verify", "fields": out}
    return json.dumps(schema, separators=(",", ":"))


def fields_of(text: str) -> list[tuple[str, str, bool]]:
    """record()'s fields back from a schema's text (as sent or as stored)."""
    return [
        (f["name"], f["type"], "default" in f)
        for f in json.loads(text)["fields"]
        if f["name"] != "id"
    ]


def compatible_after(latest: str | None, rng: random.Random) -> str | None:
    """latest with the first field of FIELDS it lacks, of a random type, with a default (None
    when it has them all)."""
    fields = fields_of(latest) if latest else []
    names = {name for name, _, _ in fields}
    free = [name for name in FIELDS if name not in names]
    if not free:
        return None
    return record([*fields, (free[0], rng.choice(("int", "string")), True)])


def incompatible_after(latest: str) -> str:
    """latest with a field no version has, without a default: BACKWARD refuses it."""
    fields = fields_of(latest)
    return record([*fields, (f"required{len(fields)}", "int", False)])


# ---- the two doors: the library and the HTTP API -------------------------------------------


class Refused(Exception):
    """The registry refused: nothing was applied."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


class Unknown(Exception):
    """The outcome is unknown: it may or may not have been applied."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


@dataclass(frozen=True)
class Answer:
    version: int | None = None
    schema_id: int | None = None
    schema: str | None = None


class Door(Protocol):
    """One client's way to the registry; each call returns, or raises Refused or Unknown."""

    def register(self, subject: str, text: str) -> Answer: ...

    def lookup(self, subject: str, text: str) -> Answer: ...

    def read_id(self, schema_id: int) -> Answer: ...

    def delete(self, subject: str, version: int, *, permanent: bool) -> Answer: ...

    def latest(self, subject: str) -> str: ...

    def versions(self, subject: str, *, deleted: bool) -> list[int]: ...


REFUSING_KINDS = (
    ErrorKind.INVALID,
    ErrorKind.UNPROCESSABLE,
    ErrorKind.NOT_FOUND,
    ErrorKind.CONFLICT,
)


def _told(call: Callable[[], Any]) -> Any:
    """call's answer, or Refused (an error whose kind says nothing was done) or Unknown."""
    try:
        return call()
    except ObjectLogError as e:
        if e.kind in REFUSING_KINDS:
            raise Refused(type(e).__name__) from e
        raise Unknown(type(e).__name__) from e


class LibraryDoor:
    def __init__(self, registry: SchemaRegistry) -> None:
        self.registry = registry

    def register(self, subject: str, text: str) -> Answer:
        found = _told(lambda: self.registry.register(subject, SchemaInput(text)))
        return Answer(found.version, found.schema.id)

    def lookup(self, subject: str, text: str) -> Answer:
        found = _told(lambda: self.registry.lookup(subject, SchemaInput(text)))
        return Answer(found.version, found.schema.id)

    def read_id(self, schema_id: int) -> Answer:
        return Answer(schema=_told(lambda: self.registry.schema_by_id(schema_id)).schema)

    def delete(self, subject: str, version: int, *, permanent: bool) -> Answer:
        deleted = self.registry.delete_version
        return Answer(_told(lambda: deleted(subject, version, permanent=permanent)))

    def latest(self, subject: str) -> str:
        return str(_told(lambda: self.registry.version(subject, "latest")).schema.schema)

    def versions(self, subject: str, *, deleted: bool) -> list[int]:
        return list(_told(lambda: self.registry.versions(subject, deleted=deleted)))


class HttpDoor:
    """The registry's REST API, as Confluent's clients call it."""

    def __init__(self, session: Any, base: str) -> None:
        self.session = session
        self.base = base

    def register(self, subject: str, text: str) -> Answer:
        answer = self._call("POST", f"/subjects/{quote(subject, safe='')}/versions", text)
        return Answer(answer["version"], answer["id"])

    def lookup(self, subject: str, text: str) -> Answer:
        answer = self._call("POST", f"/subjects/{quote(subject, safe='')}", text)
        return Answer(answer["version"], answer["id"])

    def read_id(self, schema_id: int) -> Answer:
        return Answer(schema=self._call("GET", f"/schemas/ids/{schema_id}")["schema"])

    def delete(self, subject: str, version: int, *, permanent: bool) -> Answer:
        path = f"/subjects/{quote(subject, safe='')}/versions/{version}"
        return Answer(self._call("DELETE", path + ("?permanent=true" if permanent else "")))

    def latest(self, subject: str) -> str:
        return str(
            self._call("GET", f"/subjects/{quote(subject, safe='')}/versions/latest")["schema"]
        )

    def versions(self, subject: str, *, deleted: bool) -> list[int]:
        path = f"/subjects/{quote(subject, safe='')}/versions"
        return list(self._call("GET", path + ("?deleted=true" if deleted else "")))

    def _call(self, method: str, path: str, schema: str | None = None) -> Any:
        data = None if schema is None else json.dumps({"schema": schema})
        headers = {"Content-Type": HTTP_MEDIA_TYPE}
        try:
            response = self.session.request(
                method, self.base + path, data=data, headers=headers, timeout=30
            )
        except OSError as e:  # requests' errors are OSErrors: the answer never came
            raise Unknown(type(e).__name__) from e
        status = response.status_code
        if status < 400:
            return response.json()
        if status >= 500:  # every 5xx is error code 50001: the status tells them apart
            raise Unknown(f"HTTP {status}")
        try:
            code = int(response.json().get("error_code", 0))
        except (ValueError, AttributeError):
            code = 0
        raise Refused(_ERROR_NAMES.get(code, f"HTTP {status} ({code})"))


# ---- the run -------------------------------------------------------------------------------


class RegistryWorkload:
    def __init__(self, config: RegistryConfig, aws: Config) -> None:
        self.config = config
        suffix = uuid.uuid4().hex[:10]
        self.log_config = replace(
            aws,
            bucket=f"verify-registry-{suffix}",
            table=f"verify-registry-{suffix}",
            read_timeout_s=config.read_timeout_s,
        )
        self.subjects = [f"verify-registry-{i}-value" for i in range(config.subjects)]
        self.history = RegistryHistory()
        self.injectors: list[FaultInjector] = []
        self.logs: list[ObjectLog] = []
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._started = 0
        self._deadline = 0.0
        # what the registrants learned from ok answers: texts by subject, ids
        self._texts: dict[str, list[str]] = {s: [] for s in self.subjects}
        self._ids: list[int] = []

    def run(self) -> tuple[RegistryHistory, Verdict]:
        started = time.monotonic()
        self._deadline = started + self.config.seconds
        admin = ObjectLog(self.log_config)
        self.logs.append(admin)
        admin.ensure_resources()
        from objectlog.tools.gateway import local_api

        served = self._faulty_log(0)
        gateway = local_api(lambda: served)
        url = gateway.start(port=0)
        try:
            threads = [
                self._thread(self._direct, f"registrant-{i}", i + 1)
                for i in range(self.config.registrants)
            ]
            threads += [
                self._thread(self._http, f"http-{i}", f"{url}/schema-registry")
                for i in range(self.config.http_registrants)
            ]
            for thread in threads:
                thread.join()
        finally:
            gateway.stop()
            for injector in self.injectors:
                injector.remove()
        self.history.faults = self._fault_counts()
        final = self._final_state(admin.schema_registry)
        verdict = check_registry(self.history, final)
        self.history.seconds = time.monotonic() - started
        for log in self.logs:
            log.close()
        if self.errors:
            raise self.errors[0]
        return self.history, verdict

    def _thread(self, target: Callable[..., None], *args: Any) -> threading.Thread:
        return guarded_thread(self.errors, f"verify-{args[0]}", target, *args)

    def _faulty_log(self, index: int) -> ObjectLog:
        """A log with clients of its own, and faults of its own on its DynamoDB client."""
        log = ObjectLog(self.log_config)
        injector = FaultInjector(self.config.seed * 1_000 + index)
        with self._lock:
            self.logs.append(log)
            self.injectors.append(injector)
        dynamodb, share, on = log.metadata.client, self.config.share, self.config.faults  # type: ignore[attr-defined]
        if "dynamodb-throttle" in on:
            for operation in WRITES:
                injector.throttle(dynamodb, operation, share=share)
            # a fifth of the share on reads: a registration makes about ten, and each throttle
            # costs botocore's backoff (0.5 s on average) while changing nothing
            injector.throttle(dynamodb, "GetItem", share=share / 5)
        for operation in WRITES:
            if "lost-answer" in on:
                injector.lose_answer(dynamodb, operation, share=share)
            if "slow-call" in on:
                slow_s = self.config.read_timeout_s + 0.2
                injector.slow_answer(dynamodb, operation, slow_s, share=share / 5)
            if "crash-before-write" in on:
                injector.crash_before(dynamodb, operation, share=share)
        return log

    def _fault_counts(self) -> Counter[str]:
        prefixes = {
            "throttle:": "dynamodb-throttle",
            "lost-answer:": "lost-answer",
            "slow:": "slow-call",
            "crash:": "crash-before-write",
        }
        counts: Counter[str] = Counter(dict.fromkeys(self.config.faults, 0))  # on, if none hit
        for injector in self.injectors:
            for name, n in injector.counts.items():
                counts[next(k for p, k in prefixes.items() if name.startswith(p))] += n
        return counts

    def _claim(self) -> bool:
        """Whether the run goes on: one more operation is this caller's to do."""
        with self._lock:
            if (
                self._started >= self.config.operations
                or time.monotonic() > self._deadline
                or self.errors
            ):
                return False
            self._started += 1
            return True

    # ---- registrants -----------------------------------------------------------------------

    def _direct(self, name: str, index: int) -> None:
        log = self._faulty_log(index)
        self._registrant(name, LibraryDoor(log.schema_registry))

    def _http(self, name: str, base: str) -> None:
        import requests

        with requests.Session() as session:
            self._registrant(name, HttpDoor(session, base))

    def _registrant(self, name: str, door: Door) -> None:
        rng = random.Random(f"{self.config.seed}-{name}")
        known: dict[str, str] = {}  # subject -> the latest schema this registrant saw there
        while self._claim():
            subject = rng.choice(self.subjects)
            action = rng.choices(ACTIONS, WEIGHTS)[0]
            op = self._act(name, door, rng, subject, action, known)
            self.history.add(op)
            if op.outcome == OK and op.kind == REGISTER and op.schema and op.schema_id:
                with self._lock:
                    if op.schema not in self._texts[subject]:
                        self._texts[subject].append(op.schema)
                    if op.schema_id not in self._ids:
                        self._ids.append(op.schema_id)

    def _act(
        self,
        client: str,
        door: Door,
        rng: random.Random,
        subject: str,
        action: str,
        known: dict[str, str],
    ) -> RegistryOp:
        """Do the action, or the nearest one that makes sense now: a permanent delete with no
        soft-deleted version soft-deletes; registering again, looking up, reading by id or
        deleting with nothing to name registers a compatible version."""
        if action == PERMANENT_DELETE:
            version = self._delete_target(door, rng, subject, permanent=True)
            if version is not None:
                return self._delete(client, door, subject, version, permanent=True)
            action = SOFT_DELETE
        if action == SOFT_DELETE:
            version = self._delete_target(door, rng, subject, permanent=False)
            if version is not None:
                return self._delete(client, door, subject, version, permanent=False)
        text = self._known_text(rng, subject) if action in (SAME, LOOKUP) else None
        if text is not None and action == SAME:
            return self._register(client, door, subject, text, SAME)
        if text is not None:
            sent = text
            return self._do(client, LOOKUP, subject, lambda: door.lookup(subject, sent), sent)
        if action == READ_ID:
            with self._lock:
                schema_id = rng.choice(self._ids) if self._ids else None
            if schema_id is not None:
                asked = schema_id
                return self._do(client, READ_ID, "", lambda: door.read_id(asked), None, asked)
        latest = self._latest(door, subject, known)
        if action == INCOMPATIBLE and latest is not None:
            return self._register(client, door, subject, incompatible_after(latest), INCOMPATIBLE)
        new = compatible_after(latest, rng)
        if new is None:  # every field added: register the latest again
            assert latest is not None
            return self._register(client, door, subject, latest, SAME)
        return self._register(client, door, subject, new, COMPATIBLE)

    def _delete(
        self, client: str, door: Door, subject: str, version: int, *, permanent: bool
    ) -> RegistryOp:
        kind = PERMANENT_DELETE if permanent else SOFT_DELETE

        def delete() -> Answer:
            return door.delete(subject, version, permanent=permanent)

        return self._do(client, kind, subject, delete, version=version)

    def _register(
        self, client: str, door: Door, subject: str, text: str, intent: str
    ) -> RegistryOp:
        return self._do(
            client, REGISTER, subject, lambda: door.register(subject, text), text, intent=intent
        )

    def _do(
        self,
        client: str,
        kind: str,
        subject: str,
        call: Callable[[], Answer],
        schema: str | None = None,
        schema_id: int | None = None,
        *,
        version: int | None = None,
        intent: str = "",
    ) -> RegistryOp:
        start = time.monotonic()
        try:
            answer = call()
        except (Refused, Unknown) as e:
            outcome = REFUSED if isinstance(e, Refused) else UNKNOWN
            return RegistryOp(
                client, kind, subject, outcome, schema, version, schema_id, e.error, start,
                time.monotonic(), intent,
            )  # fmt: skip
        return RegistryOp(
            client,
            kind,
            subject,
            OK,
            answer.schema or schema,
            answer.version if answer.version is not None else version,
            answer.schema_id if answer.schema_id is not None else schema_id,
            None,
            start,
            time.monotonic(),
            intent,
        )

    def _known_text(self, rng: random.Random, subject: str) -> str | None:
        """A schema answered ok: mostly one of this subject's, sometimes another's."""
        with self._lock:
            own = self._texts[subject]
            every = [t for texts in self._texts.values() for t in texts]
            if own and rng.random() < 0.7:
                return rng.choice(own)
            return rng.choice(every) if every else None

    def _latest(self, door: Door, subject: str, known: dict[str, str]) -> str | None:
        """The subject's latest live schema (None when it has none), or, when the read fails,
        the latest this registrant saw."""
        try:
            known[subject] = door.latest(subject)
        except Refused:
            known.pop(subject, None)
        except Unknown:
            self.history.count("planning reads failed")
        return known.get(subject)

    def _delete_target(
        self, door: Door, rng: random.Random, subject: str, *, permanent: bool
    ) -> int | None:
        """A live version to soft-delete, or a soft-deleted one to delete for good."""
        try:
            live = door.versions(subject, deleted=False)
            every = door.versions(subject, deleted=True) if permanent else live
        except Refused:
            return None
        except Unknown:
            self.history.count("planning reads failed")
            return None
        chosen = sorted(set(every) - set(live)) if permanent else live
        return rng.choice(chosen) if chosen else None

    # ---- the end -----------------------------------------------------------------------

    def _final_state(self, registry: SchemaRegistry) -> RegistryFinal:
        subjects = {
            subject: [
                FinalVersion(v.version, v.id, v.deleted)
                for v in registry.subject_docs.read(subject).versions
            ]
            for subject in self.subjects
        }
        ids = {v.id for versions in subjects.values() for v in versions}
        ids |= {op.schema_id for op in self.history.ops if op.schema_id is not None}
        schemas: dict[int, str | None] = {}
        for schema_id in sorted(ids):
            try:
                schemas[schema_id] = registry.schema_by_id(schema_id).schema
            except SchemaNotFound:
                schemas[schema_id] = None
        avro = schema_type(AVRO)
        sent = {op.schema for op in self.history.ops if op.schema and op.kind != READ_ID}
        texts = sent | {op.schema for op in self.history.ops if op.schema}
        texts |= {t for t in schemas.values() if t is not None}
        canonical = {text: avro.parse(text, {}).canonical for text in texts}
        fingerprints = {
            text: registry.store.id_by_fingerprint(
                fingerprint(avro.parse(text, {}), SchemaInput(text))
            )
            for text in sent
        }
        listed = registry.subjects(deleted=True)
        return RegistryFinal(subjects, schemas, fingerprints, canonical, listed)
