"""bench.transactions.Units, the DynamoDB request units the transactions benchmark prices
(docs/benchmarks.md, "Transactions"), against DynamoDB's billing rules worked out by hand, on
moto: a write is billed per KiB of the larger of the item before and after it (also when its
condition fails), a strongly consistent read per 4 KiB of each item, and 1 for an item that is
not there."""

from __future__ import annotations

from collections import Counter

import pytest
from botocore.exceptions import ClientError

from bench.transactions import Units
from objectlog import ObjectLog


def test_units_follow_dynamodb_billing(log: ObjectLog) -> None:
    client, table = log.metadata.client, log.config.table
    units = Units(log)
    key = {"pk": {"S": "bench#units"}, "sk": {"S": "item"}}
    gone = {"pk": {"S": "bench#units"}, "sk": {"S": "never written"}}

    def value(size: int) -> dict[str, dict[str, str]]:
        return {":v": {"S": "x" * size}}

    client.put_item(TableName=table, Item={**key, "v": {"S": "x" * 1500}})  # 2 KiB
    client.update_item(  # grows to 3 KiB: read back, as an UpdateItem returns nothing
        TableName=table,
        Key=key,
        UpdateExpression="SET v = :v",
        ExpressionAttributeValues=value(3000),
    )
    client.update_item(  # shrinks to 1 KiB: billed for the item before it
        TableName=table,
        Key=key,
        UpdateExpression="SET v = :v",
        ExpressionAttributeValues=value(100),
    )
    with pytest.raises(ClientError, match="ConditionalCheckFailed"):
        client.update_item(  # refused: billed for the item as it is (1 KiB)
            TableName=table,
            Key=key,
            UpdateExpression="SET v = :v",
            ConditionExpression="attribute_not_exists(pk)",
            ExpressionAttributeValues=value(5000),
        )
    client.put_item(TableName=table, Item={**key, "v": {"S": "x" * 9000}})  # 9 KiB
    client.get_item(TableName=table, Key=key, ConsistentRead=True)  # 9 KiB: 3 x 4 KiB
    client.get_item(TableName=table, Key=gone, ConsistentRead=True)
    client.batch_get_item(RequestItems={table: {"Keys": [key, gone], "ConsistentRead": True}})
    client.delete_item(TableName=table, Key=key)  # billed for the 9 KiB it removes
    calls, write, read = units.take()
    assert write == Counter(
        {"PutItem bench": 2 + 9, "UpdateItem bench": 3 + 3 + 1, "DeleteItem bench": 9}
    )
    assert read == Counter({"GetItem bench": 3 + 1, "BatchGetItem bench": 3 + 1})
    assert calls == Counter(
        {"PutItem bench": 2, "UpdateItem bench": 3, "DeleteItem bench": 1, "GetItem bench": 2}
        | {"BatchGetItem bench": 1}
    )
    assert units.take() == (Counter(), Counter(), Counter())
