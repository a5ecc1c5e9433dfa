"""What both HTTP servers (``serve``, ``webshop-serve``) share: an ASGI app (Starlette) on uvicorn's h11 protocol,
with the few guards uvicorn does not have, so that no client can hold the server for long or take its capacity; and
:class:`ServerLimits`, every limit the servers (``openenv-serve`` too) enforce, each written once with its unit,
default and the answer to a client over it.

uvicorn (on asyncio, the stack vLLM, ``transformers serve`` and OpenEnv serve on) holds an idle or slow connection as
a few kilobytes, not a thread, and h11 bounds a request's line and headers (``max_head_bytes``, else a 400).
:class:`HttpServer` adds, per connection (:class:`_GuardedProtocol`, a subclass of uvicorn's ``H11Protocol``):

- an idle deadline: a connection must send the first byte of each request within ``idle_seconds`` of being accepted
  or of the previous answer, else it is closed unanswered (uvicorn's keep-alive timeout covers only the second);
- a head deadline: once a request's first byte has come, its line and headers must all arrive within
  ``head_seconds`` (a client that sends its head a byte at a time is cut off, unanswered); uvicorn has none;
- a write deadline: an answer must be written out, all of it, within ``write_seconds`` of its first byte, else the
  connection is aborted (a client that stops reading, or reads a trickle, is cut off; uvicorn would wait for ever);
- a connection cap: a connection over ``max_connections`` open at once is answered the server's 503 as soon as it
  is accepted and closed;

and per request (:meth:`HttpServer.admit`, :func:`read_body`): at most ``max_requests`` requests are read and
answered at once (a 503 for more; this bounds the memory bodies take), a body is at most ``max_body_bytes`` and must
arrive within ``body_seconds`` (413, 408). A request h11 cannot parse (a bad request line, header or
``Content-Length``) gets the server's own 400 (:meth:`HttpServer.bad_request`), never a traceback.

Also :func:`port`, the servers' ``--port`` argument type, :func:`listen_error`, the one-line error for an address that
cannot be bound, and :func:`raise_open_files_limit`. The limits named above are :class:`ServerLimits`' fields.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import logging
import math
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, fields, replace
from typing import Any

import anyio
import h11
from starlette.requests import ClientDisconnect, Request
from uvicorn import Config, Server
from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.h11_impl import H11Protocol

from agentgym_bench.errors import UserError

try:
    import resource
except ImportError:  # not on Windows
    resource = None


@dataclass(frozen=True)
class ServerLimits:
    """Every limit the servers enforce, defined once: ``serve`` (:class:`~agentgym_bench.serving.chat.ChatServer`,
    its ``/v1/responses`` route included), ``openenv-serve`` (:func:`~agentgym_bench.adapters.openenv.make_app`) and
    ``webshop-serve`` (:class:`~agentgym_bench.envs.webshop.server.WebShopServer`, whose default,
    :data:`~agentgym_bench.envs.webshop.server.LIMITS`, differs from the defaults here in its write deadline and
    request cap) each take one, a default instance unless told otherwise, and their command-line flags for a limit
    fill it (:meth:`with_flags`).

    Each field says its unit, its default (the value the servers had as constants), which server enforces it and
    what a client over it gets. The two servers enforce different fields (``serve``'s HTTP guards, ``openenv-serve``'s
    WebSocket sessions), so one set of defaults holds both. Made with a bad value (a count below 1, seconds not
    positive and finite): ``ValueError`` naming the field.
    """

    # A connection and a request on HttpServer (serve; webshop-serve with its own values).
    max_head_bytes: int = 16 * 1024
    """Bytes of a request's line and headers h11 buffers before they end (16 KiB, uvicorn's default; a longer head
    that arrives whole in one read is parsed). Over: the server's 400 (:meth:`HttpServer.bad_request`: "malformed
    HTTP request ..."), then the connection is closed."""
    head_seconds: float = 10.0
    """Seconds a request's line and headers have to arrive once its first byte has come. Over: the connection is
    closed unanswered (a client sending its head a byte at a time is cut off)."""
    idle_seconds: float = 10.0
    """Seconds a connection has to send the first byte of each request, after connecting or after the previous
    answer (also uvicorn's keep-alive timeout). Over: the connection is closed unanswered, freeing its slot of
    :attr:`max_connections`."""
    max_body_bytes: int = 1 << 20
    """Bytes of a request body (1 MiB). Over: 413 "the body must be at most N bytes" (a ``Content-Length`` over it is
    refused before the body is read; a chunked body when it grows over it), then the connection is closed."""
    body_seconds: float = 30.0
    """Seconds a client has to send a whole request body. Over: 408 "the body did not arrive within N s", then the
    connection is closed."""
    write_seconds: float = 60.0
    """Seconds an answer has to be written out, all of it, streamed or not, from its first byte. Over: the
    connection is aborted, the answer cut (a client that stops reading, or reads a trickle, holds it no longer)."""
    max_connections: int = 4096
    """Connections open at once, idle and slow ones included (each a few kilobytes, not a thread; ``serve
    --max-connections``). Over: the new connection is answered 503 "N connections are open (the server's limit);
    retry" with ``Retry-After: 1`` as soon as it is accepted, and closed."""
    max_requests: int = 64
    """Requests read and answered at once (``serve --max-requests``; in ``serve`` also its worker threads); bounds
    the memory bodies take to ``max_requests * max_body_bytes``. Over: 503 "N requests are being served (the
    server's limit); retry" with ``Retry-After: 1``."""
    backlog: int = 2048
    """Connections the kernel queues before they are accepted. Over: the kernel does not take the connection
    (the client's connect waits and retries, or fails); no HTTP answer."""

    # serve's request bodies and stored responses.
    max_json_depth: int = 64
    """Levels of nested arrays and objects a ``serve`` request body may have (a tool's JSON schema is a few; the
    chat template recurses into them). Over: 400 "the body nests arrays and objects too deeply (more than N
    levels)"."""
    responses_kept: int = 256
    """Stored responses ``serve``'s ``/v1/responses`` keeps in memory (each with its whole conversation) for
    ``previous_response_id`` and ``GET /v1/responses/{id}``. Over: the oldest is forgotten; asked for after,
    404 ``previous_response_not_found`` (``GET``: ``not_found``)."""

    # openenv-serve's WebSocket sessions (OpenEnv's server on plain uvicorn).
    max_sessions: int = 64
    """WebSocket sessions open at once on ``openenv-serve`` (``--max-sessions``). Over: OpenEnv answers the new
    socket an error message with ``code: CAPACITY_REACHED``."""
    session_ttl: float | None = 600.0
    """Seconds a WebSocket session may send nothing (``openenv-serve --session-ttl``; ``None``, or 0 on the command
    line: no limit). Over: the session is ended as for a disconnect (its env closed) and the socket closed."""
    ws_max_bytes: int = 4 << 20
    """Bytes of one WebSocket message to ``openenv-serve`` (4 MiB: four times ``agent.env.MAX_REPLY_LENGTH``, the
    longest reply an action holds, which JSON escaping can grow). Over: uvicorn closes that connection (1009,
    message too big); other sessions go on."""

    def __post_init__(self) -> None:
        for field in fields(self):
            name, value = field.name, getattr(self, field.name)
            if name == "session_ttl":
                if value is not None and not (isinstance(value, (int, float)) and value > 0):
                    raise ValueError(f"session_ttl={value!r} must be a positive number of seconds (or None: no limit)")
            elif isinstance(field.default, int):
                if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                    raise ValueError(f"{name}={value!r} must be a positive integer")
            elif not (isinstance(value, (int, float)) and 0 < value < math.inf):
                raise ValueError(f"{name}={value!r} must be a positive number of seconds")

    def with_flags(self, **values: Any) -> ServerLimits:
        """A copy with the limits a command line gave (``max_connections=args.max_connections``); a bad one is a
        :class:`UserError` naming its flag (``--max-connections 0: max_connections=0 must be ...``)."""
        for name, value in values.items():
            try:
                replace(self, **{name: value})
            except ValueError as err:
                raise UserError(f"--{name.replace('_', '-')} {value}: {err}") from None
        return replace(self, **values)


