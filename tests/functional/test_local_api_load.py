"""The local HTTP API under load (issue 39): 32 REST Proxy v2 consumer sessions at once (produce,
create an instance, subscribe, read, commit, delete), each call on a fresh connection as
`requests.request` makes it, and not one connection refused or reset: against the suite's
LocalGateway (the server `objectlog dev` starts) by default, against `objectlog dev` itself with
-m slow. And a client's connection kept open across requests, so a busy client is not a stream of
connects; and the owner's stop() closing the port and its threads.

And every concurrent request answered as its own: Powertools keeps the request being resolved on a
class attribute, and an answer was another request's about once in eight (objectlog.http.resolver
keeps it per thread)."""

from __future__ import annotations

import base64
import http.client
import signal
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests

from objectlog.tools.embedded import free_port, start_dev_process
from objectlog.tools.wsgi_server import BackgroundWsgiServer
from tests.rest_proxy_calls import BINARY, call

SESSIONS = 32
TOPIC = "load"


@pytest.fixture(scope="module")
def dev_api() -> Iterator[str]:
    """`objectlog dev` in its own process, as `make run` starts it: its HTTP API's URL."""
    port, api_port = free_port(), free_port()
    process = start_dev_process(port, api_port, "--in-memory")
    try:
        assert process.stdout is not None
        assert f"127.0.0.1:{api_port}" in process.stdout.readline() + process.stdout.readline()
        yield f"http://127.0.0.1:{api_port}"
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Tally:
    """What each call got: its status, or the connection error it raised."""

    def __init__(self) -> None:
        self.outcomes: Counter[str] = Counter()
        self._lock = threading.Lock()

    def call(self, *args: object, **kwargs: object) -> requests.Response | None:
        try:
            response = call(*args, **kwargs)  # type: ignore[arg-type]
        except requests.ConnectionError as e:
            self._note(f"connection error: {e}")
            return None
        self._note(str(response.status_code))
        return response

    def _note(self, outcome: str) -> None:
        with self._lock:
            self.outcomes[outcome] += 1


def session(kafka: str, n: int, tally: Tally) -> None:
    """One REST Proxy consumer's life in a group of its own."""
    value = base64.b64encode(f"record {n}".encode()).decode()
    tally.call(
        "POST", f"{kafka}/topics/{TOPIC}", {"records": [{"value": value}]}, content_type=BINARY
    )
    settings = {"format": "binary", "auto.offset.reset": "earliest"}
    created = tally.call("POST", f"{kafka}/consumers/group-{n}", {"name": f"c{n}", **settings})
    if created is None or created.status_code != 200:
        return
    instance = created.json()["base_uri"]
    tally.call("POST", f"{instance}/subscription", {"topics": [TOPIC]})
    tally.call("GET", f"{instance}/records", accept=BINARY, params={"timeout": 100})
    tally.call("POST", f"{instance}/offsets")
    tally.call("DELETE", instance)


def assert_no_connection_lost(api: str) -> None:
    created = requests.post(f"{api}/topics", json={"name": TOPIC}, timeout=30)
    assert created.status_code in (200, 201, 409), created.text
    tally = Tally()
    session(f"{api}/kafka", SESSIONS, tally)  # the first request builds the handlers
    with ThreadPoolExecutor(SESSIONS) as pool:
        list(pool.map(lambda n: session(f"{api}/kafka", n, tally), range(SESSIONS)))
    lost = {k: v for k, v in tally.outcomes.items() if k.startswith("connection error")}
    assert lost == {}, tally.outcomes
    assert {k for k in tally.outcomes if not k.startswith("2")} == set(), tally.outcomes
    assert sum(tally.outcomes.values()) >= 2 * (SESSIONS + 1)  # each got as far as create


def test_32_concurrent_rest_proxy_sessions_see_no_connection_reset(api: str) -> None:
    """The test suite's local API: the same LocalGateway and server `objectlog dev` starts."""
    assert_no_connection_lost(api)


@pytest.mark.slow  # 5 to 12 s here: a process of its own, started and warmed
def test_32_concurrent_rest_proxy_sessions_against_objectlog_dev(dev_api: str) -> None:
    assert_no_connection_lost(dev_api)


def test_concurrent_requests_each_get_their_own_answer(api: str) -> None:
    """128 concurrent describes of 16 topics with as many partitions as their number: each answer
    names the topic asked for, with its partitions, and none is another request's."""
    topics = {f"own-answer-{n}": n for n in range(1, 17)}
    for name, partitions in topics.items():
        created = requests.post(f"{api}/topics", json={"name": name, "partitions": partitions})
        assert created.status_code in (200, 201), created.text

    def describe(name: str) -> tuple[str, Any]:
        answer = requests.get(f"{api}/topics/{name}", timeout=30)
        assert answer.status_code == 200, answer.text
        return name, answer.json()

    asked = [name for name in topics for _ in range(8)]
    with ThreadPoolExecutor(len(asked)) as pool:
        answers = list(pool.map(describe, asked))
    wrong = [(name, body) for name, body in answers if body["topic"] != name]
    assert wrong == []
    assert all(body["partition_count"] == topics[name] for name, body in answers)


def test_a_client_keeps_its_connection_across_requests(api: str) -> None:
    """werkzeug's development server closed every connection after one answer, so each request
    of every client was a TCP connect (and a new server thread)."""
    address = urlsplit(api)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=10)
    try:
        ports = set()
        for _ in range(5):
            connection.request("GET", "/topics")
            response = connection.getresponse()
            response.read()
            assert response.status == 200
            assert not response.will_close, response.getheaders()
            assert connection.sock is not None
            ports.add(connection.sock.getsockname()[1])
        assert len(ports) == 1
    finally:
        connection.close()


def test_the_owner_stops_the_server_with_a_connection_open() -> None:
    """Port 0 serves on a free port; stop() closes the port, idle connections included, and
    ends the server's threads."""

    def app(environ: dict[str, object], start_response: Any) -> list[bytes]:
        start_response("200 OK", [("Content-Length", "2")])
        return [b"ok"]

    server = BackgroundWsgiServer("test-server")
    before = set(threading.enumerate())
    port = server.start(app, "127.0.0.1", 0)
    idle = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    idle.request("GET", "/")
    assert idle.getresponse().read() == b"ok"
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 2
    assert [t for t in threading.enumerate() if t not in before and t.is_alive()] == []
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=1)
    idle.close()
