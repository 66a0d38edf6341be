"""The registry checker on hand-made histories and final states: each anomaly planted once in
an otherwise clean history is found, alone; what unknown outcomes may legitimately leave is
not an anomaly."""

from __future__ import annotations

import pytest

from objectlog.tools.verify.registry_checker import (
    REGISTRY_ANOMALIES,
    FinalVersion,
    RegistryFinal,
    avro_backward,
    check_registry,
)
from objectlog.tools.verify.registry_history import (
    LOOKUP,
    OK,
    PERMANENT_DELETE,
    READ_ID,
    REFUSED,
    REGISTER,
    SOFT_DELETE,
    UNKNOWN,
    RegistryHistory,
    RegistryOp,
)
from objectlog.tools.verify.registry_workload import record

A = record([("f0", "int", True)])
B = record([("f0", "int", True), ("f1", "string", True)])  # reads A's data
B_INT = record([("f0", "int", True), ("f1", "int", True)])  # reads A's, not B's
C = record([("f0", "int", True), ("f1", "string", True), ("f2", "int", True)])


def op(
    kind: str,
    at: float,
    *,
    outcome: str = OK,
    subject: str = "s",
    schema: str | None = None,
    version: int | None = None,
    schema_id: int | None = None,
    error: str | None = None,
) -> RegistryOp:
    return RegistryOp("c", kind, subject, outcome, schema, version, schema_id, error, at, at + 0.5)


def history(*ops: RegistryOp) -> RegistryHistory:
    recorded = RegistryHistory()
    for each in ops:
        recorded.add(each)
    return recorded


def final(
    subjects: dict[str, list[tuple[int, int, bool]]],
    schemas: dict[int, str | None],
    listed: list[str] | None = None,
) -> RegistryFinal:
    return RegistryFinal(
        subjects={s: [FinalVersion(*v) for v in versions] for s, versions in subjects.items()},
        schemas=schemas,
        listed=sorted(subjects) if listed is None else listed,
    )


def found(verdict_counts: dict[str, int]) -> set[str]:
    return {name for name, count in verdict_counts.items() if count}


# A clean base: A registered as version 1 (id 1), B as version 2 (id 2), both looked up and
# read by id, A registered again (the same version), C refused once under BACKWARD.
BASE = [
    op(REGISTER, 0, schema=A, version=1, schema_id=1),
    op(REGISTER, 1, schema=B, version=2, schema_id=2),
    op(REGISTER, 2, schema=A, version=1, schema_id=1),
    op(LOOKUP, 3, schema=B, version=2, schema_id=2),
    op(READ_ID, 4, subject="", schema=A, schema_id=1),
    op(REGISTER, 5, outcome=REFUSED, schema=B_INT, error="IncompatibleSchema"),
]
BASE_FINAL = {"s": [(1, 1, False), (2, 2, False)]}
BASE_SCHEMAS: dict[int, str | None] = {1: A, 2: B}


def test_a_clean_history_has_no_anomaly() -> None:
    verdict = check_registry(history(*BASE), final(BASE_FINAL, BASE_SCHEMAS))
    assert set(verdict.counts) == set(REGISTRY_ANOMALIES)
    assert verdict.ok, verdict.summary()


def test_what_unknown_outcomes_may_leave_is_no_anomaly() -> None:
    """Each unknown operation here may have been applied, and the final state says it was
    (or was not): none of it is an anomaly."""
    ops = [
        *BASE,
        # applied, never answered: version 3 stands, unacknowledged (and id 3 was skipped: a
        # lost answer on the id counter)
        op(REGISTER, 6, outcome=UNKNOWN, schema=C, error="UnknownOutcome"),
        # not applied
        op(REGISTER, 7, outcome=UNKNOWN, schema=B_INT, error="StorageUnavailable"),
        # version 2, answered ok, soft-deleted and then deleted for good by unknown deletes
        op(SOFT_DELETE, 8, outcome=UNKNOWN, version=2, error="UnknownOutcome"),
        op(PERMANENT_DELETE, 9, outcome=UNKNOWN, version=2, error="StorageUnavailable"),
        # on subject t: version 1 (B_INT) soft-deleted (an unknown delete, started before the
        # next version was answered), then version 2 (B), incompatible with B_INT but
        # checked against nothing live, or the version the delete left
        op(REGISTER, 10, subject="t", schema=B_INT, version=1, schema_id=5),
        op(SOFT_DELETE, 11, outcome=UNKNOWN, subject="t", version=1, error="UnknownOutcome"),
        op(REGISTER, 11.2, subject="t", schema=B, version=2, schema_id=2),
        # on subject u: version 1 deleted for good (ok), and its number given out again to
        # another schema by a registration that followed the delete
        op(REGISTER, 12, subject="u", schema=A, version=1, schema_id=1),
        op(SOFT_DELETE, 13, subject="u", version=1),
        op(PERMANENT_DELETE, 14, subject="u", version=1),
        op(REGISTER, 15, subject="u", schema=C, version=1, schema_id=4),
    ]
    state = final(
        {
            "s": [(1, 1, False), (3, 4, False)],
            "t": [(1, 5, True), (2, 2, False)],
            "u": [(1, 4, False)],
        },
        {1: A, 2: B, 4: C, 5: B_INT},
    )
    verdict = check_registry(history(*ops), state)
    assert verdict.ok, verdict.summary()


