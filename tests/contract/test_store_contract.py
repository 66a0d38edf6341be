"""One contract for the item stores, run on the in-memory stores and on DynamoDB (the embedded
moto server, or whatever AWS_ENDPOINT_URL names), so the fake cannot drift from DynamoDB's
conditional-write semantics."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace

import pytest

from objectlog.errors import (
    ConcurrentModification,
    HorizonPassed,
    InvalidRequest,
    OffsetOutOfRange,
    OutOfOrderSequence,
    ProducerFenced,
    SpillRaced,
    TopicExists,
    TopicNotFound,
)
from objectlog.format.index import LEVEL_L0, SegmentRef
from objectlog.format.topics import Topic, TopicConfig
from objectlog.stores.documents import ABSENT
from objectlog.stores.groups import GroupState, MemberInfo, OffsetItem, TopicPartition
from objectlog.stores.idempotency import COMPLETED, IN_PROGRESS, Claim, IdempotencyRecord
from objectlog.stores.items import ItemStores
from objectlog.stores.leases import Lease
from objectlog.stores.log_start import TO_HIGH_WATERMARK
from objectlog.stores.metadata import (
    ACTIVE,
    CREATING,
    DELETING,
    CarriedSpill,
    Commit,
    KafkaSequence,
)
from tests.aio_stores import dynamodb_items

pytestmark = pytest.mark.emulators  # the stores' conditional writes, on every emulator

TP = TopicPartition("t", 0)


@pytest.fixture(params=["memory", "dynamodb", "dynamodb-aio"])
def stores(request: pytest.FixtureRequest) -> Iterator[ItemStores]:
    if request.param == "memory":
        yield ItemStores.memory()
        return
    yield dynamodb_items(request, "contract")[0]


def topic(name: str = "t", partitions: int = 2) -> Topic:
    return Topic(name, f"id-{name}", partitions, TopicConfig({"retention.ms": "1000"}), 5)


def ref(records: int = 3, length: int = 100) -> SegmentRef:
    return SegmentRef(LEVEL_L0, uuid.uuid4().hex, 0, length, records, records, 1, 2)


def commit(
    t: Topic, *, pid: str | None = "p", seq: int = 0, ots: int = 1000, gaps: bool = False
) -> Commit:
    return Commit(t.topic_id, t.name, 0, ref(), ots, pid, seq, now_s=7, allow_sequence_gaps=gaps)


def created(stores: ItemStores, t: Topic) -> Topic:
    stores.metadata.put_new_topic(t)
    stores.metadata.put_heads(t, range(t.partitions))
    stores.metadata.set_topic_state(t.name, ACTIVE)
    return t


# ---- topics ------------------------------------------------------------------------------


def test_a_topic_is_created_once_and_read_back(stores: ItemStores) -> None:
    m = stores.metadata
    m.put_new_topic(topic())
    m.put_new_topic(topic())  # a repeat of the same put (its answer lost) changes nothing
    with pytest.raises(TopicExists):
        m.put_new_topic(replace(topic(), topic_id="another id"))
    got = m.get_topic("t")
    assert got is not None and got.state == CREATING and got.topic_id == "id-t"
    assert got.partitions == 2 and got.config.overrides == {"retention.ms": "1000"}
    assert m.get_topic("missing") is None
    assert set(m.get_topics(["t", "missing", "t"])) == {"t"}


def test_topic_state_config_and_partitions_are_conditional(stores: ItemStores) -> None:
    m = stores.metadata
    m.put_new_topic(topic())
    with pytest.raises(TopicNotFound):
        m.set_topic_state("missing", ACTIVE)
    with pytest.raises(ConcurrentModification):
        m.update_topic_config("t", {"retention.ms": "5"}, [])  # still CREATING
    m.set_topic_state("t", ACTIVE, expected=CREATING)
    with pytest.raises(ConcurrentModification):
        m.set_topic_state("t", DELETING, expected=CREATING)
    m.update_topic_config("t", {"max.message.bytes": "10"}, ["retention.ms"])
    got = m.get_topic("t")
    assert got is not None and got.config.overrides == {"max.message.bytes": "10"}
    with pytest.raises(ConcurrentModification):
        m.set_partition_count("t", 5, 6)  # it has 2, not 5
    m.set_partition_count("t", 2, 4)
    assert (m.get_topic("t") or topic()).partitions == 4
    m.set_topic_state("t", DELETING)
    with pytest.raises(TopicNotFound):
        m.update_topic_config("t", {"max.message.bytes": "11"}, [])
    m.delete_topic_item("t")
    assert m.get_topic("t") is None


def test_the_registry_lists_registered_names(stores: ItemStores) -> None:
    m = stores.metadata
    assert m.registered_names() == []
    for name in ("b", "a", "b"):
        m.register(name)
    m.unregister("b")
    m.unregister("never")
    assert m.registered_names() == ["a"]


# ---- heads -------------------------------------------------------------------------------


def test_commits_assign_consecutive_offsets_and_remember_the_producer(
    stores: ItemStores,
) -> None:
    t = created(stores, topic())
    first = stores.metadata.commit(commit(t, seq=0))
    second = stores.metadata.commit(commit(t, seq=1, pid=None))
    third = stores.metadata.commit(commit(t, seq=1))
    assert (first.base_offset, second.base_offset, third.base_offset) == (0, 3, 6)
    head = stores.metadata.get_head("t", 0)
    assert head is not None and third.head == head
    assert (head.next_offset, len(head.tail), sum(r.length for r in head.tail)) == (9, 3, 300)
    assert head.producers["p"].sequence == 1 and head.producers["p"].base_offset == 6
    assert head.producers["p"].last_use_s == 7
    assert set(stores.metadata.get_heads("t", [0, 1, 5])) == {0, 1}


def test_a_repeated_commit_answers_its_first_offset_and_a_gap_is_refused(
    stores: ItemStores,
) -> None:
    t = created(stores, topic())
    stores.metadata.commit(commit(t, seq=0))
    again = stores.metadata.commit(commit(t, seq=0))
    assert again.duplicate and again.base_offset == 0
    with pytest.raises(OutOfOrderSequence):
        stores.metadata.commit(commit(t, seq=5))
    head = stores.metadata.get_head("t", 0)
    assert head is not None and head.next_offset == 3


def test_sequence_gaps_when_allowed_and_older_ones_are_duplicates(stores: ItemStores) -> None:
    t = created(stores, topic())
    assert stores.metadata.commit(commit(t, seq=4, gaps=True)).base_offset == 0
    assert stores.metadata.commit(commit(t, seq=9, gaps=True)).base_offset == 3
    older = stores.metadata.commit(commit(t, seq=5, gaps=True))
    assert older.duplicate and older.base_offset == -1


def test_commits_on_the_head_the_writer_knows_answer_the_head_as_stored(
    stores: ItemStores,
) -> None:
    """A writer's next commit on the head its last one answered (head_rules.pinned_head): the
    same offsets and the same head, item size included, as committing without it."""
    t = created(stores, topic())
    m = stores.metadata
    known = m.get_head("t", 0)
    for seq, pid, records in [(0, "p", 3), (1, "p", 95), (0, "q", 2), (2, "p", 1), (9, None, 4)]:
        base = known.next_offset if known else -1
        step = replace(commit(t, pid=pid, seq=seq), ref=ref(records), known_head=known)
        result = m.commit(step)
        assert (result.base_offset, result.duplicate) == (base, False)
        known = result.head
        assert known is not None and known == m.get_head("t", 0)
    assert known is not None and known.next_offset == 105
    assert known.producers["p"].sequence == 2 and known.producers["q"].base_offset == 98


def test_a_commit_on_an_out_of_date_known_head_lands_once_at_the_true_offset(
    stores: ItemStores,
) -> None:
    t = created(stores, topic())
    m = stores.metadata
    known = m.commit(commit(t, seq=0)).head
    m.commit(commit(t, pid="other", seq=0))  # another writer: the known head is out of date
    mine = replace(commit(t, seq=1), known_head=known)
    landed = m.commit(mine)
    assert (landed.base_offset, landed.duplicate) == (6, False)
    assert landed.head == m.get_head("t", 0)
    again = m.commit(mine)  # a retry whose answer was lost, on the same known head
    assert (again.base_offset, again.duplicate) == (6, True)
    with pytest.raises(OutOfOrderSequence):
        m.commit(replace(commit(t, seq=5), known_head=landed.head))
    m.raise_gc_horizon("t", 0, 5000)  # moves neither next nor the epoch: still refused
    with pytest.raises(HorizonPassed):
        m.commit(replace(commit(t, seq=2, ots=4000), known_head=landed.head))
    head = m.get_head("t", 0)
    assert head is not None and head.next_offset == 9


def kafka(
    t: Topic, first: int, records: int = 3, *, epoch: int = 0, seen: int | None = None
) -> Commit:
    """A Kafka producer's batch of ``records`` records starting at sequence ``first``."""
    sequence = KafkaSequence(epoch, first, first + records - 1, seen)
    return Commit(t.topic_id, t.name, 0, ref(records), 1000, "k42", 0, 7, kafka=sequence)


