"""The transaction coordinator (services.transactions) over the in-memory store: Kafka's
transitions and refusals, fencing, timeouts, epoch exhaustion, a decision that outlives the
agent that took it, coordinators side by side, and what each transition costs in DynamoDB
requests."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
from collections import Counter, defaultdict
from collections.abc import Callable

import pytest

from objectlog.clock import ManualClock
from objectlog.errors import (
    CommitFailed,
    ConcurrentTransactions,
    InvalidProducerIdMapping,
    InvalidRequest,
    InvalidTransactionTimeout,
    InvalidTxnState,
    StorageUnavailable,
    TransactionalIdFenced,
    TransactionalIdNotFound,
    TransactionTooLarge,
)
from objectlog.services.transaction_rules import EXHAUSTED_EPOCH, MAX_EPOCH
from objectlog.services.transactions import TransactionCoordinator, TransactionSettings
from objectlog.stores.groups import TopicPartition as TP
from objectlog.stores.memory_transactions import MemoryTransactionStore
from objectlog.stores.transactions import MAX_PARTITIONS, PendingOffset, Transaction, TxnState

ID = "app-1"
TIMEOUT = 60_000
DAY_MS = 24 * 3600 * 1000
PARTS = [("out", 0), ("out", 1), ("other", 0)]
OFFSETS = {TP("in", 0): PendingOffset(10, 2, "m"), TP("in", 1): PendingOffset(20)}


class Log:
    """The partitions and groups as the log layer will keep them: a MarkerWriter and an
    OffsetApplier, idempotent as theirs must be (a marker of one producer id and epoch lands
    once per partition). ``failures``: how many of the next write_markers calls die after
    writing the first partition only."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.markers: dict[TP, list[tuple[int, int, bool]]] = defaultdict(list)
        self.offsets: dict[str, dict[TP, PendingOffset]] = {}
        self.calls: Counter[str] = Counter()

    def write_markers(self, txn: Transaction, commit: bool) -> None:
        self.calls["markers"] += 1
        for n, tp in enumerate(sorted(txn.partitions)):
            if n == 1 and self.failures:
                self.failures -= 1
                raise StorageUnavailable("the agent died writing markers")
            marker = (txn.producer_id, txn.producer_epoch, commit)
            if marker not in self.markers[tp]:
                self.markers[tp].append(marker)

    def settle(self, txn: Transaction, commit: bool) -> None:
        if not commit:
            return
        self.calls["offsets"] += 1
        for group, offsets in txn.offsets.items():
            self.offsets.setdefault(group, {}).update(offsets)


class World:
    """One table and one log, and as many coordinators (agents) over them as a test asks."""

    def __init__(self) -> None:
        self.store = MemoryTransactionStore()
        self.clock = ManualClock()
        self.log = Log()
        self.ids = itertools.count(100)

    def agent(self, log: Log | None = None, **settings: int) -> TransactionCoordinator:
        return TransactionCoordinator(
            self.store,
            self.clock,
            lambda: next(self.ids),
            log or self.log,
            log or self.log,
            TransactionSettings(**settings),
        )

    def seed(self, **fields: object) -> Transaction:
        """A stored transaction of ID (Empty, producer 7 epoch 3 unless told)."""
        record = Transaction(ID, 7, 3, TxnState.EMPTY, TIMEOUT, version=1)
        record = dataclasses.replace(record, **fields)
        assert self.store.put_new(record)
        return record


@pytest.fixture
def world() -> World:
    return World()


@pytest.fixture
def agent(world: World) -> TransactionCoordinator:
    return world.agent()


def ongoing(agent: TransactionCoordinator) -> Transaction:
    """ID initialized (producer 100, epoch 0), PARTS added, OFFSETS committed for group g."""
    p = agent.init_producer_id(ID, TIMEOUT)
    agent.add_partitions(ID, p.producer_id, p.producer_epoch, PARTS)
    agent.add_offsets(ID, p.producer_id, p.producer_epoch, "g")
    return agent.txn_offset_commit(ID, p.producer_id, p.producer_epoch, "g", OFFSETS, _ok)