SPLIT = [op(REGISTER, 6, subject="t", schema=A, version=1, schema_id=7)]
TWO_SCHEMAS = [op(READ_ID, 6, subject="", schema=B, schema_id=1)]
ID_REUSED = [
    op(SOFT_DELETE, 6, version=2),
    op(PERMANENT_DELETE, 7, version=2),
    op(REGISTER, 8, schema=C, version=2, schema_id=2),
]
INCOMPATIBLE = [op(REGISTER, 6, schema=B_INT, version=3, schema_id=3)]


@pytest.mark.parametrize(
    ("anomaly", "ops", "subjects", "schemas", "listed"),
    [
        pytest.param(
            "fingerprint split",
            SPLIT,
            {**BASE_FINAL, "t": [(1, 7, False)]},
            {**BASE_SCHEMAS, 7: A},
            None,
            id="a-fingerprint-split",
        ),
        pytest.param(
            "id names two schemas", TWO_SCHEMAS, BASE_FINAL, BASE_SCHEMAS, None, id="b-two-schemas"
        ),
        pytest.param("unreadable id", [], BASE_FINAL, {1: A, 2: None}, None, id="b-unreadable-id"),
        pytest.param(
            "versions out of order",
            [],
            {"s": [(1, 1, False), (2, 2, False), (2, 2, True)]},
            BASE_SCHEMAS,
            None,
            id="c-out-of-order",
        ),
        pytest.param(
            "missing version", [], {"s": [(1, 1, False)]}, BASE_SCHEMAS, None, id="c-missing"
        ),
        pytest.param(
            "version number reused",
            [op(LOOKUP, 6, schema=A, version=2, schema_id=1)],
            BASE_FINAL,
            BASE_SCHEMAS,
            None,
            id="c-number-reused",
        ),
        pytest.param(
            "incompatible version",
            INCOMPATIBLE,
            {"s": [*BASE_FINAL["s"], (3, 3, False)]},
            {**BASE_SCHEMAS, 3: B_INT},
            None,
            id="d-incompatible",
        ),
        pytest.param(
            "deleted version reappeared",
            [op(SOFT_DELETE, 6, version=2), op(PERMANENT_DELETE, 7, version=2)],
            BASE_FINAL,
            BASE_SCHEMAS,
            None,
            id="e-permanently-deleted-reappears",
        ),
        pytest.param(
            "deleted version reappeared",
            [op(SOFT_DELETE, 6, version=2), op(LOOKUP, 7, schema=B, version=2, schema_id=2)],
            {"s": [(1, 1, False), (2, 2, True)]},
            BASE_SCHEMAS,
            None,
            id="e-soft-deleted-answered-after",
        ),
        pytest.param(
            "id reused after delete",
            ID_REUSED,
            BASE_FINAL,
            {1: A, 2: C},
            None,
            id="f-id-reused",
        ),
        pytest.param("unlisted subject", [], BASE_FINAL, BASE_SCHEMAS, [], id="unlisted-subject"),
        pytest.param(
            "spurious refusal",
            [op(REGISTER, 6, outcome=REFUSED, schema=C, error="OperationNotPermitted")],
            BASE_FINAL,
            BASE_SCHEMAS,
            None,
            id="spurious-refusal",
        ),
    ],
)
def test_each_anomaly_is_found_alone(
    anomaly: str,
    ops: list[RegistryOp],
    subjects: dict[str, list[tuple[int, int, bool]]],
    schemas: dict[int, str | None],
    listed: list[str] | None,
) -> None:
    verdict = check_registry(history(*BASE, *ops), final(subjects, schemas, listed))
    assert found(verdict.counts) == {anomaly}, verdict.summary()
    assert verdict.examples[anomaly]


def test_a_fingerprint_naming_another_id_is_a_split() -> None:
    state = final(BASE_FINAL, BASE_SCHEMAS)
    state.fingerprints = {A: 9}
    verdict = check_registry(history(*BASE), state)
    assert found(verdict.counts) == {"fingerprint split"}, verdict.summary()


def test_a_version_made_after_its_predecessor_was_deleted_is_judged_against_none() -> None:
    """Version 3 cannot read version 2's data, but version 2 was soft-deleted (ok) before
    version 3 was registered: the registry checked it against version 1."""
    ops = [
        *BASE,
        op(SOFT_DELETE, 6, version=2),
        op(REGISTER, 7, schema=B_INT, version=3, schema_id=3),
    ]
    state = final({"s": [(1, 1, False), (2, 2, True), (3, 3, False)]}, {**BASE_SCHEMAS, 3: B_INT})
    assert check_registry(history(*ops), state).ok


def test_a_number_given_out_again_is_blocked_by_a_higher_version() -> None:
    """Version 1 deleted for good, then stored again: a registration followed, but version 2
    (answered before the delete, still stored) kept every new number above 1."""
    ops = [
        *BASE,
        op(SOFT_DELETE, 6, version=1),
        op(PERMANENT_DELETE, 7, version=1),
        op(REGISTER, 8, outcome=UNKNOWN, schema=C, error="UnknownOutcome"),
    ]
    verdict = check_registry(history(*ops), final(BASE_FINAL, BASE_SCHEMAS))
    assert found(verdict.counts) == {"deleted version reappeared"}, verdict.summary()


def test_the_avro_judge_is_the_registrys_backward_rule() -> None:
    assert avro_backward(B, A) and avro_backward(A, B)  # a field added or dropped, defaulted
    assert not avro_backward(B_INT, B)  # f1: string written, int read
    assert not avro_backward(record([("f9", "int", False)]), A)  # a field without default
