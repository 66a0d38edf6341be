"""A WSGI app served on loopback from a background thread, without request logs.

The local API (tools.gateway) is served by waitress, a server made for load: one thread accepts
and parses (keep-alive connections cost no thread), a fixed pool of THREADS runs the app, and
the socket listens with a BACKLOG of 1,024. werkzeug's development server, which served it
before, answers every request with ``Connection: close`` and starts a thread per connection, so
each REST Proxy call was a fresh connect. The embedded AWS endpoint (tools.embedded) stays on
werkzeug: moto's request handler keeps header names with underscores (S3 metadata), which
waitress drops.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

THREADS = 64  # requests in the app at once; REST Proxy long polls hold one each
BACKLOG = 1024  # connections the kernel queues before accept (socket.listen)
STOP_TIMEOUT_S = 5.0


class BackgroundWsgiServer:
    """request_handler: serve with werkzeug's development server and this handler (moto's);
    without one, with waitress."""

    def __init__(self, name: str, request_handler: type[WSGIRequestHandler] | None = None) -> None:
        self.name = name
        self.request_handler = request_handler
        self._stop: Any = None
        self._thread: threading.Thread | None = None

    def start(self, app: Any, host: str, port: int) -> int:
        """Serve app; returns the port (useful when port is 0)."""
        if self.request_handler is None:
            run, bound = self._waitress(app, host, port)
        else:
            run, bound = self._werkzeug(app, host, port, self.request_handler)
        self._thread = threading.Thread(target=run, name=self.name, daemon=True)
        self._thread.start()
        return bound

    def _waitress(self, app: Any, host: str, port: int) -> tuple[Any, int]:
        from waitress.server import create_server

        # A queue deeper than the pool is expected in a burst: not worth a warning per request.
        logging.getLogger("waitress.queue").setLevel(logging.ERROR)
        server = create_server(
            app, host=host, port=port, threads=THREADS, backlog=BACKLOG, ident=self.name
        )

        def close_all() -> None:  # run by the server's own loop: closing its map ends run()
            for dispatcher in list(server._map.values()):
                dispatcher.close()

        def stop() -> None:
            thread = self._thread
            if thread is not None and thread.is_alive():
                with contextlib.suppress(OSError):  # its loop ended meanwhile, trigger closed
                    server.trigger.pull_trigger(close_all)
                thread.join(timeout=STOP_TIMEOUT_S)
            if thread is None or not thread.is_alive():
                close_all()  # no loop runs now: whatever it left open is closed here
            server.task_dispatcher.shutdown(timeout=STOP_TIMEOUT_S)

        self._stop = stop
        return server.run, int(server.effective_port)

    def _werkzeug(
        self, app: Any, host: str, port: int, handler: type[WSGIRequestHandler]
    ) -> tuple[Any, int]:
        class Quiet(handler):  # type: ignore[valid-type,misc]
            def log_request(self, *args: object, **kwargs: object) -> None:
                pass

            def send_response(self, code: int, message: str | None = None) -> None:
                """Without http.server's own Server header: the app sends one (moto's
                "amazon.com"), and a second is refused by strict clients (aiohttp)."""
                self.send_response_only(code, message)
                self.send_header("Date", self.date_time_string())

        server: BaseWSGIServer = make_server(host, port, app, threaded=True, request_handler=Quiet)

        def stop() -> None:
            server.shutdown()
            server.server_close()
            if self._thread is not None:
                self._thread.join(timeout=STOP_TIMEOUT_S)

        self._stop = stop
        return lambda: server.serve_forever(poll_interval=0.05), int(server.server_address[1])

    def stop(self) -> None:
        if self._stop is not None:
            self._stop()
        self._stop = self._thread = None
