"""A client for the HTTP protocol of AgentGym's WebShop server (``agentenv-webshop``), stdlib only.

The protocol (AgentGym, github.com/WooooDyy/AgentGym, ``agentenv-webshop/agentenv_webshop/server.py``; ``agentgym-bench
webshop-serve`` speaks the same):

==================================== =================================================================
``GET  /``                           ``"ok"``
``POST /create``                     a new env's id (``int``)
``POST /reset {env_idx, session_id}`` ``[observation, null]``; an integer ``session_id`` is a goal index
``POST /step {env_idx, action}``     ``{"state": str, "reward": float, "done": bool, "info": null}``
``GET  /observation?env_idx=``       the page text (``str``)
``GET  /available_actions?env_idx=`` ``{"has_search_bar": bool, "clickables": [str, ...]}``
``GET  /instruction_text?env_idx=``  the instruction (``str``)
``POST /close {env_idx}``            ``{"closed": bool}``
==================================== =================================================================

Failures are :class:`WebShopServerError` (server unreachable, timed out, or an HTTP error) or its subclass
:class:`WebShopProtocolError` (the server answered something that is not the protocol); every message names the
full URL. Each attempt of a request has a total deadline of ``timeout`` seconds for connecting, sending and reading
the whole answer (a server that drips one byte at a time is cut off too, not only a silent one). Requests that are
safe to repeat are retried on connection errors, timeouts and HTTP 502/503/504, with exponential backoff. A
kept-alive connection that the server has closed while it was idle (``webshop-serve`` closes one after 10 s without
a request) is replaced by a new one before the request is sent, costing no retry. ``/step``
is not idempotent, so it is retried only when the action cannot have been applied: the connection was refused, a
kept-alive connection turned out closed, or the server answered 503; a timeout or a connection dropped mid-answer
during ``/step`` is an error. One call therefore returns or raises within :attr:`WebShopClient.budget`
``= (retries + 1) * timeout + backoff * (2**retries - 1)`` seconds (30.3 s with the defaults).
"""

from __future__ import annotations

import http.client
import json
import math
import select
import socket
import time
import urllib.parse
from typing import Any

from agentgym_bench.envs import arguments

MAX_RESPONSE_BYTES = 8 << 20
RETRY_STATUSES = (502, 503, 504)


class WebShopServerError(RuntimeError):
    """The WebShop server could not be reached, timed out or answered with an HTTP error."""


class WebShopProtocolError(WebShopServerError):
    """The WebShop server answered something that does not follow the protocol."""


class _DeadlineSocket(socket.socket):
    """A socket whose sends and receives all end by ``connection.deadline`` (a ``time.monotonic()`` value)."""

    connection: _DeadlineConnection

    def _arm(self) -> None:
        left = self.connection.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's deadline passed")
        self.settimeout(left)

    def recv_into(self, *args: Any, **kwargs: Any) -> int:
        self._arm()
        return super().recv_into(*args, **kwargs)

    def recv(self, *args: Any, **kwargs: Any) -> bytes:
        self._arm()
        return super().recv(*args, **kwargs)

    def sendall(self, *args: Any, **kwargs: Any) -> None:
        self._arm()
        return super().sendall(*args, **kwargs)


class _DeadlineConnection(http.client.HTTPConnection):
    """An ``HTTPConnection`` whose socket operations share the deadline in :attr:`deadline` (set per request)."""

    deadline = math.inf

    def connect(self) -> None:
        self.timeout = max(self.deadline - time.monotonic(), 1e-3)
        super().connect()
        plain = self.sock
        self.sock = _DeadlineSocket(plain.family, plain.type, plain.proto, fileno=plain.detach())
        self.sock.connection = self


def _dropped(sock: socket.socket | None) -> bool:
    """Whether an idle kept-alive connection was closed by the server: it is readable (a server sends nothing
    unasked, so what is there is its close, or data that can only be an error). What urllib3 checks before reusing a
    connection."""
    if sock is None:
        return True
    try:
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def _check_url(base_url: str) -> urllib.parse.SplitResult:
    if not isinstance(base_url, str):
        raise ValueError(f"base_url={base_url!r} must be a string such as 'http://127.0.0.1:36001'")
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme != "http" or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f"base_url={base_url!r} must be an http:// URL with a host, e.g. 'http://127.0.0.1:36001'")
    try:
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as err:
        raise ValueError(f"base_url={base_url!r} has an invalid port") from err
    return parts


