"""The fetch function: topic reads, record fetches, offsets and the API docs."""

from objectlog.http.app import lambda_handler
from objectlog.http.routes import FETCH

handler = lambda_handler(FETCH)