def test_kafka_batches_follow_by_record_sequence_and_the_last_five_are_remembered(
    stores: ItemStores,
) -> None:
    t = created(stores, topic())
    stores.metadata.commit(commit(t, seq=0, pid="other"))  # offsets 0-2: another producer
    bases = [stores.metadata.commit(kafka(t, 3 * i)).base_offset for i in range(7)]
    assert bases == [3, 6, 9, 12, 15, 18, 21]
    head = stores.metadata.get_head("t", 0)
    assert head is not None
    state = head.producers["k42"]
    assert state.window is not None and (state.sequence, state.window.batches) == (20, 7)
    assert state.window.recent == ((6, 9), (9, 12), (12, 15), (15, 18), (18, 21))
    for i in (2, 4, 6):  # a retried batch of the window gets its original offset
        again = stores.metadata.commit(kafka(t, 3 * i))
        assert again.duplicate and again.base_offset == bases[i]
    older = stores.metadata.commit(kafka(t, 0))  # before the window: a duplicate, no offset
    assert older.duplicate and older.base_offset == -1
    with pytest.raises(OutOfOrderSequence):
        stores.metadata.commit(kafka(t, 30))  # a gap: 21-29 never came
    head = stores.metadata.get_head("t", 0)
    assert head is not None and head.next_offset == 24