def _ok(txn: Transaction) -> None:
    """A KIP-447 member check that passes."""


def stored(world: World) -> Transaction:
    txn = world.store.get(ID)
    assert txn is not None
    return txn


# ---- InitProducerId ----------------------------------------------------------------------


def test_a_new_id_gets_a_fresh_producer_id_at_epoch_0(
    world: World, agent: TransactionCoordinator
) -> None:
    txn = agent.init_producer_id(ID, TIMEOUT)
    assert (txn.producer_id, txn.producer_epoch, txn.state) == (100, 0, TxnState.EMPTY)
    assert txn.expires_at_s == (world.clock.now_ms() + 7 * DAY_MS) // 1000
    assert [t.transactional_id for t in agent.list()] == [ID]


@pytest.mark.parametrize(
    ("timeout_ms", "producer_id", "epoch", "error"),
    [
        pytest.param(0, -1, -1, InvalidTransactionTimeout, id="zero-timeout"),
        pytest.param(900_001, -1, -1, InvalidTransactionTimeout, id="over-max-timeout"),
        pytest.param(TIMEOUT, 5, -1, InvalidRequest, id="producer-id-without-epoch"),
        pytest.param(TIMEOUT, -1, 5, InvalidRequest, id="epoch-without-producer-id"),
    ],
)
def test_init_refuses_bad_requests_and_stores_nothing(
    world: World,
    agent: TransactionCoordinator,
    timeout_ms: int,
    producer_id: int,
    epoch: int,
    error: type[Exception],
) -> None:
    with pytest.raises(error):
        agent.init_producer_id(ID, timeout_ms, producer_id, epoch)
    with pytest.raises(InvalidRequest):
        agent.init_producer_id("", TIMEOUT)
    assert world.store.get(ID) is None
    assert agent.init_producer_id(ID, 900_000).timeout_ms == 900_000  # the maximum itself


def test_a_new_instance_fences_the_old_one(agent: TransactionCoordinator) -> None:
    old = agent.init_producer_id(ID, TIMEOUT)
    new = agent.init_producer_id(ID, TIMEOUT)
    assert (new.producer_id, new.producer_epoch) == (old.producer_id, 1)
    with pytest.raises(TransactionalIdFenced):
        agent.add_partitions(ID, old.producer_id, old.producer_epoch, PARTS)
    agent.add_partitions(ID, new.producer_id, new.producer_epoch, PARTS)


def test_a_new_instance_aborts_the_open_transaction_under_a_fencing_epoch(
    world: World, agent: TransactionCoordinator
) -> None:
    old = ongoing(agent)
    new = agent.init_producer_id(ID, TIMEOUT)
    # aborted under epoch 1 (never handed out), then bumped again for the new instance
    assert (new.producer_id, new.producer_epoch, new.state) == (100, 2, TxnState.EMPTY)
    assert world.log.markers == {TP(*tp): [(100, 1, False)] for tp in PARTS}
    assert world.log.offsets == {}  # an abort drops the pending offsets
    with pytest.raises(TransactionalIdFenced):
        agent.end_txn(ID, old.producer_id, old.producer_epoch, commit=True)


def test_a_new_instance_completes_a_decided_transaction_first(world: World) -> None:
    dying = world.agent()
    ongoing(dying)
    world.log.failures = 1
    with pytest.raises(ConcurrentTransactions):
        dying.end_txn(ID, 100, 0, commit=True)
    assert stored(world).state is TxnState.PREPARE_COMMIT
    new = world.agent().init_producer_id(ID, TIMEOUT)
    assert (new.producer_epoch, new.state) == (1, TxnState.EMPTY)
    assert world.log.markers == {TP(*tp): [(100, 0, True)] for tp in PARTS}
    assert world.log.offsets == {"g": OFFSETS}


