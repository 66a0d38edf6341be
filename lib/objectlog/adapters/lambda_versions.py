"""Deleting a function's superseded Lambda versions, so that their SnapStart snapshots stop
being billed.

With SnapStart on published versions, every deploy publishes a version and Lambda caches its
snapshot; for Python the cache is billed for as long as the version exists, at least 3 hours
(https://aws.amazon.com/lambda/pricing/, SnapStart). Terraform's aws_lambda_function keeps
every version it published (hashicorp/terraform-provider-aws#17668, #41172), so the compact
function, on its schedule, deletes each function's versions older than the one its alias
serves (infra/terraform: the "live" alias; its role may list and delete versions of the
deployment's functions only).

A version is kept if any alias routes to it (also by a weighted routing config), and every
version is kept while the alias's version is younger than ``grace_s``: requests that reached
the previous version just before the alias moved may still be running (a function runs at
most 15 minutes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import botocore.exceptions

from objectlog.adapters import aws
from objectlog.config import Config

GRACE_S = 15 * 60  # Lambda's longest timeout: nothing still runs on a version superseded since
NOT_FOUND = "ResourceNotFoundException"


@dataclass(frozen=True)
class VersionCleanup:
    """What one function's cleanup did."""

    function: str
    alias_version: str | None  # None: the function or its alias does not exist
    deleted: tuple[str, ...] = ()
    kept_for_grace: bool = False  # the alias moved less than grace_s ago: nothing deleted


def lambda_client(config: Config) -> Any:
    """A Lambda client on the log's session (its endpoint: AWS_ENDPOINT_URL[_LAMBDA] if set)."""
    return aws._client(aws.make_session(config), "lambda", config=aws.botocore_config(config))


def delete_superseded_versions(
    client: Any,
    function: str,
    alias: str,
    *,
    grace_s: float = GRACE_S,
    now: datetime | None = None,
) -> VersionCleanup:
    """Delete the published versions of function older than the one alias serves, but none
    another alias routes to, and none while the alias's version is younger than grace_s.
    A failed call raises its ObjectLogError (aws.translate)."""
    try:
        return _cleanup(client, function, alias, grace_s, now or datetime.now(UTC))
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
        raise aws.translate(e, what=f"function {function}'s versions", idempotent=True) from e


def _cleanup(
    client: Any, function: str, alias: str, grace_s: float, now: datetime
) -> VersionCleanup:
    try:
        target = client.get_alias(FunctionName=function, Name=alias)
    except botocore.exceptions.ClientError as e:
        if aws.error_code(e) == NOT_FOUND:
            return VersionCleanup(function, None)
        raise
    current = target["FunctionVersion"]
    if not current.isdigit():  # an alias on $LATEST: no version is superseded
        return VersionCleanup(function, current)
    versions = _paged(client, "list_versions_by_function", "Versions", FunctionName=function)
    by_number = {v["Version"]: v for v in versions}
    published = by_number.get(current, {}).get("LastModified")
    if published is not None and (now - _parse_time(published)).total_seconds() < grace_s:
        return VersionCleanup(function, current, kept_for_grace=True)
    routed = _routed_versions(_paged(client, "list_aliases", "Aliases", FunctionName=function))
    deleted = []
    for number in sorted((n for n in by_number if n.isdigit()), key=int):
        if int(number) >= int(current) or number in routed:
            continue
        try:
            client.delete_function(FunctionName=function, Qualifier=number)
        except botocore.exceptions.ClientError as e:
            if aws.error_code(e) != NOT_FOUND:  # gone meanwhile: what was wanted
                raise
        deleted.append(number)
    return VersionCleanup(function, current, tuple(deleted))


def _routed_versions(aliases: Iterable[dict[str, Any]]) -> set[str]:
    routed = set()
    for found in aliases:
        routed.add(found["FunctionVersion"])
        weights = (found.get("RoutingConfig") or {}).get("AdditionalVersionWeights") or {}
        routed.update(weights)
    return routed


def _paged(client: Any, operation: str, key: str, **kwargs: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in client.get_paginator(operation).paginate(**kwargs):
        items += page.get(key, [])
    return items


def _parse_time(value: str) -> datetime:
    """Lambda's LastModified to the second: AWS writes 2026-11-28T10:00:00.000+0000 (always
    UTC), moto 2026-11-28T10:00:00.123456000Z."""
    return datetime.strptime(value[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
