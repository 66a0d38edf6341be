"""Confluent's Schema Registry REST API (v1) under its own base path, /schema-registry, so
``schema.registry.url`` is ``<api>/schema-registry`` (DESIGN.md section 15; the rules are
schemas.registry).

Answers are ``application/vnd.schemaregistry.v1+json`` with Confluent's error bodies
(``error_code``, ``message``). API Gateway's HTTP API hands over the path decoded, so a subject
name holding ``/`` (sent as ``%2F``) arrives as several segments: ``routable_path`` finds the
subject by what follows it and encodes it again before the routes match, and the routes decode
their ``subject``.

Every route passes the ACL check its entry in http.registry_access.ROUTES names before it reads
or changes anything (``route(method, path, summary)`` registers it so); a refusal answers 403
with Confluent's ``{"error_code": 40301, "message": ...}``.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, quote, unquote

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import BaseModel, ConfigDict, Field

from objectlog.errors import InvalidRequest, NotAuthorized, ObjectLogError, SchemaRegistryError
from objectlog.http.registry_access import FORBIDDEN_CODE, RegistryGuard, guarded_route
from objectlog.http.routes import Services, parse_model
from objectlog.schemas.parsing import TYPE_NAMES, SchemaInput
from objectlog.schemas.registry import SchemaRegistry, SubjectVersion
from objectlog.schemas.types import AVRO, PROTOBUF
from objectlog.stores.schemas import SchemaReference, StoredSchema
from objectlog.telemetry import logger

BASE = "/schema-registry"
MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"
REQUEST_TYPES = (
    MEDIA_TYPE,
    "application/vnd.schemaregistry+json",
    "application/json",
    "application/octet-stream",
)
TAG = "Schema Registry"
SERIALIZED = "serialized"
# what may follow a subject in a path; the subject is what comes before the last match
_AFTER_SUBJECT = re.compile(r"/(versions(/[^/]+(/schema|/referencedby)?)?|metadata)$")


def is_schema_registry(path: str) -> bool:
    return path == BASE or path.startswith(f"{BASE}/")


def routable_path(path: str) -> str:
    """The path with a subject's ``/`` encoded again (API Gateway decodes %2F)."""
    for prefix in (f"{BASE}/subjects/", f"{BASE}/config/", f"{BASE}/mode/"):
        if path.startswith(prefix):
            rest = path[len(prefix) :]
            found = _AFTER_SUBJECT.search(rest) if prefix.endswith("subjects/") else None
            subject, tail = (rest[: found.start()], found.group(0)) if found else (rest, "")
            return prefix + quote(unquote(subject), safe="") + tail
    compatibility = f"{BASE}/compatibility/subjects/"
    if path.startswith(compatibility):
        rest = path[len(compatibility) :]
        found = re.search(r"/versions(/[^/]+)?$", rest)
        if found:
            subject = quote(unquote(rest[: found.start()]), safe="")
            return compatibility + subject + found.group(0)
    return path


def log_change(event: dict[str, Any], principal: str | None) -> None:
    """Who asked for what, for a request that may change the registry on a route an authorizer
    guards (none locally by default: no line there)."""
    method = str((event.get("requestContext") or {}).get("http", {}).get("method", ""))
    if principal is not None and method not in ("GET", "HEAD", "OPTIONS"):
        logger.info("schema registry request", extra={"method": method, "path": event["rawPath"]})


def error_body(status: int, message: str, code: int | None = None) -> dict[str, Any]:
    return {"error_code": code or status, "message": message}


def error_status(error: ObjectLogError) -> tuple[int, int]:
    """The HTTP status and Confluent error code of an error on the registry's routes."""
    if isinstance(error, SchemaRegistryError):
        return error.status, error.code
    if isinstance(error, InvalidRequest):
        return 422, 422
    if isinstance(error, NotAuthorized):
        return 403, FORBIDDEN_CODE
    status = error.kind.http_status
    return status, 50001 if status >= 500 else status