# KIP-360: InitProducerId with the producer id and epoch the producer holds. Each row: the
# stored (producer id, epoch, last producer id, last epoch), the request's producer id and
# epoch, and the answer's producer id, epoch and last epoch (None: PRODUCER_FENCED).
KIP_360 = [
    pytest.param((7, 3, 7, -1), (7, 3), (7, 4, 3), id="own-epoch-bumped"),
    pytest.param((7, 4, 7, 3), (7, 3), (7, 4, 3), id="retry-of-a-bump-not-bumped-again"),
    pytest.param((7, 5, 7, -1), (7, 3), None, id="older-epoch-fenced"),
    pytest.param((7, 3, 7, -1), (8, 3), None, id="another-producer-id-fenced"),
    pytest.param(
        (101, 0, 7, MAX_EPOCH - 1),
        (7, MAX_EPOCH - 1),
        (101, 0, MAX_EPOCH - 1),
        id="retry-of-a-rotation",
    ),
    pytest.param((101, 0, 7, 5), (7, 5), None, id="old-id-not-exhausted-fenced"),
    pytest.param(
        (7, EXHAUSTED_EPOCH, 7, -1),
        (7, EXHAUSTED_EPOCH),
        (100, 0, EXHAUSTED_EPOCH),
        id="exhausted-epoch-rotated",
    ),
]


@pytest.mark.parametrize(("held", "asked", "answer"), KIP_360)
def test_init_with_the_producers_own_id_and_epoch(
    world: World,
    agent: TransactionCoordinator,
    held: tuple[int, int, int, int],
    asked: tuple[int, int],
    answer: tuple[int, int, int] | None,
) -> None:
    pid, epoch, last_pid, last_epoch = held
    world.seed(
        producer_id=pid,
        producer_epoch=epoch,
        last_producer_id=last_pid,
        last_producer_epoch=last_epoch,
    )
    if answer is None:
        with pytest.raises(TransactionalIdFenced):
            agent.init_producer_id(ID, TIMEOUT, *asked)
        return
    txn = agent.init_producer_id(ID, TIMEOUT, *asked)
    assert (txn.producer_id, txn.producer_epoch, txn.last_producer_epoch) == answer


def test_an_unknown_id_with_a_producer_id_gets_a_fresh_one(agent: TransactionCoordinator) -> None:
    txn = agent.init_producer_id(ID, TIMEOUT, 55, 9)
    assert (txn.producer_id, txn.producer_epoch) == (100, 0)


def test_an_exhausted_epoch_rotates_to_a_new_producer_id(
    world: World, agent: TransactionCoordinator
) -> None:
    world.seed(producer_epoch=EXHAUSTED_EPOCH - 1)
    assert agent.init_producer_id(ID, TIMEOUT).producer_epoch == EXHAUSTED_EPOCH
    rotated = agent.init_producer_id(ID, TIMEOUT)
    assert (rotated.producer_id, rotated.producer_epoch) == (100, 0)
    assert (rotated.last_producer_id, rotated.last_producer_epoch) == (7, -1)


def test_fencing_a_transaction_at_the_last_epoch_rotates_the_producer_id(
    world: World, agent: TransactionCoordinator
) -> None:
    world.seed(producer_epoch=EXHAUSTED_EPOCH)
    agent.add_partitions(ID, 7, EXHAUSTED_EPOCH, PARTS)
    txn = agent.init_producer_id(ID, TIMEOUT)
    assert (txn.producer_id, txn.producer_epoch) == (100, 0)
    assert world.log.markers[TP("out", 0)] == [(7, MAX_EPOCH, False)]  # aborted at 32767


# ---- AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit ---------------------------------


def test_adding_begins_a_transaction_with_its_deadline(
    world: World, agent: TransactionCoordinator
) -> None:
    p = agent.init_producer_id(ID, TIMEOUT)
    now = world.clock.now_ms()
    world.clock.advance(5)
    txn = agent.add_partitions(ID, p.producer_id, p.producer_epoch, PARTS[:1])
    assert (txn.state, txn.started_ms, txn.deadline_ms) == (
        TxnState.ONGOING,
        now + 5,
        now + 5 + TIMEOUT,
    )
    assert txn.expires_at_s is None  # an open transaction never expires by TTL
    world.clock.advance(5)
    txn = agent.add_partitions(ID, p.producer_id, p.producer_epoch, PARTS)
    assert txn.partitions == {TP(*tp) for tp in PARTS} and txn.started_ms == now + 5
    world.store.requests.clear()
    assert agent.add_partitions(ID, p.producer_id, p.producer_epoch, PARTS[1:]) == txn
    assert world.store.requests == Counter(GetItem=1)  # nothing new: nothing written