class WebShopClient:
    """Talks to one WebShop server over one persistent HTTP/1.1 connection (not thread-safe: one per thread/env).

    Args:
        base_url: ``http://host:port`` of the server (a path prefix is allowed).
        timeout: seconds allowed for one attempt of a request, from connecting to the end of the answer; > 0.
        retries: extra attempts for retryable failures (see the module docstring); 0..10.
        backoff: seconds before the first retry, doubled each time; >= 0.

    Every call returns or raises within :attr:`budget` seconds.
    """

    def __init__(self, base_url: str, *, timeout: float = 10.0, retries: int = 2, backoff: float = 0.1):
        parts = _check_url(base_url)
        self.base_url = base_url.rstrip("/")
        self.timeout = arguments.number("timeout", timeout, low=0.0, low_open=True)
        self.retries = arguments.integer("retries", retries, low=0, high=10)
        self.backoff = arguments.number("backoff", backoff, low=0.0)
        self._host, self._port = parts.hostname, parts.port or 80
        self._prefix = parts.path.rstrip("/")
        self._conn: _DeadlineConnection | None = None
        self._reused = False

    @property
    def budget(self) -> float:
        """Most seconds one call can take: ``(retries + 1) * timeout + backoff * (2**retries - 1)``."""
        return (self.retries + 1) * self.timeout + self.backoff * (2**self.retries - 1)

    def _where(self, method: str, path: str) -> str:
        """``METHOD http://host:port/path``, the prefix of every error message."""
        return f"{method} {self.base_url}{path}"

    # ----- transport ------------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (the server's envs stay; see :meth:`close_env`)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _once(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        if self._conn is not None and _dropped(self._conn.sock):
            self.close()  # the server closed the kept-alive connection while idle (webshop-serve after 10 s)
        self._reused = self._conn is not None
        if self._conn is None:
            self._conn = _DeadlineConnection(self._host, self._port, timeout=self.timeout)
        self._conn.deadline = time.monotonic() + self.timeout
        headers = {"Content-Type": "application/json", "Accept": "application/json"} if body is not None else {}
        try:
            self._conn.request(method, self._prefix + path, body=body, headers=headers)
            response = self._conn.getresponse()
            length = response.length  # from Content-Length; None if the body is chunked or ends at close
            too_long = length is not None and length > MAX_RESPONSE_BYTES
            # read() of a known length raises IncompleteRead if the body is cut short; otherwise read at most the cap
            if too_long:
                data = b""
            else:
                data = response.read() if length is not None else response.read(MAX_RESPONSE_BYTES + 1)
            if response.will_close or too_long:
                self.close()
        except BaseException:
            self.close()
            raise
        if too_long or len(data) > MAX_RESPONSE_BYTES:
            self.close()
            raise WebShopProtocolError(f"{self._where(method, path)}: answer over {MAX_RESPONSE_BYTES} bytes")
        return response.status, data

    def _request(self, method: str, path: str, payload: dict[str, Any] | None = None, *,
                 idempotent: bool = True) -> Any:
        """Send one request, retrying as the module docstring says; returns the decoded JSON body."""
        body = None if payload is None else json.dumps(payload).encode()
        where = self._where(method, path)
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                status, data = self._once(method, path, body)
            except ConnectionRefusedError as err:
                if last:
                    raise WebShopServerError(f"{where}: connection refused - is the WebShop server running?") from err
            except TimeoutError as err:
                if last or not idempotent:
                    raise WebShopServerError(f"{where}: no complete answer within {self.timeout:g} s") from err
            except (OSError, http.client.HTTPException) as err:
                # A kept-alive connection the server has since closed fails before the request is read: retry.
                stale = self._reused and isinstance(err, (http.client.RemoteDisconnected, BrokenPipeError))
                if last or not (idempotent or stale):
                    raise WebShopServerError(f"{where}: connection failed ({type(err).__name__}: {err})") from err
            else:
                if status == 200:
                    return self._decode(where, data)
                retryable = status == 503 or (idempotent and status in RETRY_STATUSES)
                if last or not retryable:
                    snippet = data[:200].decode("ascii", "replace")
                    raise WebShopServerError(f"{where}: HTTP {status}: {snippet}")
            time.sleep(self.backoff * (2**attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _decode(where: str, data: bytes) -> Any:
        try:
            return json.loads(data)
        except (UnicodeDecodeError, ValueError) as err:
            raise WebShopProtocolError(f"{where}: the answer is not JSON: {data[:200]!r}") from err

    @staticmethod
    def _expect(where: str, value: Any, what: str, ok: bool) -> None:
        if not ok:
            raise WebShopProtocolError(f"{where}: expected {what}, got {str(value)[:200]!r}")

    # ----- protocol -------------------------------------------------------------------------------------------------

    def ping(self) -> bool:
        """Whether ``GET /`` answers ``"ok"``."""
        return self._request("GET", "/") == "ok"

    def create(self) -> int:
        """Create an env on the server; returns its id."""
        env_idx = self._request("POST", "/create", {})
        ok = isinstance(env_idx, int) and not isinstance(env_idx, bool)
        self._expect(self._where("POST", "/create"), env_idx, "an integer env id", ok)
        return env_idx

    def reset(self, env_idx: int, session_id: int | None) -> str:
        """Start env ``env_idx`` on goal ``session_id`` (``None``: the server picks); returns the first page."""
        answer = self._request("POST", "/reset", {"env_idx": env_idx, "session_id": session_id})
        ok = isinstance(answer, list) and len(answer) == 2 and isinstance(answer[0], str)
        self._expect(self._where("POST", "/reset"), answer, "[observation, null]", ok)
        return answer[0]

    def step(self, env_idx: int, action: str) -> tuple[str, float, bool]:
        """Take ``action`` in env ``env_idx``; returns ``(page, reward, done)``."""
        answer = self._request("POST", "/step", {"env_idx": env_idx, "action": action}, idempotent=False)
        ok = (isinstance(answer, dict) and isinstance(answer.get("state"), str)
              and isinstance(answer.get("reward"), (int, float)) and not isinstance(answer.get("reward"), bool)
              and math.isfinite(answer["reward"]) and isinstance(answer.get("done"), bool))
        self._expect(self._where("POST", "/step"), answer, '{"state": str, "reward": number, "done": bool}', ok)
        return answer["state"], float(answer["reward"]), answer["done"]

    def observation(self, env_idx: int) -> str:
        """The current page of env ``env_idx``."""
        page = self._request("GET", f"/observation?env_idx={int(env_idx)}")
        self._expect(self._where("GET", "/observation"), page, "a string", isinstance(page, str))
        return page

    def available_actions(self, env_idx: int) -> dict[str, Any]:
        """``{"has_search_bar": bool, "clickables": [str, ...]}`` of env ``env_idx``."""
        answer = self._request("GET", f"/available_actions?env_idx={int(env_idx)}")
        ok = (isinstance(answer, dict) and isinstance(answer.get("has_search_bar"), bool)
              and isinstance(answer.get("clickables"), list) and all(isinstance(c, str) for c in answer["clickables"]))
        what = '{"has_search_bar": bool, "clickables": [str]}'
        self._expect(self._where("GET", "/available_actions"), answer, what, ok)
        return {"has_search_bar": answer["has_search_bar"], "clickables": list(answer["clickables"])}

    def instruction_text(self, env_idx: int) -> str:
        """The instruction of env ``env_idx``'s goal."""
        text = self._request("GET", f"/instruction_text?env_idx={int(env_idx)}")
        self._expect(self._where("GET", "/instruction_text"), text, "a string", isinstance(text, str))
        return text

    def close_env(self, env_idx: int) -> bool:
        """Ask the server to drop env ``env_idx``; returns whether it existed."""
        answer = self._request("POST", "/close", {"env_idx": env_idx})
        ok = isinstance(answer, dict) and isinstance(answer.get("closed"), bool)
        self._expect(self._where("POST", "/close"), answer, '{"closed": bool}', ok)
        return answer["closed"]
