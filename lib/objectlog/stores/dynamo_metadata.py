"""Topics, partition heads and producer state in one DynamoDB table (stores.metadata's
Protocols), single-item calls only on produce and fetch.

Items (string keys ``pk``/``sk``):

    topic#<t> / meta     tid, parts, cfg{...}, state, created
    topics    / index    names (string set): the topic registry, so listing needs no Query
    kafka     / producer-ids   n: the Kafka producer ids handed out (InitProducerId)
    part#<t>#<p> / head  tid, next (high watermark), lso (log start), tb (tail base),
                         tail [ref, ...], ml (manifest list key), ie (index epoch),
                         gch (GC horizon, ms), ce (compactor epoch),
                         ps {<pid>s: last sequence, <pid>b: its base offset, <pid>t: last use s,
                             <kafka pid>w: a Kafka producer's window (stores.kafka_window)}

Produce and fetch use GetItem, BatchGetItem, PutItem and conditional UpdateItem only: moto
server's Query and TransactWriteItems slow down with the table's size, and on AWS a
transaction costs twice the write units.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from objectlog.adapters.dynamodb import DynamoTable, Item, Written, item_size, value_size
from objectlog.errors import (
    ConcurrentModification,
    InvalidRequest,
    TopicExists,
    TopicNotFound,
)
from objectlog.format.index import SegmentRef
from objectlog.format.topics import Topic, TopicConfig
from objectlog.stores.head_commit import head_commit
from objectlog.stores.head_rules import (
    commit_applies,
    committed,
    explain_failed_commit,
    pinned_head,
)
from objectlog.stores.kafka_window import (
    KafkaCommits,
    parse_windows,
    window_attribute,
    window_values,
)
from objectlog.stores.log_start import LogStartWrites
from objectlog.stores.metadata import (
    ACTIVE,
    CREATING,
    DELETING,
    Commit,
    CommitResult,
    PartitionHead,
    ProducerState,
)
from objectlog.stores.name_sets import DynamoNameSet
from objectlog.stores.txn_marks import TransactionMarks, parse_open_txns

REGISTRY_KEY = {"pk": "topics", "sk": "index"}
PRODUCER_IDS_KEY = {"pk": "kafka", "sk": "producer-ids"}


def topic_key(name: str) -> dict[str, str]:
    return {"pk": f"topic#{name}", "sk": "meta"}


def head_key(topic: str, partition: int) -> dict[str, str]:
    return {"pk": f"part#{topic}#{partition}", "sk": "head"}


def parse_topic(name: str, item: Mapping[str, Any]) -> Topic:
    return Topic(
        name=name,
        topic_id=item["tid"],
        partitions=item.get("parts", 0),
        config=TopicConfig(dict(item.get("cfg", {}))),
        created_ms=item.get("created", 0),
        state=item.get("state", ACTIVE),
    )


def parse_producers(item: Mapping[str, Any]) -> dict[str, ProducerState]:
    raw: Mapping[str, Any] = item.get("ps", {})
    pids = {key[:-1] for key in raw if key.endswith("s")}
    return {
        **{
            pid: ProducerState(raw[f"{pid}s"], raw.get(f"{pid}b", 0), raw.get(f"{pid}t", 0))
            for pid in pids
        },
        **parse_windows(raw),
    }


def parse_head(topic: str, partition: int, item: Mapping[str, Any]) -> PartitionHead:
    return PartitionHead(
        topic=topic,
        partition=partition,
        topic_id=item["tid"],
        next_offset=item.get("next", 0),
        log_start_offset=item.get("lso", 0),
        tail_base=item.get("tb", 0),
        tail=tuple(SegmentRef.decode(ref) for ref in item.get("tail", [])),
        manifest_list=item.get("ml"),
        index_epoch=item.get("ie", 0),
        gc_horizon=item.get("gch", 0),
        producers=parse_producers(item),
        compactor_epoch=item.get("ce"),
        item_bytes=item_size(item),
        open_txns=parse_open_txns(item),
    )


def item_bytes_after(commit: Commit, known: PartitionHead, new: PartitionHead) -> int:
    """The head item's billed size after a commit on the known head (new: the head it left,
    head_rules.committed), by adapters.dynamodb's rules: its ref appended (or the tail a carried
    spill leaves, with the spill's pointers and expired producers gone), next moved, the
    producer's entries set (a Kafka producer's window). known.item_bytes is the item's as
    read, so this is exact."""
    size = known.item_bytes + _number_change(known.next_offset, commit.ref.span)
    spill = commit.spill
    if spill is None:
        size += 1 + value_size(commit.ref.encode())
    else:
        size += _refs_bytes([*spill.tail, commit.ref]) - _refs_bytes(known.tail)
        size += _number_change(known.tail_base, spill.span_removed)
        size += _number_change(known.index_epoch, 1)
        listed = len(known.manifest_list.encode()) if known.manifest_list else -len("ml")
        size += len(spill.manifest_list.encode()) - listed  # ml added, or its value replaced
        for expired in spill.expired_producers:
            size -= _producer_bytes(expired, known.producers.get(expired))
    pid = commit.producer_id
    if pid is not None:
        size += _producer_bytes(pid, new.producers.get(pid))
        size -= _producer_bytes(pid, known.producers.get(pid))
    return size


def _refs_bytes(refs: Sequence[SegmentRef]) -> int:
    return value_size([ref.encode() for ref in refs])


def _number_change(number: int, by: int) -> int:
    return value_size(number + by) - value_size(number)


def _producer_bytes(pid: str, state: ProducerState | None) -> int:
    """What a producer's entries add to the head's ps map (none if state is None)."""
    if state is None:
        return 0
    if state.window is not None:
        entries: dict[str, Any] = {window_attribute(pid): window_values(state)}
    else:
        entries = {
            f"{pid}s": state.sequence,
            f"{pid}b": state.base_offset,
            f"{pid}t": state.last_use_s,
        }
    return value_size(entries) - value_size({})  # the entries' share of a map's size


def new_head_item(topic: Topic, partition: int) -> Item:
    return {
        **head_key(topic.name, partition),
        "tid": topic.topic_id,
        "next": 0,
        "lso": 0,
        "tb": 0,
        "tail": [],
        "ie": 0,
        "gch": 0,
        "ps": {},
        "oe": {},  # open transactions: producer -> epoch, and -> first offset (txn_marks)
        "ot": {},
    }


class DynamoMetadata(KafkaCommits, LogStartWrites, TransactionMarks):
    """Topics, partition heads and producer state in one DynamoDB table."""

    def __init__(self, table: DynamoTable) -> None:
        self.table = table
        self.registry = DynamoNameSet(table, REGISTRY_KEY, "registry")

    def _parse_head(self, topic: str, partition: int, item: Mapping[str, Any]) -> PartitionHead:
        return parse_head(topic, partition, item)

    def _head_key(self, commit: Commit) -> dict[str, str]:
        return head_key(commit.topic, commit.partition)

    def _head_at(self, topic: str, partition: int) -> dict[str, str]:
        return head_key(topic, partition)

    @property
    def client(self) -> Any:
        """The botocore client (fault injection in tests hooks its events)."""
        return self.table.client

    def ensure_table(self) -> None:
        self.table.ensure()

    # ---- topics ------------------------------------------------------------------------

    def put_new_topic(self, topic: Topic) -> None:
        item = {
            **topic_key(topic.name),
            "tid": topic.topic_id,
            "parts": topic.partitions,
            "cfg": dict(topic.config.overrides),
            "created": topic.created_ms,
            "state": CREATING,
        }
        # admits a repeat of this put whose answer was lost (as claim_fingerprint's condition)
        written = self.table.put(
            item,
            condition="attribute_not_exists(pk) OR tid = :tid",
            values={":tid": topic.topic_id},
            what="PutItem topic",
        )
        if not written.applied:
            raise TopicExists(f"topic {topic.name!r} already exists", field="topic")

    def set_topic_state(self, name: str, state: str, *, expected: str | None = None) -> None:
        condition = "attribute_exists(pk)" + (" AND #st = :expected" if expected else "")
        values: dict[str, Any] = {":state": state}
        if expected:
            values[":expected"] = expected
        self._update_topic(
            name, "SET #st = :state", condition=condition, names={"#st": "state"}, values=values
        )

    def get_topic(self, name: str) -> Topic | None:
        item = self.table.get(topic_key(name))
        return parse_topic(name, item) if item else None

    def get_topics(self, names: Sequence[str]) -> dict[str, Topic]:
        items = self.table.batch_get([topic_key(name) for name in names])
        topics = (parse_topic(item["pk"].removeprefix("topic#"), item) for item in items)
        return {topic.name: topic for topic in topics}

    def update_topic_config(
        self, name: str, set_: Mapping[str, str], delete: Iterable[str]
    ) -> None:
        names: dict[str, str] = {"#cfg": "cfg", "#st": "state"}
        values: dict[str, Any] = {":active": ACTIVE}
        sets, removes = [], []
        for i, (key, value) in enumerate(set_.items()):
            names[f"#k{i}"] = key
            values[f":v{i}"] = value
            sets.append(f"#cfg.#k{i} = :v{i}")
        for i, key in enumerate(delete):
            names[f"#d{i}"] = key
            removes.append(f"#cfg.#d{i}")
        if not sets and not removes:
            return
        clauses = []
        if sets:
            clauses.append(f"SET {', '.join(sets)}")
        if removes:
            clauses.append(f"REMOVE {', '.join(removes)}")
        expression = " ".join(clauses)
        self._update_topic(name, expression, condition="#st = :active", names=names, values=values)

    def set_partition_count(self, name: str, old: int, new: int) -> None:
        self._update_topic(
            name,
            "SET parts = :new",
            condition="parts = :old AND #st = :active",
            names={"#st": "state"},
            values={":new": new, ":old": old, ":active": ACTIVE},
        )

    def delete_topic_item(self, name: str) -> None:
        self.table.delete(topic_key(name), what="DeleteItem topic")

    def _update_topic(
        self,
        name: str,
        update: str,
        *,
        condition: str,
        names: Mapping[str, str],
        values: Mapping[str, Any],
    ) -> None:
        written = self.table.update(
            topic_key(name),
            update,
            condition=condition,
            names=names,
            values=values,
            repeatable=True,
            what="UpdateItem topic",
        )
        if written.applied:
            return
        current = written.item
        if current is None or current.get("state") == DELETING:
            raise TopicNotFound(f"topic {name!r} does not exist", field="topic")
        raise ConcurrentModification(f"topic {name!r} changed concurrently; retry")

    # ---- registry ----------------------------------------------------------------------

    def register(self, name: str) -> None:
        self.registry.add(name)

    def unregister(self, name: str) -> None:
        self.registry.remove(name)

    def next_producer_id(self) -> int:
        written = self.table.update(
            PRODUCER_IDS_KEY,
            "ADD #n :one",
            names={"#n": "n"},
            values={":one": 1},
            returns="UPDATED_NEW",
            repeatable=False,  # a repeat skips an id: harmless, but say what happened
            what="UpdateItem Kafka producer ids",
        )
        assert written.item is not None
        return int(written.item["n"]) - 1

    def registered_names(self) -> list[str]:
        return self.registry.names()

    # ---- heads -------------------------------------------------------------------------

    def put_heads(self, topic: Topic, partitions: Iterable[int]) -> None:
        """Write fresh heads, 25 per BatchWriteItem (topic creation is not a hot path)."""
        self.table.batch_write(puts=[new_head_item(topic, p) for p in partitions])

    def delete_heads(self, topic: str, partitions: Iterable[int]) -> None:
        self.table.batch_write(deletes=[head_key(topic, p) for p in partitions])

    def get_head(self, topic: str, partition: int) -> PartitionHead | None:
        item = self.table.get(head_key(topic, partition))
        return parse_head(topic, partition, item) if item else None

    def get_heads(self, topic: str, partitions: Iterable[int]) -> dict[int, PartitionHead]:
        heads = {}
        for item in self.table.batch_get([head_key(topic, p) for p in partitions]):
            partition = int(item["pk"].rsplit("#", 1)[1])
            heads[partition] = parse_head(topic, partition, item)
        return heads

    def commit(self, commit: Commit) -> CommitResult:
        """HeadStore.commit in one conditional UpdateItem: the ref appended to the tail, next
        moved by its span (the old next is the base), the producer's sequence set. On a head
        the writer knows (head_rules.pinned_head), conditional on it and answering nothing: the
        new head is computed. If only the known head was out of date, committed again as
        usual, returning the head."""
        known = pinned_head(commit)
        if known is not None:
            written = (
                self._kafka_append_on(commit, known)
                if commit.kafka is not None
                else self._update_head(commit, known)
            )
            if written.applied:
                head = committed(commit, known)
                head = replace(head, item_bytes=item_bytes_after(commit, known, head))
                return CommitResult(known.next_offset, head)
            if commit.kafka is not None:
                return self._kafka_commit(commit, written)
            now = self._head_as_it_was(commit, written)
            if not commit_applies(commit, now):
                return explain_failed_commit(commit, now)
        elif commit.kafka is not None:
            return self._kafka_commit(commit)
        written = self._update_head(commit, None)
        if not written.applied:
            return explain_failed_commit(commit, self._head_as_it_was(commit, written))
        assert written.item is not None
        head = parse_head(commit.topic, commit.partition, written.item)
        return CommitResult(head.next_offset - commit.ref.span, head)

    def _update_head(self, commit: Commit, known: PartitionHead | None) -> Written:
        """The commit's UpdateItem: conditional on the producer's previous sequence, or on the
        known head's next offset and index epoch (which imply it), returning nothing then."""
        update = head_commit(commit)
        producer_sets: list[str] = []
        pid = commit.producer_id
        if pid is not None:
            update.names.update({"#ks": f"{pid}s", "#kb": f"{pid}b", "#kt": f"{pid}t"})
            update.values.update({":seq": commit.sequence, ":now": commit.now_s})
            producer_sets = ["ps.#kb = #next", "ps.#ks = :seq", "ps.#kt = :now"]
        if known is not None:
            update.pin(known)
        elif pid is not None and commit.allow_sequence_gaps:
            update.condition += " AND (attribute_not_exists(ps.#ks) OR ps.#ks < :seq)"
        elif pid is not None:
            update.values[":prev"] = commit.sequence - 1
            update.condition += " AND (attribute_not_exists(ps.#ks) OR ps.#ks = :prev)"
        return self.table.update(
            head_key(commit.topic, commit.partition),
            update.expression(producer_sets),
            condition=update.condition,
            names=update.names,
            values=update.values,
            returns="NONE" if known is not None else "ALL_NEW",
            repeatable=False,  # a repeat could append twice: the caller decides, by sequence
            what="UpdateItem head (commit)",
        )

    def _head_as_it_was(self, commit: Commit, failed: Written) -> PartitionHead | None:
        """The head a commit's failed condition saw: the item DynamoDB returned with the
        failure, or read (absent, or a server that does not return it)."""
        if failed.item is None:
            return self.get_head(commit.topic, commit.partition)
        return parse_head(commit.topic, commit.partition, failed.item)

    def spill(
        self,
        topic: str,
        partition: int,
        *,
        expected_epoch: int,
        refs_removed: int,
        span_removed: int,
        manifest_list: str,
        object_time_ms: int,
        expired_producers: Iterable[str] = (),
    ) -> bool:
        """HeadStore.spill: conditional on the index epoch, which only spills and compaction
        swaps change (so the first refs_removed refs are exactly the ones the caller saw:
        appends only add at the end), and on the GC horizon."""
        if refs_removed <= 0:
            raise InvalidRequest("spill must remove at least one ref")
        names: dict[str, str] = {}
        removes = [f"tail[{i}]" for i in range(refs_removed)]
        for i, pid in enumerate(expired_producers):
            for suffix in "sbtw":  # w: a Kafka producer's window
                names[f"#p{i}{suffix}"] = f"{pid}{suffix}"
                removes.append(f"ps.#p{i}{suffix}")
        return self.table.update(
            head_key(topic, partition),
            f"REMOVE {', '.join(removes)} SET tb = tb + :span, ml = :ml, ie = ie + :one",
            condition="ie = :ie AND gch < :ots",
            names=names,
            values={
                ":span": span_removed,
                ":ml": manifest_list,
                ":one": 1,
                ":ie": expected_epoch,
                ":ots": object_time_ms,
            },
            repeatable=False,
            what="UpdateItem head (spill)",
        ).applied

    def stamp_compactor_epoch(self, topic: str, partition: int, epoch: int) -> bool:
        return self.table.update(
            head_key(topic, partition),
            "SET ce = :e",
            condition="attribute_exists(pk) AND (attribute_not_exists(ce) OR ce <= :e)",
            values={":e": epoch},
            repeatable=False,
            what="UpdateItem head (compactor epoch)",
        ).applied

    def swap_index(
        self,
        topic: str,
        partition: int,
        *,
        topic_id: str,
        expected_index_epoch: int,
        compactor_epoch: int,
        manifest_list: str,
        log_start_offset: int,
        object_time_ms: int,
    ) -> bool:
        """HeadStore.swap_index. Its log start was planned from the head the compactor read:
        the condition keeps a DeleteRecords that landed since from being undone."""
        return self.table.update(
            head_key(topic, partition),
            "SET ml = :ml, lso = :lso, ie = ie + :one",
            condition="tid = :tid AND ie = :ie AND ce = :ce AND gch < :ots AND lso <= :lso",
            values={
                ":ml": manifest_list,
                ":lso": log_start_offset,
                ":one": 1,
                ":tid": topic_id,
                ":ie": expected_index_epoch,
                ":ce": compactor_epoch,
                ":ots": object_time_ms,
            },
            repeatable=False,
            what="UpdateItem head (compaction swap)",
        ).applied

    def raise_gc_horizon(self, topic: str, partition: int, horizon_ms: int) -> None:
        self.table.update(
            head_key(topic, partition),
            "SET gch = :h",
            condition="attribute_exists(pk) AND gch < :h",
            values={":h": horizon_ms},
            repeatable=True,
            what="UpdateItem head (gc horizon)",
        )