ADD_CALLS: list[tuple[str, Callable[[TransactionCoordinator, int, int], object]]] = [
    ("add_partitions", lambda a, pid, e: a.add_partitions(ID, pid, e, PARTS)),
    ("add_offsets", lambda a, pid, e: a.add_offsets(ID, pid, e, "g")),
    ("txn_offset_commit", lambda a, pid, e: a.txn_offset_commit(ID, pid, e, "g", OFFSETS, _ok)),
    ("end_txn", lambda a, pid, e: a.end_txn(ID, pid, e, commit=True)),
]


@pytest.mark.parametrize(("call", "request_"), [pytest.param(c, r, id=c) for c, r in ADD_CALLS])
@pytest.mark.parametrize(
    ("inits", "producer", "error"),
    [
        pytest.param(0, (100, 0), InvalidProducerIdMapping, id="unknown-id"),
        pytest.param(2, (55, 1), InvalidProducerIdMapping, id="another-producer-id"),
        pytest.param(2, (100, 0), TransactionalIdFenced, id="older-epoch"),
        pytest.param(2, (100, 2), TransactionalIdFenced, id="newer-epoch"),
    ],
)
def test_a_producer_request_needs_the_id_producer_id_and_epoch(
    world: World,
    agent: TransactionCoordinator,
    call: str,
    request_: Callable[[TransactionCoordinator, int, int], object],
    inits: int,
    producer: tuple[int, int],
    error: type[Exception],
) -> None:
    for _ in range(inits):  # producer 100, at epoch 1 after two
        agent.init_producer_id(ID, TIMEOUT)
    before = world.store.get(ID)
    with pytest.raises(error):
        request_(agent, *producer)
    assert world.store.get(ID) == before


@pytest.mark.parametrize(("call", "request_"), [pytest.param(c, r, id=c) for c, r in ADD_CALLS[:3]])
def test_a_decided_transaction_takes_no_additions(
    world: World, call: str, request_: Callable[[TransactionCoordinator, int, int], object]
) -> None:
    agent = world.agent()
    ongoing(agent)
    world.log.failures = 1
    with pytest.raises(ConcurrentTransactions):
        agent.end_txn(ID, 100, 0, commit=True)
    with pytest.raises(ConcurrentTransactions):
        request_(agent, 100, 0)
    assert stored(world).state is TxnState.PREPARE_COMMIT


def test_offsets_need_their_group_in_the_transaction(agent: TransactionCoordinator) -> None:
    p = agent.init_producer_id(ID, TIMEOUT)
    with pytest.raises(InvalidTxnState):  # Empty
        agent.txn_offset_commit(ID, p.producer_id, p.producer_epoch, "g", OFFSETS, _ok)
    agent.add_partitions(ID, p.producer_id, p.producer_epoch, PARTS)
    with pytest.raises(InvalidTxnState):  # Ongoing, the group not added
        agent.txn_offset_commit(ID, p.producer_id, p.producer_epoch, "g", OFFSETS, _ok)


def test_offsets_are_held_per_group_after_the_members_check(
    world: World, agent: TransactionCoordinator
) -> None:
    p = agent.init_producer_id(ID, TIMEOUT)
    agent.add_offsets(ID, p.producer_id, p.producer_epoch, "g")

    def stale_member(txn: Transaction) -> None:
        raise CommitFailed("generation 3 is not the group's 4")

    with pytest.raises(CommitFailed):
        agent.txn_offset_commit(ID, p.producer_id, p.producer_epoch, "g", OFFSETS, stale_member)
    assert stored(world).offsets == {}
    checks: list[str] = []
    agent.txn_offset_commit(ID, 100, 0, "g", OFFSETS, lambda _txn: checks.append("g"))
    later = {TP("in", 1): PendingOffset(25, 3, "n")}
    txn = agent.txn_offset_commit(ID, 100, 0, "g", later, lambda _txn: checks.append("g"))
    assert txn.offsets == {"g": {**OFFSETS, **later}} and checks == ["g", "g"]
    assert txn.partitions == set() and txn.groups == {"g"}  # AddOffsets began it


