"""The web console's page and files as the local API serves them (http.console_routes), and the
cross-site rule on the whole API (http.cross_site) over real HTTP."""

from __future__ import annotations

import requests

from objectlog import ObjectLog
from objectlog.http.console_routes import CONTENT_SECURITY_POLICY


def test_every_console_path_is_the_page_with_its_security_headers(api: str) -> None:
    for path in ("/console", "/console/topics/orders/records", "/console/groups/g%20h"):
        answer = requests.get(f"{api}{path}", timeout=30)
        assert answer.status_code == 200, path
        assert answer.headers["Content-Type"].startswith("text/html")
        assert '<script type="module" src="/console/static/console.js">' in answer.text
        assert answer.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        assert answer.headers["Referrer-Policy"] == "no-referrer"
    assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY
    assert "'unsafe-eval'" not in CONTENT_SECURITY_POLICY


def test_static_files_have_their_content_type_and_nothing_else_is_served(api: str) -> None:
    types = {
        "console.js": "text/javascript",
        "console.css": "text/css",
        "api.js": "text/javascript",
    }
    for name, content_type in types.items():
        answer = requests.get(f"{api}/console/static/{name}", timeout=30)
        assert answer.status_code == 200 and answer.headers["Content-Type"].startswith(content_type)
        assert answer.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    for name in ("missing.js", "..%2F..%2Fhttp%2Fapp.py", "__init__.py", ".hidden.js"):
        answer = requests.get(f"{api}/console/static/{name}", timeout=30)
        assert answer.status_code == 404, name
        assert answer.json()["error"] == "NotFound"


def test_the_console_is_not_in_the_openapi_document(api: str) -> None:
    document = requests.get(f"{api}/openapi.json", timeout=30).json()
    assert not [path for path in document["paths"] if path.startswith("/console")]


def test_a_cross_site_write_is_refused_before_it_stores_anything(api: str, log: ObjectLog) -> None:
    create = {"name": "orders", "partitions": 1}
    for headers in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
        answer = requests.post(f"{api}/topics", json=create, headers=headers, timeout=30)
        assert answer.status_code == 403, answer.text
        assert answer.json()["error"] == "CrossSiteRequest"
    assert "orders" not in log.list_topics()
    # the console's own requests (same origin) and clients that send no origin are served
    same_origin = {"Origin": api, "Sec-Fetch-Site": "same-origin"}
    assert requests.post(f"{api}/topics", json=create, headers=same_origin, timeout=30).ok
    assert requests.delete(f"{api}/topics/orders", timeout=30).status_code == 204
    # a cross-site read is not a change: served as before
    read = requests.get(f"{api}/topics", headers={"Origin": "https://evil.example"}, timeout=30)
    assert read.status_code == 200
