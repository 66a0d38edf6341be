"""The produce function: topic admin writes and record production (API Gateway HTTP API)."""

from objectlog.api.app import lambda_handler
from objectlog.api.routes import PRODUCE

handler = lambda_handler(PRODUCE)
