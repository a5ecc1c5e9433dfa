"""Serving HTTP to a slow or hostile client: what both servers (``serve``, ``webshop-serve``) share, so that no
client can hold a thread for ever or take every thread.

- :class:`GuardedHandler`: a request handler whose socket reads and writes run against deadlines. A connection
  must send the first byte of each request within ``idle_seconds`` (of being accepted, or of the previous answer on
  a kept-alive connection), else it is closed without an answer, so silent connections give their slot back
  quickly (a client that keeps its connection between requests simply reconnects). Once the first byte of a
  request has come, its request line and headers must all arrive within ``head_seconds`` (a client that sends its
  head one byte at a time is cut off, the connection closed without an answer), and its body within the
  ``seconds`` given to :meth:`GuardedHandler.read_body`. An answer must be written out within ``write_seconds`` of
  its first byte, all of it (a client that stops reading, or reads a streamed answer a trickle at a time, is cut
  off and the connection closed), and no single read or write waits more than the handler's ``timeout``.
- :class:`GuardedServer`: a threading HTTP server that serves at most ``max_connections`` connections at once (one
  thread each); a connection over the cap gets the server's :meth:`~GuardedServer.busy_answer` (a 503) and is
  closed, as uvicorn's ``--limit-concurrency`` answers.
- :func:`port`, the servers' ``--port`` argument type, and :func:`listen_error`, the one-line error for an address
  that cannot be bound.
"""

from __future__ import annotations

import argparse
import errno
import io
import math
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentgym_bench.errors import UserError


class _DeadlineReader(io.RawIOBase):
    """A socket's reads against :attr:`deadline` (``time.monotonic()``): each read waits at most ``idle`` seconds
    and none starts past the deadline (``TimeoutError``). With :attr:`head_seconds` set, the deadline is moved to
    that far after the first bytes arrive (before them it is the wait for a request to begin)."""

    def __init__(self, sock: socket.socket, idle: float):
        super().__init__()
        self.sock, self.idle = sock, idle
        self.deadline = math.inf
        self.head_seconds: float | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the client did not send its request in time")
        self.sock.settimeout(min(self.idle, left))
        n = self.sock.recv_into(buffer)
        if n and self.head_seconds is not None:
            self.deadline, self.head_seconds = time.monotonic() + self.head_seconds, None
        return n


class _DeadlineWriter(io.BufferedIOBase):
    """A socket's writes (unbuffered, as ``socketserver``'s writer) against a deadline: each write waits at most
    ``idle`` seconds, and all the writes of one answer end within :attr:`seconds` of its first (``TimeoutError``)."""

    def __init__(self, sock: socket.socket, idle: float):
        super().__init__()
        self.sock, self.idle = sock, idle
        self.deadline = math.inf
        self.seconds: float | None = None

    def writable(self) -> bool:
        return True

    def start(self, seconds: float) -> None:
        """A new answer: its deadline is ``seconds`` after its first write."""
        self.deadline, self.seconds = math.inf, seconds

    def write(self, data: Any) -> int:
        now = time.monotonic()
        if self.seconds is not None:
            self.deadline, self.seconds = now + self.seconds, None
        left = self.deadline - now
        if left <= 0:
            raise TimeoutError("the client did not read its answer in time")
        self.sock.settimeout(min(self.idle, left))
        self.sock.sendall(data)  # raises TimeoutError when it does not end within the timeout, all of it
        with memoryview(data) as view:
            return view.nbytes

    def fileno(self) -> int:
        return self.sock.fileno()


class GuardedHandler(BaseHTTPRequestHandler):
    """``BaseHTTPRequestHandler`` with deadlines on its reads and writes (see the module docstring). The server
    gives ``idle_seconds``, ``head_seconds`` and ``write_seconds``; ``timeout`` is the longest wait of one socket
    read or write."""

    server: GuardedServer

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the socket's own reader, replaced (an open one would keep the socket from closing)
        self._reader = _DeadlineReader(self.connection, self.timeout)
        self.rfile = io.BufferedReader(self._reader)
        self._writer = _DeadlineWriter(self.connection, self.timeout)
        self.wfile = self._writer

    def handle_one_request(self) -> None:
        # Until the first byte, the wait for a request to begin; then the head's deadline (see _DeadlineReader).
        self._reader.deadline = time.monotonic() + self.server.idle_seconds
        self._reader.head_seconds = self.server.head_seconds
        self._writer.start(self.server.write_seconds)
        super().handle_one_request()  # answers nothing and closes the connection on TimeoutError (read or write)

    def parse_request(self) -> bool:
        """The head has arrived (request line and headers): lift its deadline."""
        ok = super().parse_request()
        self._reader.deadline, self._reader.head_seconds = math.inf, None
        self.connection.settimeout(self.timeout)
        return ok

    def read_body(self, size: int, seconds: float) -> bytes | None:
        """``size`` bytes of the request body, all of them within ``seconds``; ``None`` if they did not arrive in time
        (the caller answers 408 and closes the connection).

        Raises:
            ConnectionError: the client closed the connection mid-body.
        """
        self._reader.deadline = time.monotonic() + seconds
        try:
            raw = self.rfile.read(size)
        except TimeoutError:
            return None
        finally:
            self._reader.deadline = math.inf
            self.connection.settimeout(self.timeout)
        if len(raw) < size:
            raise ConnectionError("the client closed the connection mid-body")
        return raw


class GuardedServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` serving at most ``max_connections`` connections at once; the others get
    :meth:`busy_answer` and are closed. ``idle_seconds``: time a connection has to begin each request (its first
    byte); ``head_seconds``: time a request's line and headers have to arrive once begun; ``write_seconds``: time an
    answer has to be written out, all of it, once its first byte is."""

    daemon_threads = True
    request_queue_size = 128  # connections the kernel queues before accept (socketserver's default is 5)

    def __init__(self, address: tuple[str, int], handler: type[GuardedHandler], *, max_connections: int,
                 head_seconds: float, idle_seconds: float, write_seconds: float):
        if not isinstance(max_connections, int) or isinstance(max_connections, bool) or max_connections < 1:
            raise ValueError(f"max_connections={max_connections!r} must be a positive integer")
        for name, seconds in (("head_seconds", head_seconds), ("idle_seconds", idle_seconds),
                              ("write_seconds", write_seconds)):
            if not seconds > 0:
                raise ValueError(f"{name}={seconds!r} must be a positive number of seconds")
        super().__init__(address, handler)
        self.max_connections, self.head_seconds = max_connections, head_seconds
        self.idle_seconds, self.write_seconds = idle_seconds, write_seconds
        self._slots = threading.BoundedSemaphore(max_connections)

    def busy_answer(self) -> tuple[str, bytes]:
        """Content type and body of the 503 a connection over the cap gets."""
        return "text/plain", f"{self.max_connections} connections are open (the server's limit); retry".encode()

    def process_request(self, request: Any, client_address: Any) -> None:
        if self._slots.acquire(blocking=False):
            try:
                super().process_request(request, client_address)
            except BaseException:
                self._slots.release()
                raise
            return
        kind, body = self.busy_answer()
        head = (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
                "Retry-After: 1\r\nConnection: close\r\n\r\n")
        try:
            request.settimeout(1.0)
            request.sendall(head.encode() + body)
            request.shutdown(socket.SHUT_WR)
            request.settimeout(0.05)
            request.recv(65536)  # what the client sent, so that closing does not reset the answer away
        except OSError:
            pass
        request.close()

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


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
