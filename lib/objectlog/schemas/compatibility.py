"""Compatibility levels, as Confluent's registry defines them: which earlier versions a new
schema is checked against, and in which direction.

    BACKWARD   the new schema reads data written with the latest version
    FORWARD    the latest version reads data written with the new schema
    FULL       both
    *_TRANSITIVE  the same against every live version, not only the latest
    NONE       no check

Each type's incompatibilities(reader, writer) says why one schema cannot read data written
with the other (schemas.types).
"""

from __future__ import annotations

from collections.abc import Sequence

from objectlog.errors import InvalidCompatibilityLevel
from objectlog.schemas.types import ParsedSchema, SchemaType

NONE = "NONE"
BACKWARD, FORWARD, FULL = "BACKWARD", "FORWARD", "FULL"
TRANSITIVE = "_TRANSITIVE"
LEVELS = (
    NONE,
    BACKWARD,
    f"{BACKWARD}{TRANSITIVE}",
    FORWARD,
    f"{FORWARD}{TRANSITIVE}",
    FULL,
    f"{FULL}{TRANSITIVE}",
)
DEFAULT_LEVEL = BACKWARD  # Confluent's default


def check_level(level: object) -> str:
    if not isinstance(level, str) or level.upper() not in LEVELS:
        raise InvalidCompatibilityLevel(
            f"Invalid compatibility level. Valid values are {', '.join(LEVELS)}",
            field="compatibility",
        )
    return level.upper()


def checked_against(level: str, live: Sequence[ParsedSchema]) -> Sequence[ParsedSchema]:
    """The earlier versions (oldest first) a new schema is checked against under level."""
    if level == NONE or not live:
        return []
    return live if level.endswith(TRANSITIVE) else live[-1:]


def incompatibilities(
    schema_type: SchemaType, level: str, new: ParsedSchema, live: Sequence[ParsedSchema]
) -> list[str]:
    """Why new breaks level against the live versions (oldest first); none if it does not."""
    base = level.removesuffix(TRANSITIVE)
    problems: list[str] = []
    for earlier in reversed(checked_against(level, live)):
        if base in (BACKWARD, FULL):
            problems += schema_type.incompatibilities(new, earlier)
        if base in (FORWARD, FULL):
            problems += schema_type.incompatibilities(earlier, new)
    return problems
