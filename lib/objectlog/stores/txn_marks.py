"""A partition head's open transactions and their markers (DESIGN.md section 16,
docs/transactions.md): the rules both head stores apply, and DynamoMetadata's conditional
UpdateItems for them.

A head keeps, per producer with a transaction open on the partition, the producer's epoch and
the transaction's first offset (two maps, ``oe`` and ``ot``, so an UpdateItem can copy ``next``
into the first offset as it lands). At most ``OPEN_TRANSACTIONS`` are open at once, which keeps
the head within its 2 KiB; the partition's last stable offset is the smallest first offset
(PartitionHead.last_stable_offset).

- ``open_transaction`` opens the producer's transaction on the partition at the head's next
  offset (its first offset: the last stable offset cannot pass it), idempotently for the same
  epoch. Refused with ConcurrentTransactions (retriable) while the producer has a transaction
  of another epoch open there, or the partition has OPEN_TRANSACTIONS open.
- ``write_marker`` appends the transaction's commit or abort marker (format.txn: one offset,
  no object) and closes the transaction, in one write conditional on its entry, so a marker is
  written once: the next call finds the entry gone and answers None. A marker of an epoch at
  or above the entry's closes it (the coordinator aborts a fenced producer's transaction under
  the new epoch, as Kafka's markers carry it); an older epoch's (a delayed completion) does
  not touch a newer transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from objectlog.errors import ConcurrentTransactions, TopicNotFound
from objectlog.format.index import SegmentRef
from objectlog.format.txn import marker
from objectlog.stores.head_commit import HeadWrites
from objectlog.stores.metadata import PartitionHead

OPEN_TRANSACTIONS = 8  # per partition: each takes about 20 bytes of the head
MARKER_ATTEMPTS = 5


def check_open(
    head: PartitionHead | None,
    topic: str,
    partition: int,
    topic_id: str,
    producer: str,
    epoch: int,
    limit: int = OPEN_TRANSACTIONS,
) -> int | None:
    """The first offset of the producer's transaction of this epoch if it is open on the head,
    None if it may be opened; TopicNotFound or ConcurrentTransactions if not."""
    if head is None or head.topic_id != topic_id:
        raise TopicNotFound(f"topic {topic!r} partition {partition} no longer exists")
    held = head.open_txns.get(producer)
    if held is not None:
        held_epoch, first = held
        if held_epoch == epoch:
            return first
        raise ConcurrentTransactions(
            f"producer {producer} still has its epoch {held_epoch} transaction open on "
            f"{topic}/{partition}"
        )
    if len(head.open_txns) >= limit:
        raise ConcurrentTransactions(
            f"{topic}/{partition} has {len(head.open_txns)} transactions open, the most it "
            "holds: retry when one ends"
        )
    return None


def opened(
    head: PartitionHead | None,
    topic: str,
    partition: int,
    topic_id: str,
    producer: str,
    epoch: int,
    limit: int = OPEN_TRANSACTIONS,
) -> tuple[int, PartitionHead | None]:
    """open_transaction on a head held in memory: the first offset, and the new head (None
    when nothing changed)."""
    first = check_open(head, topic, partition, topic_id, producer, epoch, limit)
    if first is not None:
        return first, None
    assert head is not None
    open_txns = {**head.open_txns, producer: (epoch, head.next_offset)}
    return head.next_offset, replace(head, open_txns=open_txns)


def marker_to_write(
    head: PartitionHead | None,
    topic: str,
    partition: int,
    topic_id: str,
    producer: str,
    epoch: int,
    commit: bool,
    time_ms: int,
) -> tuple[SegmentRef, int] | None:
    """The marker write_marker appends to the head and the first offset of the entry it
    closes, or None when no transaction of the producer at this epoch or an older one is open
    there (its marker is written); TopicNotFound if the head is gone."""
    if head is None or head.topic_id != topic_id:
        raise TopicNotFound(f"topic {topic!r} partition {partition} no longer exists")
    held = head.open_txns.get(producer)
    if held is None or held[0] > epoch:
        return None
    return marker(commit, producer, held[1], time_ms), held[1]


def marked(
    head: PartitionHead | None,
    topic: str,
    partition: int,
    topic_id: str,
    producer: str,
    epoch: int,
    commit: bool,
    time_ms: int,
) -> tuple[int | None, PartitionHead | None]:
    """write_marker on a head held in memory: the marker's offset and the new head, or
    (None, None) when the transaction is not open there (its marker is written already)."""
    found = marker_to_write(head, topic, partition, topic_id, producer, epoch, commit, time_ms)
    if found is None:
        return None, None
    assert head is not None
    ref, _ = found
    open_txns = {p: entry for p, entry in head.open_txns.items() if p != producer}
    new = replace(
        head,
        next_offset=head.next_offset + ref.span,
        tail=(*head.tail, ref),
        open_txns=open_txns,
    )
    return head.next_offset, new


def parse_open_txns(item: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    epochs: Mapping[str, Any] = item.get("oe", {})
    firsts: Mapping[str, Any] = item.get("ot", {})
    return {p: (int(epochs[p]), int(firsts[p])) for p in epochs if p in firsts}


class TransactionMarks(HeadWrites):
    """DynamoMetadata's open_transaction and write_marker: one conditional UpdateItem each."""

    def open_transaction(
        self,
        topic: str,
        partition: int,
        *,
        topic_id: str,
        producer: str,
        epoch: int,
        limit: int = OPEN_TRANSACTIONS,
    ) -> int:
        """The first offset: ``next`` copied into the entry as the write lands (no read)."""
        for _ in range(2):  # a head written before transactions gets its two maps first
            written = self.table.update(
                self._head_at(topic, partition),
                "SET ot.#p = if_not_exists(ot.#p, #next), oe.#p = :e",
                condition="tid = :tid AND attribute_exists(oe) AND ("
                "(attribute_not_exists(oe.#p) AND size(oe) < :n) OR oe.#p = :e)",
                names={"#p": producer, "#next": "next"},
                values={":tid": topic_id, ":e": epoch, ":n": limit},
                returns="ALL_NEW",
                repeatable=True,  # a repeat finds the entry of its epoch and keeps it
                what="UpdateItem head (open transaction)",
            )
            if written.applied:
                assert written.item is not None
                return int(written.item["ot"][producer])
            head = self._head_from(topic, partition, written.item)
            if head is not None and written.item is not None and "oe" not in written.item:
                self._add_transaction_maps(topic, partition)
                continue
            first = check_open(head, topic, partition, topic_id, producer, epoch, limit)
            if first is not None:  # opened meanwhile by a repeat of this same call
                return first
        raise ConcurrentTransactions(f"{topic}/{partition}: its head changed meanwhile; retry")

    def write_marker(
        self,
        topic: str,
        partition: int,
        *,
        topic_id: str,
        producer: str,
        epoch: int,
        commit: bool,
        time_ms: int,
        first: int | None = None,
    ) -> int | None:
        """Write conditional on the entry's first offset (an abort marker names it): the one
        the caller knows, else read from the head (and read again when the write finds it
        otherwise); None if it is not open (the marker is written)."""
        for _ in range(MARKER_ATTEMPTS):
            if first is not None:
                ref = marker(commit, producer, first, time_ms)
            else:
                head = self.get_head(topic, partition)
                found = marker_to_write(
                    head, topic, partition, topic_id, producer, epoch, commit, time_ms
                )
                if found is None:
                    return None
                ref, first = found
            written = self.table.update(
                self._head_at(topic, partition),
                "SET tail = list_append(tail, :refs), #next = #next + :span REMOVE ot.#p, oe.#p",
                condition="tid = :tid AND oe.#p <= :e AND ot.#p = :first",
                names={"#p": producer, "#next": "next"},
                values={
                    ":refs": [ref.encode()],
                    ":span": ref.span,
                    ":tid": topic_id,
                    ":e": epoch,
                    ":first": first,
                },
                returns="UPDATED_OLD",
                repeatable=False,  # a repeat would find the entry gone: not an error, None
                what="UpdateItem head (transaction marker)",
            )
            if written.applied:
                assert written.item is not None
                return int(written.item["next"])
            first = None  # not the entry the caller knew (or none): read the head
        raise ConcurrentTransactions(f"{topic}/{partition}: its head kept changing; retry")

    def _head_from(
        self, topic: str, partition: int, item: Mapping[str, Any] | None
    ) -> PartitionHead | None:
        return None if item is None else self._parse_head(topic, partition, item)

    def _add_transaction_maps(self, topic: str, partition: int) -> None:
        self.table.update(
            self._head_at(topic, partition),
            "SET ot = if_not_exists(ot, :m), oe = if_not_exists(oe, :m)",
            condition="attribute_exists(pk)",
            values={":m": {}},
            repeatable=True,
            what="UpdateItem head (transaction maps)",
        )