def test_a_kafka_commit_with_a_stale_batch_count_still_lands_once(stores: ItemStores) -> None:
    t = created(stores, topic())
    assert stores.metadata.commit(kafka(t, 0, seen=None)).base_offset == 0
    assert stores.metadata.commit(kafka(t, 3, seen=0)).base_offset == 3  # it had seen 0, not 1
    assert stores.metadata.commit(kafka(t, 6, seen=2)).base_offset == 6
    head = stores.metadata.get_head("t", 0)
    assert head is not None and head.next_offset == 9


def test_a_new_kafka_epoch_fences_the_old_one_and_starts_at_zero(stores: ItemStores) -> None:
    t = created(stores, topic())
    stores.metadata.commit(kafka(t, 0))
    stores.metadata.commit(kafka(t, 3))
    with pytest.raises(OutOfOrderSequence):
        stores.metadata.commit(kafka(t, 6, epoch=1))  # a new epoch must begin at 0
    assert stores.metadata.commit(kafka(t, 0, epoch=1)).base_offset == 6
    with pytest.raises(ProducerFenced):
        stores.metadata.commit(kafka(t, 6, epoch=0))
    head = stores.metadata.get_head("t", 0)
    assert head is not None and head.next_offset == 9


def test_kafka_batches_on_the_head_the_writer_knows_answer_the_head_as_stored(
    stores: ItemStores,
) -> None:
    """The Kafka agent's commits on the head its last one answered: the same offsets and the
    same head, windows and item size included, as reading it back; past the five-batch
    window's wrap, and for two producers taking turns."""
    t = created(stores, topic())
    m = stores.metadata
    known = m.commit(kafka(t, 0)).head  # the window starts: read back
    batches, bases = [kafka(t, 0)], [0]
    for records in range(1, 8):
        last = batches[-1].kafka
        assert known is not None and last is not None
        batches.append(replace(kafka(t, last.last + 1, records), known_head=known))
        result = m.commit(batches[-1])
        assert (result.base_offset, result.duplicate) == (known.next_offset, False)
        bases.append(result.base_offset)
        known = result.head
        assert known is not None and known == m.get_head("t", 0)
    other = replace(kafka(t, 0), producer_id="k7")
    known = m.commit(replace(other, known_head=known)).head  # its window starts: read back
    for first in (3, 6):
        known = m.commit(replace(kafka(t, first), producer_id="k7", known_head=known)).head
        assert known is not None and known == m.get_head("t", 0)
    again = m.commit(replace(batches[6], known_head=known))  # a retry, on the newest head
    assert (again.base_offset, again.duplicate) == (bases[6], True)
    head = m.get_head("t", 0)
    assert head is not None
    window = head.producers["k42"].window
    assert window is not None and window.batches == 8


def test_a_kafka_batch_on_an_out_of_date_known_head_lands_once_at_the_true_offset(
    stores: ItemStores,
) -> None:
    t = created(stores, topic())
    m = stores.metadata
    m.commit(kafka(t, 0))
    known = m.commit(kafka(t, 3)).head
    m.commit(commit(t, pid="p", seq=0))  # another writer: next moved past the known head
    mine = replace(kafka(t, 6), known_head=known)
    landed = m.commit(mine)
    assert (landed.base_offset, landed.duplicate) == (9, False)
    assert landed.head == m.get_head("t", 0)
    again = m.commit(mine)  # a retry whose answer was lost, on the same known head
    assert (again.base_offset, again.duplicate) == (9, True)
    m.commit(kafka(t, 0, epoch=1))  # a new epoch fences the known head's window
    with pytest.raises(ProducerFenced):
        m.commit(replace(kafka(t, 9), known_head=landed.head))
    head = m.get_head("t", 0)
    assert head is not None and head.next_offset == 15


@pytest.mark.parametrize("stores", ["dynamodb"], indirect=True)
def test_a_kafka_retry_on_a_known_head_is_told_a_duplicate_by_its_one_failed_write(
    stores: ItemStores,
) -> None:
    """The failed write's answer is the head as it is: it tells the retry apart, with no
    second write at the agent's batch count and no read."""
    t = created(stores, topic())
    m = stores.metadata
    m.commit(kafka(t, 0))
    known = m.commit(kafka(t, 3)).head
    mine = replace(kafka(t, 6), known_head=known)
    m.commit(mine)
    calls: list[str] = []
    events = m.table.client.meta.events  # type: ignore[attr-defined]
    events.register("before-call.dynamodb", lambda model, **_: calls.append(model.name))
    again = m.commit(mine)  # its answer was lost: the window has moved past it
    assert (again.base_offset, again.duplicate) == (6, True)
    assert calls == ["UpdateItem"]


