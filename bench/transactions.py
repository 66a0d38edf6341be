"""Transactions (issue 36): what a transaction costs in requests and dollars, a
consume-transform-produce loop against its at-least-once floor, and read_committed catch-up
against read_uncommitted, measured side by side in one run on the same endpoint.

    .venv/bin/python -m bench.transactions                     # 1-2 minutes
    .venv/bin/python -m bench.transactions --dynamodb local    # DynamoDB Local for DynamoDB
    .venv/bin/python -m bench.transactions --only pipeline     # one part: cost, pipeline, read

Records are 1 KiB (a 16-byte key and a 1,008-byte value). Producers linger 60 s, so
commit_transaction() and flush() cut every flush: one L0 object per 100 records on both sides.

1. cost: a transaction of 100 records over N partitions (N = 1, 4), with offsets for N input
   partitions of one group sent to it (init_transactions once; begin, send, send_offsets_
   to_transaction, commit_transaction), beside the same records from an idempotent producer
   with a flush per 100, and that producer with the group's offsets committed after each
   flush. Requests are counted by kind (botocore hooks, bench.meter) and priced at bench.run's
   list prices; DynamoDB units from the items each request touches (Units below: what a
   write leaves is read back by a client of its own, uncounted, so this part is not timed).
2. pipeline: a group consumer (read_committed, 100 records a poll) on a topic of 4 partitions,
   prefilled, and a transactional producer writing one output per input to a topic of 4
   partitions (keyed, so hashed over them), sending the positions to the transaction and
   committing it; the floor is the same loop with an idempotent producer's flush() and a
   synchronous consumer.commit() of the same positions (read_uncommitted: the inputs hold no
   transaction, as an at-least-once pipeline reads). Each side each round has fresh topics
   and a fresh group; the clock starts when the first poll returns records (the join left
   out) and stops when the last input's batch is committed.
3. read: 4 transactional producers in threads (ObjectLogs of their own) write one topic of 4
   partitions in interleaved 100-record transactions, 10% of each producer's aborted (chosen
   by a seeded random sample); then the whole topic is read with ObjectLog.fetch, partition
   by partition from offset 0, at each isolation level, from cold caches each time: each
   partition at both levels in turn, the first alternating by partition and round, records
   counted from the fetched Arrow tables (no Python object per record). read_committed reads
   fewer records (no aborted one); the ratio is of records read per second.
Sides alternate in rounds; each reports its median round.
"""

from __future__ import annotations

import argparse
import os
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from bench.meter import Requests, WrittenSizes, item_size
from bench.report import Report, Row, console
from bench.run import (
    DDB_RRU_PER_MILLION,
    DDB_WRU_PER_MILLION,
    KEY_BYTES,
    MIB,
    RECORD_BYTES,
    S3_GET_PER_1000,
    S3_PUT_PER_1000,
    _units,
    alternate,
    cold_caches,
    connect,
    median,
)
from bench.server import Endpoint, add_endpoint_argument, embedded_endpoint
from objectlog import ObjectLog
from objectlog.adapters.aws import dynamodb_client
from objectlog.clients.producer import Producer
from objectlog.clients.transactional import TransactionalProducer
from objectlog.groups import TopicPartition
from objectlog.services.isolation import READ_COMMITTED, READ_UNCOMMITTED

TXN_RECORDS = 100
PARTITIONS = 4
LINGER_MS = 60_000  # commit_transaction() and flush() cut every flush
VALUE_BYTES = RECORD_BYTES - KEY_BYTES
PARTS = ("cost", "pipeline", "read")
DYNAMODB_WRITES = ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem")
DYNAMODB_READS = ("GetItem", "BatchGetItem")

Batch = list[tuple[bytes, bytes]]  # (key, value)


def records(count: int, seed: int) -> Batch:
    rng = random.Random(seed)
    return [(rng.randbytes(KEY_BYTES), rng.randbytes(VALUE_BYTES)) for _ in range(count)]


def transactional(log: ObjectLog, tid: str) -> TransactionalProducer:
    producer = log.producer(transactional_id=tid, linger_ms=LINGER_MS)
    assert isinstance(producer, TransactionalProducer)
    producer.init_transactions()
    return producer


