"""The fetch function: topic reads, record fetches, offsets and the API docs."""

from objectlog.api.app import lambda_handler
from objectlog.api.routes import FETCH

handler = lambda_handler(FETCH)
