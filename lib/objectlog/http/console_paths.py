"""The console's rows of the route table (issue 39) and the names of the two functions that
serve the API: http.routes.ROUTES is its own rows and CONSOLE_ROUTES. A module of its own, as
the console's handlers (http.console_api) import http.routes."""

from __future__ import annotations

PRODUCE = "produce"
FETCH = "fetch"

# (method, API Gateway route path, function): what a console needs besides the topic and group
# routes (http.console_api, acl_routes, transaction_routes)
CONSOLE_ROUTES: list[tuple[str, str, str]] = [
    ("GET", "/overview", FETCH),
    ("GET", "/overview/topics", FETCH),
    ("GET", "/topics/{topic}/activity", FETCH),
    ("GET", "/topics/{topic}/table", FETCH),
    ("GET", "/topics/{topic}/partitions/{partition}/details", FETCH),
    ("GET", "/topics/{topic}/partitions/{partition}/decoded", FETCH),
    ("GET", "/topics/{topic}/key-partition", FETCH),
    ("GET", "/acls", FETCH),
    ("POST", "/acls", PRODUCE),
    ("DELETE", "/acls", PRODUCE),
    ("GET", "/transactions", FETCH),
    ("POST", "/transactions/{transactional_id}/abort", PRODUCE),
]
