"""Latency on AWS, modelled: the produce path's request sequence replayed with published S3 and
DynamoDB latencies, for produce and end-to-end p50/p99 at linger 0, 50 and 250 ms.

    .venv/bin/python -m bench.latency_model                        # a few seconds
    .venv/bin/python -m bench.latency_model --rate 3000 --seed 7   # another workload or draw

It reports, it is not a target. Nothing here runs against AWS: a discrete-event simulation
replays, flush by flush and fetch by fetch, the requests the library issues (the sequence is
read from the code, below), drawing each request's latency from a distribution fitted to a
published figure. Every input is printed with its source and the figure quoted; where no
percentile was published the value is marked as assumed. p99 is also shown with every input's
tail doubled (its p99/p50 ratio doubled, p50 kept), because published tails are thin.

The produce path (clients/producer.py, services/append.py, services/index.py):
1. send() queues a record; the sender thread takes the queued records when ``linger_ms`` has
   passed since the first of them, or at once when ``batch_bytes`` are queued, or when it comes
   back from staging the previous flush if that took longer;
2. the sender stages the flush: groups and encodes it (client CPU; grouping reads the
   topic's metadata, a DynamoDB GetItem, when the client's topic cache has expired, every
   TOPIC_CACHE_TTL_S), then one S3 PutObject;
3. it puts the flush in a queue of one (Producer._staged), waiting while that still holds the
   previous flush, and goes back to step 1: it stages a flush while the committer commits the
   one before;
4. the committer sends one conditional DynamoDB UpdateItem per touched partition, all at
   once (Appender.commit_staged), then, one after the other, a spill for every head whose tail
   passed TAIL_MAX refs: PutObject of the manifest list (and of the full manifest when the
   inline one would pass MANIFEST_MAX_REFS), then an UpdateItem;
5. it settles the records' futures: produce latency ends here, after the spills.

The consumer at the tail (clients/consumer.py, clients/fetch_ahead.py, clients/direct.py,
services/fetch.py): one Consumer assigned every partition, the application calling poll(1.0)
in a loop. A fetch is one BatchGetItem of the heads (a head read within ``head_reuse_ms`` is
reused only below its high watermark, so never at the tail), then concurrent ranged GETs
(slices side by side in one object share one GET), then decoding. The poll thread fetches a
caught-up partition again when its retry time has come (10 ms after data, doubling to 100 ms:
the consumer's fetch_max_wait_ms and fetch_ahead.TAIL_RETRY_FIRST) at its own wake-ups (10 ms
doubling to 100 ms within a poll: consumer.POLL_BACKOFF_*, and whenever a background fetch
lands); the background thread fetches
a partition again as soon as its last fetch returned records. End-to-end latency ends when
poll() returns the record.
"""

from __future__ import annotations

import argparse
import heapq
import inspect
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from rich.table import Table

from bench.report import Report, console
from objectlog.clients.consumer import POLL_BACKOFF_MAX_S, POLL_BACKOFF_START_S, Consumer
from objectlog.clients.fetch_ahead import TAIL_RETRY_FIRST
from objectlog.clients.flushing import RECORD_OVERHEAD
from objectlog.clients.producer import Producer
from objectlog.clients.topic_cache import TOPIC_CACHE_TTL_S
from objectlog.config import Config
from objectlog.services.index import MANIFEST_MAX_REFS, TAIL_KEEP, TAIL_MAX

# ---- parameters read from the code, so the model follows it ---------------------------------

_PRODUCER = inspect.signature(Producer).parameters
_CONSUMER = inspect.signature(Consumer).parameters
BATCH_BYTES: int = _PRODUCER["batch_bytes"].default
DEFAULT_LINGER_MS: int = _PRODUCER["linger_ms"].default
FETCH_BYTES: int = _CONSUMER["max_partition_fetch_bytes"].default  # per partition per fetch
HEAD_REUSE_MS: float = Config.head_reuse_ms
TOPIC_CACHE_TTL_MS = TOPIC_CACHE_TTL_S * 1000
POLL_TIMEOUT_MS = 1000.0  # poll()'s default timeout, the application's loop
POLL_WAKE_MS = (POLL_BACKOFF_START_S * 1000, POLL_BACKOFF_MAX_S * 1000)
FETCH_MAX_WAIT_MS: float = _CONSUMER["fetch_max_wait_ms"].default
TAIL_RETRY_MS = (FETCH_MAX_WAIT_MS * TAIL_RETRY_FIRST, FETCH_MAX_WAIT_MS)
# The workload of bench.run's produce benchmark (its constants, repeated here: importing
# bench.run would bring its endpoint and Kafka machinery): 1 KiB records (16 B key + 1008 B
# value) sent round-robin to 4 partitions. A flush holds at most RECORDS_PER_BATCH of them
# (send() counts RECORD_OVERHEAD per record against batch_bytes).
MIB = 1 << 20
RECORD_BYTES = 1024
PARTITIONS = 4
RECORDS_PER_BATCH = BATCH_BYTES // (RECORD_BYTES + RECORD_OVERHEAD)
LINGERS_MS = (0, 50, 250)
DEFAULT_RATE = 1000.0  # records/s: 1 MiB/s; linger cuts flushes up to linger = 0.96 s
DEFAULT_RECORDS = 100_000