def test_kafka_producer_ids_are_never_handed_out_twice(stores: ItemStores) -> None:
    ids = [stores.metadata.next_producer_id() for _ in range(3)]
    assert ids == [0, 1, 2]


def test_a_kafka_producer_without_state_resumes_at_its_sequence(stores: ItemStores) -> None:
    t = created(stores, topic())
    assert stores.metadata.commit(kafka(t, 500)).base_offset == 0  # its state had expired
    assert stores.metadata.commit(kafka(t, 503)).base_offset == 3
    with pytest.raises(HorizonPassed):
        stores.metadata.raise_gc_horizon("t", 0, 5000)
        stores.metadata.commit(kafka(t, 506))


def test_commits_behind_the_gc_horizon_or_to_another_topic_id_fail(stores: ItemStores) -> None:
    t = created(stores, topic())
    stores.metadata.raise_gc_horizon("t", 0, 2000)
    stores.metadata.raise_gc_horizon("t", 0, 1500)  # never lowered
    with pytest.raises(HorizonPassed):
        stores.metadata.commit(commit(t, ots=2000))
    assert stores.metadata.commit(commit(t, ots=2001)).base_offset == 0
    other = Topic("t", "another-id", 2, TopicConfig(), 5)
    with pytest.raises(TopicNotFound):
        stores.metadata.commit(commit(other, ots=3000))
    stores.metadata.delete_heads("t", [0])
    with pytest.raises(TopicNotFound):
        stores.metadata.commit(commit(t, ots=3000, seq=1))
    stores.metadata.raise_gc_horizon("t", 0, 9000)  # a head that is gone stays gone
    assert stores.metadata.get_head("t", 0) is None


def test_a_spill_moves_the_oldest_refs_once(stores: ItemStores) -> None:
    t = created(stores, topic())
    for seq in range(4):
        stores.metadata.commit(commit(t, seq=seq, pid=f"p{seq}"))
    head = stores.metadata.get_head("t", 0)
    assert head is not None
    kept = head.tail[2:]

    def spill(epoch: int, ots: int = 5000) -> bool:
        return stores.metadata.spill(
            "t",
            0,
            expected_epoch=epoch,
            refs_removed=2,
            span_removed=6,
            manifest_list="ml-1",
            object_time_ms=ots,
            expired_producers=["p0", "p1"],
        )

    assert spill(head.index_epoch)
    assert not spill(head.index_epoch)  # the epoch moved: a racing spiller loses
    spilled = stores.metadata.get_head("t", 0)
    assert spilled is not None and spilled.tail == kept and spilled.tail_base == 6
    assert spilled.manifest_list == "ml-1" and spilled.index_epoch == head.index_epoch + 1
    assert set(spilled.producers) == {"p2", "p3"} and spilled.next_offset == 12
    stores.metadata.raise_gc_horizon("t", 0, 9000)
    assert not spill(spilled.index_epoch, ots=9000)
    with pytest.raises(InvalidRequest):
        stores.metadata.spill(
            "t", 0, expected_epoch=1, refs_removed=0, span_removed=0,
            manifest_list="x", object_time_ms=1,
        )  # fmt: skip


def test_a_commit_carrying_a_spill_moves_the_refs_it_planned_on_or_nothing(
    stores: ItemStores,
) -> None:
    t = created(stores, topic())
    for seq in range(3):
        stores.metadata.commit(commit(t, seq=seq, pid=f"p{seq}"))
    head = stores.metadata.get_head("t", 0)
    assert head is not None

    def carrying(seq: int, epoch: int, length: int) -> Commit:
        spill = CarriedSpill(epoch, length, head.tail[2:], 6, "l0/o@10+20", ("p0",))
        return replace(commit(t, seq=seq, pid="p9"), spill=spill)

    with pytest.raises(SpillRaced):
        stores.metadata.commit(carrying(0, head.index_epoch, length=2))  # a tail it never saw
    with pytest.raises(SpillRaced):
        stores.metadata.commit(carrying(0, head.index_epoch + 1, length=3))
    assert stores.metadata.get_head("t", 0) == head  # refused: nothing stored
    landed = carrying(0, head.index_epoch, length=3)
    result = stores.metadata.commit(landed)
    spilled = stores.metadata.get_head("t", 0)
    assert result.base_offset == 9 and result.head == spilled and spilled is not None
    assert spilled.tail == (head.tail[2], landed.ref) and spilled.tail_base == 6
    assert spilled.next_offset == 12 and spilled.manifest_list == "l0/o@10+20"
    assert spilled.index_epoch == head.index_epoch + 1
    assert set(spilled.producers) == {"p1", "p2", "p9"}
    again = stores.metadata.commit(landed)  # a retry after a lost answer: the same offset
    assert again.duplicate and again.base_offset == 9
    assert stores.metadata.get_head("t", 0) == spilled


