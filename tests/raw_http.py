"""One HTTP exchange on a raw socket, for the servers' abuse tests: bytes a client library would refuse to send."""

from __future__ import annotations

import json
import socket
import time


def raw_exchange(port: int, request: bytes, wait: float = 0.0) -> tuple[int, object]:
    """Send ``request`` as it is to ``127.0.0.1:port``, wait ``wait`` seconds, then read the whole answer (its
    ``Content-Length``) within 20 s: ``(status, JSON body)``."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(request)
        time.sleep(wait)
        data = b""
        while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < content_length(data):
            chunk = sock.recv(65536)
            assert chunk, f"the server closed the connection without a whole answer: {data[:200]!r}"
            data += chunk
    return int(data.split(b" ", 2)[1]), json.loads(data.split(b"\r\n\r\n", 1)[1])


def content_length(data: bytes) -> int:
    """The ``Content-Length`` of an answer's head (0 when it has none)."""
    for line in data.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0