def test_a_transaction_is_bounded(world: World, agent: TransactionCoordinator) -> None:
    p = agent.init_producer_id(ID, TIMEOUT)
    too_many = [("t", n) for n in range(MAX_PARTITIONS + 1)]
    with pytest.raises(TransactionTooLarge):
        agent.add_partitions(ID, p.producer_id, p.producer_epoch, too_many)
    assert stored(world).state is TxnState.EMPTY


# ---- EndTxn and completion ------------------------------------------------------------


def test_a_commit_writes_every_marker_and_applies_the_offsets_once(
    world: World, agent: TransactionCoordinator
) -> None:
    ongoing(agent)
    txn = agent.end_txn(ID, 100, 0, commit=True)
    assert txn.state is TxnState.COMPLETE_COMMIT
    assert (txn.partitions, txn.groups, txn.offsets, txn.started_ms) == (set(), set(), {}, None)
    assert world.log.markers == {TP(*tp): [(100, 0, True)] for tp in PARTS}
    assert world.log.offsets == {"g": OFFSETS}
    assert world.log.calls == Counter(markers=1, offsets=1)
    assert agent.end_txn(ID, 100, 0, commit=True) == txn  # a retry: nothing written again
    assert world.log.calls == Counter(markers=1, offsets=1)


def test_an_abort_writes_abort_markers_and_drops_the_offsets(
    world: World, agent: TransactionCoordinator
) -> None:
    ongoing(agent)
    assert agent.end_txn(ID, 100, 0, commit=False).state is TxnState.COMPLETE_ABORT
    assert world.log.markers == {TP(*tp): [(100, 0, False)] for tp in PARTS}
    assert world.log.calls == Counter(markers=1)


@pytest.mark.parametrize(
    ("setup", "commit"),
    [
        pytest.param("empty", True, id="commit-nothing-begun"),
        pytest.param("empty", False, id="abort-nothing-begun"),
        pytest.param("committed", False, id="abort-after-commit"),
        pytest.param("aborted", True, id="commit-after-abort"),
        pytest.param("deciding-commit", False, id="abort-while-committing"),
    ],
)
def test_end_txn_refuses_a_decision_the_state_cannot_take(
    world: World, setup: str, commit: bool
) -> None:
    agent = world.agent()
    if setup == "empty":
        agent.init_producer_id(ID, TIMEOUT)
    else:
        ongoing(agent)
        world.log.failures = 1 if setup == "deciding-commit" else 0
        deciding = setup == "deciding-commit"
        with pytest.raises(ConcurrentTransactions) if deciding else contextlib.nullcontext():
            agent.end_txn(ID, 100, 0, commit=setup != "aborted")
    before = stored(world)
    with pytest.raises(InvalidTxnState):
        agent.end_txn(ID, 100, 0, commit=commit)
    assert stored(world) == before


def test_a_decision_outlives_the_agent_that_took_it(world: World) -> None:
    """The agent dies writing markers after PrepareCommit (one partition written): another
    agent over the same table finds the decision and completes the commit, once."""
    ongoing(world.agent())
    world.log.failures = 1
    with pytest.raises(ConcurrentTransactions):
        world.agent().end_txn(ID, 100, 0, commit=True)
    assert stored(world).state is TxnState.PREPARE_COMMIT
    assert sum(map(len, world.log.markers.values())) == 1
    assert world.log.offsets == {"g": OFFSETS}  # the group's once decided, beside the markers
    done = world.agent().complete(ID)
    assert done is not None and done.state is TxnState.COMPLETE_COMMIT
    assert world.log.markers == {TP(*tp): [(100, 0, True)] for tp in PARTS}
    assert world.log.offsets == {"g": OFFSETS}
    assert world.agent().complete(ID) == done  # nothing left to do
    assert world.agent().end_txn(ID, 100, 0, commit=True) == done  # the producer's retry