def test_a_spill_carried_on_the_known_head_answers_the_head_as_stored(
    stores: ItemStores,
) -> None:
    """A carried spill committed on the head the writer knows: the refs moved, the pointers
    set, an objectlog producer's and a Kafka producer's state expired, and the computed head
    (its item size included) is the stored one, twice over (a manifest list set, then
    replaced)."""
    t = created(stores, topic())
    m = stores.metadata
    for seq in range(3):  # spans enough for the tail base to take a byte more
        m.commit(replace(commit(t, seq=seq, pid=f"p{seq}"), ref=ref(60)))
    for first in (0, 3, 6, 9, 12, 15, 18):  # more batches than the window keeps
        m.commit(kafka(t, first))
    known = m.get_head("t", 0)
    assert known is not None and set(known.producers) == {"p0", "p1", "p2", "k42"}
    for seq, expired, location in [(0, ("p0", "k42"), "l0/o@10+20"), (1, (), "l0/longer@1+22")]:
        moved = known.tail[:-2]
        spill = CarriedSpill(
            known.index_epoch,
            len(known.tail),
            known.tail[-2:],
            sum(r.span for r in moved),
            location,
            expired,
        )
        step = replace(commit(t, seq=seq, pid="p9"), spill=spill, known_head=known)
        result = m.commit(step)
        assert (result.base_offset, result.duplicate) == (known.next_offset, False)
        assert result.head is not None and result.head == m.get_head("t", 0)
        assert result.head.tail == (*known.tail[-2:], step.ref)
        assert result.head.index_epoch == known.index_epoch + 1
        known = result.head
    assert set(known.producers) == {"p1", "p2", "p9"} and known.manifest_list == location


def test_a_swap_needs_the_compactor_epoch_it_stamped(stores: ItemStores) -> None:
    t = created(stores, topic())
    stores.metadata.commit(commit(t))
    assert stores.metadata.stamp_compactor_epoch("t", 0, 3)
    assert not stores.metadata.stamp_compactor_epoch("t", 0, 2)  # an older holder is fenced
    assert not stores.metadata.stamp_compactor_epoch("t", 9, 5)  # no such head

    def swap(compactor_epoch: int, index_epoch: int = 0, topic_id: str = t.topic_id) -> bool:
        return stores.metadata.swap_index(
            "t",
            0,
            topic_id=topic_id,
            expected_index_epoch=index_epoch,
            compactor_epoch=compactor_epoch,
            manifest_list="ml-c",
            log_start_offset=2,
            object_time_ms=5000,
        )

    assert not swap(2) and not swap(3, index_epoch=7) and not swap(3, topic_id="x")
    assert swap(3)
    head = stores.metadata.get_head("t", 0)
    assert head is not None and head.compactor_epoch == 3 and head.index_epoch == 1
    assert (head.manifest_list, head.log_start_offset) == ("ml-c", 2)
    assert head.next_offset == 3  # a swap never moves the high watermark


def test_the_log_start_moves_only_forward_and_never_past_the_high_watermark(
    stores: ItemStores,
) -> None:
    t = created(stores, topic())
    m = stores.metadata
    for seq in range(3):
        m.commit(commit(t, seq=seq))  # offsets 0-8

    def raise_to(offset: int, partition: int = 0, topic_id: str = t.topic_id) -> int:
        return m.raise_log_start("t", partition, topic_id=topic_id, offset=offset)

    assert raise_to(4) == 4
    assert raise_to(2) == 4 and raise_to(4) == 4  # never back; a repeat answers it
    with pytest.raises(OffsetOutOfRange) as refused:
        raise_to(10)
    assert (refused.value.log_start_offset, refused.value.high_watermark) == (4, 9)
    with pytest.raises(TopicNotFound):
        raise_to(5, topic_id="id-of-a-topic-deleted-since")
    with pytest.raises(TopicNotFound):
        raise_to(5, partition=9)  # no such head
    assert raise_to(9) == 9  # the high watermark itself: the partition holds no record
    head = m.get_head("t", 0)
    assert head is not None and (head.log_start_offset, head.next_offset) == (9, 9)
    assert len(head.tail) == 3  # the refs stay: the compactor removes them


def test_the_log_start_raised_to_the_high_watermark_is_the_one_the_write_finds(
    stores: ItemStores,
) -> None:
    t = created(stores, topic())
    m = stores.metadata
    assert m.raise_log_start("t", 1, topic_id=t.topic_id, offset=TO_HIGH_WATERMARK) == 0
    for seq in range(2):
        m.commit(commit(t, seq=seq))
    assert m.raise_log_start("t", 0, topic_id=t.topic_id, offset=TO_HIGH_WATERMARK) == 6
    assert m.raise_log_start("t", 0, topic_id=t.topic_id, offset=TO_HIGH_WATERMARK) == 6
    m.commit(commit(t, seq=2))
    assert m.raise_log_start("t", 0, topic_id=t.topic_id, offset=TO_HIGH_WATERMARK) == 9
    head = m.get_head("t", 0)
    assert head is not None and (head.log_start_offset, head.next_offset) == (9, 9)


