"""The Schema Registry's rules, as Confluent's registry keeps them (its REST API is
http/schema_registry.py): subjects with numbered versions, each a schema with a global id;
the same schema (type, text, references, metadata and rules) has one id wherever it is
registered; ids are never reused for another schema; a registration is checked against the
subject's compatibility level; modes (READWRITE, READONLY, READONLY_OVERRIDE, IMPORT) gate
writes, and IMPORT registers under the ids given, so data migrated from another registry
stays decodable.

State: stores.schemas (schemas by id, fingerprints, the subject list) and one versioned document
per subject and one for the registry-wide settings (schemas.subjects). Any process serves any
request; schemas parsed here are cached by id (a schema never changes).
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from objectlog.errors import (
    IncompatibleSchema,
    OperationNotPermitted,
    ReferenceExists,
    SchemaNotFound,
    SchemaVersionNotSoftDeleted,
    SchemaVersionSoftDeleted,
    SubjectNotFound,
    SubjectNotSoftDeleted,
    SubjectSoftDeleted,
)
from objectlog.schemas import compatibility
from objectlog.schemas.parsing import (
    SchemaInput,
    SchemaParser,
    fingerprint,
    schema_type,
)
from objectlog.schemas.settings import (
    IMPORT,
    READONLY,
    READONLY_OVERRIDE,
    RegistrySettings,
    SubjectDocuments,
)
from objectlog.schemas.subjects import (
    Subject,
    Version,
    check_subject_name,
    version_number,
)
from objectlog.schemas.types import ParsedSchema
from objectlog.stores.documents import DocumentStore
from objectlog.stores.schemas import SchemaReference, SchemaStore, StoredSchema

T = TypeVar("T")


@dataclass(frozen=True)
class SubjectVersion:
    subject: str
    version: int
    schema: StoredSchema
    deleted: bool = False


class SchemaRegistry:
    def __init__(self, store: SchemaStore, documents: DocumentStore) -> None:
        self.store = store
        self.subject_docs = SubjectDocuments(documents)
        self.settings = RegistrySettings(self.subject_docs, self._holds_schemas)
        self.parser = SchemaParser(store, self.subject_docs)

    # ---- registering and looking up ---------------------------------------------------

    def register(
        self,
        subject: str,
        given: SchemaInput,
        *,
        normalize: bool = False,
        schema_id: int | None = None,
    ) -> SubjectVersion:
        """Register given under subject: the existing version if it is the same schema, else
        a new version, checked against the subject's compatibility level (IMPORT: registered
        under schema_id, unchecked)."""
        check_subject_name(subject)
        state = self.subject_docs.read(subject)  # read once: mode, level, versions
        mode = self.settings.mode(subject, state=state)
        if mode in (READONLY, READONLY_OVERRIDE):
            raise OperationNotPermitted(f"Subject {subject} is in read-only mode")
        if schema_id is not None and mode != IMPORT:
            raise OperationNotPermitted(
                "Registering a schema with an id is allowed in IMPORT mode only", field="id"
            )
        parsed = self.parser.parse(given, normalize)
        print_ = fingerprint(parsed, given)
        known = self.store.id_by_fingerprint(print_)
        existing = self._existing_version(subject, known, state)
        if existing is not None and schema_id in (None, existing.schema.id):
            return self._completed(existing)
        level = (
            compatibility.NONE
            if mode == IMPORT
            else self.settings.compatibility(subject, state=state)
        )
        live = state.live()
        self._check_compatible(subject, parsed, level, live)
        stored = self._stored(parsed, given, schema_id, print_, known)
        version = self._add_version(subject, stored.id, parsed, level, live)
        for reference in given.references:
            self._mark_referenced(reference, stored.id)
        return self._completed(SubjectVersion(subject, version, stored))

    def _completed(self, found: SubjectVersion) -> SubjectVersion:
        """The subject listed and the schema marked as the version (both written before the
        version, _add_version); a version stored without them (by an objectlog before that
        order) gets them from the next registration of its schema. No write when present."""
        subject, schema = found.subject, found.schema
        if (subject, found.version) not in schema.uses:
            self.store.add_subject(subject)
            self.store.add_use(schema.id, subject, found.version)
        return found

    def lookup(
        self, subject: str, given: SchemaInput, *, normalize: bool = False, deleted: bool = False
    ) -> SubjectVersion:
        """The subject's version that is this schema (Confluent's POST /subjects/{subject})."""
        state = self.subject_docs.read(subject)
        if not state.listed(deleted):
            raise SubjectNotFound(f"Subject '{subject}' not found.", field="subject")
        parsed = self.parser.parse(given, normalize)
        known = self.store.id_by_fingerprint(fingerprint(parsed, given))
        found = self._existing_version(subject, known, state, deleted=deleted)
        if found is None:
            raise SchemaNotFound("Schema not found", field="schema")
        return found

    def _existing_version(
        self, subject: str, schema_id: int | None, state: Subject, *, deleted: bool = False
    ) -> SubjectVersion | None:
        """The subject's newest version that is the schema of this id (None: no such schema)."""
        if schema_id is None:
            return None
        for version in reversed(state.listed(deleted)):
            if version.id == schema_id:
                stored = self.parser.schema(schema_id)
                return SubjectVersion(subject, version.version, stored, version.deleted)
        return None

    def _stored(
        self,
        parsed: ParsedSchema,
        given: SchemaInput,
        schema_id: int | None,
        print_: str,
        known: int | None,
    ) -> StoredSchema:
        """The schema's stored form under its id: the id its fingerprint (print_) has (known),
        or a new one (IMPORT: the one given, which must be free or already this schema)."""
        if known is not None and schema_id in (None, known):
            return self.parser.schema(known)
        schema = StoredSchema(
            id=schema_id if schema_id is not None else self.store.next_id(),
            schema_type=parsed.schema_type,
            schema=parsed.canonical,
            guid=str(uuid.uuid4()),
            references=given.references,
            metadata=given.metadata,
            rule_set=given.rule_set,
        )
        if not self.store.put_schema(schema) and not self._holds(schema):
            raise OperationNotPermitted(
                f"Overwrite new schema with id {schema.id} is not permitted.", field="id"
            )
        owner = self.store.claim_fingerprint(print_, schema.id)
        return schema if owner == schema.id or schema_id is not None else self.parser.schema(owner)

    def _holds(self, schema: StoredSchema) -> bool:
        """Whether the store holds this very schema under its id: a put whose first answer
        was lost and was sent again (its condition then fails on its own write)."""
        stored = self.store.schema(schema.id)
        return stored is not None and dataclasses.replace(stored, uses=frozenset()) == schema

    def _add_version(
        self,
        subject: str,
        schema_id: int,
        parsed: ParsedSchema,
        level: str,
        checked_against: list[Version],
    ) -> int:
        """Append the version, checked again against the versions it is appended after when
        another writer changed the subject since the first check (the check and the append
        are then of one state: the conditional write fails if it changed again)."""
        checked = [v.id for v in checked_against]

        def add(state: Subject) -> int:
            live = state.live()
            for version in live:
                if version.id == schema_id:  # registered meanwhile by another caller
                    return version.version
            if [v.id for v in live] != checked:
                self._check_compatible(subject, parsed, level, live)
            number = state.next_version()
            # before the version exists: a version is never stored without its schema
            # readable by id (a use left by an attempt that lost its write names no version)
            self.store.add_use(schema_id, subject, number)
            state.versions.append(Version(number, schema_id))
            return number

        self.store.add_subject(subject)  # likewise: listed before it has a version
        return self.subject_docs.update(subject, add)

    def _mark_referenced(self, reference: SchemaReference, by: int) -> None:
        def mark(state: Subject) -> None:
            version = state.find(reference.subject, reference.version, deleted=True)
            if by not in version.referenced_by:
                version.referenced_by.append(by)

        self.subject_docs.update(reference.subject, mark)

    def _check_compatible(
        self, subject: str, parsed: ParsedSchema, level: str, live: list[Version]
    ) -> None:
        problems = self._incompatibilities(subject, parsed, level, live)
        if problems:
            raise IncompatibleSchema(
                f"Schema being registered is incompatible with an earlier schema for subject "
                f'"{subject}", details: {problems} (compatibility {level})',
                field="schema",
            )

    def _incompatibilities(
        self, subject: str, parsed: ParsedSchema, level: str, against: list[Version] | None = None
    ) -> list[str]:
        if level == compatibility.NONE:
            return []
        versions = self.subject_docs.read(subject).live() if against is None else against
        earlier = []
        for version in versions:
            stored = self.parser.parsed_schema(version.id)
            if stored.schema_type != parsed.schema_type:
                return [
                    f"version {version.version} is of type {stored.schema_type}, "
                    f"the new schema of type {parsed.schema_type}"
                ]
            earlier.append(stored)
        return compatibility.incompatibilities(
            schema_type(parsed.schema_type), level, parsed, earlier
        )

    def test_compatibility(
        self, subject: str, asked: object | None, given: SchemaInput, *, normalize: bool = False
    ) -> list[str]:
        """Why given would break the subject's level against the version asked for (None:
        every version the level checks); none if it would not."""
        parsed = self.parser.parse(given, normalize)
        state = self.subject_docs.read(subject)
        level = self.settings.compatibility(subject)
        if asked is None:
            return self._incompatibilities(subject, parsed, level)
        version = state.find(subject, asked)
        single = level.removesuffix(compatibility.TRANSITIVE)
        return self._incompatibilities(subject, parsed, single, [version])

    # ---- reading --------------------------------------------------------------------

    def subjects(self, prefix: str = "", *, deleted: bool = False) -> list[str]:
        return [
            name
            for name in self.store.subject_names()
            if name.startswith(prefix) and self.subject_docs.read(name).listed(deleted)
        ]

    def versions(self, subject: str, *, deleted: bool = False) -> list[int]:
        listed = self.subject_docs.read(subject).listed(deleted)
        if not listed:
            raise SubjectNotFound(f"Subject '{subject}' not found.", field="subject")
        return [v.version for v in listed]

    def version(self, subject: str, asked: object, *, deleted: bool = False) -> SubjectVersion:
        found = self.subject_docs.read(subject).find(subject, asked, deleted=deleted)
        return SubjectVersion(subject, found.version, self.parser.schema(found.id), found.deleted)

    def referenced_by(self, subject: str, asked: object) -> list[int]:
        return sorted(
            self.subject_docs.read(subject).find(subject, asked, deleted=True).referenced_by
        )

    def schema_by_id(self, schema_id: int, subject: str | None = None) -> StoredSchema:
        """A schema some subject version (soft-deleted ones too) is; with subject, one of that
        subject's."""
        schema = self.store.schema(schema_id)
        if schema is None or not schema.uses:
            raise SchemaNotFound(f"Schema {schema_id} not found", field="id")
        if subject is not None and all(s != subject for s, _ in schema.uses):
            raise SchemaNotFound(f"Schema {schema_id} not found under {subject}", field="id")
        return schema

    def schema_by_guid(self, guid: str) -> StoredSchema:
        schema_id = self.store.id_by_guid(guid)
        if schema_id is None:
            raise SchemaNotFound(f"Schema {guid} not found", field="guid")
        return self.schema_by_id(schema_id)

    def uses(self, schema_id: int, *, deleted: bool = False) -> list[tuple[str, int]]:
        """The subject versions that are this schema."""
        found = []
        for subject, number in sorted(self.schema_by_id(schema_id).uses):
            state = self.subject_docs.read(subject)
            if any(v.version == number and v.id == schema_id for v in state.listed(deleted)):
                found.append((subject, number))
        return found

    def latest_with_metadata(self, subject: str, properties: Mapping[str, str]) -> SubjectVersion:
        """The newest live version whose metadata properties include all of these."""
        for version in reversed(self.subject_docs.read(subject).live()):
            schema = self.parser.schema(version.id)
            held = json.loads(schema.metadata or "{}").get("properties") or {}
            if all(held.get(key) == value for key, value in properties.items()):
                return SubjectVersion(subject, version.version, schema)
        raise SchemaNotFound(f"No version of {subject} has that metadata", field="metadata")

    def parsed(self, schema: StoredSchema) -> ParsedSchema:
        return self.parser.parsed_schema(schema.id)

    # ---- deleting -------------------------------------------------------------------

    def delete_version(self, subject: str, asked: object, *, permanent: bool = False) -> int:
        def delete(state: Subject) -> Version:
            numbered = version_number(asked) != -1  # a soft-deleted one is found, and refused
            version = state.find(subject, asked, deleted=permanent or numbered)
            if version.referenced_by:
                raise ReferenceExists(
                    f"One or more references exist to the schema "
                    f"{{subject={subject},version={version.version}}}"
                )
            if permanent and not version.deleted:
                raise SchemaVersionNotSoftDeleted(
                    f"Subject '{subject}' Version {version.version} was not deleted first "
                    "before being permanently deleted"
                )
            if permanent:
                state.versions.remove(version)
            elif version.deleted:
                raise SchemaVersionSoftDeleted(
                    f"Subject '{subject}' Version {version.version} was soft deleted. "
                    "Set permanent=true to delete permanently"
                )
            version.deleted = True
            return version

        deleted = self.subject_docs.update(subject, delete)
        if permanent:
            self._forget(subject, [deleted])
        return deleted.version

    def delete_subject(self, subject: str, *, permanent: bool = False) -> list[int]:
        def delete(state: Subject) -> list[Version]:
            if not state.versions:
                raise SubjectNotFound(f"Subject '{subject}' not found.", field="subject")
            live = state.live()
            if permanent and live:
                raise SubjectNotSoftDeleted(
                    f"Subject '{subject}' was not deleted first before being permanently deleted"
                )
            if not permanent and not live:
                raise SubjectSoftDeleted(
                    f"Subject '{subject}' was soft deleted. Set permanent=true to delete "
                    "permanently"
                )
            for version in state.versions:
                if version.referenced_by:
                    raise ReferenceExists(
                        f"One or more references exist to the schema "
                        f"{{subject={subject},version={version.version}}}"
                    )
            chosen = list(state.versions) if permanent else live
            for version in chosen:
                version.deleted = True
            if permanent:
                state.versions.clear()
            return chosen

        deleted = self.subject_docs.update(subject, delete)
        if permanent:
            self._forget(subject, deleted)
            self.store.remove_subject(subject)
        return [v.version for v in deleted]

    def _forget(self, subject: str, versions: list[Version]) -> None:
        """After a permanent delete: the schemas no longer are those versions, and the
        schemas they referenced are no longer referenced by them."""
        for version in versions:
            self.store.remove_use(version.id, subject, version.version)
            schema = self.store.schema(version.id)
            if schema is None or any(s == subject for s, _ in schema.uses):
                continue
            for reference in schema.references:
                self._unmark_referenced(reference, version.id)

    def _unmark_referenced(self, reference: SchemaReference, by: int) -> None:
        def unmark(state: Subject) -> None:
            for version in state.versions:
                if version.version == reference.version and by in version.referenced_by:
                    version.referenced_by.remove(by)

        self.subject_docs.update(reference.subject, unmark)

    def _holds_schemas(self, subject: str | None) -> bool:
        if subject is not None:
            return bool(self.subject_docs.read(subject).live())
        return bool(self.subjects())