# ---- DynamoDB request units -----------------------------------------------------------------


class Units:
    """DynamoDB requests and the units billed for them, by operation and item (``GetItem
    topic``, ``UpdateItem heads``: ITEMS names the items by their key), from the items each
    request touches.

    A write is billed 1 WRU per KiB of the larger of the item before and after it
    (bench.meter.WrittenSizes: the size the last write seen left; what an UpdateItem leaves is
    read back by a client of this meter's own, uncounted), also when its condition fails. A
    read is strongly consistent (the library's): 1 RRU per 4 KiB of each item, and 1 for an
    item that is not there."""

    def __init__(self, log: ObjectLog) -> None:
        self.calls: Counter[str] = Counter()
        self.write: Counter[str] = Counter()
        self.read: Counter[str] = Counter()
        self._sizes = WrittenSizes()
        self._reader = dynamodb_client(log.config)
        self._lock = threading.Lock()
        events = log.metadata.client.meta.events
        for operation in DYNAMODB_WRITES + DYNAMODB_READS:
            events.register(f"before-parameter-build.dynamodb.{operation}", self._remember)
            events.register(f"after-call.dynamodb.{operation}", self._billed)

    def take(self) -> tuple[Counter[str], Counter[str], Counter[str]]:
        """Calls, write units and read units by kind since the last take."""
        with self._lock:
            taken = self.calls, self.write, self.read
            self.calls, self.write, self.read = Counter(), Counter(), Counter()
        return taken

    @staticmethod
    def _remember(params: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["objectlog-params"] = dict(params)

    def _billed(
        self, parsed: Mapping[str, Any], context: Mapping[str, Any], model: Any, **_: Any
    ) -> None:
        params, name = context["objectlog-params"], model.name
        operation = f"{name} {_item_kind(params)}"
        failed = "Error" in parsed
        if name == "GetItem":
            units = _units(item_size(parsed["Item"]) if "Item" in parsed else 0, 4096)
            return self._add(self.read, operation, units)
        if name == "BatchGetItem":
            found = [item for items in parsed.get("Responses", {}).values() for item in items]
            asked = sum(len(request["Keys"]) for request in params["RequestItems"].values())
            left = sum(len(r["Keys"]) for r in parsed.get("UnprocessedKeys", {}).values())
            units = sum(_units(item_size(item), 4096) for item in found)
            return self._add(self.read, operation, units + asked - left - len(found))
        if name == "BatchWriteItem":
            units = 0
            for table, requests in params["RequestItems"].items():
                for request in requests:
                    if "PutRequest" in request:
                        item = request["PutRequest"]["Item"]
                        units += self._written(table, _key(item), item_size(item))
                    else:
                        units += self._written(table, request["DeleteRequest"]["Key"], 0)
            return self._add(self.write, operation, units)
        table = params["TableName"]
        key = _key(params["Item"]) if "Item" in params else params["Key"]
        if name == "DeleteItem" and not failed:
            after = 0
        elif "Item" in params and not failed:
            after = item_size(params["Item"])
        elif params.get("ReturnValues") == "ALL_NEW" and "Attributes" in parsed:
            after = item_size(parsed["Attributes"])
        else:  # an UpdateItem that returned less, or a write whose condition failed
            found = self._reader.get_item(TableName=table, Key=key, ConsistentRead=True)
            after = item_size(found["Item"]) if "Item" in found else 0
        self._add(self.write, operation, self._written(table, key, after))

    def _written(self, table: str, key: Mapping[str, Any], size: int) -> int:
        """WRUs of a write that leaves key's item at size (0: deleted)."""
        with self._lock:
            return _units(self._sizes.billed(f"{table}|{sorted(key.items())!r}", size), 1024)

    def _add(self, counter: Counter[str], operation: str, units: int) -> None:
        with self._lock:
            self.calls[operation] += 1
            counter[operation] += units


ITEMS = {"topic": "topic", "part": "heads", "txn": "transaction", "group": "group offsets"}


def _item_kind(params: Mapping[str, Any]) -> str:
    """What a request's (first) item is, from its partition key's prefix (stores.dynamo_*)."""
    if "RequestItems" in params:
        request = next(iter(params["RequestItems"].values()))
        keys = request["Keys"] if "Keys" in request else [next(iter(request[0].values()))]
        first = keys[0].get("Key", keys[0].get("Item", keys[0]))
    else:
        first = params.get("Key") or params.get("Item") or {}
    prefix = first.get("pk", {}).get("S", "?").split("#", 1)[0]
    return ITEMS.get(prefix, prefix)


def _key(item: Mapping[str, Any]) -> dict[str, Any]:
    return {name: item[name] for name in ("pk", "sk") if name in item}


# ---- 1. requests and dollars per transaction ------------------------------------------------

TXN, PLAIN, PLAIN_COMMIT = "transaction", "idempotent, flush", "idempotent, flush + commit"
S3_KINDS = ("PutObject:l0", "PutObject:index", "GetObject:l0", "GetObject:index")
KINDS = (*DYNAMODB_READS, *DYNAMODB_WRITES, *S3_KINDS)


@dataclass(frozen=True)
class Spent:
    """What one side sent over its measured transactions (or flushes): requests by kind
    (bench.meter, every HTTP request), DynamoDB calls and units by operation and item (Units)."""

    counts: Counter[str]
    calls: Counter[str]
    write_units: Counter[str]
    read_units: Counter[str]
    transactions: int

    @classmethod
    def take(cls, requests: Requests, units: Units, transactions: int) -> Spent:
        return cls(requests.take().counts, *units.take(), transactions)

    @property
    def usd(self) -> float:
        """Per transaction (100 records), at bench.run's list prices."""
        counts = self.counts
        puts = sum(n for kind, n in counts.items() if kind.startswith("PutObject"))
        gets = sum(n for kind, n in counts.items() if kind.startswith("GetObject"))
        total = (
            puts * S3_PUT_PER_1000 / 1000
            + gets * S3_GET_PER_1000 / 1000
            + sum(self.write_units.values()) * DDB_WRU_PER_MILLION / 1e6
            + sum(self.read_units.values()) * DDB_RRU_PER_MILLION / 1e6
        )
        return total / self.transactions

    def per(self, count: float) -> str:
        return f"{count / self.transactions:.1f}" if count else ""


def cost(endpoint: Endpoint, transactions: int) -> dict[tuple[int, str], Spent]:
    """What 100 records cost on each side, for N = 1 and 4 partitions, by (N, side)."""
    log = connect(endpoint)
    requests, units = Requests(log), Units(log)
    batch = records(TXN_RECORDS, 1)
    spent: dict[tuple[int, str], Spent] = {}
    for n in (1, PARTITIONS):
        out, source, group = f"cost-out-{n}", f"cost-in-{n}", f"cost-group-{n}"
        log.create_topic(out, n)
        log.create_topic(source, n)

        def offsets(k: int, n: int = n, source: str = source) -> dict[TopicPartition, int]:
            return {TopicPartition(source, p): (k + 1) * TXN_RECORDS for p in range(n)}

        def send(producer: Producer, n: int = n, out: str = out) -> None:
            for i, (key, value) in enumerate(batch):
                producer.send(out, value, key=key, partition=i % n)

        with transactional(log, f"cost-{n}") as producer:
            for k in range(transactions + 1):  # the first warms the caches: left out
                if k == 1:
                    Spent.take(requests, units, 1)
                producer.begin_transaction()
                send(producer)
                producer.send_offsets_to_transaction(offsets(k), group)
                producer.commit_transaction()
            spent[(n, TXN)] = Spent.take(requests, units, transactions)
        for side in (PLAIN, PLAIN_COMMIT):
            with log.producer(linger_ms=LINGER_MS) as plain:
                for k in range(transactions + 1):
                    if k == 1:
                        Spent.take(requests, units, 1)
                    send(plain)
                    plain.flush()
                    if side == PLAIN_COMMIT:
                        log.groups.commit(f"{group}-plain", offsets(k))
                spent[(n, side)] = Spent.take(requests, units, transactions)
    log.close()
    return spent


def cost_table(report: Report, spent: dict[tuple[int, str], Spent], transactions: int) -> None:
    columns = list(spent)
    section = report.section(
        f"requests per {TXN_RECORDS} records of 1 KiB over N partitions (mean of {transactions}; "
        "offsets of N input partitions for one group)",
        "per 100 records",
        *(f"N={n}, {side}" for n, side in columns),
    )
    rows = section.rows
    for kind in KINDS:
        if not any(spent[c].counts[kind] for c in columns):
            continue
        rows.append((kind, *(spent[c].per(spent[c].counts[kind]) for c in columns)))
        calls = sorted(
            {call for c in columns for call in spent[c].calls if call.startswith(f"{kind} ")}
        )
        for call in calls:  # DynamoDB's, by item (Units)
            rows.append(
                (
                    f"  {call.split(' ', 1)[1]}",
                    *(spent[c].per(spent[c].calls[call]) for c in columns),
                )
            )
    for what, attr in (("write", "write_units"), ("read", "read_units")):
        rows.append(
            (
                f"DynamoDB {what} units",
                *(spent[c].per(sum(getattr(spent[c], attr).values())) for c in columns),
            )
        )
    rows.append(("$ per 100 records", *(f"{spent[c].usd:.7f}" for c in columns)))
    rows.append(
        ("$ per million records", *(f"{spent[c].usd * 1e6 / TXN_RECORDS:.3f}" for c in columns))
    )
    others = {kind for c in columns for kind in spent[c].counts if kind not in KINDS}
    if others:
        report.note(f"requests counted but not priced: {sorted(others)}")
    for n in (1, PARTITIONS):
        report.add(
            Row(
                f"$ per million records, transactions of 100 over {n} partition(s)",
                spent[(n, TXN)].usd * 1e6 / TXN_RECORDS,
                "USD",
                spent[(n, PLAIN_COMMIT)].usd * 1e6 / TXN_RECORDS,
                "idempotent producer, flush + offset commit per 100",
            )
        )


# ---- 2. consume-transform-produce ------------------------------------------------------------


class Pipeline:
    """One side of the loop: each round fresh topics and group, the inputs prefilled."""

    def __init__(self, log: ObjectLog, inputs: Batch, *, transactional: bool) -> None:
        self.log, self.inputs, self.transactional = log, inputs, transactional
        self.name = "txn" if transactional else "floor"
        self.requests = Requests(log)
        self.tally: Counter[str] = Counter()
        self.batches = 0
        self.rounds = 0

    def run(self) -> float:
        self.rounds += 1
        log, run_id = self.log, f"{self.name}-{self.rounds}-{uuid.uuid4().hex[:6]}"
        source, sink = f"ctp-in-{run_id}", f"ctp-out-{run_id}"
        log.create_topic(source, PARTITIONS)
        log.create_topic(sink, PARTITIONS)
        keys, values = zip(*self.inputs, strict=True)
        partition = pa.array(np.arange(len(keys), dtype=np.int32) % PARTITIONS)
        with log.producer() as seed:
            seed.send_table(
                source,
                pa.table(
                    {
                        "key": pa.array(keys, pa.binary()),
                        "value": pa.array(values, pa.binary()),
                        "partition": partition,
                    }
                ),
            )
        consumer = log.consumer(
            group=f"ctp-{run_id}",
            topics=[source],
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            max_poll_records=TXN_RECORDS,
            isolation_level=READ_COMMITTED if self.transactional else READ_UNCOMMITTED,
        )
        producer: Producer = (
            transactional(log, f"ctp-{run_id}")
            if self.transactional
            else log.producer(linger_ms=LINGER_MS)
        )
        done, started = 0, 0.0
        seen: set[tuple[int, int]] = set()
        while done < len(self.inputs):
            polled = consumer.poll(1.0)
            if not polled:
                continue
            if not done:
                started = time.perf_counter()
                self.requests.take()
            positions: dict[TopicPartition, int] = {}
            if isinstance(producer, TransactionalProducer):
                producer.begin_transaction()
            for record in polled:
                producer.send(sink, record.value, key=record.key)
                positions[TopicPartition(source, record.partition)] = record.offset + 1
                seen.add((record.partition, record.offset))
            if isinstance(producer, TransactionalProducer):
                producer.send_offsets_to_transaction(positions, consumer.group_metadata())
                producer.commit_transaction()
            else:
                producer.flush()
                consumer.commit(positions)
            done += len(polled)
            self.batches += 1
        seconds = time.perf_counter() - started
        self.tally.update(self.requests.take().counts)
        producer.close()
        consumer.close()
        assert done == len(seen) == len(self.inputs), (done, len(seen))
        return seconds


def write_concurrency(log: ObjectLog, samples: int = 50) -> str:
    """What the endpoint does with independent writes at once (why the pipeline costs what
    its writes cost here): one UpdateItem, four of other items in a row, four at once."""
    table = log.metadata.table  # type: ignore[attr-defined]

    def write(i: int) -> None:
        table.update(
            {"pk": f"bench-probe#{i}", "sk": "x"},
            "SET n = if_not_exists(n, :z) + :one",
            condition="attribute_not_exists(pk) OR attribute_exists(pk)",
            values={":z": 0, ":one": 1},
            repeatable=True,
            what="UpdateItem probe",
        )

    one, in_a_row, at_once = [], [], []
    with ThreadPoolExecutor(4) as pool:
        for _ in range(samples):
            started = time.perf_counter()
            write(0)
            one.append(time.perf_counter() - started)
            started = time.perf_counter()
            for i in range(4):
                write(i)
            in_a_row.append(time.perf_counter() - started)
            started = time.perf_counter()
            list(pool.map(write, range(4)))
            at_once.append(time.perf_counter() - started)
    return (
        f"endpoint writes: one UpdateItem {median(one) * 1000:.1f} ms, four in a row "
        f"{median(in_a_row) * 1000:.1f} ms, four at once {median(at_once) * 1000:.1f} ms"
    )


def pipeline_part(endpoint: Endpoint, report: Report, inputs: int, rounds: int) -> None:
    log = connect(endpoint)
    report.note(write_concurrency(log))
    batch = records(inputs, 2)
    sides = {
        "txn": Pipeline(log, batch, transactional=True),
        "floor": Pipeline(log, batch, transactional=False),
    }
    results = alternate(rounds, {name: side.run for name, side in sides.items()})
    log.close()
    txn_rate, floor_rate = (inputs / median(results[name]) for name in sides)
    report.add(
        Row(
            f"consume-transform-produce, {TXN_RECORDS}-record transactions, "
            f"{PARTITIONS} in / {PARTITIONS} out",
            txn_rate,
            "records/s",
            floor_rate,
            "flush() + consumer.commit() per 100",
            ">= 0.7",
            txn_rate / floor_rate >= 0.7,
        )
    )
    for name, side in sides.items():
        per_batch = {k: round(v / side.batches, 1) for k, v in sorted(side.tally.items())}
        report.note(
            f"pipeline {name}: {inputs * rounds / side.batches:.0f} records a batch; "
            f"requests per batch {per_batch}"
        )
    report.note(
        "pipeline rounds (s): "
        + "; ".join(f"{k} " + ", ".join(f"{s:.2f}" for s in v) for k, v in results.items())
    )


# ---- 3. read_committed catch-up --------------------------------------------------------------


def write_interleaved(
    log: ObjectLog, topic: str, producers: int, transactions: int
) -> tuple[int, int]:
    """producers transactional producers in threads write topic at once, each aborting a
    seeded 10% of its transactions; (records committed, records aborted)."""
    log.create_topic(topic, PARTITIONS)
    batch = records(TXN_RECORDS, 3)
    counts = Counter[str]()
    errors: list[BaseException] = []

    def writer(i: int) -> None:
        try:
            aborted = set(random.Random(36 + i).sample(range(transactions), transactions // 10))
            with ObjectLog(log.config) as own, transactional(own, f"{topic}-{i}") as producer:
                for t in range(transactions):
                    producer.begin_transaction()
                    for j, (key, value) in enumerate(batch):
                        producer.send(topic, value, key=key, partition=j % PARTITIONS)
                    if t in aborted:
                        producer.abort_transaction()
                    else:
                        producer.commit_transaction()
                    counts["aborted" if t in aborted else "committed"] += TXN_RECORDS
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(producers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return counts["committed"], counts["aborted"]


LEVELS = (READ_COMMITTED, READ_UNCOMMITTED)


@dataclass
class CatchUp:
    """Reads of the whole topic at each isolation level: seconds by round, records and
    requests by read."""

    seconds: dict[str, list[float]]
    records: dict[str, set[int]]
    requests: dict[str, Counter[str]]

    def rate(self, level: str) -> float:
        (records,) = self.records[level]
        return records / median(self.seconds[level])


def catch_up(log: ObjectLog, topic: str, rounds: int) -> CatchUp:
    """Each round reads every partition from offset 0 at both levels, from cold caches each
    time, the level read first alternating by partition and round, so a slow spell of the
    shared machine hits both sides."""
    meter = Requests(log)
    read = CatchUp({level: [] for level in LEVELS}, {level: set() for level in LEVELS}, {})
    for level in LEVELS:
        read.requests[level] = Counter()
    for r in range(rounds):
        seconds, records = dict.fromkeys(LEVELS, 0.0), Counter[str]()
        for partition in range(PARTITIONS):
            for level in LEVELS if (r + partition) % 2 == 0 else LEVELS[::-1]:
                cold_caches(log)
                meter.take()
                started = time.perf_counter()
                records[level] += read_partition(log, topic, partition, level)
                seconds[level] += time.perf_counter() - started
                read.requests[level].update(meter.take().counts)
        for level in LEVELS:
            read.seconds[level].append(seconds[level])
            read.records[level].add(records[level])
    return read


def read_partition(log: ObjectLog, topic: str, partition: int, isolation: str) -> int:
    """Records read from offset 0 to the end (counted from the Arrow table: no Python object
    per record, so the fetch alone is compared)."""
    offset, count = 0, 0
    while True:
        result = log.fetch(topic, partition, offset, max_bytes=8 * MIB, isolation_level=isolation)
        count += len(result)
        if result.next_offset == offset:
            return count
        offset = result.next_offset


def read_part(endpoint: Endpoint, report: Report, writes: int, rounds: int) -> None:
    log = connect(endpoint)
    topic = "interleaved"
    started = time.perf_counter()
    committed, aborted = write_interleaved(log, topic, 4, writes)
    console.print(
        f"read: {committed:,} records committed, {aborted:,} aborted by 4 producers "
        f"in {time.perf_counter() - started:.1f} s"
    )
    read = catch_up(log, topic, rounds)
    log.close()
    assert read.records == {READ_COMMITTED: {committed}, READ_UNCOMMITTED: {committed + aborted}}
    ratio = read.rate(READ_COMMITTED) / read.rate(READ_UNCOMMITTED)
    report.add(
        Row(
            "catch-up fetch from cold caches, read_committed (10% aborted)",
            read.rate(READ_COMMITTED),
            "records/s",
            read.rate(READ_UNCOMMITTED),
            "read_uncommitted, the same topic",
            ">= 0.9",
            ratio >= 0.9,
        )
    )
    report.note(
        "read rounds (s): "
        + "; ".join(f"{k} " + ", ".join(f"{s:.2f}" for s in v) for k, v in read.seconds.items())
    )
    for level in LEVELS:
        per_read = {k: v // rounds for k, v in sorted(read.requests[level].items())}
        report.note(
            f"read {level}: {next(iter(read.records[level])):,} records in "
            f"{median(read.seconds[level]):.2f} s (median), requests per read {per_read}"
        )


# ---- the run ---------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", choices=PARTS, action="append", help="run these parts")
    parser.add_argument("--transactions", type=int, default=5, help="cost: per side and N")
    parser.add_argument("--inputs", type=int, default=2000, help="pipeline: inputs per round")
    parser.add_argument("--writes", type=int, default=30, help="read: transactions a producer")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    add_endpoint_argument(parser)
    args = parser.parse_args()
    parts = args.only or PARTS
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    report = Report()
    began = time.perf_counter()
    with embedded_endpoint(args.dynamodb) as endpoint:
        report.endpoint(endpoint.description)
        console.print(f"client: {os.cpu_count()} CPUs shared with the endpoint")
        if "cost" in parts:
            cost_table(report, cost(endpoint, args.transactions), args.transactions)
        if "pipeline" in parts:
            pipeline_part(endpoint, report, args.inputs, args.rounds)
        if "read" in parts:
            read_part(endpoint, report, args.writes, args.rounds)
    report.print()
    console.print(f"total {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