def test_a_swap_planned_before_a_delete_records_does_not_lower_the_log_start(
    stores: ItemStores,
) -> None:
    t = created(stores, topic())
    m = stores.metadata
    for seq in range(3):
        m.commit(commit(t, seq=seq))
    assert m.stamp_compactor_epoch("t", 0, 1)
    planned = m.get_head("t", 0)  # the compactor plans from this head: log start 0
    assert planned is not None
    assert m.raise_log_start("t", 0, topic_id=t.topic_id, offset=5) == 5  # DeleteRecords

    def swap(log_start: int) -> bool:
        return m.swap_index(
            "t",
            0,
            topic_id=t.topic_id,
            expected_index_epoch=planned.index_epoch,
            compactor_epoch=1,
            manifest_list="ml-c",
            log_start_offset=log_start,
            object_time_ms=5000,
        )

    assert not swap(3)
    head = m.get_head("t", 0)
    assert head is not None and (head.log_start_offset, head.index_epoch) == (5, 0)
    assert swap(5)  # planned again from the head as it is now
    head = m.get_head("t", 0)
    assert head is not None and (head.log_start_offset, head.manifest_list) == (5, "ml-c")


# ---- groups ------------------------------------------------------------------------------


def group(generation: int, *members: str) -> GroupState:
    info = MemberInfo("c", ("t",), 1000, ("range",))
    return GroupState(
        "g",
        generation,
        {m: info for m in members},
        {m: (TP,) for m in members[:1]},
        "range",
        frozenset({"t"}),
        11,
        exists=True,
    )


def test_the_group_item_is_replaced_at_the_generation_read(stores: ItemStores) -> None:
    g = stores.groups
    absent = g.get_group("g")
    assert not absent.exists and absent.generation == 0
    assert g.replace_group(group(1, "a"), previous=absent)
    assert not g.replace_group(group(1, "b"), previous=absent)  # it exists now
    current = g.get_group("g")
    assert current == group(1, "a")
    assert not g.replace_group(group(2, "b"), previous=group(5))
    assert g.replace_group(group(2, "a", "b"), previous=current)
    g.track_topics("g", ["u"])
    assert g.get_group("g").topics == {"t", "u"}
    assert not g.delete_group_item("g", 1)
    assert g.delete_group_item("g", 2)
    g.track_topics("h", ["t"])  # an offsets-only group gets an empty item
    tracked = g.get_group("h")
    assert tracked.exists and tracked.generation == 0 and tracked.topics == {"t"}


def test_members_expire_unless_renewed(stores: ItemStores) -> None:
    g = stores.groups
    g.put_member("g", "a", now_ms=100, session_timeout_ms=50)
    g.put_member("g", "b", now_ms=100, session_timeout_ms=10)
    assert g.renew_member("g", "a", now_ms=200)
    assert not g.renew_member("g", "zz", now_ms=200)
    assert g.read("g", ["a", "b", "zz"], [])[0] == {"a": 250, "b": 110}
    g.delete_members("g", ["b", "b"])
    assert g.read("g", ["a", "b"], [])[0] == {"a": 250}


def test_offsets_move_only_by_their_owner_at_its_generation(stores: ItemStores) -> None:
    g = stores.groups
    assert g.commit("g", TP, 5, "m", 1, member_id=None, generation=-1) is None  # unowned
    assert g.claim("g", TP, "a", 2, seen_owner=None)
    assert not g.claim("g", TP, "b", 3, seen_owner=None)  # a saw it first
    fenced = g.commit("g", TP, 9, "", 2, member_id="b", generation=3)
    assert fenced == OffsetItem(5, "m", 1, "a", 2)
    assert g.commit("g", TP, 9, "", 2, member_id=None, generation=-1) is not None
    assert g.commit("g", TP, 7, "x", 3, member_id="a", generation=2) is None
    assert g.commit("g", TP, 7, "x", 3, member_id="a", generation=1) is not None  # older gen
    assert not g.release("g", TP, "b", (99, "", 4))
    assert g.release("g", TP, "a", (8, "last", 4))
    assert g.read("g", [], [TP])[1][TP] == OffsetItem(8, "last", 4, None, 2)
    assert g.claim("g", TP, "b", 5, seen_owner=None)
    assert not g.reset("g", TP, 0, 6, generation=4)  # b claimed it after generation 4
    assert g.reset("g", TP, 0, 6, generation=5)
    assert g.read("g", [], [TP])[1][TP] == OffsetItem(0, "last", 6, None, 5)
    assert not g.release("g", TopicPartition("t", 9), "a", None)  # no such item
    g.delete_offsets("g", [TP])
    assert g.read("g", [], [TP])[1][TP] == OffsetItem()