class Reference(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str = Field(min_length=1)
    subject: str = Field(min_length=1)
    version: int = Field(ge=1, le=2**31 - 1)


class SchemaBody(BaseModel):
    """A registration, lookup or compatibility test (Confluent's RegisterSchemaRequest)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    schema_text: str = Field(alias="schema")
    schema_type: str = Field(default=AVRO, alias="schemaType")
    references: list[Reference] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None
    rule_set: dict[str, Any] | None = Field(default=None, alias="ruleSet")
    id: int | None = Field(default=None, ge=1, le=2**31 - 1)

    def given(self) -> SchemaInput:
        return SchemaInput(
            schema=self.schema_text,
            schema_type=self.schema_type.upper(),
            references=tuple(
                SchemaReference(r.name, r.subject, r.version) for r in self.references
            ),
            metadata=_json_or_none(self.metadata),
            rule_set=_json_or_none(self.rule_set),
        )


class CompatibilityBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    compatibility: str


class ModeBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    mode: str


def _json_or_none(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, separators=(",", ":"))


def schema_out(registry: SchemaRegistry, schema: StoredSchema, fmt: str | None) -> dict[str, Any]:
    """A schema as Confluent answers it: schemaType and references only when not the
    defaults; Protobuf as its serialized descriptor with format=serialized."""
    out: dict[str, Any] = {"schema": _text(registry, schema, fmt)}
    if schema.schema_type != AVRO:
        out["schemaType"] = schema.schema_type
    if schema.references:
        out["references"] = [
            {"name": r.name, "subject": r.subject, "version": r.version} for r in schema.references
        ]
    if schema.metadata is not None:
        out["metadata"] = json.loads(schema.metadata)
    if schema.rule_set is not None:
        out["ruleSet"] = json.loads(schema.rule_set)
    out["guid"] = schema.guid
    return out


def _text(registry: SchemaRegistry, schema: StoredSchema, fmt: str | None) -> str:
    if fmt == SERIALIZED and schema.schema_type == PROTOBUF:
        from objectlog.schemas import protobuf_schemas  # protoc loads only when asked for

        return protobuf_schemas.serialized(registry.parsed(schema))
    return schema.schema


def version_out(
    registry: SchemaRegistry, found: SubjectVersion, fmt: str | None = None
) -> dict[str, Any]:
    return {
        "subject": found.subject,
        "version": found.version,
        "id": found.schema.id,
        **schema_out(registry, found.schema, fmt),
    }


def registry_router(services: Services, *, writes: bool) -> Router:
    """The registry's routes: reads (the fetch function), or writes and the POSTs that
    register, look up and test schemas (the produce function)."""
    router = Router()

    def registry() -> SchemaRegistry:
        return services.registry

    def query(name: str, default: str | None = None) -> str | None:
        params = router.current_event.query_string_parameters or {}
        return params.get(name, default)

    def flag(name: str) -> bool:
        return (query(name) or "false").lower() == "true"

    def ok(body: Any) -> Response[str]:
        return Response(200, MEDIA_TYPE, json.dumps(body))

    def body_of(model: type[Any]) -> Any:
        return parse_model(model, router.current_event.decoded_body)

    guard = RegistryGuard(lambda: services.access, lambda: router.current_event.raw_event)
    route = guarded_route(router, guard, BASE, tags=[TAG], enable_validation=False)

    def schema_body() -> SchemaBody:
        """The body's schema, once the principal may read the subjects its references name."""
        body: SchemaBody = body_of(SchemaBody)
        guard.references(r.subject for r in body.references)
        return body

    if not writes:
        _read_routes(router, route, guard, registry, query, flag, ok)
    else:
        _write_routes(route, registry, query, flag, ok, schema_body, body_of)
    return router


def _read_routes(
    router: Router, route: Any, guard: RegistryGuard, registry: Any, query: Any, flag: Any, ok: Any
) -> None:
    @route("GET", "", "Schema Registry: root")
    def root() -> Response[str]:
        return ok({})

    @route("GET", "/schemas/types", "Schema Registry: schema types")
    def types() -> Response[str]:
        return ok(list(TYPE_NAMES))

    @route("GET", "/schemas/ids/<schema_id>", "Schema Registry: schema by id")
    def by_id(schema_id: str) -> Response[str]:
        schema = registry().schema_by_id(_id(schema_id), _subject_or_none(query("subject")))
        guard.schema(subject for subject, _ in schema.uses)
        return ok(schema_out(registry(), schema, query("format")))

    @route("GET", "/schemas/ids/<schema_id>/schema", "Schema Registry: raw schema")
    def raw_by_id(schema_id: str) -> Response[str]:
        schema = registry().schema_by_id(_id(schema_id), _subject_or_none(query("subject")))
        guard.schema(subject for subject, _ in schema.uses)
        return _raw(_text(registry(), schema, query("format")))

    @route("GET", "/schemas/ids/<schema_id>/subjects", "Schema Registry: subjects of a schema")
    def id_subjects(schema_id: str) -> Response[str]:
        uses = registry().uses(_id(schema_id), deleted=flag("deleted"))
        return ok(guard.subjects(sorted({subject for subject, _ in uses})))

    @route(
        "GET", "/schemas/ids/<schema_id>/versions", "Schema Registry: subject versions of a schema"
    )
    def id_versions(schema_id: str) -> Response[str]:
        uses = registry().uses(_id(schema_id), deleted=flag("deleted"))
        shown = set(guard.subjects({subject for subject, _ in uses}))
        return ok([{"subject": s, "version": v} for s, v in uses if s in shown])

    @route("GET", "/schemas/guids/<guid>", "Schema Registry: schema by guid")
    def by_guid(guid: str) -> Response[str]:
        schema = registry().schema_by_guid(guid)
        guard.schema(subject for subject, _ in schema.uses)
        return ok(schema_out(registry(), schema, query("format")))

    @route("GET", "/subjects", "Schema Registry: subjects")
    def subjects() -> Response[str]:
        prefix = query("subjectPrefix") or ""
        return ok(guard.subjects(registry().subjects(prefix, deleted=flag("deleted"))))

    @route("GET", "/subjects/<subject>/versions", "Schema Registry: versions")
    def versions(subject: str) -> Response[str]:
        return ok(registry().versions(unquote(subject), deleted=flag("deleted")))

    @route("GET", "/subjects/<subject>/versions/<version>", "Schema Registry: a version")
    def version(subject: str, version: str) -> Response[str]:
        found = registry().version(unquote(subject), version, deleted=flag("deleted"))
        return ok(version_out(registry(), found, query("format")))

    @route(
        "GET",
        "/subjects/<subject>/versions/<version>/schema",
        "Schema Registry: a version's raw schema",
    )
    def version_schema(subject: str, version: str) -> Response[str]:
        found = registry().version(unquote(subject), version, deleted=flag("deleted"))
        return _raw(_text(registry(), found.schema, query("format")))

    @route(
        "GET",
        "/subjects/<subject>/versions/<version>/referencedby",
        "Schema Registry: schemas referencing a version",
    )
    def referenced_by(subject: str, version: str) -> Response[str]:
        return ok(registry().referenced_by(unquote(subject), version))

    @route("GET", "/subjects/<subject>/metadata", "Schema Registry: latest version with metadata")
    def with_metadata(subject: str) -> Response[str]:
        wanted = _metadata_query(parse_qs(str(router.current_event.get("rawQueryString") or "")))
        found = registry().latest_with_metadata(unquote(subject), wanted)
        return ok(version_out(registry(), found, query("format")))

    @route(
        "GET",
        "/associations/resources/<namespace>/<name>",
        "Schema Registry: a resource's associated subjects (none: no associations are "
        "kept, so clients use their subject name strategy)",
    )
    def associations(namespace: str, name: str) -> Response[str]:
        return ok([])

    @route("GET", "/config", "Schema Registry: global compatibility")
    def global_config() -> Response[str]:
        return ok({"compatibilityLevel": registry().settings.compatibility(None)})

    @route("GET", "/config/<subject>", "Schema Registry: a subject's compatibility")
    def subject_config(subject: str) -> Response[str]:
        level = registry().settings.compatibility(
            unquote(subject), default_to_global=flag("defaultToGlobal")
        )
        return ok({"compatibilityLevel": level})

    @route("GET", "/mode", "Schema Registry: global mode")
    def global_mode() -> Response[str]:
        return ok({"mode": registry().settings.mode(None)})

    @route("GET", "/mode/<subject>", "Schema Registry: a subject's mode")
    def subject_mode(subject: str) -> Response[str]:
        mode = registry().settings.mode(unquote(subject), default_to_global=flag("defaultToGlobal"))
        return ok({"mode": mode})


def _write_routes(
    route: Any, registry: Any, query: Any, flag: Any, ok: Any, schema_body: Any, body_of: Any
) -> None:
    @route("POST", "/subjects/<subject>/versions", "Schema Registry: register")
    def register(subject: str) -> Response[str]:
        body: SchemaBody = schema_body()
        found = registry().register(
            unquote(subject), body.given(), normalize=flag("normalize"), schema_id=body.id
        )
        return ok(
            {
                "id": found.schema.id,
                "guid": found.schema.guid,
                "subject": found.subject,
                "version": found.version,
            }
        )

    @route("POST", "/subjects/<subject>", "Schema Registry: look a schema up")
    def lookup(subject: str) -> Response[str]:
        body: SchemaBody = schema_body()
        found = registry().lookup(
            unquote(subject), body.given(), normalize=flag("normalize"), deleted=flag("deleted")
        )
        return ok(version_out(registry(), found))

    @route("DELETE", "/subjects/<subject>", "Schema Registry: delete a subject")
    def delete_subject(subject: str) -> Response[str]:
        return ok(registry().delete_subject(unquote(subject), permanent=flag("permanent")))

    @route("DELETE", "/subjects/<subject>/versions/<version>", "Schema Registry: delete a version")
    def delete_version(subject: str, version: str) -> Response[str]:
        return ok(registry().delete_version(unquote(subject), version, permanent=flag("permanent")))

    def compatible(subject: str, version: str | None) -> Response[str]:
        body: SchemaBody = schema_body()
        problems = registry().test_compatibility(
            unquote(subject), version, body.given(), normalize=flag("normalize")
        )
        answer: dict[str, Any] = {"is_compatible": not problems}
        if flag("verbose"):
            answer["messages"] = problems
        return ok(answer)

    @route(
        "POST",
        "/compatibility/subjects/<subject>/versions/<version>",
        "Schema Registry: test against a version",
    )
    def compatible_with_version(subject: str, version: str) -> Response[str]:
        return compatible(subject, version)

    @route(
        "POST",
        "/compatibility/subjects/<subject>/versions",
        "Schema Registry: test against the versions",
    )
    def compatible_with_all(subject: str) -> Response[str]:
        return compatible(subject, None)

    @route("PUT", "/config", "Schema Registry: set the global compatibility")
    def put_global_config() -> Response[str]:
        body: CompatibilityBody = body_of(CompatibilityBody)
        return ok(
            {"compatibility": registry().settings.set_compatibility(None, body.compatibility)}
        )

    @route("PUT", "/config/<subject>", "Schema Registry: set a subject's compatibility")
    def put_subject_config(subject: str) -> Response[str]:
        body: CompatibilityBody = body_of(CompatibilityBody)
        level = registry().settings.set_compatibility(unquote(subject), body.compatibility)
        return ok({"compatibility": level})

    @route("DELETE", "/config", "Schema Registry: reset the global compatibility")
    def delete_global_config() -> Response[str]:
        return ok({"compatibilityLevel": registry().settings.delete_compatibility(None)})

    @route("DELETE", "/config/<subject>", "Schema Registry: drop a subject's compatibility")
    def delete_subject_config(subject: str) -> Response[str]:
        return ok(
            {"compatibilityLevel": registry().settings.delete_compatibility(unquote(subject))}
        )

    @route("PUT", "/mode", "Schema Registry: set the global mode")
    def put_global_mode() -> Response[str]:
        body: ModeBody = body_of(ModeBody)
        return ok({"mode": registry().settings.set_mode(None, body.mode, force=flag("force"))})

    @route("PUT", "/mode/<subject>", "Schema Registry: set a subject's mode")
    def put_subject_mode(subject: str) -> Response[str]:
        body: ModeBody = body_of(ModeBody)
        return ok(
            {"mode": registry().settings.set_mode(unquote(subject), body.mode, force=flag("force"))}
        )

    @route("DELETE", "/mode/<subject>", "Schema Registry: drop a subject's mode")
    def delete_subject_mode(subject: str) -> Response[str]:
        return ok({"mode": registry().settings.delete_mode(unquote(subject))})


def _raw(text: str) -> Response[str]:
    """A schema's text alone (…/schema): the JSON itself for Avro and JSON Schema."""
    return Response(200, MEDIA_TYPE, text)


def _id(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 2**31 - 1:
        raise InvalidRequest(f"schema id {text!r} is not a schema id", field="id")
    return int(text)


def _subject_or_none(subject: str | None) -> str | None:
    return subject or None


def _metadata_query(params: dict[str, list[str]]) -> dict[str, str]:
    keys, values = params.get("key", []), params.get("value", [])
    if len(keys) != len(values):
        raise InvalidRequest("give as many value parameters as key parameters", field="key")
    return dict(zip(keys, values, strict=True))
