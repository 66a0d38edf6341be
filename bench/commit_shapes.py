"""What each part of a commit-shaped UpdateItem costs on one endpoint (issue 18).

`.venv/bin/python -m bench.commit_shapes --dynamodb moto|local`: conditional UpdateItems on a
head of 8-22 refs like objectlog's commit, with parts taken away one at a time, and a head
layout objectlog does not use (refs in a map keyed by object id, so that the commit can return
only what it changed), and the commit a solo writer makes on the head it knows (its next
offset and index epoch pinned, returning nothing), beside the produce floor's minimal update;
rounds of 20 calls per shape, alternating, medians.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

import boto3

from bench.server import add_endpoint_argument, embedded_endpoint

REF = "0|01JABCDEFGHJKMNPQRSTVWXYZ0|123456|262144|256|256|1700000000000|500"
TAIL = 8  # refs in the head at the start; a spill-like reset every 14 commits
Call = Callable[[], None]


class Shapes:
    def __init__(self, url: str) -> None:
        self.ddb = boto3.client(
            "dynamodb",
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id="x",
            aws_secret_access_key="x",
        )
        self.table = f"shapes-{uuid.uuid4().hex[:8]}"
        keys = [("pk", "HASH"), ("sk", "RANGE")]
        self.ddb.create_table(
            TableName=self.table,
            KeySchema=[{"AttributeName": n, "KeyType": t} for n, t in keys],
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n, _ in keys],
            BillingMode="PAY_PER_REQUEST",
        )

    def _key(self, pk: str) -> dict[str, Any]:
        return {"pk": {"S": pk}, "sk": {"S": "head"}}

    def fresh_head(self, pk: str, refs_in_a_map: bool = False) -> None:
        numbers = {"next": 0, "lso": 0, "tb": 0, "ie": 3, "gch": 0, "segs": 0, "nbytes": 0}
        item: dict[str, Any] = {name: {"N": str(v)} for name, v in numbers.items()}
        item.update(self._key(pk), tid={"S": "t" * 26}, ml={"S": "index/" + "x" * 70}, ps={"M": {}})
        if refs_in_a_map:  # by object id, each with its base: a layout objectlog does not use
            item["tl"] = {"M": {f"o{i}": {"S": REF} for i in range(TAIL)}}
            item["tbs"] = {"M": {f"o{i}": {"N": str(i * 256)} for i in range(TAIL)}}
        else:
            item["tail"] = {"L": [{"S": REF}] * TAIL}
        self.ddb.put_item(TableName=self.table, Item=item)

    def commit(
        self,
        *,
        counters: bool,
        producer_paths: int,
        returns: str,
        refs_in_a_map: bool = False,
        predicted: bool = False,
    ) -> Call:
        pk = f"c{uuid.uuid4().hex[:8]}"
        self.fresh_head(pk, refs_in_a_map)
        sequence = [0]

        def call() -> None:
            seq = sequence[0]
            names = {"#next": "next", "#ks": "ps1s"}
            values: dict[str, Any] = {
                ":span": {"N": "256"},
                ":tid": {"S": "t" * 26},
                ":ots": {"N": "1"},
                ":seq": {"N": str(seq)},
            }
            if predicted:  # the writer knows the head: next and the index epoch pin it all
                values.update({":base": {"N": str(seq * 256)}, ":ie": {"N": "3"}})
                condition = "tid = :tid AND gch < :ots AND #next = :base AND ie = :ie"
            else:
                values[":prev"] = {"N": str(seq - 1)}
                condition = "tid = :tid AND gch < :ots AND "
                condition += "(attribute_not_exists(ps.#ks) OR ps.#ks = :prev)"
            if refs_in_a_map:
                names["#o"], values[":ref"] = f"x{seq}", {"S": REF}
                append = "tl.#o = :ref, tbs.#o = #next"
            else:
                values[":refs"] = {"L": [{"S": REF}]}
                append = "tail = list_append(tail, :refs)"
            paths = ["ps.#kb = #next", "ps.#ks = :seq", "ps.#kt = :now"][:producer_paths]
            names.update({"#kb": "ps1b"} if producer_paths >= 1 else {})
            if producer_paths >= 3:
                names["#kt"], values[":now"] = "ps1t", {"N": "1700000000"}
            expression = "SET " + ", ".join([append, *paths, "#next = #next + :span"])
            if counters:
                names.update({"#segs": "segs", "#nbytes": "nbytes"})
                values.update({":one": {"N": "1"}, ":len": {"N": "262144"}})
                expression += " ADD #segs :one, #nbytes :len"
            self.ddb.update_item(
                TableName=self.table,
                Key=self._key(pk),
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues=returns,
            )
            sequence[0] = seq + 1
            if sequence[0] % 14 == 0:  # as a spill would: the tail back to a few refs
                self.fresh_head(pk, refs_in_a_map)
                sequence[0] = 0

        return call

    def floor(self) -> Call:
        pk = f"f{uuid.uuid4().hex[:8]}"
        sequence = [0]

        def call() -> None:
            seq = sequence[0]
            self.ddb.update_item(
                TableName=self.table,
                Key=self._key(pk),
                UpdateExpression="SET sq = :seq ADD nx :n",
                ConditionExpression="attribute_not_exists(sq) OR sq = :prev",
                ExpressionAttributeValues={
                    ":seq": {"N": str(seq)},
                    ":prev": {"N": str(seq - 1)},
                    ":n": {"N": "256"},
                },
                ReturnValues="UPDATED_NEW",
            )
            sequence[0] = seq + 1

        return call


def measure(url: str, rounds: int) -> dict[str, float]:
    shapes = Shapes(url)
    sides = {
        "the floor's (SET sq ADD nx, UPDATED_NEW)": shapes.floor(),
        "objectlog's commit (3 producer paths, ALL_NEW)": shapes.commit(
            counters=False, producer_paths=3, returns="ALL_NEW"
        ),
        "the same, UPDATED_NEW": shapes.commit(
            counters=False, producer_paths=3, returns="UPDATED_NEW"
        ),
        "the same, 2 producer paths, UPDATED_NEW": shapes.commit(
            counters=False, producer_paths=2, returns="UPDATED_NEW"
        ),
        "objectlog's commit returning nothing (NONE)": shapes.commit(
            counters=False, producer_paths=3, returns="NONE"
        ),
        "with the 2 ADD counters heads kept until issue 18, ALL_NEW": shapes.commit(
            counters=True, producer_paths=3, returns="ALL_NEW"
        ),
        "refs in a map by object id, returning what changed (UPDATED_NEW)": shapes.commit(
            counters=False, producer_paths=3, returns="UPDATED_NEW", refs_in_a_map=True
        ),
        "its known head pinned (next, index epoch), returning nothing": shapes.commit(
            counters=False, producer_paths=3, returns="NONE", predicted=True
        ),
    }
    for call in sides.values():
        for _ in range(5):
            call()  # warm up
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(rounds):
        for name, call in sides.items():
            started = time.perf_counter()
            for _ in range(20):
                call()
            times[name].append((time.perf_counter() - started) / 20 * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_endpoint_argument(parser)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    with embedded_endpoint(args.dynamodb) as endpoint:
        print(f"endpoint: {endpoint.description}")
        medians = measure(endpoint.dynamodb_url, args.rounds)
    floor = next(iter(medians.values()))
    for name, ms in medians.items():
        print(f"{name:66s} {ms:6.2f} ms  x{ms / floor:.2f}")


if __name__ == "__main__":
    main()