def test_a_transactions_offsets_are_marked_pending_then_settled(stores: ItemStores) -> None:
    """KIP-447 on the offset items (groups.transactional_offsets): a mark under the member's
    own commit condition, settled whoever owns the partition by then, only by its own mark;
    a plain commit since wins."""
    g = stores.groups
    assert g.claim("g", TP, "a", 2, seen_owner=None)
    refused = g.hold_pending("g", TP, "t1", member_id="b", generation=2)
    assert refused == OffsetItem(owner="a", owner_generation=2)  # not b's: nothing marked
    assert g.hold_pending("g", TP, "t1", member_id="a", generation=1) is not None  # older gen
    assert g.hold_pending("g", TP, "t1", member_id="a", generation=2) is None
    assert g.read("g", [], [TP])[1][TP].pending == "t1"
    assert g.release("g", TP, "a", None) and g.claim("g", TP, "b", 3, seen_owner=None)
    assert g.read("g", [], [TP])[1][TP].pending == "t1"  # kept across the move
    assert not g.settle_pending("g", TP, "t0", (4, "x", 7, 9))  # another transaction's mark
    assert g.settle_pending("g", TP, "t1", (4, "x", 7, 9))  # committed: b waited for it
    assert g.read("g", [], [TP])[1][TP] == OffsetItem(4, "x", 9, "b", 3, 7)
    assert not g.settle_pending("g", TP, "t1", (5, "", -1, 10))  # once
    assert g.hold_pending("g", TP, "t2", member_id="b", generation=3) is None
    assert g.settle_pending("g", TP, "t2", None)  # aborted: the offset stays
    assert g.read("g", [], [TP])[1][TP] == OffsetItem(4, "x", 9, "b", 3, 7)
    assert g.hold_pending("g", TP, "t3", member_id="b", generation=3) is None
    assert g.commit("g", TP, 6, "", 11, member_id="b", generation=3) is None
    assert g.read("g", [], [TP])[1][TP].pending is None  # a plain commit since wins
    assert not g.settle_pending("g", TP, "t3", (5, "", -1, 12))
    assert g.read("g", [], [TP])[1][TP].offset == 6
    classic = TopicPartition("t", 4)  # a classic group's items: no owner, generations fence
    assert g.commit("k", classic, 1, "", 1, member_id=None, generation=5) is None
    assert g.hold_pending("k", classic, "t4", member_id=None, generation=4) is not None
    assert g.hold_pending("k", classic, "t4", member_id=None, generation=5) is None
    assert g.settle_pending("k", classic, "t4", (3, "", -1, 2))
    assert g.read("k", [], [classic])[1][classic] == OffsetItem(3, "", 2, None, 5)


def test_a_classic_groups_commits_are_fenced_by_generation(stores: ItemStores) -> None:
    groups = stores.groups

    def commit(offset: int, generation: int) -> bool:
        return groups.commit("k", TP, offset, "", 1, member_id=None, generation=generation) is None

    assert commit(379, 3)
    assert not commit(270, 2)  # a zombie of generation 2, after generation 3 committed
    assert commit(400, 3) and commit(450, 4)
    _, items = groups.read("k", [], [TP])
    assert items[TP].offset == 450
    assert commit(460, -1)  # from outside the group (no generation): only ownership counts


def test_a_classic_groups_read_fences_the_older_generations_commits(stores: ItemStores) -> None:
    groups = stores.groups
    never = TopicPartition("t", 1)
    assert groups.fence("k", never, 2).offset is None  # nothing committed yet: fenced all the same
    assert groups.commit("k", never, 5, "", 1, member_id=None, generation=1) is not None
    assert groups.commit("k", TP, 379, "m", 1, member_id=None, generation=3) is None
    fenced = groups.fence("k", TP, 5)
    assert (fenced.offset, fenced.metadata, fenced.owner_generation) == (379, "m", 5)
    assert groups.fence("k", TP, 4) == fenced  # an older fence changes nothing
    assert groups.commit("k", TP, 400, "", 2, member_id=None, generation=4) is not None
    assert groups.commit("k", TP, 410, "", 2, member_id=None, generation=5) is None
    assert groups.read("k", [], [TP])[1][TP].offset == 410


def test_the_group_registry(stores: ItemStores) -> None:
    for name in ("b", "a"):
        stores.groups.register(name)
    stores.groups.unregister("b")
    assert stores.groups.group_names() == ["a"]


# ---- leases ------------------------------------------------------------------------------


def test_a_lease_is_taken_from_the_epoch_seen_only(stores: ItemStores) -> None:
    leases = stores.leases
    assert leases.get("c") is None
    assert leases.put(Lease("c", "a", 1, 100), seen_epoch=None)
    assert not leases.put(Lease("c", "b", 1, 100), seen_epoch=None)
    assert not leases.put(Lease("c", "b", 2, 100), seen_epoch=0)
    assert leases.put(Lease("c", "b", 2, 200), seen_epoch=1)
    assert not leases.put(Lease("c", "a", 2, 0), seen_epoch=2, owner="a")  # b holds it
    assert leases.put(Lease("c", "b", 2, 0), seen_epoch=2, owner="b")
    assert leases.get("c") == Lease("c", "b", 2, 0)