def test_two_agents_completing_at_once_both_succeed(world: World) -> None:
    """While one agent writes the markers, another completes the transaction: the first's
    Complete* write then loses its condition and answers the other's record."""
    ongoing(world.agent())
    world.log.failures = 1
    with pytest.raises(ConcurrentTransactions):
        world.agent().end_txn(ID, 100, 0, commit=True)
    other = world.agent()

    class Racing(Log):
        def write_markers(self, txn: Transaction, commit: bool) -> None:
            world.log.write_markers(txn, commit)
            other.complete(ID)

        def settle(self, txn: Transaction, commit: bool) -> None:
            world.log.settle(txn, commit)

    done = world.agent(Racing()).complete(ID)
    assert done is not None and done.state is TxnState.COMPLETE_COMMIT
    assert done == stored(world)
    assert world.log.markers == {TP(*tp): [(100, 0, True)] for tp in PARTS}
    assert world.log.offsets == {"g": OFFSETS}
    # the failed completion, then both agents, applied them, to the same effect
    assert world.log.calls["offsets"] == 3


# ---- timeouts ---------------------------------------------------------------------------


def test_a_transaction_past_its_deadline_is_aborted_and_its_producer_fenced(
    world: World, agent: TransactionCoordinator
) -> None:
    ongoing(agent)
    world.clock.advance(TIMEOUT)
    assert agent.abort_if_expired(ID) == stored(world)
    assert stored(world).state is TxnState.ONGOING  # at the deadline, not past it
    world.clock.advance(1)
    txn = agent.abort_if_expired(ID)
    assert txn is not None
    assert (txn.state, txn.producer_epoch, txn.last_producer_epoch) == (
        TxnState.COMPLETE_ABORT,
        1,
        -1,
    )
    assert world.log.markers == {TP(*tp): [(100, 1, False)] for tp in PARTS}
    assert world.log.offsets == {}
    with pytest.raises(TransactionalIdFenced):
        agent.end_txn(ID, 100, 0, commit=True)
    with pytest.raises(TransactionalIdFenced):  # KIP-360 cannot claim it back either
        agent.init_producer_id(ID, TIMEOUT, 100, 0)


def test_any_request_meeting_an_expired_transaction_aborts_it(
    world: World, agent: TransactionCoordinator
) -> None:
    ongoing(agent)
    world.clock.advance(TIMEOUT + 1)
    with pytest.raises(TransactionalIdFenced):
        agent.end_txn(ID, 100, 0, commit=True)
    assert (stored(world).state, stored(world).producer_epoch) == (TxnState.COMPLETE_ABORT, 1)
    assert world.log.markers[TP("out", 0)] == [(100, 1, False)]


def test_an_id_unused_past_its_expiration_is_forgotten(
    world: World, agent: TransactionCoordinator
) -> None:
    ongoing(agent)
    agent.end_txn(ID, 100, 0, commit=True)
    world.clock.advance(7 * DAY_MS)
    with pytest.raises(TransactionalIdNotFound):
        agent.describe(ID)
    with pytest.raises(InvalidProducerIdMapping):
        agent.add_partitions(ID, 100, 0, PARTS)
    assert agent.list() == []
    txn = agent.init_producer_id(ID, TIMEOUT)  # over the item the TTL has not removed yet
    assert (txn.producer_id, txn.producer_epoch) == (101, 0)


# ---- agents side by side ----------------------------------------------------------------


