"""Idempotent HTTP produce: a retried request with the same Idempotency-Key writes nothing.

Powertools idempotency on the log's IdempotencyStore (on DynamoDB: the objectlog table, pk
``idempotency#produce``, sk = the key's hash; in memory for unit tests): the first request with
a key records "in progress", runs, and stores its response; a retry within the expiry gets that
response back; a concurrent duplicate gets 409; the same key with a different body gets 422. A
request that failed with a retriable (5xx) error frees its key, so its retry runs again; when
some of its records had landed (one partition's batch failed after another's committed), the
key's record keeps their offsets ("landed") and the retry that claims it sends only the rest
and answers with the first run's offsets for those, so no record is stored twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyItemAlreadyExistsError,
    IdempotencyItemNotFoundError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.base import (
    BasePersistenceLayer,
    DataRecord,
)

from objectlog.clients.direct import ObjectLog
from objectlog.clock import Clock, SystemClock
from objectlog.errors import ConcurrentModification, InvalidRequest
from objectlog.stores.idempotency import IdempotencyRecord, IdempotencyStore

HEADER = "idempotency-key"
ENV_EXPIRY = "OBJECTLOG_IDEMPOTENCY_EXPIRY_S"
DEFAULT_EXPIRY_S = 3600
MAX_KEY_LENGTH = 255

Outcome = dict[str, Any]  # {"status": int, "body": str, "content_type": str}


Landed = dict[int, dict[str, Any]]  # a record's index in the request -> its offsets entry
Produce = Callable[[Landed], tuple[Outcome, Landed]]  # sends what has not landed yet


class _RetriableFailure(Exception):
    """Carries a 5xx outcome out of the idempotent call: no response is stored for it, and
    the key is freed (keeping what landed, for the retry)."""

    def __init__(self, outcome: Outcome, landed: Landed) -> None:
        super().__init__(outcome["status"])
        self.outcome = outcome
        self.landed = landed


class StorePersistence(BasePersistenceLayer):
    """Powertools' persistence layer over an objectlog IdempotencyStore: Powertools keeps the
    protocol (hashing, validation, expiry), the store keeps the records. Powertools computes
    expiries from the wall clock, so "now" here is the wall clock too (not a test's clock)."""

    def __init__(self, store: IdempotencyStore, clock: Clock | None = None) -> None:
        super().__init__()
        self.store = store
        self.clock = clock or SystemClock()
        self._claimed = threading.local()  # .landed: what the claimed key's earlier run stored

    def landed(self) -> Landed:
        """What an earlier, failed run of the request this thread just claimed stored."""
        stored = getattr(self._claimed, "landed", None)
        return {int(i): entry for i, entry in json.loads(stored).items()} if stored else {}

    def delete_record(self, data: dict[str, Any], exception: Exception) -> None:
        """Free the key after a failed run; keep what it stored, for the retry."""
        key = self._get_hashed_idempotency_key(data=data)
        if key is None or not isinstance(exception, _RetriableFailure) or not exception.landed:
            super().delete_record(data, exception)
            return
        self.store.release(key, json.dumps(exception.landed))
        self._delete_from_cache(idempotency_key=key)

    def _get_record(self, idempotency_key: str) -> DataRecord:
        record = self.store.get(idempotency_key)
        if record is None:
            raise IdempotencyItemNotFoundError
        return _data_record(record)

    def _put_record(self, data_record: DataRecord) -> None:
        claim = self.store.put_if_free(_store_record(data_record), self.clock.now_ms())
        self._claimed.landed = claim.landed
        if claim.holder is None:
            return
        old = _data_record(claim.holder)
        self._validate_payload(data_payload=data_record, stored_data_record=old)
        self._save_to_cache(data_record=old)
        raise IdempotencyItemAlreadyExistsError(old_data_record=old)

    def _update_record(self, data_record: DataRecord) -> None:
        self.store.complete(_store_record(data_record))

    def _delete_record(self, data_record: DataRecord) -> None:
        self.store.delete(data_record.idempotency_key)


def _store_record(data: DataRecord) -> IdempotencyRecord:
    return IdempotencyRecord(
        key=data.idempotency_key,
        status=data.status,
        expires_s=int(data.expiry_timestamp or 0),
        in_progress_expires_ms=data.in_progress_expiry_timestamp,
        response=data.response_data,
        payload_hash=data.payload_hash,
    )


def _data_record(record: IdempotencyRecord) -> DataRecord:
    return DataRecord(
        idempotency_key=record.key,
        status=record.status,
        expiry_timestamp=record.expires_s,
        in_progress_expiry_timestamp=record.in_progress_expires_ms,
        response_data=record.response or "",
        payload_hash=record.payload_hash or "",
    )


class IdempotentRunner:
    def __init__(self, log: ObjectLog) -> None:
        self.persistence = StorePersistence(log.items.idempotency)
        self.config = IdempotencyConfig(
            event_key_jmespath="[route, topic, key]",
            payload_validation_jmespath="body_sha256",
            expires_after_seconds=int(os.environ.get(ENV_EXPIRY, DEFAULT_EXPIRY_S)),
        )

    def run(
        self,
        key: str,
        route: str,
        topic: str,
        body: str,
        produce: Produce,
        lambda_context: Any = None,
    ) -> Outcome:
        if not key or len(key) > MAX_KEY_LENGTH:
            raise InvalidRequest(
                f"Idempotency-Key must be 1-{MAX_KEY_LENGTH} characters", field=HEADER
            )

        if lambda_context is not None:
            self.config.register_lambda_context(lambda_context)

        @idempotent_function(
            data_keyword_argument="request", persistence_store=self.persistence, config=self.config
        )
        def once(request: dict[str, str]) -> Outcome:
            outcome, landed = produce(self.persistence.landed())
            if outcome["status"] >= 500:
                raise _RetriableFailure(outcome, landed)
            return outcome

        request = {
            "key": key,
            "route": route,
            "topic": topic,
            "body_sha256": hashlib.sha256(body.encode()).hexdigest(),
        }
        try:
            result: Outcome = once(request=request)
            return result
        except _RetriableFailure as failure:
            return failure.outcome
        except IdempotencyAlreadyInProgressError as e:
            raise ConcurrentModification(
                "a request with this Idempotency-Key is still in progress; retry later"
            ) from e
        except IdempotencyValidationError as e:
            raise InvalidRequest(
                "this Idempotency-Key was used with a different request body", field=HEADER
            ) from e
