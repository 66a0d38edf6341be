"""A threaded werkzeug server on loopback, in a background thread, without request logs."""

from __future__ import annotations

import threading
from typing import Any

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server


class BackgroundWsgiServer:
    def __init__(
        self, name: str, request_handler: type[WSGIRequestHandler] = WSGIRequestHandler
    ) -> None:
        self.name = name
        self.request_handler = request_handler
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self, app: Any, host: str, port: int) -> int:
        """Serve app; returns the port (useful when port is 0)."""

        class Quiet(self.request_handler):  # type: ignore[name-defined]
            def log_request(self, *args: object, **kwargs: object) -> None:
                pass

        server = self._server = make_server(host, port, app, threaded=True, request_handler=Quiet)
        self._thread = threading.Thread(
            target=lambda: server.serve_forever(poll_interval=0.05), name=self.name, daemon=True
        )
        self._thread.start()
        return int(server.server_address[1])

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None
