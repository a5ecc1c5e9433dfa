"""Reading a request body against a slow or hostile client: the one helper both servers (``serve``,
``webshop-serve``) use, so a client that sends half a body cannot hold a thread forever."""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler


def read_within(handler: BaseHTTPRequestHandler, size: int, seconds: float, idle_seconds: float) -> bytes | None:
    """``size`` bytes of ``handler``'s request body, all of them within ``seconds``; ``None`` if they did not arrive
    in time (the caller answers 408 and closes the connection). The socket waits at most ``idle_seconds`` per read
    and is left at that timeout.

    Raises:
        ConnectionError: the client closed the connection mid-body.
    """
    deadline, chunks, left = time.monotonic() + seconds, [], size
    try:
        while left:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            handler.connection.settimeout(min(remaining, idle_seconds))
            try:
                chunk = handler.rfile.read1(left)
            except TimeoutError:
                continue
            if not chunk:
                raise ConnectionError("the client closed the connection mid-body")
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        handler.connection.settimeout(idle_seconds)
    return b"".join(chunks)
