"""State in DynamoDB: topics, partition heads and producer state, single-item calls only.

Items (one table, string keys ``pk``/``sk``):

    topic#<t> / meta     tid, parts, cfg{...}, state, created
    topics    / index    names (string set): the topic registry, so listing needs no Query
    part#<t>#<p> / head  tid, next (high watermark), lso (log start), tb (tail base),
                         tail [ref, ...], ml (manifest list key), ie (index epoch),
                         gch (GC horizon, ms), segs, nbytes,
                         ps {<pid>s: last sequence, <pid>b: its base offset, <pid>t: last use s}

Produce and fetch use GetItem, BatchGetItem, PutItem and conditional UpdateItem only: moto
server's Query and TransactWriteItems slow down with the table's size, and on AWS a
transaction costs twice the write units.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import botocore.exceptions

from objectlog.adapters.aws import applied, error_code, translate, translated
from objectlog.errors import (
    ConcurrentModification,
    HorizonPassed,
    InvalidRequest,
    OutOfOrderSequence,
    StorageUnavailable,
    TopicExists,
    TopicNotFound,
)
from objectlog.format.index import SegmentRef
from objectlog.format.topics import Topic, TopicConfig

ACTIVE = "ACTIVE"
CREATING = "CREATING"
DELETING = "DELETING"
REGISTRY_KEY = {"pk": {"S": "topics"}, "sk": {"S": "index"}}
BATCH_GET_LIMIT = 100
BATCH_WRITE_LIMIT = 25


def topic_key(name: str) -> dict[str, Any]:
    return {"pk": {"S": f"topic#{name}"}, "sk": {"S": "meta"}}


def head_key(topic: str, partition: int) -> dict[str, Any]:
    return {"pk": {"S": f"part#{topic}#{partition}"}, "sk": {"S": "head"}}


@dataclass(frozen=True, slots=True)
class ProducerState:
    sequence: int
    base_offset: int
    last_use_s: int


@dataclass(frozen=True)
class PartitionHead:
    topic: str
    partition: int
    topic_id: str
    next_offset: int
    log_start_offset: int
    tail_base: int
    tail: tuple[SegmentRef, ...]
    manifest_list: str | None
    index_epoch: int
    gc_horizon: int
    segments: int
    bytes: int
    producers: Mapping[str, ProducerState] = field(default_factory=dict)

    @property
    def high_watermark(self) -> int:
        return self.next_offset


@dataclass(frozen=True, slots=True)
class CommitResult:
    base_offset: int
    head: PartitionHead | None
    duplicate: bool = False


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _int(item: Mapping[str, Any], name: str, default: int = 0) -> int:
    value = item.get(name)
    return int(value["N"]) if value else default


def parse_topic(name: str, item: Mapping[str, Any]) -> Topic:
    return Topic(
        name=name,
        topic_id=item["tid"]["S"],
        partitions=_int(item, "parts"),
        config=TopicConfig({k: v["S"] for k, v in item.get("cfg", {}).get("M", {}).items()}),
        created_ms=_int(item, "created"),
        state=item.get("state", {}).get("S", ACTIVE),
    )


def parse_producers(item: Mapping[str, Any]) -> dict[str, ProducerState]:
    raw = {k: int(v["N"]) for k, v in item.get("ps", {}).get("M", {}).items()}
    pids = {key[:-1] for key in raw if key.endswith("s")}
    return {
        pid: ProducerState(raw[f"{pid}s"], raw.get(f"{pid}b", 0), raw.get(f"{pid}t", 0))
        for pid in pids
    }


def parse_head(topic: str, partition: int, item: Mapping[str, Any]) -> PartitionHead:
    return PartitionHead(
        topic=topic,
        partition=partition,
        topic_id=item["tid"]["S"],
        next_offset=_int(item, "next"),
        log_start_offset=_int(item, "lso"),
        tail_base=_int(item, "tb"),
        tail=tuple(SegmentRef.decode(ref["S"]) for ref in item.get("tail", {}).get("L", [])),
        manifest_list=item["ml"]["S"] if "ml" in item else None,
        index_epoch=_int(item, "ie"),
        gc_horizon=_int(item, "gch"),
        segments=_int(item, "segs"),
        bytes=_int(item, "nbytes"),
        producers=parse_producers(item),
    )


class DynamoMetadata:
    """Topics, partition heads and producer state in one DynamoDB table."""

    def __init__(self, client: Any, table: str) -> None:
        self.client = client
        self.table = table

    # ---- table -------------------------------------------------------------------------

    def ensure_table(self) -> None:
        """Create the table if missing (the embedded stack and tests; Terraform on AWS)."""
        try:
            self.client.describe_table(TableName=self.table)
            return
        except botocore.exceptions.ClientError as e:
            if error_code(e) != "ResourceNotFoundException":
                raise translate(e, what="DescribeTable", idempotent=True) from e
        with translated("CreateTable"):
            try:
                self.client.create_table(
                    TableName=self.table,
                    KeySchema=[
                        {"AttributeName": "pk", "KeyType": "HASH"},
                        {"AttributeName": "sk", "KeyType": "RANGE"},
                    ],
                    AttributeDefinitions=[
                        {"AttributeName": "pk", "AttributeType": "S"},
                        {"AttributeName": "sk", "AttributeType": "S"},
                    ],
                    BillingMode="PAY_PER_REQUEST",
                )
            except botocore.exceptions.ClientError as e:
                if error_code(e) != "ResourceInUseException":
                    raise
            self.client.get_waiter("table_exists").wait(TableName=self.table)

    # ---- topics ------------------------------------------------------------------------

    def put_new_topic(self, topic: Topic) -> None:
        item = {
            **topic_key(topic.name),
            "tid": {"S": topic.topic_id},
            "parts": _n(topic.partitions),
            "cfg": {"M": {k: {"S": v} for k, v in topic.config.overrides.items()}},
            "created": _n(topic.created_ms),
            "state": {"S": CREATING},
        }
        try:
            self.client.put_item(
                TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(pk)"
            )
        except botocore.exceptions.ClientError as e:
            if error_code(e) == "ConditionalCheckFailedException":
                raise TopicExists(f"topic {topic.name!r} already exists", field="topic") from e
            raise translate(e, what="PutItem topic", idempotent=True) from e

    def set_topic_state(self, name: str, state: str, *, expected: str | None = None) -> None:
        condition = "attribute_exists(pk)" + (" AND #st = :expected" if expected else "")
        values: dict[str, Any] = {":state": {"S": state}}
        if expected:
            values[":expected"] = {"S": expected}
        self._update_topic(
            name,
            UpdateExpression="SET #st = :state",
            ConditionExpression=condition,
            ExpressionAttributeNames={"#st": "state"},
            ExpressionAttributeValues=values,
        )

    def get_topic(self, name: str) -> Topic | None:
        with translated("GetItem topic"):
            item = self.client.get_item(
                TableName=self.table, Key=topic_key(name), ConsistentRead=True
            ).get("Item")
        return parse_topic(name, item) if item else None

    def get_topics(self, names: Sequence[str]) -> dict[str, Topic]:
        items = self.batch_get_items([topic_key(name) for name in names])
        return {
            item["pk"]["S"].removeprefix("topic#"): parse_topic(
                item["pk"]["S"].removeprefix("topic#"), item
            )
            for item in items
        }

    def update_topic_config(
        self, name: str, set_: Mapping[str, str], delete: Iterable[str]
    ) -> None:
        names: dict[str, str] = {"#cfg": "cfg", "#st": "state"}
        values: dict[str, Any] = {":active": {"S": ACTIVE}}
        sets, removes = [], []
        for i, (key, value) in enumerate(set_.items()):
            names[f"#k{i}"] = key
            values[f":v{i}"] = {"S": value}
            sets.append(f"#cfg.#k{i} = :v{i}")
        for i, key in enumerate(delete):
            names[f"#d{i}"] = key
            removes.append(f"#cfg.#d{i}")
        if not sets and not removes:
            return
        expression = " ".join(
            part
            for part in (
                f"SET {', '.join(sets)}" if sets else "",
                f"REMOVE {', '.join(removes)}" if removes else "",
            )
            if part
        )
        self._update_topic(
            name,
            UpdateExpression=expression,
            ConditionExpression="#st = :active",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    def set_partition_count(self, name: str, old: int, new: int) -> None:
        self._update_topic(
            name,
            UpdateExpression="SET parts = :new",
            ConditionExpression="parts = :old AND #st = :active",
            ExpressionAttributeNames={"#st": "state"},
            ExpressionAttributeValues={":new": _n(new), ":old": _n(old), ":active": {"S": ACTIVE}},
        )

    def delete_topic_item(self, name: str) -> None:
        with translated("DeleteItem topic"):
            self.client.delete_item(TableName=self.table, Key=topic_key(name))

    def _update_topic(self, name: str, **kwargs: Any) -> None:
        try:
            self.client.update_item(TableName=self.table, Key=topic_key(name), **kwargs)
        except botocore.exceptions.ClientError as e:
            if error_code(e) == "ConditionalCheckFailedException":
                current = self.get_topic(name)
                if current is None or current.state == DELETING:
                    raise TopicNotFound(f"topic {name!r} does not exist", field="topic") from e
                raise ConcurrentModification(f"topic {name!r} changed concurrently; retry") from e
            raise translate(e, what="UpdateItem topic", idempotent=True) from e

    # ---- registry ----------------------------------------------------------------------

    def register(self, name: str) -> None:
        with translated("UpdateItem registry"):
            self.client.update_item(
                TableName=self.table,
                Key=REGISTRY_KEY,
                UpdateExpression="ADD #names :n",
                ExpressionAttributeNames={"#names": "names"},
                ExpressionAttributeValues={":n": {"SS": [name]}},
            )

    def unregister(self, name: str) -> None:
        with translated("UpdateItem registry"):
            self.client.update_item(
                TableName=self.table,
                Key=REGISTRY_KEY,
                UpdateExpression="DELETE #names :n",
                ExpressionAttributeNames={"#names": "names"},
                ExpressionAttributeValues={":n": {"SS": [name]}},
            )

    def registered_names(self) -> list[str]:
        with translated("GetItem registry"):
            item = self.client.get_item(
                TableName=self.table, Key=REGISTRY_KEY, ConsistentRead=True
            ).get("Item")
        return sorted(item["names"]["SS"]) if item and "names" in item else []

    # ---- heads -------------------------------------------------------------------------

    def put_heads(self, topic: Topic, partitions: Iterable[int]) -> None:
        """Write fresh heads, 25 per BatchWriteItem (topic creation is not a hot path)."""
        self.batch_write_items(
            [{"PutRequest": {"Item": self._new_head(topic, p)}} for p in partitions]
        )

    def delete_heads(self, topic: str, partitions: Iterable[int]) -> None:
        self.batch_write_items([{"DeleteRequest": {"Key": head_key(topic, p)}} for p in partitions])

    def batch_write_items(self, requests: list[dict[str, Any]]) -> None:
        for i in range(0, len(requests), BATCH_WRITE_LIMIT):
            pending: dict[str, Any] = {self.table: requests[i : i + BATCH_WRITE_LIMIT]}
            while pending:
                with translated("BatchWriteItem"):
                    response = self.client.batch_write_item(RequestItems=pending)
                pending = response.get("UnprocessedItems") or {}

    @staticmethod
    def _new_head(topic: Topic, partition: int) -> dict[str, Any]:
        return {
            **head_key(topic.name, partition),
            "tid": {"S": topic.topic_id},
            "next": _n(0),
            "lso": _n(0),
            "tb": _n(0),
            "tail": {"L": []},
            "ie": _n(0),
            "gch": _n(0),
            "segs": _n(0),
            "nbytes": _n(0),
            "ps": {"M": {}},
        }

    def get_head(self, topic: str, partition: int) -> PartitionHead | None:
        with translated("GetItem head"):
            item = self.client.get_item(
                TableName=self.table, Key=head_key(topic, partition), ConsistentRead=True
            ).get("Item")
        return parse_head(topic, partition, item) if item else None

    def get_heads(self, topic: str, partitions: Iterable[int]) -> dict[int, PartitionHead]:
        items = self.batch_get_items([head_key(topic, p) for p in partitions])
        heads = {}
        for item in items:
            partition = int(item["pk"]["S"].rsplit("#", 1)[1])
            heads[partition] = parse_head(topic, partition, item)
        return heads

    def commit(
        self,
        topic_id: str,
        topic: str,
        partition: int,
        ref: SegmentRef,
        object_time_ms: int,
        *,
        producer_id: str | None,
        sequence: int,
        now_s: int,
        allow_sequence_gaps: bool = False,
    ) -> CommitResult:
        """Append ref to the partition: one conditional UpdateItem assigns its offsets.

        No condition on the offset itself, so concurrent producers never conflict. With a
        producer id, the condition that the producer's previous sequence is sequence - 1 makes
        a retried commit fail instead of landing twice; the head then says where it landed.
        With allow_sequence_gaps, any sequence above the previous one lands (the Spark sink's
        sequences are batch ids, and a batch may leave a partition out); an equal or older one
        is a duplicate, whose base offset is -1 when it is not the last one committed.
        Raises TopicNotFound, HorizonPassed, OutOfOrderSequence, StorageUnavailable,
        UnknownOutcome.
        """
        names = {"#next": "next", "#segs": "segs", "#nbytes": "nbytes"}
        values: dict[str, Any] = {
            ":span": _n(ref.span),
            ":refs": {"L": [{"S": ref.encode()}]},
            ":one": _n(1),
            ":len": _n(ref.length),
            ":tid": {"S": topic_id},
            ":ots": _n(object_time_ms),
        }
        condition = "tid = :tid AND gch < :ots"
        # The base is copied from the old `next` before it moves (listed first for moto).
        sets = ["tail = list_append(tail, :refs)"]
        if producer_id is not None:
            names.update(
                {"#ks": f"{producer_id}s", "#kb": f"{producer_id}b", "#kt": f"{producer_id}t"}
            )
            values.update({":seq": _n(sequence), ":now": _n(now_s)})
            if allow_sequence_gaps:
                condition += " AND (attribute_not_exists(ps.#ks) OR ps.#ks < :seq)"
            else:
                values[":prev"] = _n(sequence - 1)
                condition += " AND (attribute_not_exists(ps.#ks) OR ps.#ks = :prev)"
            sets += ["ps.#kb = #next", "ps.#ks = :seq", "ps.#kt = :now"]
        sets.append("#next = #next + :span")
        try:
            response = self.client.update_item(
                TableName=self.table,
                Key=head_key(topic, partition),
                UpdateExpression=f"SET {', '.join(sets)} ADD #segs :one, #nbytes :len",
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except botocore.exceptions.ClientError as e:
            if error_code(e) != "ConditionalCheckFailedException":
                raise translate(e, what="UpdateItem head (commit)", idempotent=False) from e
            return self._explain_failed_commit(
                topic_id,
                topic,
                partition,
                _old_item(e),
                object_time_ms,
                producer_id,
                sequence,
                allow_sequence_gaps,
            )
        except botocore.exceptions.BotoCoreError as e:
            raise translate(e, what="UpdateItem head (commit)", idempotent=False) from e
        head = parse_head(topic, partition, response["Attributes"])
        return CommitResult(head.next_offset - ref.span, head)

    def _explain_failed_commit(
        self,
        topic_id: str,
        topic: str,
        partition: int,
        item: Mapping[str, Any] | None,
        object_time_ms: int,
        producer_id: str | None,
        sequence: int,
        allow_sequence_gaps: bool = False,
    ) -> CommitResult:
        if item is None:  # older servers do not return the item on failure
            head = self.get_head(topic, partition)
        else:
            head = parse_head(topic, partition, item)
        if head is None or head.topic_id != topic_id:
            raise TopicNotFound(f"topic {topic!r} partition {partition} no longer exists")
        if producer_id is not None:
            state = head.producers.get(producer_id)
            if state is not None and state.sequence == sequence:
                return CommitResult(state.base_offset, head, duplicate=True)
            if allow_sequence_gaps and state is not None and state.sequence > sequence:
                return CommitResult(-1, head, duplicate=True)
        if head.gc_horizon >= object_time_ms:
            raise HorizonPassed(
                f"object written at {object_time_ms} is behind the GC horizon {head.gc_horizon}"
            )
        if producer_id is not None:
            state = head.producers.get(producer_id)
            last = state.sequence if state else None
            raise OutOfOrderSequence(
                f"producer {producer_id} sent sequence {sequence} to {topic}/{partition}, "
                f"but its last committed sequence there is {last}"
            )
        raise StorageUnavailable(f"commit to {topic}/{partition} failed its condition")

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
        """Move the oldest refs out of the tail (they are now in manifest_list).

        Conditional on the index epoch, which only spills and compaction swaps change: the
        first refs_removed refs are then exactly the ones the caller saw (appends only add at
        the end); and on the GC horizon being older than the new index objects
        (object_time_ms), so a spiller paused past the horizon cannot point the head at
        objects the collector may delete. Returns False if either condition failed.
        """
        if refs_removed <= 0:
            raise InvalidRequest("spill must remove at least one ref")
        names: dict[str, str] = {}
        removes = [f"tail[{i}]" for i in range(refs_removed)]
        for i, pid in enumerate(expired_producers):
            for suffix in "sbt":
                names[f"#p{i}{suffix}"] = f"{pid}{suffix}"
                removes.append(f"ps.#p{i}{suffix}")
        kwargs: dict[str, Any] = {"ExpressionAttributeNames": names} if names else {}
        return applied(
            lambda: self.client.update_item(
                TableName=self.table,
                Key=head_key(topic, partition),
                UpdateExpression=(
                    f"REMOVE {', '.join(removes)} SET tb = tb + :span, ml = :ml, ie = ie + :one"
                ),
                ConditionExpression="ie = :ie AND gch < :ots",
                ExpressionAttributeValues={
                    ":span": _n(span_removed),
                    ":ml": {"S": manifest_list},
                    ":one": _n(1),
                    ":ie": _n(expected_epoch),
                    ":ots": _n(object_time_ms),
                },
                **kwargs,
            ),
            what="UpdateItem head (spill)",
            idempotent=False,
        )

    def stamp_compactor_epoch(self, topic: str, partition: int, epoch: int) -> bool:
        """Record that the compactor lease's holder at epoch now works on this partition, so
        any older holder's swap fails; False if a newer holder stamped it already."""
        return self._conditional_head_update(
            "UpdateItem head (compactor epoch)",
            topic,
            partition,
            update="SET ce = :e",
            condition="attribute_exists(pk) AND (attribute_not_exists(ce) OR ce <= :e)",
            values={":e": _n(epoch)},
        )

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
        segments_delta: int,
        bytes_delta: int,
    ) -> bool:
        """Point the head at a compacted index: one UpdateItem, conditional on the index
        epoch and topic id the compactor read, on its lease epoch (a fenced compactor cannot
        swap) and on the GC horizon being older than the new objects. Never on next_offset,
        which producers move all the time. False if a condition failed."""
        return self._conditional_head_update(
            "UpdateItem head (compaction swap)",
            topic,
            partition,
            update=("SET ml = :ml, lso = :lso, ie = ie + :one ADD segs :dsegs, nbytes :dbytes"),
            condition="tid = :tid AND ie = :ie AND ce = :ce AND gch < :ots",
            values={
                ":ml": {"S": manifest_list},
                ":lso": _n(log_start_offset),
                ":one": _n(1),
                ":dsegs": _n(segments_delta),
                ":dbytes": _n(bytes_delta),
                ":tid": {"S": topic_id},
                ":ie": _n(expected_index_epoch),
                ":ce": _n(compactor_epoch),
                ":ots": _n(object_time_ms),
            },
        )

    def _conditional_head_update(
        self,
        what: str,
        topic: str,
        partition: int,
        *,
        update: str,
        condition: str,
        values: dict[str, Any],
    ) -> bool:
        return applied(
            lambda: self.client.update_item(
                TableName=self.table,
                Key=head_key(topic, partition),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
            ),
            what=what,
            idempotent=False,
        )

    def raise_gc_horizon(self, topic: str, partition: int, horizon_ms: int) -> None:
        """Refuse commits of objects written at or before horizon_ms (GC may delete them);
        a head whose horizon is already there (or that is gone) is left as it is."""
        applied(
            lambda: self.client.update_item(
                TableName=self.table,
                Key=head_key(topic, partition),
                UpdateExpression="SET gch = :h",
                ConditionExpression="attribute_exists(pk) AND gch < :h",
                ExpressionAttributeValues={":h": _n(horizon_ms)},
            ),
            what="UpdateItem head (gc horizon)",
            idempotent=True,
        )

    # ---- helpers -----------------------------------------------------------------------

    def batch_get_items(self, keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The items that exist among keys (each once: BatchGetItem refuses duplicate keys)."""
        unique = {(k["pk"]["S"], k["sk"]["S"]): k for k in keys}
        keys = list(unique.values())
        items: list[dict[str, Any]] = []
        for i in range(0, len(keys), BATCH_GET_LIMIT):
            pending: dict[str, Any] = {
                self.table: {"Keys": keys[i : i + BATCH_GET_LIMIT], "ConsistentRead": True}
            }
            while pending:
                with translated("BatchGetItem"):
                    response = self.client.batch_get_item(RequestItems=pending)
                items.extend(response.get("Responses", {}).get(self.table, []))
                pending = response.get("UnprocessedKeys") or {}
        return items


def _old_item(error: botocore.exceptions.ClientError) -> Mapping[str, Any] | None:
    """The item as it was, returned with a failed condition check."""
    item = error.response.get("Item")
    return item if isinstance(item, Mapping) else None
