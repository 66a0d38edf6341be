"""The registry's settings and subject documents: each subject's versions and settings as one
versioned document (schemas.subjects), read and replaced whole; the compatibility level and
mode of a subject or of the whole registry (the document ``__GLOBAL``), each subject's own
falling back to the registry's unless asked not to (Confluent's defaultToGlobal)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from objectlog.errors import (
    InvalidMode,
    RegistryBusy,
    SchemaRegistryError,
    SubjectCompatibilityNotConfigured,
    SubjectModeNotConfigured,
)
from objectlog.schemas import compatibility
from objectlog.schemas.subjects import (
    CONFIG_KIND,
    GLOBAL,
    SUBJECT_KIND,
    Subject,
    check_subject_name,
)
from objectlog.stores.documents import DocumentStore

T = TypeVar("T")
READWRITE, READONLY, READONLY_OVERRIDE, IMPORT = (
    "READWRITE",
    "READONLY",
    "READONLY_OVERRIDE",
    "IMPORT",
)
MODES = (READWRITE, READONLY, READONLY_OVERRIDE, IMPORT)
WRITE_ATTEMPTS = 20  # optimistic rounds on one subject document before giving up (retriable)


class SubjectDocuments:
    def __init__(self, documents: DocumentStore) -> None:
        self.documents = documents

    def read(self, subject: str) -> Subject:
        kind = CONFIG_KIND if subject == GLOBAL else SUBJECT_KIND
        return Subject.from_json(self.documents.read(kind, subject)[0])

    def update(self, subject: str, change: Callable[[Subject], T]) -> T:
        """Apply change to the subject's document and store it, conditional on the version
        read; read again and retry when another writer came first."""
        kind = CONFIG_KIND if subject == GLOBAL else SUBJECT_KIND
        for _ in range(WRITE_ATTEMPTS):
            body, seen = self.documents.read(kind, subject)
            state = Subject.from_json(body)
            result = change(state)
            if self.documents.write(kind, subject, state.to_json(), seen=seen):
                return result
        raise RegistryBusy(f"subject {subject!r} is changing too often; try again")


class RegistrySettings:
    def __init__(
        self, subjects: SubjectDocuments, holds_schemas: Callable[[str | None], bool]
    ) -> None:
        self.subjects = subjects
        self.holds_schemas = holds_schemas

    def compatibility(
        self,
        subject: str | None = None,
        *,
        default_to_global: bool = True,
        state: Subject | None = None,
    ) -> str:
        """The subject's level, else the registry's, else BACKWARD. state: the subject's
        document when the caller has read it already."""
        return self._effective(
            subject,
            "compatibility",
            compatibility.DEFAULT_LEVEL,
            SubjectCompatibilityNotConfigured,
            default_to_global,
            state,
        )

    def set_compatibility(self, subject: str | None, level: object) -> str:
        checked = compatibility.check_level(level)
        self._change(subject, lambda s: setattr(s, "compatibility", checked))
        return checked

    def delete_compatibility(self, subject: str | None) -> str:
        return self._reset(subject, "compatibility", self.compatibility(subject))

    def mode(
        self,
        subject: str | None = None,
        *,
        default_to_global: bool = True,
        state: Subject | None = None,
    ) -> str:
        """The subject's mode, else the registry's, else READWRITE (state: as compatibility)."""
        return self._effective(
            subject, "mode", READWRITE, SubjectModeNotConfigured, default_to_global, state
        )

    def set_mode(self, subject: str | None, mode: object, *, force: bool = False) -> str:
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise InvalidMode(f"Invalid mode. Valid values are {', '.join(MODES)}", field="mode")
        chosen = mode.upper()
        if chosen == IMPORT and not force and self.holds_schemas(subject):
            raise InvalidMode(
                "Cannot import since found existing subjects; use force=true to import anyway",
                field="mode",
            )
        self._change(subject, lambda s: setattr(s, "mode", chosen))
        return chosen

    def delete_mode(self, subject: str) -> str:
        return self._reset(subject, "mode", self.mode(subject))

    def _effective(
        self,
        subject: str | None,
        name: str,
        default: str,
        not_configured: type[SchemaRegistryError],
        default_to_global: bool,
        state: Subject | None,
    ) -> str:
        """Confluent's rule for a setting: the subject's own, else (defaultToGlobal) the
        registry's, else the default."""
        own: str | None = getattr(state if state is not None else self._own(subject), name)
        if own is not None:
            return own
        if subject is None:
            return default
        if not default_to_global:
            raise not_configured(
                f"Subject '{subject}' does not have subject-level {name} configured"
            )
        return self._effective(None, name, default, not_configured, True, None)

    def _reset(self, subject: str | None, name: str, was: str) -> str:
        """Drop the subject's (or the registry's) own setting; answer what was in effect."""
        self._change(subject, lambda s: setattr(s, name, None))
        return was

    def _own(self, subject: str | None) -> Subject:
        return self.subjects.read(GLOBAL if subject is None else subject)

    def _change(self, subject: str | None, change: Callable[[Subject], None]) -> None:
        if subject is not None:
            check_subject_name(subject)
        self.subjects.update(GLOBAL if subject is None else subject, change)
