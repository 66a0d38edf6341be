"""Idempotent HTTP produce: a retried request with the same Idempotency-Key writes nothing.

Powertools idempotency on the objectlog table (pk ``idempotency#produce``, sk = the key's hash):
the first request with a key records "in progress", runs, and stores its response; a retry
within the expiry gets that response back; a concurrent duplicate gets 409; the same key with a
different body gets 422. A request that failed with a retriable (5xx) error stores nothing, so
its retry runs again (the producer's own sequences still keep that retry from duplicating).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)

from objectlog.adapters.dynamodb import DynamoTable
from objectlog.clients.direct import ObjectLog
from objectlog.errors import ConcurrentModification, InvalidRequest

HEADER = "idempotency-key"
ENV_EXPIRY = "OBJECTLOG_IDEMPOTENCY_EXPIRY_S"
DEFAULT_EXPIRY_S = 3600
MAX_KEY_LENGTH = 255

Outcome = dict[str, Any]  # {"status": int, "body": str, "content_type": str}


class _RetriableFailure(Exception):
    """Carries a 5xx outcome out of the idempotent call, so nothing is stored for it."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome["status"])
        self.outcome = outcome


class IdempotentRunner:
    def __init__(self, log: ObjectLog) -> None:
        self.persistence = DynamoDBPersistenceLayer(
            table_name=log.config.table,
            key_attr="pk",
            sort_key_attr="sk",
            static_pk_value="idempotency#produce",
            boto3_client=_table_of(log).client,
        )
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
        produce: Callable[[], Outcome],
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
            outcome = produce()
            if outcome["status"] >= 500:
                raise _RetriableFailure(outcome)
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


def _table_of(log: ObjectLog) -> DynamoTable:
    if log.items.table is None:
        raise InvalidRequest("Idempotency-Key needs the DynamoDB stores; this log has none")
    return log.items.table
