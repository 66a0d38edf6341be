"""The agent's asyncio server: one task per connection, responses in request order.

A connection's requests are read as they arrive and handled concurrently (a client pipelines
up to five produce requests), but answered strictly in the order they came, as Kafka does, and
writes apply in order: a produce request waits for the previous produce on that connection, an
offset commit for the previous offset commit (a client's asynchronous auto-commits overlap;
applied out of order, a slow earlier commit would land after a later one and move the group's
offset back). A
malformed or oversized frame, or a request for an API or version not offered, closes that
connection with a log line; nothing else is affected.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import ssl
import threading
import time
import uuid
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from objectlog.clients.direct import ObjectLog
from objectlog.kafka.auth import SASL_AUTHENTICATE, SASL_HANDSHAKE, ConnectionAuth
from objectlog.kafka.authorizer import HOST
from objectlog.kafka.classic import INITIAL_REBALANCE_DELAY_MS
from objectlog.kafka.context import CONNECTION, PRINCIPAL, Broker, principal_of
from objectlog.kafka.handlers import OFFSET_COMMIT, PRODUCE, SUPPORTED, Handlers
from objectlog.kafka.metrics import ApiMetrics, carries_error
from objectlog.kafka.users import Users
from objectlog.kafka.wire import (
    MalformedFrame,
    Request,
    build,
    encode_response,
    parse_request,
    read_frame,
    response_schema,
)
from objectlog.services.access import OFF as access_off
from objectlog.services.access import AccessSettings, print_line

logger = logging.getLogger(__name__)
MAX_FRAME_BYTES = 100 << 20  # Kafka's socket.request.max.bytes default
IN_FLIGHT = 5  # requests read ahead per connection
ORDERED_WRITES = (PRODUCE, OFFSET_COMMIT)  # each waits for the previous one of its kind


@dataclass(frozen=True)
class AgentConfig:
    host: str = "127.0.0.1"
    port: int = 9092
    advertised_host: str | None = None
    advertised_port: int | None = None
    max_frame_bytes: int = MAX_FRAME_BYTES
    sasl: bool = False  # require SASL/SCRAM-SHA-512 (users: `objectlog users`)
    tls_cert: str | None = None  # PEM files: the agent terminates TLS itself
    tls_key: str | None = None
    metrics_interval_s: float = 0  # print per-API metrics (CloudWatch EMF) this often; 0: never
    worker_threads: int = 64  # library calls in flight (asyncio's default pool has cpus + 4)
    # How long a classic group that was Empty waits for more members before its first
    # rebalance completes (each joining member extends it, up to the rebalance timeout).
    initial_rebalance_delay_ms: int = INITIAL_REBALANCE_DELAY_MS
    # Kafka ACLs: off unless enabled (services.access: OBJECTLOG_AUTHORIZER=acls, super users,
    # allow.everyone.if.no.acl.found; docs/security.md)
    access: AccessSettings = access_off

    @property
    def security_protocol(self) -> str:
        """Kafka's name for what this listener speaks (TLS at a load balancer is not seen)."""
        tls = self.tls_cert is not None
        if self.sasl:
            return "SASL_SSL" if tls else "SASL_PLAINTEXT"
        return "SSL" if tls else "PLAINTEXT"