def test_concurrent_additions_from_two_agents_both_land(world: World) -> None:
    a, b = world.agent(), world.agent()
    p = a.init_producer_id(ID, TIMEOUT)
    a.add_partitions(ID, p.producer_id, p.producer_epoch, PARTS[:1])
    replace = world.store.replace
    raced: list[int] = []

    def b_writes_first(txn: Transaction, expected_version: int) -> bool:
        if not raced:  # a has read; b adds its partition before a's write
            raced.append(expected_version)
            b.add_partitions(ID, p.producer_id, p.producer_epoch, [("b", 0)])
        return replace(txn, expected_version)

    world.store.replace = b_writes_first
    txn = a.add_partitions(ID, p.producer_id, p.producer_epoch, [("a", 0)])
    assert txn.partitions == {TP(*PARTS[0]), TP("b", 0), TP("a", 0)} == stored(world).partitions
    assert world.store.requests["PutItem"] == 5  # init's, a's first, b's, a's lost and a's


def test_a_transition_gives_up_after_its_attempts(world: World) -> None:
    agent = world.agent(attempts=3)
    p = agent.init_producer_id(ID, TIMEOUT)
    world.store.replace = lambda txn, expected_version: False
    world.store.requests.clear()
    with pytest.raises(ConcurrentTransactions):
        agent.add_partitions(ID, p.producer_id, p.producer_epoch, PARTS)
    assert world.store.requests == Counter(GetItem=3)


# ---- looking, logging, costs ----------------------------------------------------------


def test_describe_and_list(world: World, agent: TransactionCoordinator) -> None:
    ongoing(agent)
    agent.init_producer_id("other", TIMEOUT)
    assert agent.describe(ID).partitions == {TP(*tp) for tp in PARTS}
    with pytest.raises(TransactionalIdNotFound):
        agent.describe("nobody")
    assert [t.transactional_id for t in agent.list()] == [ID, "other"]
    assert [t.transactional_id for t in agent.list(states={TxnState.ONGOING})] == [ID]
    assert [t.transactional_id for t in agent.list(producer_ids={101})] == ["other"]


def test_every_refusal_is_logged_with_its_reason(
    agent: TransactionCoordinator, caplog: pytest.LogCaptureFixture
) -> None:
    agent.init_producer_id(ID, TIMEOUT)
    agent.init_producer_id(ID, TIMEOUT)
    with (
        caplog.at_level(logging.INFO, "objectlog.services.transactions"),
        pytest.raises(TransactionalIdFenced),
    ):
        agent.add_partitions(ID, 100, 0, PARTS)
    [refusal] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "AddPartitionsToTxn" in refusal.getMessage()
    assert "producer 100 epoch 0 is fenced" in refusal.getMessage()


def test_requests_per_transition(world: World, agent: TransactionCoordinator) -> None:
    """The DynamoDB requests of a transaction of N partitions and one group (the markers and
    offsets are the log layer's): 5 GetItem, 6 PutItem and 2 UpdateItem (the registry) for
    a new transactional id, plus the producer id counter's UpdateItem."""
    steps: list[tuple[str, Callable[[], object]]] = [
        ("init", lambda: agent.init_producer_id(ID, TIMEOUT)),
        ("partitions", lambda: agent.add_partitions(ID, 100, 0, PARTS)),
        ("offsets", lambda: agent.add_offsets(ID, 100, 0, "g")),
        ("commit offsets", lambda: agent.txn_offset_commit(ID, 100, 0, "g", OFFSETS, _ok)),
        ("end", lambda: agent.end_txn(ID, 100, 0, commit=True)),
        ("init again", lambda: agent.init_producer_id(ID, TIMEOUT)),
    ]
    sent = {}
    for name, step in steps:
        world.store.requests.clear()
        step()
        sent[name] = dict(world.store.requests)
    assert sent == {
        "init": {"GetItem": 1, "PutItem": 1, "UpdateItem": 2},
        "partitions": {"GetItem": 1, "PutItem": 1},
        "offsets": {"GetItem": 1, "PutItem": 1},
        "commit offsets": {"GetItem": 1, "PutItem": 1},
        "end": {"GetItem": 1, "PutItem": 2},  # the decision, then Complete*
        "init again": {"GetItem": 1, "PutItem": 1},
    }
