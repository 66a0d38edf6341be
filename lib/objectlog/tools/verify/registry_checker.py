"""The registry checker: anomalies in a registry workload's history, against the registry as
finally read by a client with no faults.

An operation told "unknown" may or may not have been applied, so the checker flags only what
no mix of applied and unapplied unknown operations explains. It relies on the registry's own
rules (schemas.registry, schemas.subjects): a new version's number is one more than the
subject's highest (soft-deleted ones count), a version leaves a subject only by a permanent
delete, a soft-deleted version never comes back to life, and a refused operation applied
nothing. Anomalies:

- fingerprint split (a): one schema (type, text, references) got two ids, in answers, reads by
  id, or its fingerprint;
- id names two schemas (b): one id answered or read as two different schemas;
- unreadable id (b): a subject's version names an id that reading by id does not find (only a
  permanent delete of every version of a schema may hide it);
- versions out of order (c): a subject's versions are not strictly increasing (a number twice);
- missing version (c): a version answered ok (registered or looked up) is gone, or names
  another id, and no permanent delete of it may have been applied;
- version number reused (c): one subject version answered with two ids, and no permanent
  delete of it may have been applied;
- incompatible version (d): a version does not read data of the subject's latest live version
  when it was made (BACKWARD, the workload's level), judged where that version is certain: the
  next lower number that ever existed is still stored, and was live then;
- deleted version reappeared (e): a version deleted with an ok answer is stored again (or live
  again, after a soft delete) or answered afterwards, and could not have been made anew (its
  number given out again after a permanent delete needs every higher version gone);
- id reused after delete (f): as (b), for an id one of whose versions was deleted permanently;
- unlisted subject: a subject holding versions is missing from the subject list;
- spurious refusal: a registration refused with an error no request of the workload can
  deserve (it sends valid schemas, no ids, and never changes modes): the client gives up on a
  registration that a transient fault interrupted.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from objectlog.tools.verify.checker import Verdict
from objectlog.tools.verify.registry_history import (
    LOOKUP,
    OK,
    PERMANENT_DELETE,
    READ_ID,
    REFUSED,
    REGISTER,
    SOFT_DELETE,
    RegistryHistory,
    RegistryOp,
)

REGISTRY_ANOMALIES = (
    "fingerprint split",
    "id names two schemas",
    "unreadable id",
    "versions out of order",
    "missing version",
    "version number reused",
    "incompatible version",
    "deleted version reappeared",
    "id reused after delete",
    "unlisted subject",
    "spurious refusal",
)
# refusals a valid registration in READWRITE mode, sent without an id, never deserves
SPURIOUS_REFUSALS = frozenset({"OperationNotPermitted", "InvalidSchema"})

Judge = Callable[[str, str], bool]  # backward(reader, writer): reader reads writer's data


@dataclass(frozen=True)
class FinalVersion:
    version: int
    id: int
    deleted: bool = False


@dataclass
class RegistryFinal:
    """The registry as finally read, by a client with no faults."""

    subjects: Mapping[str, Sequence[FinalVersion]]  # each subject's versions, as stored
    schemas: Mapping[int, str | None]  # id -> its text as read by id (None: not found)
    fingerprints: Mapping[str, int | None] = field(default_factory=dict)  # text sent -> id
    canonical: Mapping[str, str] = field(default_factory=dict)  # text -> its stored form
    listed: Sequence[str] | None = None  # the subject list (deleted=true); None: not read


def avro_backward(reader: str, writer: str) -> bool:
    """Whether the Avro schema reader reads data written with writer (the registry's own
    judge, level BACKWARD against one version)."""
    from objectlog.schemas.compatibility import BACKWARD, incompatibilities
    from objectlog.schemas.parsing import schema_type
    from objectlog.schemas.types import AVRO

    avro = schema_type(AVRO)
    new, latest = avro.parse(reader, {}), avro.parse(writer, {})
    return not incompatibilities(avro, BACKWARD, new, [latest])


def registry_verdict() -> Verdict:
    return Verdict(counts=dict.fromkeys(REGISTRY_ANOMALIES, 0))


def check_registry(
    history: RegistryHistory, final: RegistryFinal, *, backward: Judge = avro_backward
) -> Verdict:
    """Every anomaly of the history against the final state (the module's docstring)."""
    view = _View(history.ops, final)
    verdict = registry_verdict()
    _check_ids(view, verdict)
    _check_versions(view, verdict)
    _check_compatibility(view, backward, verdict)
    _check_deletes(view, verdict)
    _check_subjects(final, verdict)
    for op in history.ops:
        if op.kind == REGISTER and op.outcome == REFUSED and op.error in SPURIOUS_REFUSALS:
            verdict.add("spurious refusal", _op(op))
    return verdict


class _View:
    """The history and final state, indexed the ways the checks ask."""

    def __init__(self, ops: Sequence[RegistryOp], final: RegistryFinal) -> None:
        self.final = final
        self.ops = ops
        # ok answers naming a subject version and its id
        self.observed = [
            op
            for op in ops
            if op.outcome == OK
            and op.kind in (REGISTER, LOOKUP)
            and op.version is not None
            and op.schema_id is not None
        ]
        self.permanent: dict[tuple[str, int], list[RegistryOp]] = defaultdict(list)
        self.soft: dict[tuple[str, int], list[RegistryOp]] = defaultdict(list)
        self.registrations: dict[str, list[RegistryOp]] = defaultdict(list)
        for op in ops:
            if op.kind == REGISTER and op.applied:
                self.registrations[op.subject].append(op)
            if op.version is None or not op.applied:
                continue
            if op.kind == PERMANENT_DELETE:
                self.permanent[(op.subject, op.version)].append(op)
            elif op.kind == SOFT_DELETE:
                self.soft[(op.subject, op.version)].append(op)
        self.stored = {
            subject: {v.version: v for v in versions}
            for subject, versions in final.subjects.items()
        }
        self.texts: dict[int, str] = {}  # id -> its stored form (the final read's first)
        for op in ops:
            if op.outcome == OK and op.schema_id is not None and op.schema is not None:
                self.texts.setdefault(op.schema_id, self.identity(op.schema))
        self.texts.update({i: self.identity(t) for i, t in final.schemas.items() if t})

    def identity(self, text: str) -> str:
        return self.final.canonical.get(text, text)

    def seen(self, subject: str, version: int) -> list[RegistryOp]:
        return [op for op in self.observed if (op.subject, op.version) == (subject, version)]

    def renumberable(self, subject: str, version: int, after: float = 0.0) -> bool:
        """Whether the version's number may have been given out anew, after time ``after``:
        a permanent delete of it may have been applied, a registration on the subject may have
        followed it, and no higher version stood in the way all along (one still stored, and
        answered before the delete started)."""
        for delete in self.permanent.get((subject, version), []):
            if delete.end < after:
                continue
            if not any(r.end > delete.start for r in self.registrations[subject]):
                continue
            if not self._higher_all_along(subject, version, delete.start):
                return True
        return False

    def _higher_all_along(self, subject: str, version: int, since: float) -> bool:
        for higher in self.stored.get(subject, {}).values():
            if higher.version <= version or self.permanent.get((subject, higher.version)):
                continue
            if any(op.end < since for op in self.seen(subject, higher.version)):
                return True
        return False


def _check_ids(view: _View, verdict: Verdict) -> None:
    """(a) one schema, one id; (b) and (f) one id, one schema."""
    ids_of: dict[str, dict[int, str]] = defaultdict(dict)  # identity -> id -> where seen
    names: dict[int, dict[str, str]] = defaultdict(dict)  # id -> identity -> where seen
    for op in view.observed + [
        o for o in _ok(view, READ_ID) if o.schema is not None and o.schema_id is not None
    ]:
        assert op.schema is not None and op.schema_id is not None
        identity = view.identity(op.schema)
        names[op.schema_id].setdefault(identity, _op(op))
        if op.kind != READ_ID:
            ids_of[identity].setdefault(op.schema_id, _op(op))
    for schema_id, text in view.final.schemas.items():
        if text is not None:
            names[schema_id].setdefault(view.identity(text), f"the final read of id {schema_id}")
            ids_of[view.identity(text)].setdefault(schema_id, f"the final read of id {schema_id}")
    for text, owner in view.final.fingerprints.items():
        if owner is not None:
            ids_of[view.identity(text)].setdefault(owner, "its fingerprint")
    for identity, ids in ids_of.items():
        if len(ids) > 1:
            where = "; ".join(f"id {i} ({w})" for i, w in sorted(ids.items()))
            verdict.add("fingerprint split", f"{_short(identity)}: {where}")
    deleted_ids = {
        op.schema_id for key in view.permanent for op in view.seen(*key) if op.schema_id is not None
    } | {
        v.id
        for (subject, number) in view.permanent
        for v in view.final.subjects.get(subject, ())
        if v.version == number
    }
    for schema_id, identities in names.items():
        if len(identities) > 1:
            anomaly = (
                "id reused after delete" if schema_id in deleted_ids else "id names two schemas"
            )
            where = "; ".join(f"{_short(i)} ({w})" for i, w in identities.items())
            verdict.add(anomaly, f"id {schema_id}: {where}")
    acked = {(op.subject, op.version, op.schema_id): op for op in view.observed}
    for subject, versions in view.final.subjects.items():
        for v in versions:
            if v.id in view.final.schemas and view.final.schemas[v.id] is None:
                told = acked.get((subject, v.version, v.id))
                how = f", answered to {_op(told)}" if told else ", never answered ok"
                verdict.add(
                    "unreadable id",
                    f"{subject} version {v.version}{' (soft-deleted)' if v.deleted else ''} "
                    f"is id {v.id}, not found by id{how}",
                )


def _check_versions(view: _View, verdict: Verdict) -> None:
    """(c) versions strictly increasing; what was answered ok is still there."""
    for subject, versions in view.final.subjects.items():
        numbers = [v.version for v in versions]
        if any(b <= a for a, b in itertools.pairwise(numbers)):
            verdict.add("versions out of order", f"{subject}: {numbers}")
    answered: dict[tuple[str, int], dict[int, RegistryOp]] = defaultdict(dict)
    for op in view.observed:
        assert op.version is not None and op.schema_id is not None
        answered[(op.subject, op.version)].setdefault(op.schema_id, op)
    for (subject, number), by_id in answered.items():
        if view.permanent.get((subject, number)):
            continue  # maybe deleted, maybe given out again
        if len(by_id) > 1:
            where = "; ".join(f"id {i} ({_op(o)})" for i, o in sorted(by_id.items()))
            verdict.add("version number reused", f"{subject} version {number}: {where}")
            continue
        [(schema_id, op)] = by_id.items()
        now = view.stored.get(subject, {}).get(number)
        if now is None or now.id != schema_id:
            found = "gone" if now is None else f"now id {now.id}"
            verdict.add(
                "missing version",
                f"{subject} version {number} id {schema_id} ({_op(op)}): {found}",
            )


def _check_compatibility(view: _View, backward: Judge, verdict: Verdict) -> None:
    """(d) each stored version reads data of the version before it, where that version is
    certainly the latest live one at its making: p, the next lower number that ever existed,
    is still stored (so it was there then: a version's number is above every stored one's),
    and it was live then (live now, or every delete of it started after the version was
    answered)."""
    judged: dict[tuple[int, int], bool] = {}
    for subject, versions in view.final.subjects.items():
        existed = {v.version for v in versions}
        existed |= {number for s, number in view.permanent if s == subject}
        existed |= {op.version for op in view.observed if op.subject == subject and op.version}
        for made in versions:
            if view.permanent.get((subject, made.version)):
                continue  # maybe made anew: when is unknown
            below = [n for n in existed if n < made.version]
            previous = view.stored[subject].get(max(below)) if below else None
            if previous is None:
                continue
            if previous.deleted and not _live_when_made(view, subject, made, previous):
                continue
            reader, writer = view.texts.get(made.id), view.texts.get(previous.id)
            if reader is None or writer is None or made.id == previous.id:
                continue
            pair = (made.id, previous.id)
            if pair not in judged:
                judged[pair] = backward(reader, writer)
            if not judged[pair]:
                verdict.add(
                    "incompatible version",
                    f"{subject} version {made.version} (id {made.id}) does not read version "
                    f"{previous.version} (id {previous.id}), the latest when it was made: "
                    f"{_difference(reader, writer)}",
                )


def _live_when_made(view: _View, subject: str, made: FinalVersion, previous: FinalVersion) -> bool:
    answered = [op.end for op in view.seen(subject, made.version) if op.schema_id == made.id]
    deletes = view.soft.get((subject, previous.version), [])
    return bool(answered and deletes) and all(d.start > min(answered) for d in deletes)


def _check_deletes(view: _View, verdict: Verdict) -> None:
    """(e) a deleted version stays deleted (soft: never live again; permanent: gone), unless
    its number may have been given out anew."""
    for op in _ok(view, SOFT_DELETE, PERMANENT_DELETE):
        assert op.version is not None
        now = view.stored.get(op.subject, {}).get(op.version)
        stored = now is not None and (op.kind == PERMANENT_DELETE or not now.deleted)
        later = [o for o in view.seen(op.subject, op.version) if o.start > op.end]
        if (stored or later) and not view.renumberable(op.subject, op.version, op.start):
            how = (
                f"answered to {_op(later[0])}"
                if later
                else "stored" + ("" if op.kind == PERMANENT_DELETE else " live")
            )
            verdict.add(
                "deleted version reappeared",
                f"{op.subject} version {op.version}, deleted ({_op(op)}), {how}",
            )


def _check_subjects(final: RegistryFinal, verdict: Verdict) -> None:
    if final.listed is None:
        return
    for subject, versions in final.subjects.items():
        if versions and subject not in final.listed:
            verdict.add(
                "unlisted subject", f"{subject} holds versions {[v.version for v in versions]}"
            )


def _ok(view: _View, *kinds: str) -> Iterable[RegistryOp]:
    return [op for op in view.ops if op.outcome == OK and op.kind in kinds]


def _op(op: RegistryOp) -> str:
    told = f"{op.outcome}" + (f" {op.error}" if op.error else "")
    what = f"{op.kind} {op.intent}".strip()
    return f"{op.client} {what} {op.subject} at {op.start:.2f}-{op.end:.2f}: {told}"


def _difference(reader: str, writer: str) -> str:
    """Where two schema texts part: each one's text from there (shortened)."""
    common = next(
        (i for i, (r, w) in enumerate(zip(reader, writer, strict=False)) if r != w),
        min(len(reader), len(writer)),
    )
    return f"...{_short(reader[common:], 80)} after ...{_short(writer[common:], 80)}"


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
