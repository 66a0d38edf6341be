"""The authorize function: the Schema Registry routes' Lambda authorizer (API Gateway HTTP API)."""

from objectlog.functions.authorize import handler

__all__ = ["handler"]