class BodyError(Exception):
    """A request body that cannot be read: HTTP ``status`` and a message for the client."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


class _GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol with the idle, head and write deadlines and the connection cap of the module docstring.
    ``owner`` (set on a subclass per server) is the :class:`HttpServer` whose limits and answers apply."""

    owner: HttpServer

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._timer: asyncio.TimerHandle | None = None  # the idle or head deadline
        self._write_timer: asyncio.TimerHandle | None = None
        self._in_head = False
        self._turned_away = len(self.connections) > self.owner.limits.max_connections
        if self._turned_away:
            self._turn_away()
        else:
            self._arm(self.owner.limits.idle_seconds)

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        """No request began in time, or its head did not end in time: close the connection unanswered."""
        self._timer = None
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request is being answered (its head came in the meantime)
        self.transport.abort() if self.transport.get_write_buffer_size() else self.transport.close()

    def _turn_away(self) -> None:
        """The 503 of a connection over the cap, sent at once; what the client sends is read and dropped (closing
        with it unread would reset the answer away) until it closes, for at most a second."""
        status, kind, body = self.owner.busy_answer()
        head = (f"HTTP/1.1 {status} Service Unavailable\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
                "Retry-After: 1\r\nConnection: close\r\n\r\n")
        self.transport.write(head.encode() + body)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self._timer = self.loop.call_later(1.0, self.transport.abort)

    def data_received(self, data: bytes) -> None:
        if self._turned_away:
            return
        super().data_received(data)  # uvicorn's keep-alive timer is cancelled; a request whose head ended is begun
        if self.transport.is_closing():
            self._disarm()
        elif self.conn.their_state is h11.IDLE:  # a request's head has begun and not ended (or nothing came)
            if not self._in_head:
                self._in_head = True
                self._arm(self.owner.limits.head_seconds)
        elif self._in_head or self._timer is not None:  # the head has ended: the app's deadlines apply now
            self._in_head = False
            self._disarm()

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not None and self.cycle is not cycle:
            self._in_head = False
            self._disarm()
            self._time_writes(self.cycle)

    def _time_writes(self, cycle: Any) -> None:
        """Start the write deadline when ``cycle``'s answer starts (its task has not run yet: its ``send`` is looked
        up when it does)."""
        send = cycle.send

        async def timed_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                if self._write_timer is not None:
                    self._write_timer.cancel()
                self._write_timer = self.loop.call_later(self.owner.limits.write_seconds, self._write_expired, cycle)
            await send(message)

        cycle.send = timed_send

    def _write_expired(self, cycle: Any) -> None:
        self._write_timer = None
        if not (cycle.response_complete and self.transport.get_write_buffer_size() == 0):
            self.transport.abort()  # close() would wait for the client to read what is buffered

    def on_response_complete(self) -> None:
        super().on_response_complete()  # arms uvicorn's keep-alive timer: idle_seconds
        if self._write_timer is not None and self.transport.get_write_buffer_size() == 0:
            self._write_timer.cancel()
            self._write_timer = None

    def eof_received(self) -> bool | None:
        """The client half-closed: finish the answer under way (then close), else close now."""
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = False
            return True
        return None

    def send_400_response(self, msg: str) -> None:
        """A request h11 cannot parse: the server's own 400, then close."""
        kind, body = self.owner.bad_request()
        response = h11.Response(status_code=400, reason=b"Bad Request",
                                headers=[(b"content-type", kind.encode()),
                                         (b"content-length", str(len(body)).encode()), (b"connection", b"close")])
        with contextlib.suppress(h11.LocalProtocolError):  # h11 refused the request before any answer could start
            self.transport.write(self.conn.send(response) + self.conn.send(h11.Data(data=body))
                                 + self.conn.send(h11.EndOfMessage()))
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None
        super().connection_lost(exc)


