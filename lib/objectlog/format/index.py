"""The segment index: refs in the partition head's tail, older refs in manifests on S3.

    head (DynamoDB)                 manifest list (S3, immutable)     manifest (S3, immutable)
    tail_base, tail=[ref, ...] ---> manifest_list -> [{key, base, end, ...}, ...] -> [ref, ...]

A ref's base offset is implied: the tail's refs start at tail_base and follow each other;
a manifest records the base of its first ref. ``span`` is how many offsets a ref covers and
``records`` how many records it holds (fewer after key compaction).

Two layouts of the list, both read everywhere:

- layout 1 (before issue 18): every entry names a manifest object;
- layout 2: the newest manifest, the one spills grow, is held in the list itself (an inline
  entry: ``key`` empty, ``inline`` its refs) until it is full, and only then written as a
  manifest object of its own. A spill therefore writes one object, not two.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

LEVEL_L0 = 0
LEVEL_L1 = 1
LEVEL_MARKER = 9  # a transaction's commit or abort marker: one offset, no object (format.txn)
UNMERGED_LEVELS = (LEVEL_L0, LEVEL_MARKER)  # what a compaction merges into L1 (or drops)


@dataclass(frozen=True, slots=True)
class SegmentRef:
    """One slice of one object: where it is and what it covers."""

    level: int
    object_id: str  # an L0 object's ULID, or an L1 object's key below the prefix
    start: int
    length: int
    span: int
    records: int
    min_timestamp: int
    max_timestamp: int
    # A transaction's part in the ref (format.txn): a transactional batch's producer, or a
    # marker's kind and producer; "" for everything else, and then not encoded at all.
    txn: str = ""

    @property
    def has_object(self) -> bool:
        """Whether the ref's bytes are in an object (a marker's are not)."""
        return self.level != LEVEL_MARKER

    def encode(self) -> str:
        """The compact form kept in the head (the head is billed per KiB written)."""
        parts = [
            self.level,
            self.object_id,
            self.start,
            self.length,
            self.span,
            self.records,
            self.min_timestamp,
            self.max_timestamp - self.min_timestamp,
        ]
        return "|".join(str(part) for part in ([*parts, self.txn] if self.txn else parts))

    @classmethod
    def decode(cls, text: str) -> SegmentRef:
        level, object_id, start, length, span, records, min_ts, ts_range, *txn = text.split("|")
        return cls(
            level=int(level),
            object_id=object_id,
            start=int(start),
            length=int(length),
            span=int(span),
            records=int(records),
            min_timestamp=int(min_ts),
            max_timestamp=int(min_ts) + int(ts_range),
            txn=txn[0] if txn else "",
        )


@dataclass(frozen=True, slots=True)
class PlacedRef:
    """A ref with its base offset resolved."""

    base_offset: int
    ref: SegmentRef

    @property
    def end_offset(self) -> int:
        return self.base_offset + self.ref.span


def place(base_offset: int, refs: Iterable[SegmentRef]) -> Iterator[PlacedRef]:
    offset = base_offset
    for ref in refs:
        yield PlacedRef(offset, ref)
        offset += ref.span


@dataclass(frozen=True, slots=True)
class Manifest:
    """An immutable list of consecutive refs starting at base_offset."""

    base_offset: int
    refs: tuple[SegmentRef, ...]

    @property
    def end_offset(self) -> int:
        return self.base_offset + sum(ref.span for ref in self.refs)

    def to_json(self) -> bytes:
        return json.dumps(
            {"base_offset": self.base_offset, "refs": [ref.encode() for ref in self.refs]},
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Manifest:
        body = json.loads(data)
        return cls(body["base_offset"], tuple(SegmentRef.decode(r) for r in body["refs"]))

    def placed(self) -> Iterator[PlacedRef]:
        return place(self.base_offset, self.refs)


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """A manifest list's summary of one manifest: a manifest object (``key``), or the refs
    themselves (``inline``, layout 2's newest manifest; ``key`` is then empty)."""

    key: str
    base_offset: int
    end_offset: int
    refs: int
    bytes: int
    min_timestamp: int
    max_timestamp: int
    inline: tuple[SegmentRef, ...] | None = None

    @classmethod
    def summarize(cls, key: str, manifest: Manifest) -> ManifestEntry:
        return cls(
            key=key,
            base_offset=manifest.base_offset,
            end_offset=manifest.end_offset,
            refs=len(manifest.refs),
            bytes=sum(ref.length for ref in manifest.refs),
            min_timestamp=min((r.min_timestamp for r in manifest.refs), default=0),
            max_timestamp=max((r.max_timestamp for r in manifest.refs), default=0),
        )

    @classmethod
    def holding(cls, manifest: Manifest) -> ManifestEntry:
        """An inline entry: the manifest kept in the list itself."""
        return replace(cls.summarize("", manifest), inline=manifest.refs)

    @property
    def manifest(self) -> Manifest | None:
        """The manifest an inline entry holds; None for one that names an object."""
        return None if self.inline is None else Manifest(self.base_offset, self.inline)

    def to_dict(self) -> dict[str, object]:
        body: dict[str, object] = {name: getattr(self, name) for name in SUMMARY_FIELDS}
        if self.inline is not None:
            body["inline"] = [ref.encode() for ref in self.inline]
        return body

    @classmethod
    def from_dict(cls, body: dict[str, Any]) -> ManifestEntry:
        inline = body.pop("inline", None)
        refs = None if inline is None else tuple(SegmentRef.decode(r) for r in inline)
        return cls(**body, inline=refs)


SUMMARY_FIELDS = tuple(name for name in ManifestEntry.__slots__ if name != "inline")


@dataclass(frozen=True, slots=True)
class Retired:
    """An object the index stopped referencing at ``at_ms`` (a spill or a compaction swap
    replaced it). It stays referenced, for garbage collection, until the delete grace period
    has passed, so a reader that resolved the old index a moment ago can still read it."""

    key: str
    at_ms: int


@dataclass(frozen=True, slots=True)
class ManifestList:
    """An immutable, offset-ordered list of manifests, plus the recently retired objects."""

    entries: tuple[ManifestEntry, ...]
    retired: tuple[Retired, ...] = ()

    def to_json(self) -> bytes:
        body: dict[str, object] = {"manifests": [entry.to_dict() for entry in self.entries]}
        if self.retired:
            body["retired"] = [[r.key, r.at_ms] for r in self.retired]
        return json.dumps(body, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes) -> ManifestList:
        body = json.loads(data)
        return cls(
            tuple(ManifestEntry.from_dict(entry) for entry in body["manifests"]),
            tuple(Retired(key, at) for key, at in body.get("retired", [])),
        )

    def retiring(self, keys: Iterable[str], now_ms: int, grace_ms: int) -> tuple[Retired, ...]:
        """This list's retired objects still inside the grace period, plus keys retired now."""
        kept = tuple(r for r in self.retired if r.at_ms > now_ms - grace_ms)
        return kept + tuple(Retired(key, now_ms) for key in keys)

    def covering(self, offset: int) -> Iterator[ManifestEntry]:
        """Entries whose range ends after offset, in offset order."""
        lo, hi = 0, len(self.entries)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.entries[mid].end_offset <= offset:
                lo = mid + 1
            else:
                hi = mid
        yield from self.entries[lo:]
