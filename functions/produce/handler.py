"""The produce function: topic admin writes and record production (API Gateway HTTP API)."""

from objectlog.http.app import lambda_handler
from objectlog.http.routes import PRODUCE

handler = lambda_handler(PRODUCE)