# ---- measured here (docs/benchmarks.md): object size and client CPU ------------------------

# "What each request costs here": PutObject of a flush of 1024 records is 1.04 MiB.
ENCODED_BYTES_PER_RECORD = 1.04 * MIB / 1024
# "Produce, where the time goes" (issue 18, first increment; ms per 1 MiB flush, four runs).
ENCODE_MS_PER_MIB = 2.5  # "encode: Parquet slices": 2.30-2.52
BATCHING_MS_PER_MIB = 4.5  # "rest: batching, partitioning, settling futures": 3.90-4.80
# Issue 18, second increment: a Consumer's poll() reads 67.2 MiB/s on moto, its GETs included,
# so its CPU per MiB (decoding, a Python Record per record) is at most 1000 / 67.2 ms.
POLL_MS_PER_MIB = 1000 / 67.2
# A manifest list (its newest manifest inline, up to MANIFEST_MAX_REFS refs of ~128 B of JSON)
# or a full manifest: at most 64 KiB, which adds 0.7 ms to its PUT at 95 MiB/s. An estimate.
INDEX_OBJECT_BYTES = 64 << 10

# ---- published inputs, each with its source ------------------------------------------------

Z90 = 1.2815515655446004  # standard normal quantiles
Z99 = 2.3263478740408408


@dataclass(frozen=True)
class Source:
    url: str
    quote: str


@dataclass(frozen=True)
class Lognormal:
    """A request latency whose logarithm is normal, fitted to a p50 and a p99 (ms). Equal p50
    and p99 make it a constant."""

    p50_ms: float
    p99_ms: float

    @classmethod
    def from_p50_p90(cls, p50_ms: float, p90_ms: float) -> Lognormal:
        """Fitted to a published p50 and p90, for sources that publish no p99."""
        return cls(p50_ms, p50_ms * (p90_ms / p50_ms) ** (Z99 / Z90))

    @property
    def sigma(self) -> float:
        return math.log(self.p99_ms / self.p50_ms) / Z99

    def with_doubled_tail(self) -> Lognormal:
        """The same p50 with twice the p99/p50 ratio."""
        return Lognormal(self.p50_ms, 2 * self.p99_ms)

    def at(self, normal: float) -> float:
        """The latency at a standard normal draw."""
        return self.p50_ms * math.exp(self.sigma * normal)


@dataclass(frozen=True)
class Cited:
    """A row of the input table: what, the value modelled, where it comes from, how used."""

    what: str
    modelled: str
    sources: tuple[Source, ...]
    how: str


TIGRIS = Source(
    "https://www.tigrisdata.com/docs/overview/benchmarks/summary",
    "small object workloads (1 KB objects) [...] Read Performance Summary [...] S3 | 22.415 ms "
    "| 42.047 ms [...] Write Performance Summary [...] S3 | 26.975 ms | 41.215 ms (P50, P90; "
    "the client ran on Oracle Cloud, us-sanjose-1)",
)
NAPKIN_RATE = Source(
    "https://github.com/sirupsen/napkin-math",
    "On March 9, 2026, same-region `1 GiB` single-stream GETs landed at about `95 MiB/s` on S3 "
    "[...] AWS's own S3 guidance suggests budgeting about `85-90 MB/s` per concurrent request",
)
NAPKIN_LATENCY = Source(
    "https://github.com/sirupsen/napkin-math",
    "Blob Storage GET, 1 conn (128KiB) | 80 ms; Blob Storage PUT, 1 conn (128KiB) | 200 ms "
    "[...] latency cells above should still be read as rough heuristics",
)
AWS_S3_RETRIES = Source(
    "https://docs.aws.amazon.com/whitepapers/latest/s3-optimizing-performance-best-practices/"
    "timeouts-and-retries-for-latency-sensitive-applications.html",
    "smaller requests (for example, less than 512 KB), where median latencies are often in the "
    "range of tens of milliseconds, a good guideline is to retry a GET or PUT operation after "
    "2 seconds",
)
AWS_DYNAMODB = Source(
    "https://aws.amazon.com/blogs/database/understanding-amazon-dynamodb-latency/",
    "DynamoDB provides single-digit millisecond performance for workloads of all sizes",
)
DYNOBASE = Source(
    "https://dynobase.dev/dynamodb-performance-latency/",
    "DynamoDB has very low latency [...] with delays ranging from 10 to 20 ms under typical "
    "conditions",
)
PROJECT_BENCH = Source(
    "docs/benchmarks.md (this repository)",
    "encode 2.30-2.52 ms and batching, partitioning, settling futures 3.90-4.80 ms per 1 MiB "
    "flush; PutObject 1.04 MiB per flush; poll() 67.2 MiB/s (moto, GETs included)",
)
WARPSTREAM = Source(
    "https://docs.warpstream.com/warpstream/configuration/low-latency-clusters",
    "25ms linger, 250ms batch timeout (default), S3 Standard, Fundamental cluster tier: "
    "Produce Latency p50: 250ms p99: 500ms; E2E Latency p50: 500ms p99: 900ms",
)
BUFSTREAM = Source(
    "https://buf.build/docs/bufstream/cost",
    "A latency trade-off exists but is reasonable: 260ms median, 500ms p99 vs. Kafka's lower "
    "latencies (OpenMessaging Benchmark, 1 GiB/s, 288 partitions, standard S3 bucket)",
)