# ---- idempotency records -----------------------------------------------------------------

NOW_MS = 1_700_000_000_000


def test_a_document_is_replaced_only_at_the_version_read(stores: ItemStores) -> None:
    documents = stores.documents
    assert documents.read("kind", "d") == (None, ABSENT)
    assert documents.write("kind", "d", '{"a": 1}', seen=ABSENT)
    assert not documents.write("kind", "d", '{"a": 2}', seen=ABSENT)  # it exists now
    assert documents.read("kind", "d") == ('{"a": 1}', 1)
    assert documents.write("kind", "d", '{"a": 3}', seen=1)
    assert not documents.write("kind", "d", '{"a": 4}', seen=1)  # someone wrote version 2
    assert documents.read("kind", "d") == ('{"a": 3}', 2)
    assert documents.read("other", "d") == (None, ABSENT)
    assert not documents.delete("kind", "d", seen=1)
    assert documents.delete("kind", "d", seen=2)
    assert documents.read("kind", "d") == (None, ABSENT)


def in_progress(key: str = "k", **fields: object) -> IdempotencyRecord:
    values: dict[str, object] = {
        "status": IN_PROGRESS,
        "expires_s": NOW_MS // 1000 + 60,
        "payload_hash": "h1",
    }
    values.update(fields)
    return IdempotencyRecord(key, **values)  # type: ignore[arg-type]


def test_an_idempotency_key_is_held_until_it_expires(stores: ItemStores) -> None:
    store = stores.idempotency
    assert store.get("k") is None
    assert store.put_if_free(in_progress(), NOW_MS) == Claim()
    holder = store.put_if_free(in_progress(payload_hash="h2"), NOW_MS).holder
    assert holder is not None and holder.status == IN_PROGRESS and holder.payload_hash == "h1"
    store.complete(replace(in_progress(), status=COMPLETED, response='{"ok": 1}'))
    done = store.get("k")
    assert done is not None and done.status == COMPLETED and done.response == '{"ok": 1}'
    assert store.put_if_free(in_progress(), NOW_MS) == Claim(holder=done)
    later = NOW_MS + 61_000
    assert store.put_if_free(in_progress(expires_s=later // 1000 + 60), later) == Claim()
    again = store.get("k")
    assert again is not None and again.status == IN_PROGRESS and not again.response


def test_a_stalled_in_progress_key_is_free_and_delete_frees_it(stores: ItemStores) -> None:
    store = stores.idempotency
    assert store.put_if_free(in_progress(in_progress_expires_ms=NOW_MS + 5), NOW_MS) == Claim()
    assert store.put_if_free(in_progress(), NOW_MS + 5).holder is not None
    assert store.put_if_free(in_progress(), NOW_MS + 6) == Claim()
    store.delete("k")
    assert store.get("k") is None
    store.delete("k")
    assert store.put_if_free(in_progress("other"), NOW_MS) == Claim()
    assert store.get("k") is None


def test_a_released_key_hands_what_landed_to_the_same_requests_retry(stores: ItemStores) -> None:
    store = stores.idempotency
    assert store.put_if_free(in_progress(in_progress_expires_ms=NOW_MS + 30_000), NOW_MS) == Claim()
    store.release("k", '{"0": {"partition": 0, "offset": 7}}')
    retry = store.put_if_free(in_progress(in_progress_expires_ms=NOW_MS + 30_000), NOW_MS)
    assert retry == Claim(landed='{"0": {"partition": 0, "offset": 7}}')
    claimed = store.get("k")
    assert claimed is not None and claimed.landed is None  # handed over once
    assert store.put_if_free(in_progress(), NOW_MS).holder is not None  # the retry holds it
    store.release("k", '{"1": {"partition": 1, "offset": 3}}')
    other_body = store.put_if_free(in_progress(payload_hash="h2"), NOW_MS)
    assert other_body == Claim()  # free, but what landed belongs to another request


def test_a_commits_leader_epoch_is_kept_until_an_offset_without_one(stores: ItemStores) -> None:
    """Kafka's committed_leader_epoch (KIP-320): kept with the offset and answered as given;
    a commit, release or reset that names none clears it."""
    g = stores.groups
    assert g.commit("e", TP, 5, "", 1, member_id=None, generation=-1, leader_epoch=3) is None
    assert g.read("e", [], [TP])[1][TP].leader_epoch == 3
    assert g.commit("e", TP, 6, "", 2, member_id=None, generation=-1) is None
    assert g.read("e", [], [TP])[1][TP].leader_epoch == -1
    assert g.commit("e", TP, 7, "", 3, member_id=None, generation=-1, leader_epoch=4) is None
    assert g.reset("e", TP, 0, 4, generation=1)
    assert g.read("e", [], [TP])[1][TP] == OffsetItem(0, "", 4, None, 0)
