"""Validated topics: what checking every record's schema id costs a producer, measured side by
side in one run on the same endpoint.

    .venv/bin/python -m bench.schemas                    # about a minute
    .venv/bin/python -m bench.schemas --dynamodb local   # DynamoDB Local for DynamoDB

Two topics of the same partitions take the same framed 1 KiB values (magic byte 0, the id of
a registered Avro schema, an Avro payload) through ``Producer.send_table``: one with
``confluent.value.schema.validation=true``, one without (the floor). Sides alternate in
rounds; each reports its median round. Beside the ratio: the validator's own CPU per MiB
(``SchemaValidator.check`` on the same columns, no I/O), the same with
``objectlog.schema.validation.strict=true`` (every value decoded), and the DynamoDB reads it made
(GetItem and BatchGetItem counted by a botocore hook, bench.meter) per MiB produced, beside
the unvalidated topic's.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import time
from collections import Counter
from collections.abc import Callable

import pyarrow as pa

from bench.meter import Requests
from bench.report import Report, Row, console
from bench.run import MIB, alternate, connect, median
from bench.server import add_endpoint_argument, embedded_endpoint
from objectlog import ObjectLog
from objectlog.schemas.parsing import SchemaInput
from objectlog.schemas.registry import SchemaRegistry

VALUE_BYTES = 1024
SCHEMA = json.dumps({"type": "record", "name": "Blob", "fields": [{"name": "b", "type": "bytes"}]})


def values(schema_id: int, count: int) -> pa.Array:
    """Framed Avro values: the prefix, then a bytes field's zigzag length and its bytes."""
    body = b"x" * (VALUE_BYTES - 8)
    payload = _zigzag(len(body)) + body
    return pa.array([struct.pack(">bI", 0, schema_id) + payload] * count, pa.binary())


def _zigzag(n: int) -> bytes:
    encoded, n = b"", (n << 1) ^ (n >> 63)
    while n > 0x7F:
        encoded += bytes([(n & 0x7F) | 0x80])
        n >>= 7
    return encoded + bytes([n])


def produce(
    log: ObjectLog, topic: str, table: pa.Table, requests: Requests, reads: Counter[str]
) -> Callable[[], float]:
    """A side: produce the table once; its DynamoDB reads are added to reads[topic]."""

    def run() -> float:
        before = _reads(requests)
        producer = log.producer()
        started = time.perf_counter()
        producer.send_table(topic, table)
        elapsed = time.perf_counter() - started
        producer.close()
        reads[topic] += _reads(requests) - before
        return elapsed

    return run


def check_cpu(log: ObjectLog, topic: str, table: pa.Table, rounds: int) -> float:
    """CPU seconds of one SchemaValidator.check of the table's columns (the median of rounds)."""
    validator, info = log.schema_validator, log.topic(topic)
    validator.check(info, table.column("key"), table.column("value"))  # the caches filled
    times = []
    for _ in range(rounds):
        started = time.process_time()
        validator.check(info, table.column("key"), table.column("value"))
        times.append(time.process_time() - started)
    return median(times)


def _reads(requests: Requests) -> int:
    return requests.tally.counts["GetItem"] + requests.tally.counts["BatchGetItem"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=32, help="MiB of values per round")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    add_endpoint_argument(parser)
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "test")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "test")
    report = Report()
    count = args.mib * MIB // VALUE_BYTES
    with embedded_endpoint(args.dynamodb) as endpoint:
        report.endpoint(endpoint.description)
        log = connect(endpoint)
        registry = SchemaRegistry(log.items.schemas, log.items.documents)
        schema_id = registry.register("validated-value", SchemaInput(SCHEMA)).schema.id
        registry.register("strict-value", SchemaInput(SCHEMA))  # the same schema, the same id
        log.create_topic("plain", partitions=args.partitions)
        config = {"confluent.value.schema.validation": "true"}
        log.create_topic("validated", partitions=args.partitions, config=config)
        strict = {**config, "objectlog.schema.validation.strict": "true"}
        log.create_topic("strict", partitions=args.partitions, config=strict)
        keys = pa.array([f"k{i}".encode() for i in range(count)], pa.binary())
        table = pa.table({"key": keys, "value": values(schema_id, count)})
        console.print(
            f"{count:,} records of {VALUE_BYTES} B per round, {args.partitions} partitions"
        )
        requests, reads = Requests(log), Counter[str]()
        sides = {
            "validated": produce(log, "validated", table, requests, reads),
            "plain": produce(log, "plain", table, requests, reads),
        }
        results = alternate(args.rounds, sides)
        check_cpu_s = check_cpu(log, "validated", table, args.rounds)
        strict_cpu_s = check_cpu(log, "strict", table, args.rounds)
        log.close()
    report.add(
        Row(
            f"send_table to a validated topic, {args.mib} MiB of 1 KiB Avro values",
            args.mib / median(results["validated"]),
            "MiB/s",
            args.mib / median(results["plain"]),
            "the same table to a topic without validation",
        )
    )
    report.add(Row("the schema id check's own CPU", check_cpu_s * 1000 / args.mib, "ms/MiB"))
    report.add(
        Row(
            "strict mode's own CPU (each value decoded with fastavro)",
            strict_cpu_s * 1000 / args.mib,
            "ms/MiB",
        )
    )
    produced = args.mib * args.rounds
    report.add(
        Row(
            "DynamoDB reads per MiB produced to the validated topic",
            reads["validated"] / produced,
            "reads/MiB",
            reads["plain"] / produced,
            "the topic without validation",
        )
    )
    report.print()


if __name__ == "__main__":
    main()
