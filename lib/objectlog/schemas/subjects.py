"""A subject as the registry keeps it: its versions (each a schema id, maybe soft-deleted, and
the ids of the schemas that reference it) and its own compatibility level and mode, one
versioned document (stores.documents, kind ``schema-subject``) replaced whole.

Confluent's rules on versions: numbers start at 1 and grow; a soft-deleted version keeps its
number and is hidden unless asked for (``deleted=true``); a version is deleted permanently
only after a soft delete, and only when no schema references it.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from objectlog.errors import (
    InvalidRequest,
    InvalidSchemaVersion,
    SchemaVersionNotFound,
    SubjectNotFound,
)

SUBJECT_KIND = "schema-subject"
CONFIG_KIND = "schema-config"
GLOBAL = "__GLOBAL"  # the document holding the registry-wide level and mode
LATEST = "latest"
SUBJECT_NAME = re.compile(r"^[^\x00-\x1f\x7f]{1,1000}$")


@dataclass
class Version:
    version: int
    id: int
    deleted: bool = False
    referenced_by: list[int] = field(default_factory=list)


@dataclass
class Subject:
    versions: list[Version] = field(default_factory=list)
    compatibility: str | None = None
    mode: str | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> Subject:
        if text is None:
            return cls()
        raw: dict[str, Any] = json.loads(text)
        versions = [Version(**v) for v in raw.pop("versions", [])]
        return cls(versions=versions, **raw)

    def live(self) -> list[Version]:
        return [v for v in self.versions if not v.deleted]

    def listed(self, deleted: bool) -> list[Version]:
        return list(self.versions) if deleted else self.live()

    def next_version(self) -> int:
        return max((v.version for v in self.versions), default=0) + 1

    def find(self, name: str, asked: object, *, deleted: bool = False) -> Version:
        """The version asked for (a number, ``latest`` or -1), among the live ones, or among
        all with deleted; SubjectNotFound or SchemaVersionNotFound if there is none."""
        number = version_number(asked)
        candidates = self.listed(deleted)
        if not self.versions or (not candidates and number == -1):
            raise SubjectNotFound(f"Subject '{name}' not found.", field="subject")
        if number == -1:
            return max(candidates, key=lambda v: v.version)
        for version in candidates:
            if version.version == number:
                return version
        raise SchemaVersionNotFound(f"Version {asked} not found.", field="version")


def version_number(asked: object) -> int:
    """A version path segment as a number: ``latest`` is -1; 422 (42202) for anything else
    that is not a number from 1 to 2^31-1."""
    if isinstance(asked, str) and asked.lower() == LATEST:
        return -1
    try:
        number = int(str(asked))
    except ValueError:
        number = 0
    if number == -1 or 1 <= number <= 2**31 - 1:
        return number
    raise InvalidSchemaVersion(
        f"The specified version '{asked}' is not a valid version id. Allowed values are "
        'between [1, 2^31-1] and the string "latest"',
        field="version",
    )


def check_subject_name(subject: object) -> str:
    if not isinstance(subject, str) or not SUBJECT_NAME.match(subject) or subject == GLOBAL:
        raise InvalidRequest(
            f"invalid subject {subject!r}: use 1-1000 characters, no control characters",
            field="subject",
        )
    return subject
