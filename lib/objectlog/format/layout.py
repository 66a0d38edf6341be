"""Where objects live in the bucket (all below the configured prefix).

l0/<xy>/<ulid>.l0                                   L0 intake objects; <xy> = the ULID's
                                                    last two (random) characters, spreading
                                                    writes over 1,024 prefixes
index/<topic-id>/<partition>/m-<ulid>.json          manifests
index/<topic-id>/<partition>/l-<ulid>.json          manifest lists
topics/<topic>/<topic-id>/partition=<p>/<...>.parquet   L1 files (the compactor's)
tables/<table>-<topic-id>/metadata/...              Iceberg metadata of the topics' tables

An index object (a manifest or a manifest list) is named by its location: the key of an object
of its own, or ``<key>@<start>+<length>``, a byte range of an L0 object that carries it after
its slices (a writer that knows a head is about to spill carries the spill in its next flush:
services/append.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from objectlog.clock import ulid_time_ms

if TYPE_CHECKING:
    from objectlog.format.index import SegmentRef

L0_DIR = "l0/"
INDEX_DIR = "index/"
TOPICS_DIR = "topics/"
TABLES_DIR = "tables/"


def l0_key(prefix: str, ulid: str) -> str:
    return f"{prefix}{L0_DIR}{ulid[-2:]}/{ulid}.l0"


def manifest_key(prefix: str, topic_id: str, partition: int, ulid: str) -> str:
    return f"{prefix}{INDEX_DIR}{topic_id}/{partition}/m-{ulid}.json"


def manifest_list_key(prefix: str, topic_id: str, partition: int, ulid: str) -> str:
    return f"{prefix}{INDEX_DIR}{topic_id}/{partition}/l-{ulid}.json"


_CARRIED = re.compile(r"(?P<key>.+)@(?P<start>\d+)\+(?P<length>\d+)")


def carried_location(key: str, start: int, length: int) -> str:
    """The location of an index object carried in another object, at start for length bytes."""
    return f"{key}@{start}+{length}"


def parse_location(location: str) -> tuple[str, int | None, int | None]:
    """An index object's location as (key, start, length); start and length are None for an
    object of its own."""
    carried = _CARRIED.fullmatch(location)
    if carried is None:
        return location, None, None
    return carried["key"], int(carried["start"]), int(carried["length"])


def location_key(location: str) -> str:
    """The key of the object an index location is in: what garbage collection keeps."""
    return parse_location(location)[0]


def object_key(prefix: str, level: int, object_id: str) -> str:
    """The key of a ref's object: L0 refs carry only the ULID, L1 refs the key below prefix."""
    return l0_key(prefix, object_id) if level == 0 else f"{prefix}{object_id}"


def object_keys(prefix: str, refs: Iterable[SegmentRef]) -> set[str]:
    """The keys of the objects refs read (a transaction's marker has none)."""
    return {object_key(prefix, r.level, r.object_id) for r in refs if r.has_object}


def l1_key(prefix: str, topic: str, topic_id: str, partition: int, base: int, ulid: str) -> str:
    """An L1 file: named by its first offset (so a listing sorts in offset order) and a ULID."""
    return (
        f"{prefix}{TOPICS_DIR}{topic}/{topic_id}/partition={partition}/{base:020d}-{ulid}.parquet"
    )


def object_time_ms(key: str) -> int | None:
    """When an object was written, from the ULID in its name (None for a foreign key)."""
    name = key.rsplit("/", 1)[-1].split(".", 1)[0]
    candidate = name[-26:]
    try:
        return ulid_time_ms(candidate)
    except ValueError:
        return None