S3_PUT = Lognormal.from_p50_p90(26.975, 41.215)
S3_GET = Lognormal.from_p50_p90(22.415, 42.047)
# No DynamoDB percentile was found published: p50 inside AWS's "single-digit millisecond", p99
# assumed at 3.3 x p50 (the S3 fits' ratios are 2.1 and 3.1); the doubled-tail column shows
# what a heavier tail would do.
DYNAMODB = Lognormal(6.0, 20.0)
S3_MIB_PER_S = 95.0  # one request's transfer rate, same region (napkin-math's measurement)


@dataclass(frozen=True)
class AwsLatencies:
    """Latency of each kind of request, and one S3 request's transfer rate."""

    name: str
    s3_put: Lognormal
    s3_get: Lognormal
    dynamodb: Lognormal  # UpdateItem (commit, spill), BatchGetItem, GetItem alike
    s3_mib_per_s: float = S3_MIB_PER_S

    def with_doubled_tails(self) -> AwsLatencies:
        return replace(
            self,
            s3_put=self.s3_put.with_doubled_tail(),
            s3_get=self.s3_get.with_doubled_tail(),
            dynamodb=self.dynamodb.with_doubled_tail(),
        )


PUBLISHED = AwsLatencies("S3 percentiles as measured by Tigris", S3_PUT, S3_GET, DYNAMODB)
# The same spread around napkin-math's typical S3 latencies: a slower S3, for contrast.
NAPKIN_S3 = AwsLatencies(
    "S3 at napkin-math's typical latencies",
    Lognormal(200.0, 200.0 * S3_PUT.p99_ms / S3_PUT.p50_ms),
    Lognormal(80.0, 80.0 * S3_GET.p99_ms / S3_GET.p50_ms),
    DYNAMODB,
)
PROFILES = (PUBLISHED, NAPKIN_S3)


def _p50_p99(latency: Lognormal) -> str:
    return f"p50 {latency.p50_ms:.1f} ms, p99 {latency.p99_ms:.1f} ms"


INPUTS = (
    Cited(
        "S3 PutObject (data object, manifest list), request",
        _p50_p99(S3_PUT),
        (TIGRIS, AWS_S3_RETRIES),
        "log-normal fitted to the published p50 and p90 (no p99 published); measured from "
        "another cloud, not EC2; AWS's 'tens of milliseconds' median agrees, its 2 s retry "
        "advice says the real tail is longer",
    ),
    Cited(
        "S3 GetObject (ranged), request",
        _p50_p99(S3_GET),
        (TIGRIS,),
        "log-normal fitted to the published p50 and p90",
    ),
    Cited(
        "S3 transfer, one request",
        f"{S3_MIB_PER_S:.0f} MiB/s, added to each request (1 MiB: +10.5 ms)",
        (NAPKIN_RATE,),
        "the measured same-region single-stream rate",
    ),
    Cited(
        "DynamoDB UpdateItem (commit, spill), BatchGetItem (heads), GetItem (topic)",
        _p50_p99(DYNAMODB),
        (AWS_DYNAMODB, DYNOBASE),
        "p50 within 'single-digit millisecond'; p99 ASSUMED (3.3 x p50): no percentile found",
    ),
    Cited(
        "S3 at napkin-math's typical latencies (second profile)",
        f"PUT {_p50_p99(NAPKIN_S3.s3_put)}; GET {_p50_p99(NAPKIN_S3.s3_get)}",
        (NAPKIN_LATENCY,),
        "their author calls them rough heuristics: taken as p50, with the Tigris fits' p99/p50",
    ),
    Cited(
        "client CPU: encode, batching and settling, poll()",
        f"{ENCODE_MS_PER_MIB} + {BATCHING_MS_PER_MIB} ms per MiB produced; "
        f"{POLL_MS_PER_MIB:.1f} ms per MiB polled",
        (PROJECT_BENCH,),
        "measured on this project's 2-CPU machine; batching is charged half before the PUT, "
        "half after the commits (the measurement does not split it)",
    ),
)

COMPARISONS = (
    ("WarpStream", "25 ms linger, 250 ms batch timeout, S3 Standard", "250 / 500", "500 / 900"),
    ("Bufstream", "OMB 1 GiB/s, 288 partitions, S3 Standard", "260 / 500 (*)", ""),
)
COMPARISON_SOURCES = (WARPSTREAM, BUFSTREAM)

# ---- drawing latencies ---------------------------------------------------------------------


class Normals:
    """Standard normal draws from a seeded generator, handed out one at a time (drawn in
    blocks: a numpy call per request would cost more than the rest of the simulation)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._block: list[float] = []
        self._next = 0

    def __call__(self) -> float:
        if self._next == len(self._block):
            self._block = self._rng.standard_normal(1 << 16).tolist()
            self._next = 0
        value = self._block[self._next]
        self._next += 1
        return value


@dataclass(frozen=True)
class ClientCpu:
    """Client CPU per MiB of records (ms): the project's measurements, or none."""

    encode_ms_per_mib: float = ENCODE_MS_PER_MIB
    batching_ms_per_mib: float = BATCHING_MS_PER_MIB
    poll_ms_per_mib: float = POLL_MS_PER_MIB

    @classmethod
    def none(cls) -> ClientCpu:
        return cls(0.0, 0.0, 0.0)


