"""What a workload did, operation by operation, as the checker reads it (thread-safe)."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

from objectlog.clients.producer import RecordFuture
from objectlog.errors import ErrorKind, ObjectLogError
from objectlog.format.records import RecordMetadata

OK = "ok"
FAILED = "failed"  # the client was told nothing was stored
UNKNOWN = "unknown"  # the client was told the outcome is unknown (a timeout)
COMMITTED = "committed"  # a transaction's commit_transaction returned
ABORTED = "aborted"  # a transaction's abort_transaction returned


@dataclass(frozen=True)
class Produce:
    """One record sent by one client: its unique value, and what the client was told.

    ``partition`` and ``offset`` are where an acknowledged record landed (for the others,
    ``partition`` is where it was sent); ``sent_to`` is the partition the client named, if any.
    """

    client: str
    partition: int
    value: bytes
    outcome: str
    offset: int | None = None
    error: str | None = None
    sent_to: int | None = None

    @classmethod
    def of(
        cls, client: str, partition: int, value: bytes, future: RecordFuture, timeout: float = 120
    ) -> Produce:
        """What the client was told about a send to partition: a RecordFuture's outcome."""
        error = future.exception(timeout=timeout)
        metadata = future.result(timeout=timeout) if error is None else None
        return cls.told(client, partition, value, metadata, error)

    @classmethod
    def told(
        cls,
        client: str,
        partition: int,
        value: bytes,
        metadata: RecordMetadata | None,
        error: BaseException | None,
    ) -> Produce:
        """A send to partition that was acknowledged with metadata, or refused with error
        (an ObjectLogError of kind UNKNOWN_OUTCOME: it may have landed)."""
        if error is None:
            assert metadata is not None
            return cls(client, metadata.partition, value, OK, metadata.offset, None, partition)
        unknown = isinstance(error, ObjectLogError) and error.kind is ErrorKind.UNKNOWN_OUTCOME
        outcome = UNKNOWN if unknown else FAILED
        return cls(client, partition, value, outcome, None, type(error).__name__, partition)


@dataclass(frozen=True)
class Poll:
    """Records one group member got from one poll, while it owned their partitions."""

    member: str
    ownership: int  # bumped whenever the member's assignment changed
    records: tuple[tuple[int, int, bytes | None], ...]  # (partition, offset, value)
    group: str = ""  # "": the workload's objectlog group; else a Kafka client group


@dataclass(frozen=True)
class CommittedSample:
    """A group's committed offset seen at some moment (by a monitor, or after a commit)."""

    partition: int
    offset: int
    group: str = ""


@dataclass(frozen=True)
class Txn:
    """One transaction of the consume-transform-produce pipeline (txn_pipeline): what it was
    told, the inputs it covered, the outputs it wrote and the group offsets it sent.

    ``crashed``: its producer was abandoned before EndTxn (told nothing, outcome UNKNOWN), so
    the next instance of its transactional id must have aborted it. Every output's value
    begins with ``name`` and names its input (txn_pipeline.output_value)."""

    name: str
    transactional_id: str
    outcome: str  # COMMITTED, ABORTED or UNKNOWN
    inputs: tuple[tuple[int, int], ...]  # (partition, offset) of the input topic
    outputs: tuple[tuple[int, bytes], ...]  # (partition, value) sent to the output topic
    offsets: tuple[tuple[int, int], ...] = ()  # (partition, next offset) sent to the group
    crashed: bool = False
    error: str | None = None


@dataclass(frozen=True)
class StableSample:
    """A partition's last stable offset and high watermark, read together from its head."""

    partition: int
    last_stable: int
    high_watermark: int


@dataclass
class History:
    produces: list[Produce] = field(default_factory=list)
    polls: list[Poll] = field(default_factory=list)
    committed: list[CommittedSample] = field(default_factory=list)
    events: Counter[str] = field(default_factory=Counter)  # member crashes, compactor kills, ...
    txns: list[Txn] = field(default_factory=list)
    stable: list[StableSample] = field(default_factory=list)  # of the output topic, in order
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add_produce(self, op: Produce) -> None:
        with self._lock:
            self.produces.append(op)

    def add_poll(self, op: Poll) -> None:
        with self._lock:
            self.polls.append(op)

    def add_committed(self, sample: CommittedSample) -> None:
        with self._lock:
            self.committed.append(sample)

    def add_txn(self, txn: Txn) -> None:
        with self._lock:
            self.txns.append(txn)

    def add_stable(self, sample: StableSample) -> None:
        with self._lock:
            self.stable.append(sample)

    def count(self, event: str, n: int = 1) -> None:
        with self._lock:
            self.events[event] += n
