"""DynamoDB as the item stores see it: plain Python items, one retry policy, conditional writes
that answer "applied, or here is the item as it was".

Items, keys and expression values go in and come out as plain Python (str, int, bool, list,
dict, set of str); DynamoDB's typed attribute values never leave this module. Numbers come back
as int (objectlog stores no fractions).

The retry policy, the one place it is decided:
- throttling, 5xx and connections that never opened changed nothing: every call is tried again
  (botocore's standard mode retries these first; this adds a slower outer loop with backoff);
- a lost answer (timeout or closed connection after the request was sent) is tried again only
  for a call the caller marked ``repeatable`` (a read, or a write whose repeat writes the same
  values or fails its condition); otherwise it raises UnknownOutcome at once, so the caller can
  tell a landed write from a failed one (the commit does that with producer sequences). That
  holds for botocore's own retries too: its retry handler would resend a call whose answer
  timed out (a resent commit that had landed fails its condition against itself, which would
  read as "another writer won"; a repeat seconds later can overwrite a newer write), so a lost
  answer always comes back here;
- a failed condition is an answer, not an error: ``Written(applied=False, item=<as it was>)``.

Raises StorageUnavailable, UnknownOutcome, ObjectNotFound (the table is missing).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeVar

import botocore.exceptions
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from objectlog import concurrency
from objectlog.adapters.aws import THROTTLING_CODES, error_code, translate
from objectlog.errors import ObjectExists, ObjectNotFound, StorageUnavailable

ATTEMPTS = 5
BACKOFF_S = 0.01
BATCH_GET_LIMIT = 100
BATCH_WRITE_LIMIT = 25
CONDITION_FAILED = "ConditionalCheckFailedException"

Item = dict[str, Any]
Key = Mapping[str, str]
T = TypeVar("T")

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


@dataclass(frozen=True, slots=True)
class Written:
    """A conditional write's answer: applied, and the item (new or as it was), when asked."""

    applied: bool
    item: Item | None = None


def to_dynamo(value: Any) -> dict[str, Any]:
    typed: dict[str, Any] = _serializer.serialize(value)  # type: ignore[assignment]
    return typed


def from_dynamo(value: Mapping[str, Any]) -> Any:
    return _plain(_deserializer.deserialize(value))  # type: ignore[arg-type]


def item_from_dynamo(item: Mapping[str, Any]) -> Item:
    return {name: from_dynamo(value) for name, value in item.items()}


def item_to_dynamo(item: Mapping[str, Any]) -> dict[str, Any]:
    return {name: to_dynamo(value) for name, value in item.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, set):
        return {_plain(v) for v in value}
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    return value


def item_size(item: Mapping[str, Any]) -> int:
    """A plain item's billed size, by DynamoDB's rules: attribute names plus values (a write
    costs one unit per started KiB of the larger of the item before and after it)."""
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def value_size(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, bool) or value is None:
        return 1
    if isinstance(value, int):
        digits = len(str(abs(value)).rstrip("0")) or 1
        return (digits + 1) // 2 + 1
    if isinstance(value, bytes | bytearray):
        return len(value)
    if isinstance(value, set | frozenset):
        return sum(value_size(member) for member in value)
    if isinstance(value, list | tuple):
        return 3 + sum(1 + value_size(member) for member in value)
    if isinstance(value, Mapping):
        return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in value.items())
    raise TypeError(f"no DynamoDB size for {type(value).__name__}")


def _transient(error: Exception) -> bool:
    """Nothing changed and a later try may succeed (throttling, 5xx, no connection)."""
    if isinstance(error, botocore.exceptions.ClientError):
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return error_code(error) in THROTTLING_CODES or status >= 500
    return isinstance(
        error, botocore.exceptions.EndpointConnectionError | botocore.exceptions.ConnectTimeoutError
    )


def _lost_answer(error: Exception) -> bool:
    return isinstance(
        error,
        botocore.exceptions.ReadTimeoutError
        | botocore.exceptions.ConnectionClosedError
        | botocore.exceptions.HTTPClientError,
    ) and not isinstance(error, botocore.exceptions.ConnectTimeoutError)