class Requests:
    """One draw per request, in ms."""

    def __init__(self, latencies: AwsLatencies, normal: Callable[[], float]) -> None:
        self.latencies = latencies
        self.normal = normal

    def _transfer_ms(self, nbytes: float) -> float:
        return nbytes / MIB / self.latencies.s3_mib_per_s * 1000

    def put(self, nbytes: float) -> float:
        return self.latencies.s3_put.at(self.normal()) + self._transfer_ms(nbytes)

    def get(self, nbytes: float) -> float:
        return self.latencies.s3_get.at(self.normal()) + self._transfer_ms(nbytes)

    def dynamodb(self) -> float:
        return self.latencies.dynamodb.at(self.normal())


# ---- the workload --------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """Records sent at a steady rate: Poisson arrivals (independent sends), or evenly spaced."""

    rate_per_s: float = DEFAULT_RATE
    records: int = DEFAULT_RECORDS
    arrivals: str = "poisson"
    partitions: int = PARTITIONS

    def send_times_ms(self, rng: np.random.Generator) -> np.ndarray:
        gap_ms = 1000 / self.rate_per_s
        if self.arrivals == "even":
            return np.arange(self.records) * gap_ms
        if self.arrivals == "poisson":
            return np.cumsum(rng.exponential(gap_ms, self.records)) - gap_ms
        raise ValueError(f"unknown arrival model {self.arrivals!r}")


# ---- the producer --------------------------------------------------------------------------


@dataclass
class Flushes:
    """The producer's flushes in order: their records [first, end), when each step ended (ms),
    and per (flush, partition) the slice's bytes and when its commit became visible."""

    first: np.ndarray
    end: np.ndarray
    taken: np.ndarray  # the sender took the queued records
    staged: np.ndarray  # encoded and PUT
    commit_started: np.ndarray  # the committer took it (after the previous flush's ack)
    committed: np.ndarray  # every UpdateItem answered
    spilled: np.ndarray  # spills done
    acked: np.ndarray  # futures settled
    slice_bytes: np.ndarray  # (flushes, partitions); 0 where the flush has no records
    visible: np.ndarray  # (flushes, partitions); NaN where the flush has no records
    full: np.ndarray  # cut by batch_bytes rather than linger or the sender's return
    spills: int

    def __len__(self) -> int:
        return len(self.first)

    def record_flush(self) -> np.ndarray:
        """Each record's flush."""
        return np.repeat(np.arange(len(self)), self.end - self.first)


@dataclass
class _Heads:
    """The committer's view of the heads: each partition's tail length and the refs its
    manifest list holds inline (services/index.py)."""

    tails: list[int]
    inline: list[int]

    def commit(self, partition: int) -> bool:
        """One ref appended; True if the head now needs a spill."""
        self.tails[partition] += 1
        return self.tails[partition] > TAIL_MAX

    def spill(self, partition: int) -> int:
        """Move all but TAIL_KEEP refs into the inline manifest; how many PUTs that takes (the
        full manifest is written out first when the inline one would pass its bound)."""
        moved = self.tails[partition] - TAIL_KEEP
        self.tails[partition] = TAIL_KEEP
        if self.inline[partition] and self.inline[partition] + moved > MANIFEST_MAX_REFS:
            self.inline[partition] = moved
            return 2
        self.inline[partition] += moved
        return 1