class HttpServer:
    """An ASGI ``app`` served by uvicorn (h11) on ``host:port`` (0: a free port, see :attr:`server_address`) with
    the guards of the module docstring, their values from ``limits`` (:class:`ServerLimits`). The socket is bound at
    construction (``OSError`` if it cannot be; see :func:`listen_error`). :meth:`serve_forever` serves in this thread
    (until Ctrl-C or :meth:`shutdown`), :meth:`start` in a background one; use as a context manager for the latter.

    Subclasses give :meth:`busy_answer` and :meth:`bad_request` (their error shape) and wrap each request in
    :meth:`admit` and :func:`read_body`."""

    def __init__(self, app: Any, host: str, port: int, limits: ServerLimits | None = None, *, verbose: bool = False):
        self.limits = limits or ServerLimits()
        self.verbose = verbose
        self.requests = 0  # being read or answered now (only the event loop's thread changes it)
        protocol = type("GuardedProtocol", (_GuardedProtocol,), {"owner": self})
        self.config = Config(app, http=protocol, loop="asyncio", lifespan="off", interface="asgi3",
                             proxy_headers=False, log_config=LOGGING_CONFIG if verbose else None,
                             log_level=logging.INFO if verbose else logging.ERROR, access_log=verbose,
                             timeout_keep_alive=self.limits.idle_seconds,  # type: ignore[arg-type] - a float works
                             h11_max_incomplete_event_size=self.limits.max_head_bytes, backlog=self.limits.backlog,
                             timeout_graceful_shutdown=5, server_header=False)
        self.server = Server(self.config)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted sockets only when their proto says TCP, and
        # without it Nagle's algorithm holds uvicorn's body write behind its head for a delayed ACK (~40 ms a request)
        self.socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind((host, port))
            self.socket.listen(self.limits.backlog)
        except OSError:
            self.socket.close()
            raise
        self.server_address: tuple[str, int] = self.socket.getsockname()[:2]
        self._thread: threading.Thread | None = None

    # ----- what subclasses answer -----------------------------------------------------------------------------------

    def busy_answer(self) -> tuple[int, str, bytes]:
        """Status, content type and body of the answer to a connection over ``limits.max_connections``."""
        message = f"{self.limits.max_connections} connections are open (the server's limit); retry"
        return 503, "text/plain", message.encode()

    def bad_request(self) -> tuple[str, bytes]:
        """Content type and body of the 400 for a request h11 cannot parse."""
        return "text/plain", b"malformed HTTP request (its request line, a header or its Content-Length)"

    # ----- per request ----------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def admit(self) -> Iterator[bool]:
        """``with server.admit() as admitted:`` around a request's reading and answering; ``admitted`` is false when
        ``limits.max_requests`` are under way already (answer a 503). Call on the event loop only."""
        if self.requests >= self.limits.max_requests:
            yield False
            return
        self.requests += 1
        try:
            yield True
        finally:
            self.requests -= 1

    # ----- running --------------------------------------------------------------------------------------------------

    def serve_forever(self) -> None:
        """Serve in this thread until Ctrl-C (in the main thread) or :meth:`shutdown`."""
        self.server.run(sockets=[self.socket])

    def shutdown(self) -> None:
        """Ask :meth:`serve_forever` to return (within a tenth of a second, once open answers end)."""
        self.server.should_exit = True

    def server_close(self) -> None:
        """Close the listening socket."""
        self.socket.close()

    def start(self) -> HttpServer:
        """Serve in a background thread; return once the server accepts connections."""
        self._thread = threading.Thread(target=self.serve_forever, daemon=True, name=f"http:{self.server_address[1]}")
        self._thread.start()
        while not self.server.started and self._thread.is_alive():
            self._thread.join(0.01)
        return self

    def stop(self) -> None:
        """Stop serving (answers under way get a few seconds to end) and close the socket."""
        self.shutdown()
        if self._thread is not None:
            self._thread.join()
        self.server_close()

    def __enter__(self) -> HttpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def read_body(request: Request, max_bytes: int, seconds: float, *, length_required: bool = False) -> bytes:
    """The body of ``request``: at most ``max_bytes`` (a ``Content-Length`` over it is refused before reading; a
    chunked body is counted as it comes), all of it within ``seconds``.

    Raises:
        BodyError: 411 without ``Content-Length`` or ``Transfer-Encoding`` when ``length_required``, 413 for a body
            over ``max_bytes``, 408 for one that did not arrive in time.
        ClientDisconnect: the client closed the connection mid-body.
    """
    length = request.headers.get("content-length")
    if length is None and length_required and "transfer-encoding" not in request.headers:
        raise BodyError(411, "send a Content-Length header")
    if length is not None and int(length) > max_bytes:  # h11 checked it is ASCII digits
        raise BodyError(413, f"the body must be at most {max_bytes} bytes, Content-Length says {int(length)}")
    chunks, size = [], 0
    try:
        with anyio.fail_after(seconds):
            async for chunk in request.stream():
                size += len(chunk)
                if size > max_bytes:
                    raise BodyError(413, f"the body must be at most {max_bytes} bytes")
                chunks.append(chunk)
    except TimeoutError:
        raise BodyError(408, f"the body did not arrive within {seconds:g} s") from None
    return b"".join(chunks)


def port(text: str) -> int:
    """``--port`` values: an integer in [0, 65535] (0: the system picks a free port)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (an integer in 0..65535)") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is out of range: a port is in 0..65535 (0 picks a free one)")
    return value


def listen_error(host: str, port_number: int, err: OSError) -> UserError:
    """The :class:`UserError` for a server that could not bind ``host:port_number``."""
    if err.errno == errno.EADDRINUSE:
        return UserError(f"cannot listen on {host}:{port_number}: the port is in use (another server?); "
                         "choose another with --port, or --port 0 for a free one")
    return UserError(f"cannot listen on {host}:{port_number}: {err.strerror or err}")


def raise_open_files_limit(wanted: int) -> int:
    """Raise this process's soft limit on open files towards ``wanted`` (never above the hard limit), as vLLM's
    server does, so that ``--max-connections`` connections can be accepted; the soft limit now."""
    if resource is None:  # not on Windows
        return wanted
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
    return soft


__all__ = ["BodyError", "ClientDisconnect", "HttpServer", "ServerLimits", "listen_error", "port",
           "raise_open_files_limit", "read_body"]