class Agent:
    """A Kafka-protocol agent over one ObjectLog; start() binds, serve_forever() runs."""

    def __init__(self, log: ObjectLog, config: AgentConfig) -> None:
        self.log = log
        self.config = config
        self.handlers: Handlers | None = None
        self.server: asyncio.base_events.Server | None = None
        self.connections: set[asyncio.Task[Any]] = set()
        self.users = Users(log.items.documents) if config.sasl else None
        self.metrics = ApiMetrics()
        self._emitter: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        assert self.server is not None, "start() first"
        return int(self.server.sockets[0].getsockname()[1])

    async def start(self) -> Agent:
        # Every library call runs on a worker thread; a waiting JoinGroup, a slow DynamoDB
        # call or a fetch's GETs hold one, so the pool must outnumber what is in flight.
        asyncio.get_running_loop().set_default_executor(
            ThreadPoolExecutor(self.config.worker_threads, thread_name_prefix="kafka-agent")
        )
        self.server = await asyncio.start_server(
            self._connection, self.config.host, self.config.port, ssl=self._tls()
        )
        broker = Broker(
            host=self.config.advertised_host or self.config.host,
            port=self.config.advertised_port or self.port,
            cluster_id=f"objectlog-{self.log.config.table}",
            listen_host=self.config.host,
            listen_port=self.port,
            security_protocol=self.config.security_protocol,
            initial_rebalance_delay_ms=self.config.initial_rebalance_delay_ms,
        )
        self.handlers = Handlers(
            self.log,
            broker,
            self.config.initial_rebalance_delay_ms,
            self.config.access,
            print_line if self.config.metrics_interval_s > 0 else None,
        )
        if self.config.metrics_interval_s > 0:
            self._emitter = asyncio.create_task(self._emit_metrics())
        logger.debug(
            "Kafka agent on %s:%d, advertising %s:%d",
            self.config.host,
            self.port,
            broker.host,
            broker.port,
        )
        return self

    def _tls(self) -> ssl.SSLContext | None:
        if self.config.tls_cert is None:
            return None
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.config.tls_cert, self.config.tls_key)
        return context

    async def serve_forever(self) -> None:
        assert self.server is not None, "start() first"
        async with self.server:
            await self.server.serve_forever()

    async def _emit_metrics(self) -> None:
        service = f"objectlog-agent-{self.log.config.table}"
        while True:
            await asyncio.sleep(self.config.metrics_interval_s)
            for line in self.metrics.emf_lines(service):
                print(line, flush=True)

    async def stop(self) -> None:
        if self._emitter is not None:
            self._emitter.cancel()
        if self.server is not None:
            self.server.close()
        for task in list(self.connections):  # open connections end with the agent
            task.cancel()
        await asyncio.gather(*self.connections, return_exceptions=True)
        if self.handlers is not None:
            await self.handlers.fetching.watcher.stop()
            await self.handlers.producing.stop()
            await asyncio.to_thread(self.handlers.close)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        host = str(peer[0]) if isinstance(peer, tuple) and peer else "*"
        connection = uuid.uuid4().hex  # this connection's id (kafka.context.CONNECTION)
        this = asyncio.current_task()
        assert this is not None
        self.connections.add(this)
        answers: asyncio.Queue[Awaitable[bytes | None] | None] = asyncio.Queue(IN_FLIGHT)
        sender = asyncio.create_task(self._send_in_order(answers, writer))
        previous: dict[int, asyncio.Task[Any]] = {}  # the last produce, the last offset commit
        ended_cleanly = False
        auth = ConnectionAuth(self.users)
        try:
            while True:
                frame = await read_frame(reader, self.config.max_frame_bytes)
                if frame is None:
                    ended_cleanly = True
                    break
                request = parse_request(frame, SUPPORTED)
                if not auth.allows(request.api_key):
                    raise MalformedFrame(f"API {request.api_key} before authentication")
                ordered = request.api_key in ORDERED_WRITES
                after = previous.get(request.api_key if ordered else PRODUCE)
                task = asyncio.create_task(self._answer(request, after, auth, host, connection))
                if ordered:
                    previous[request.api_key] = task
                await answers.put(task)
                if request.api_key in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
                    await asyncio.wait([task])  # SASL steps run one after the other
                    if auth.failed:  # answered, then closed
                        logger.warning("authentication failed for %s (%s)", peer, auth.user)
                        ended_cleanly = True
                        break
        except MalformedFrame as e:
            logger.warning("closing the Kafka connection from %s: %s", peer, e)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client went away, or the agent is stopping
        finally:
            await self._finish(answers, sender, drain=ended_cleanly)
            writer.close()
            self.connections.discard(this)

    async def _finish(
        self,
        answers: asyncio.Queue[Awaitable[bytes | None] | None],
        sender: asyncio.Task[None],
        *,
        drain: bool,
    ) -> None:
        """At a clean end of the stream the requests read so far are still answered; after a
        malformed frame or a stop they are not."""
        if drain:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await answers.put(None)
                await sender
                return
        sender.cancel()
        with contextlib.suppress(BaseException):
            await sender

    async def _answer(
        self,
        request: Request,
        after: asyncio.Task[Any] | None,
        auth: ConnectionAuth,
        host: str,
        connection: str,
    ) -> bytes | None:
        if after is not None:  # writes on a connection apply in order
            with contextlib.suppress(Exception):
                await after
        assert self.handlers is not None
        started = time.perf_counter()
        values: Any = None
        try:
            if request.api_key == SASL_HANDSHAKE:
                values = await asyncio.to_thread(auth.handshake, request)
            elif request.api_key == SASL_AUTHENTICATE:
                values = await asyncio.to_thread(auth.authenticate, request)
            else:  # each request is answered in its own task: the principal stays with it
                PRINCIPAL.set(principal_of(auth.user if auth.authenticated else None))
                HOST.set(host)
                CONNECTION.set(connection)
                values = await self.handlers.routes[request.api_key](request)
            if values is None:
                return None
            api_version = request.api_version
            if request.body is None:  # an ApiVersions version not offered: answered at v0
                api_version = 0
            response = build(response_schema(request.api_key, api_version), values)
            return encode_response(request, response)
        except Exception:
            logger.exception("API %d v%d failed", request.api_key, request.api_version)
            values = {"error_code": -1}
            raise
        finally:
            elapsed = time.perf_counter() - started
            self.metrics.record(request.api_key, elapsed, error=carries_error(values))
            logger.debug(
                "API %d v%d correlation %d from client %s answered in %.1f ms",
                request.api_key,
                request.api_version,
                request.correlation_id,
                request.client_id,
                elapsed * 1000,
            )

    async def _send_in_order(
        self,
        answers: asyncio.Queue[Awaitable[bytes | None] | None],
        writer: asyncio.StreamWriter,
    ) -> None:
        while (next_answer := await answers.get()) is not None:
            try:
                frame = await next_answer
            except Exception:
                writer.close()  # a handler bug: the client sees the connection drop
                return
            if frame is not None:
                writer.write(frame)
                await writer.drain()
                if logger.isEnabledFor(logging.DEBUG):
                    logger.debug(
                        "sent %s the answer to correlation %d",
                        writer.get_extra_info("peername"),
                        _correlation_id(frame),
                    )


async def run_agent(log: ObjectLog, config: AgentConfig, *, stop_on_signals: bool = False) -> None:
    """Serve until cancelled (or, with stop_on_signals, until SIGINT or SIGTERM)."""
    agent = await Agent(log, config).start()
    serving = asyncio.create_task(agent.serve_forever())
    if stop_on_signals:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, serving.cancel)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await serving
    finally:
        await agent.stop()


class AgentThread:
    """An agent on an event loop of its own thread: for `objectlog dev` and the tests."""

    def __init__(self, log: ObjectLog, config: AgentConfig) -> None:
        self.agent = Agent(log, config)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="objectlog-kafka-agent", daemon=True
        )

    @property
    def address(self) -> str:
        return f"{self.agent.config.host}:{self.agent.port}"

    def start(self) -> AgentThread:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.agent.start(), self.loop).result(timeout=30)
        return self

    def stop(self) -> None:
        if not self.thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self.agent.stop(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)
        self.loop.close()


def _correlation_id(frame: bytes) -> int:
    """A response frame's correlation id: every response header starts with it, after the size."""
    return int.from_bytes(frame[4:8], "big", signed=True)