def records_per_partition(first: int, end: int, partitions: int) -> list[int]:
    """How many of records [first, end) go to each partition when record i goes to i % n."""
    return [(end - p - 1) // partitions - (first - p - 1) // partitions for p in range(partitions)]


def slice_order(first: int, partitions: int) -> list[int]:
    """The partitions in the order their slices lie in the flush's object: the order of their
    first records (Producer._prepare groups by first appearance)."""
    return [(first + k) % partitions for k in range(partitions)]


def cut_batch(
    send_ms: np.ndarray, first: int, sender_free: float, linger_ms: float
) -> tuple[int, float, bool]:
    """Where the batch starting at record first ends, when the sender takes it, and whether
    batch_bytes cut it. The sender takes queued records once linger_ms has passed since the
    first of them, or on coming back from staging if that is later; a batch that fills up is
    queued when the next record arrives and taken as soon as the sender is free."""
    overflow = first + RECORDS_PER_BATCH
    take = max(sender_free, send_ms[first] + linger_ms)
    if overflow < len(send_ms) and send_ms[overflow] <= take:
        return overflow, max(sender_free, float(send_ms[overflow])), True
    return int(np.searchsorted(send_ms, take, side="right")), take, False


def simulate_producer(
    send_ms: np.ndarray,
    linger_ms: float,
    requests: Requests,
    cpu: ClientCpu,
    partitions: int = PARTITIONS,
    spill_time: bool = True,
) -> Flushes:
    """Replay the sender and committer threads over the records' send times. Without
    spill_time, spills happen in no time (a counterfactual: what they add)."""
    heads = _Heads([0] * partitions, [0] * partitions)
    steps: list[tuple[float, ...]] = []  # per flush: first, end, taken, ... acked, full
    slice_bytes: list[list[float]] = []
    visible: list[list[float]] = []
    sender_free = committer_free = previous_commit_started = 0.0
    topic_read_at = -math.inf
    spills = first = 0
    while first < len(send_ms):
        end, taken, full = cut_batch(send_ms, first, sender_free, linger_ms)
        counts = records_per_partition(first, end, partitions)
        mib = (end - first) * RECORD_BYTES / MIB
        half_batching = cpu.batching_ms_per_mib * mib / 2
        topic_read = 0.0
        if taken - topic_read_at >= TOPIC_CACHE_TTL_MS:  # Producer._prepare: log.topic()
            topic_read_at, topic_read = taken, requests.dynamodb()
        staged = (
            taken
            + topic_read
            + half_batching
            + cpu.encode_ms_per_mib * mib
            + requests.put((end - first) * ENCODED_BYTES_PER_RECORD)
        )
        # The queue holds one flush: the sender waits until the committer took the last one.
        handed_over = max(staged, previous_commit_started)
        sender_free = handed_over
        commit_started = max(handed_over, committer_free)
        commits = {p: requests.dynamodb() for p in slice_order(first, partitions) if counts[p]}
        committed = commit_started + max(commits.values())
        spilled = committed
        for partition in commits:  # one after the other, in the committer's thread
            if heads.commit(partition):
                puts = heads.spill(partition)
                took = sum(requests.put(INDEX_OBJECT_BYTES) for _ in range(puts))
                took += requests.dynamodb()
                spilled += took if spill_time else 0.0  # drawn either way: same later draws
                spills += 1
        acked = spilled + half_batching
        previous_commit_started, committer_free = commit_started, acked
        steps.append((first, end, taken, staged, commit_started, committed, spilled, acked, full))
        slice_bytes.append([count * ENCODED_BYTES_PER_RECORD for count in counts])
        # A request takes effect half-way through its round trip: a head read then sees it.
        visible.append(
            [
                commit_started + commits[p] / 2 if p in commits else math.nan
                for p in range(partitions)
            ]
        )
        first = end
    table = np.array(steps).T
    return Flushes(
        first=table[0].astype(np.int64),
        end=table[1].astype(np.int64),
        taken=table[2],
        staged=table[3],
        commit_started=table[4],
        committed=table[5],
        spilled=table[6],
        acked=table[7],
        full=table[8].astype(bool),
        slice_bytes=np.array(slice_bytes),
        visible=np.array(visible),
        spills=spills,
    )


# ---- the consumer at the tail --------------------------------------------------------------


@dataclass
class _Buffer:
    """One partition's fetch-ahead buffer (fetch_ahead._Buffer), counted in commits: the
    partition's i-th commit is its i-th slice."""

    flushes: np.ndarray  # the flush of each of the partition's commits
    visible: np.ndarray  # when each became visible
    sizes: np.ndarray  # each slice's bytes
    next: int = 0  # the next commit to fetch
    landed: list[int] = field(default_factory=list)  # fetched, not yet returned by poll()
    fetched: bool = False
    caught_up: bool = False
    retry_at: float = 0.0
    backoff: float = TAIL_RETRY_MS[0]
    in_flight: bool = False
    head_seen: int = 0  # the high watermark (in commits) of the last head read
    head_read_at: float = -math.inf

    def land(self, commits: list[int], now: float) -> None:
        """fetch_ahead._land: an empty fetch marks the partition caught up until retry_at."""
        self.in_flight = False
        self.fetched = True
        self.landed += commits
        if commits:
            self.next = commits[-1] + 1
            self.caught_up = False
            self.backoff = TAIL_RETRY_MS[0]
        else:
            self.caught_up = True
            self.retry_at = now + self.backoff
            self.backoff = min(self.backoff * 2, TAIL_RETRY_MS[1])


@dataclass(frozen=True)
class _Fetch:
    partitions: list[int]
    commits: dict[int, list[int]]
    lands: float


class TailConsumer:
    """The application's poll(1.0) loop and the fetch-ahead thread, as events in time."""

    def __init__(self, flushes: Flushes, requests: Requests, cpu: ClientCpu) -> None:
        self.requests = requests
        self.cpu = cpu
        self.delivered = np.full(flushes.visible.shape, math.nan)
        self.buffers = [
            _Buffer(
                flushes=np.flatnonzero(flushes.slice_bytes[:, p] > 0),
                visible=flushes.visible[flushes.slice_bytes[:, p] > 0, p],
                sizes=flushes.slice_bytes[flushes.slice_bytes[:, p] > 0, p],
            )
            for p in range(flushes.visible.shape[1])
        ]
        self.slice_start = flushes.first  # a flush's first record gives its slice order
        self.remaining = sum(len(b.flushes) for b in self.buffers)
        # A record not returned a minute after the last commit never will be: stop there (its
        # latency stays NaN) rather than poll forever.
        self.horizon = float(np.nanmax(flushes.visible)) + 60_000
        self._events: list[tuple[float, int, str, object]] = []
        self._sequence = 0
        self._wake_token = 0
        self._poll_waiting = False
        self._background_busy = False
        self._deadline = 0.0
        self._poll_backoff = POLL_WAKE_MS[0]

    def run(self) -> np.ndarray:
        """When poll() returned each (flush, partition) slice (ms)."""
        self._new_poll(0.0)
        while self._events and self.remaining:
            now, _, kind, payload = heapq.heappop(self._events)
            if now > self.horizon:
                break
            if kind == "poll" and payload == self._wake_token:
                self._poll_waiting = False
                self._poll_iteration(now)
            elif kind == "poll fetched":
                assert isinstance(payload, _Fetch)
                self._land(payload, now)
                self._take_or_wait(now)
            elif kind == "background fetched":
                assert isinstance(payload, _Fetch)
                self._background_busy = False
                self._land(payload, now)
                if self._poll_waiting:  # a landing wakes the poll thread's wait
                    self._poll_waiting = False
                    self._wake_poll(now)
        return self.delivered

    def _schedule(self, at: float, kind: str, payload: object) -> None:
        self._sequence += 1
        heapq.heappush(self._events, (at, self._sequence, kind, payload))

    def _wake_poll(self, at: float) -> None:
        """The poll thread's next turn at `at`; an earlier wake-up cancels a later one."""
        self._wake_token += 1
        self._schedule(at, "poll", self._wake_token)

    def _new_poll(self, now: float) -> None:
        """The application calls poll(1.0) again."""
        self._deadline = now + POLL_TIMEOUT_MS
        self._poll_backoff = POLL_WAKE_MS[0]
        self._wake_poll(now)

    def _poll_iteration(self, now: float) -> None:
        """One turn of Consumer._poll: fill() fetches here what the poll thread must (a
        partition never fetched, or caught up and due again), then take or wait."""
        due = [
            p
            for p, b in enumerate(self.buffers)
            if not b.in_flight
            and not b.landed
            and (not b.fetched or (b.caught_up and now >= b.retry_at))
        ]
        if due:
            self._schedule_fetch(due, now, "poll fetched")
        else:
            self._take_or_wait(now)

    def _take_or_wait(self, now: float) -> None:
        if any(b.landed for b in self.buffers):
            for p, buffer in enumerate(self.buffers):
                for commit in buffer.landed:
                    self.delivered[buffer.flushes[commit], p] = now
                self.remaining -= len(buffer.landed)
                buffer.landed = []
            self._start_background(now)  # advance() notifies the fetch-ahead thread
            self._new_poll(now)
        elif now >= self._deadline:
            self._new_poll(now)
        else:
            wake = min(self._deadline, now + self._poll_backoff)
            self._poll_backoff = min(self._poll_backoff * 2, POLL_WAKE_MS[1])
            self._wake_poll(wake)
            self._poll_waiting = True

    def _start_background(self, now: float) -> None:
        """The fetch-ahead thread fetches, all at once, every partition whose last fetch
        returned records (fetch_ahead._ahead_due; its buffer bound is never reached here)."""
        if self._background_busy:
            return
        due = [p for p, b in enumerate(self.buffers) if b.fetched and not b.caught_up]
        due = [p for p in due if not self.buffers[p].in_flight]
        if due:
            self._background_busy = True
            self._schedule_fetch(due, now, "background fetched")

    def _land(self, fetch: _Fetch, now: float) -> None:
        for p in fetch.partitions:
            self.buffers[p].land(fetch.commits[p], now)
        self._start_background(now)  # a landing notifies the fetch-ahead thread

    def _schedule_fetch(self, due: list[int], now: float, kind: str) -> None:
        for p in due:
            self.buffers[p].in_flight = True
        fetch = self._fetch(due, now)
        self._schedule(fetch.lands, kind, fetch)

    def _fetch(self, due: list[int], now: float) -> _Fetch:
        """ObjectLog.fetch_many: one BatchGetItem for the heads it cannot reuse, then the
        slices' ranged GETs at once, then decoding."""
        heads_read = now
        stale = [p for p in due if not self._reusable(self.buffers[p], now)]
        if stale:
            took = self.requests.dynamodb()
            heads_read = now + took
            for p in stale:
                buffer = self.buffers[p]
                buffer.head_seen = int(np.searchsorted(buffer.visible, now + took / 2, "right"))
                buffer.head_read_at = heads_read
        commits = {p: self._plan(self.buffers[p]) for p in due}
        gets = self._gets(commits)
        read = max((self.requests.get(nbytes) for nbytes in gets), default=0.0)
        records = (
            sum(float(self.buffers[p].sizes[c]) for p, planned in commits.items() for c in planned)
            / ENCODED_BYTES_PER_RECORD
        )
        decoded = self.cpu.poll_ms_per_mib * records * RECORD_BYTES / MIB
        return _Fetch(due, commits, heads_read + read + decoded)

    @staticmethod
    def _reusable(buffer: _Buffer, now: float) -> bool:
        """RecentHeads.reusable: a head read within head_reuse_ms, below its watermark."""
        return buffer.next < buffer.head_seen and now - buffer.head_read_at <= HEAD_REUSE_MS

    @staticmethod
    def _plan(buffer: _Buffer) -> list[int]:
        """Reader._plan: the slices from the position up to the high watermark, until the
        partition's max_partition_fetch_bytes are reached (the last one may pass them)."""
        planned, budget = [], float(FETCH_BYTES)
        for commit in range(buffer.next, buffer.head_seen):
            planned.append(commit)
            budget -= buffer.sizes[commit]
            if budget <= 0:
                break
        return planned

    def _gets(self, commits: dict[int, list[int]]) -> list[float]:
        """The bytes of each GET: slices of one object whose partitions lie side by side in
        it are read together (fetch.coalesce)."""
        by_object: dict[int, dict[int, float]] = {}
        for p, planned in commits.items():
            for commit in planned:
                flush = int(self.buffers[p].flushes[commit])
                by_object.setdefault(flush, {})[p] = float(self.buffers[p].sizes[commit])
        gets: list[float] = []
        for flush, sizes in by_object.items():
            order = slice_order(int(self.slice_start[flush]), len(self.buffers))
            run: float | None = None
            for p in order:
                if p in sizes:
                    run = (run or 0.0) + sizes[p]
                elif run is not None:
                    gets.append(run)
                    run = None
            if run is not None:
                gets.append(run)
        return gets


# ---- scenarios -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One scenario's per-record latencies (ms) and where the produce time went."""

    produce_ms: np.ndarray
    end_to_end_ms: np.ndarray
    stages_ms: dict[str, float]  # mean per record
    records_per_flush: float
    full_flushes: float  # the share cut by batch_bytes
    spills_per_flush: float

    def percentiles(self, latencies: np.ndarray) -> tuple[float, float]:
        p50, p99 = np.percentile(latencies, [50, 99])
        return float(p50), float(p99)


def simulate(
    workload: Workload,
    linger_ms: float,
    latencies: AwsLatencies,
    seed: int,
    cpu: ClientCpu | None = None,
    spill_time: bool = True,
) -> Outcome:
    """One scenario. Send times and request latencies come from separate streams of the
    seed, so scenarios with the same seed share their arrivals."""
    cpu = ClientCpu() if cpu is None else cpu
    send_ms = workload.send_times_ms(np.random.default_rng([seed, 0]))
    requests = Requests(latencies, Normals(np.random.default_rng([seed, 1])))
    flushes = simulate_producer(send_ms, linger_ms, requests, cpu, workload.partitions, spill_time)
    delivered = TailConsumer(flushes, requests, cpu).run()
    flush_of = flushes.record_flush()
    partition_of = np.arange(len(send_ms)) % workload.partitions
    steps = {
        "waiting for the sender (linger, or staging)": flushes.taken[flush_of] - send_ms,
        "staging: grouping, encode, PutObject": (flushes.staged - flushes.taken)[flush_of],
        "waiting for the committer": (flushes.commit_started - flushes.staged)[flush_of],
        "commits: UpdateItems at once": (flushes.committed - flushes.commit_started)[flush_of],
        "spills after the commits": (flushes.spilled - flushes.committed)[flush_of],
        "settling futures": (flushes.acked - flushes.spilled)[flush_of],
    }
    returned = delivered[flush_of, partition_of]
    steps["(end to end) visible to returned by poll()"] = (
        returned - flushes.visible[flush_of, partition_of]
    )
    return Outcome(
        produce_ms=flushes.acked[flush_of] - send_ms,
        end_to_end_ms=returned - send_ms,
        stages_ms={name: float(np.mean(values)) for name, values in steps.items()},
        records_per_flush=len(send_ms) / len(flushes),
        full_flushes=float(np.mean(flushes.full)),
        spills_per_flush=flushes.spills / len(flushes),
    )


# ---- the report ----------------------------------------------------------------------------


def _ms(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def inputs_section(report: Report) -> None:
    section = report.section(
        "inputs: published figures, and how the model uses them",
        "input",
        "modelled",
        "source",
        "figure quoted",
        "how used",
    )
    for row in INPUTS:
        for index, source in enumerate(row.sources):
            first = index == 0
            section.rows.append(
                (
                    row.what if first else "",
                    row.modelled if first else "",
                    source.url,
                    source.quote,
                    row.how if first else "",
                )
            )


def comparison_section(report: Report) -> None:
    section = report.section(
        "published by others (for comparison, not a target)",
        "system",
        "setup",
        "produce p50 / p99, ms",
        "end to end p50 / p99, ms",
        "source",
        "figure quoted",
    )
    for (name, setup, produce, end_to_end), source in zip(
        COMPARISONS, COMPARISON_SOURCES, strict=True
    ):
        section.rows.append((name, setup, produce, end_to_end, source.url, source.quote))
    report.notes.append(
        "(*) Bufstream's page gives '260ms median, 500ms p99' without saying which latency; "
        "OpenMessaging Benchmark reports publish and end-to-end latency separately."
    )


def run_profile(
    report: Report,
    workload: Workload,
    latencies: AwsLatencies,
    lingers: Sequence[float],
    seed: int,
) -> None:
    """The latency table for one set of inputs, and where the produce time goes."""
    latency = report.section(
        f"modelled latency, ms: {latencies.name} ({workload.rate_per_s:,.0f} records/s, "
        f"{workload.arrivals} arrivals, {workload.records:,} records per scenario)",
        "linger_ms",
        "produce p50",
        "produce p99",
        "tails x2: p50 / p99",
        "end to end p50",
        "end to end p99",
        "tails x2: p50 / p99",
        "records / flush",
        "cut by batch_bytes",
        "spills / flush",
    )
    outcomes: dict[float, Outcome] = {}
    without_spill_time: dict[float, Outcome] = {}
    for linger in lingers:
        started = time.perf_counter()
        base = simulate(workload, linger, latencies, seed)
        doubled = simulate(workload, linger, latencies.with_doubled_tails(), seed)
        outcomes[linger] = base
        without_spill_time[linger] = simulate(workload, linger, latencies, seed, spill_time=False)
        produce, end_to_end = (
            base.percentiles(base.produce_ms),
            base.percentiles(base.end_to_end_ms),
        )
        latency.rows.append(
            (
                f"{linger:g}",
                _ms(produce[0]),
                _ms(produce[1]),
                " / ".join(map(_ms, doubled.percentiles(doubled.produce_ms))),
                _ms(end_to_end[0]),
                _ms(end_to_end[1]),
                " / ".join(map(_ms, doubled.percentiles(doubled.end_to_end_ms))),
                f"{base.records_per_flush:.1f}",
                f"{base.full_flushes:.0%}",
                f"{base.spills_per_flush:.2f}",
            )
        )
        console.print(
            f"  {latencies.name}, linger {linger:g} ms: produce p50/p99 "
            f"{produce[0]:.0f}/{produce[1]:.0f} ms, end to end {end_to_end[0]:.0f}/"
            f"{end_to_end[1]:.0f} ms ({time.perf_counter() - started:.1f} s)"
        )
    stages = report.section(
        f"where a record's time goes (mean ms), and what spills do to p99: {latencies.name}",
        "step",
        *(f"linger {linger:g}" for linger in lingers),
    )
    for step in next(iter(outcomes.values())).stages_ms:
        stages.rows.append((step, *(f"{outcomes[ln].stages_ms[step]:.1f}" for ln in lingers)))
    for name, runs in (("produce p99", outcomes), ("  if spills took no time", without_spill_time)):
        stages.rows.append(
            (name, *(_ms(runs[ln].percentiles(runs[ln].produce_ms)[1]) for ln in lingers))
        )


def add_notes(report: Report, workload: Workload) -> None:
    """What the figures mean, and what the model leaves out."""
    period = TAIL_MAX + 1 - TAIL_KEEP
    report.notes += [
        "Produce latency: send() to the future's result (the commits answered, and the spills "
        "they triggered). End to end: send() to poll() returning the record.",
        f"{workload.arrivals.capitalize()} arrivals: a batch's first record waits the whole "
        "linger, the last none, so linger adds about half of itself on average.",
        "A request takes effect half-way through its round trip (a commit is visible, a head "
        "read sees, at its midpoint).",
        "'tails x2': every input's p99/p50 ratio doubled, p50 kept, same seed. At low linger "
        "it moves p50 too: records gather while the sender stages the previous flush, so more "
        "of them wait through a slow PUT than through a fast one, and a flush's commit waits "
        "for the slowest of its UpdateItems.",
        f"Spills: a head spills when its tail passes {TAIL_MAX} refs and keeps {TAIL_KEEP}, so "
        f"every {period}th commit of a partition (the first at the {TAIL_MAX + 1}th on a new "
        f"topic). Round-robin keys keep the {workload.partitions} partitions in step: one "
        f"flush in {period} carries {workload.partitions} spills one after the other, before "
        "its records are acknowledged (bench.run's 0.29 spills per flush are 5 such flushes "
        "in its 70).",
        "Not modelled: retries, throttling, client CPU contention (the GIL), group heartbeats "
        "and offset commits (DynamoDB requests every few seconds in the poll thread), "
        "max_poll_records (500: a larger landing is returned over consecutive polls), and "
        "consumers of the Kafka agent, which wait on its HeadWatcher (one BatchGetItem every "
        "50 ms: kafka/watch.py) instead of the Consumer's retries.",
    ]


def print_report(report: Report) -> None:
    """The report's header, tables and notes (bench.report's layout, without its table of
    floors: nothing here is measured against a floor)."""
    for text in report.headers:
        console.print(f"[bold]{text}[/]")
    for section in report.sections:
        table = Table(title=section.title, title_justify="left")
        for column in section.columns:
            table.add_column(column, overflow="fold")  # sources' URLs whole, folded
        for values in section.rows:
            table.add_row(*values)
        console.print(table)
    for note in report.notes:
        console.print(f"- {note}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=DEFAULT_RATE, help="records sent per second")
    parser.add_argument("--records", type=int, default=DEFAULT_RECORDS, help="per scenario")
    parser.add_argument("--arrivals", choices=("poisson", "even"), default="poisson")
    parser.add_argument("--linger", type=float, action="append", help="ms; repeatable")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    workload = Workload(args.rate, args.records, args.arrivals)
    lingers = args.linger or LINGERS_MS
    report = Report()
    started = time.perf_counter()
    report.header(
        f"model: {workload.records:,} records of {RECORD_BYTES} B per scenario at "
        f"{workload.rate_per_s:,.0f} records/s ({workload.arrivals}), round-robin over "
        f"{workload.partitions} partitions; producer defaults (batch_bytes {BATCH_BYTES:,}, "
        f"at most {RECORDS_PER_BATCH} records; linger varied, default {DEFAULT_LINGER_MS} ms); "
        f"one consumer at the tail polling all partitions; seed {args.seed} (every scenario "
        "gets the same send times)"
    )
    inputs_section(report)
    comparison_section(report)
    for latencies in PROFILES:
        run_profile(report, workload, latencies, lingers, args.seed)
    add_notes(report, workload)
    print_report(report)
    console.print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