def _no_resend_after_a_lost_answer(caught_exception: Exception | None = None, **_: Any) -> None:
    """botocore's needs-retry hook: a call whose answer was lost goes back to DynamoTable.call,
    where botocore would send it again after its backoff (up to seconds). The retry policy
    decides: an unrepeatable call raises UnknownOutcome, a repeatable one is sent again after
    the policy's short backoff (20 ms), which leaves a later write of the caller's far less
    time to land first and be overwritten by the repeat.
    Raising here is what botocore's caller then sees."""
    if caught_exception is not None and _lost_answer(caught_exception):
        raise caught_exception


class DynamoTable:
    """One DynamoDB table through one botocore client."""

    def __init__(
        self,
        client: Any,
        name: str,
        *,
        attempts: int = ATTEMPTS,
        sleep: Callable[[float], None] = concurrency.sleep,
    ) -> None:
        self.client = client
        self.name = name
        self.attempts = attempts
        self.sleep = sleep
        client.meta.events.register_first(
            "needs-retry.dynamodb",
            _no_resend_after_a_lost_answer,
            unique_id="objectlog-no-resend-after-a-lost-answer",
        )

    # ---- reads -------------------------------------------------------------------------

    def get(self, key: Key) -> Item | None:
        response = self.call(
            "GetItem",
            lambda: self.client.get_item(
                TableName=self.name, Key=item_to_dynamo(key), ConsistentRead=True
            ),
            repeatable=True,
        )
        item = response.get("Item")
        return item_from_dynamo(item) if item else None

    def batch_get(self, keys: Iterable[Key]) -> list[Item]:
        """The items that exist among keys, in no particular order (each key once: BatchGetItem
        refuses duplicates)."""
        unique = list({(k["pk"], k["sk"]): k for k in keys}.values())
        items: list[Item] = []
        for i in range(0, len(unique), BATCH_GET_LIMIT):
            chunk = [item_to_dynamo(k) for k in unique[i : i + BATCH_GET_LIMIT]]
            pending: dict[str, Any] = {self.name: {"Keys": chunk, "ConsistentRead": True}}
            while pending:
                response = self.call(
                    "BatchGetItem",
                    functools.partial(self.client.batch_get_item, RequestItems=pending),
                    repeatable=True,
                )
                items.extend(
                    item_from_dynamo(item)
                    for item in response.get("Responses", {}).get(self.name, [])
                )
                pending = response.get("UnprocessedKeys") or {}
        return items

    # ---- writes ------------------------------------------------------------------------

    def put(
        self,
        item: Mapping[str, Any],
        *,
        condition: str | None = None,
        names: Mapping[str, str] | None = None,
        values: Mapping[str, Any] | None = None,
        returns: str = "NONE",
        repeatable: bool = True,
        what: str = "PutItem",
    ) -> Written:
        """Write the item if condition holds. ``returns="ALL_OLD"``: the answer's item is the
        item it replaced (None if none); when the condition failed it is the item as it was."""
        kwargs = _expression_kwargs(condition, names, values)
        if returns != "NONE":
            kwargs["ReturnValues"] = returns
        return self._conditional(
            what,
            lambda: self.client.put_item(TableName=self.name, Item=item_to_dynamo(item), **kwargs),
            repeatable=repeatable,
            returns_new=returns != "NONE",
        )

    def update(
        self,
        key: Key,
        update: str,
        *,
        condition: str | None = None,
        names: Mapping[str, str] | None = None,
        values: Mapping[str, Any] | None = None,
        returns: str = "NONE",
        repeatable: bool,
        what: str = "UpdateItem",
    ) -> Written:
        """Apply the update if condition holds. ``returns`` is DynamoDB's ReturnValues: the
        answer's item is those attributes when applied; when the condition failed it is the
        item as it was (None if absent)."""
        kwargs = _expression_kwargs(condition, names, values)
        if returns != "NONE":
            kwargs["ReturnValues"] = returns
        return self._conditional(
            what,
            lambda: self.client.update_item(
                TableName=self.name, Key=item_to_dynamo(key), UpdateExpression=update, **kwargs
            ),
            repeatable=repeatable,
            returns_new=returns != "NONE",
        )

    def delete(
        self,
        key: Key,
        *,
        condition: str | None = None,
        values: Mapping[str, Any] | None = None,
        what: str = "DeleteItem",
    ) -> Written:
        kwargs = _expression_kwargs(condition, None, values)
        return self._conditional(
            what,
            lambda: self.client.delete_item(TableName=self.name, Key=item_to_dynamo(key), **kwargs),
            repeatable=True,
            returns_new=False,
        )

    def batch_write(
        self, *, puts: Iterable[Mapping[str, Any]] = (), deletes: Iterable[Key] = ()
    ) -> None:
        """Unconditional puts and deletes, 25 per BatchWriteItem, unprocessed ones resent."""
        requests = [{"PutRequest": {"Item": item_to_dynamo(item)}} for item in puts]
        requests += [{"DeleteRequest": {"Key": item_to_dynamo(key)}} for key in deletes]
        for i in range(0, len(requests), BATCH_WRITE_LIMIT):
            pending: dict[str, Any] = {self.name: requests[i : i + BATCH_WRITE_LIMIT]}
            while pending:
                response = self.call(
                    "BatchWriteItem",
                    functools.partial(self.client.batch_write_item, RequestItems=pending),
                    repeatable=True,
                )
                pending = response.get("UnprocessedItems") or {}

    def ensure(self) -> None:
        """Create the table if missing (the embedded stack and tests; Terraform on AWS)."""
        try:
            self.call("DescribeTable", lambda: self.client.describe_table(TableName=self.name))
            return
        except ObjectNotFound:
            pass
        with contextlib.suppress(ObjectExists):  # created meanwhile by another process
            self.call(
                "CreateTable",
                lambda: self.client.create_table(
                    TableName=self.name,
                    KeySchema=[
                        {"AttributeName": "pk", "KeyType": "HASH"},
                        {"AttributeName": "sk", "KeyType": "RANGE"},
                    ],
                    AttributeDefinitions=[
                        {"AttributeName": "pk", "AttributeType": "S"},
                        {"AttributeName": "sk", "AttributeType": "S"},
                    ],
                    BillingMode="PAY_PER_REQUEST",
                ),
            )
        self.call(
            "DescribeTable (wait)",
            lambda: self.client.get_waiter("table_exists").wait(TableName=self.name),
        )

    # ---- the retry policy --------------------------------------------------------------

    def call(self, what: str, request: Callable[[], T], *, repeatable: bool = True) -> T:
        """Send request under the retry policy (module docstring); objectlog errors only."""
        for attempt in range(1, self.attempts + 1):
            try:
                return request()
            except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError) as e:
                if isinstance(e, botocore.exceptions.ClientError) and (
                    error_code(e) == CONDITION_FAILED
                ):
                    raise _ConditionFailed(e) from e
                if isinstance(e, botocore.exceptions.WaiterError):
                    raise StorageUnavailable(f"{what}: {e}") from e
                lost = _lost_answer(e)
                if lost and not repeatable:
                    raise translate(e, what=what, idempotent=False) from e
                if not (lost or _transient(e)) or attempt == self.attempts:
                    raise translate(e, what=what, idempotent=True) from e
            self.sleep(BACKOFF_S * 2**attempt)
        raise AssertionError("unreachable")

    def _conditional(
        self, what: str, request: Callable[[], Any], *, repeatable: bool, returns_new: bool
    ) -> Written:
        try:
            response = self.call(what, request, repeatable=repeatable)
        except _ConditionFailed as failed:
            old = failed.error.response.get("Item")
            return Written(False, item_from_dynamo(old) if isinstance(old, Mapping) else None)
        attributes = response.get("Attributes") if returns_new else None
        return Written(True, item_from_dynamo(attributes) if attributes else None)


class _ConditionFailed(Exception):
    """A conditional write's condition did not hold (turned into Written(applied=False))."""

    def __init__(self, error: botocore.exceptions.ClientError) -> None:
        super().__init__(str(error))
        self.error = error


def _expression_kwargs(
    condition: str | None, names: Mapping[str, str] | None, values: Mapping[str, Any] | None
) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if condition:
        kwargs["ConditionExpression"] = condition
        kwargs["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    if names:
        kwargs["ExpressionAttributeNames"] = dict(names)
    if values:
        kwargs["ExpressionAttributeValues"] = {k: to_dynamo(v) for k, v in values.items()}
    return kwargs
