"""``agentgym-bench webshop-serve``: the bundled store over the HTTP protocol of AgentGym's WebShop server.

The endpoints are those listed in :mod:`agentgym_bench.envs.webshop.client` (``/``, ``/create``, ``/reset``,
``/step``, ``/observation``, ``/available_actions``, ``/instruction_text``, ``/close``, ``/list_envs``), with
AgentGym's JSON shapes, so AgentGym's ``WebshopEnvClient`` and our ``WebShopGame(backend="http")`` both work
against it. Each env is a :class:`~agentgym_bench.envs.webshop.session.WebShopSession`; ``/reset`` with an integer
``session_id`` starts goal ``session_id`` of the catalog (the three splits back to back: test, validation, train).

Errors answer ``{"detail": ...}`` like FastAPI: 404 for an unknown path or env, 408/413 for a body sent too slowly
or too big, 400 for a request the HTTP parser (h11) refuses (a ``Content-Length`` that is not ASCII digits), 422 for
a bad parameter or body (an ``env_idx`` that is not ASCII digits, JSON nested too deeply), 503 when ``--max-envs``
envs exist (close some with ``/close``), ``--max-connections`` connections are open or ``--max-requests`` requests
are under way. The server is a Starlette app on uvicorn (as AgentGym's own FastAPI server), its requests answered in
worker threads, and shares one catalog and search index among all envs. Against slow clients
(:mod:`agentgym_bench.http_body`), with the fields of the :class:`~agentgym_bench.http_body.ServerLimits` the server
is given (:data:`LIMITS` unless told otherwise): an idle or slow connection is a few kilobytes on the event loop, not
a thread; a connection must begin each request (its first byte) within ``idle_seconds`` of connecting or of the
previous answer, else it is closed (a client that keeps its connection while its agent thinks reconnects, as ours and
AgentGym's do); a request's line and headers must arrive within ``head_seconds`` of its first byte (else the
connection is closed), its body (at most ``max_body_bytes``, else a 413) within ``body_seconds`` (else a 408), and an
answer must be written out within ``write_seconds`` (a client that does not read it is cut off).

Envs have no owner: there is no authentication, ids are sequential, and any client can step or close any env (as in
AgentGym's server). An env nobody has used for ``--env-ttl`` seconds (default :data:`ENV_TTL`, an hour) is dropped
when envs are created or listed, so envs a client forgot to close do not fill ``--max-envs`` for ever. It binds
``127.0.0.1`` unless told otherwise; pass ``--host 0.0.0.0`` only on a trusted network.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import threading
import time
import traceback
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from agentgym_bench import http_body
from agentgym_bench.envs.webshop.catalog import Catalog, load_catalog
from agentgym_bench.envs.webshop.session import WebShopSession
from agentgym_bench.errors import UserError

DEFAULT_PORT = 36001
LIMITS = http_body.ServerLimits(write_seconds=30.0, max_requests=1024)
"""The limits the server enforces (:class:`~agentgym_bench.http_body.ServerLimits`, ``serve``'s defaults but for
two): its answers are small JSON, not a model's streamed reply, and its requests short store work for up to
thousands of envs at once, not turns waiting on one model, so it gives an answer 30 s to be written out (``serve``
60 s) and reads and answers up to 1024 requests at once (``serve`` 64)."""
WORKER_THREADS = 32
"""Threads answering requests (the store's work is Python, one core's worth under the GIL)."""
ENV_TTL = 3600.0
"""Seconds an env may go unused before the server drops it."""
INTEGER = re.compile(r"-?[0-9]{1,18}")
"""An integer as a query parameter or header: ASCII digits only (``str.isdigit`` takes ``²``)."""


class HttpError(Exception):
    """An error answer: HTTP ``status`` with ``{"detail": detail}``."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


class WebShopServer(http_body.HttpServer):
    """The HTTP server holding the envs (uvicorn; see :mod:`agentgym_bench.http_body`).

    Args:
        address: ``(host, port)``; port 0 picks a free port (see :attr:`url`).
        catalog: the store every env shops in.
        max_envs: envs that may exist at once.
        seed: seeds the goal drawn when ``/create`` or ``/reset`` gets no ``session_id``.
        verbose: log each request to stderr.
        env_ttl: seconds an env may go unused before it is dropped (when envs are created or listed).
        limits: the deadlines, sizes and caps enforced (:class:`~agentgym_bench.http_body.ServerLimits`; its
            connection and request caps answered a 503).
    """

    def __init__(self, address: tuple[str, int], catalog: Catalog, *, max_envs: int = 8000, seed: int = 0,
                 verbose: bool = False, env_ttl: float = ENV_TTL, limits: http_body.ServerLimits = LIMITS):
        if not isinstance(max_envs, int) or max_envs < 1:
            raise ValueError(f"max_envs={max_envs!r} must be a positive integer")
        if not env_ttl > 0:
            raise ValueError(f"env_ttl={env_ttl!r} must be a positive number of seconds")
        super().__init__(self._app, *address, limits, verbose=verbose)
        self.catalog, self.max_envs, self.env_ttl = catalog, max_envs, env_ttl
        self.envs: dict[int, tuple[WebShopSession, threading.Lock]] = {}
        self.used: dict[int, float] = {}  # env id -> when a request last named it (time.monotonic)
        self._lock = threading.Lock()
        self._next_id = 0
        self._rng = np.random.default_rng(seed)
        self._workers = anyio.CapacityLimiter(WORKER_THREADS)

    def busy_answer(self) -> tuple[int, str, bytes]:
        """The 503 a connection over ``limits.max_connections`` gets, as ``{"detail": ...}``."""
        detail = f"{self.limits.max_connections} connections are open (the --max-connections limit); retry"
        return 503, "application/json", json.dumps({"detail": detail}).encode()

    def bad_request(self) -> tuple[str, bytes]:
        detail = "malformed HTTP request (its request line, a header or its Content-Length)"
        return "application/json", json.dumps({"detail": detail}).encode()

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """The ASGI app: every request gets ``{"detail": ...}`` or its endpoint's JSON answer."""
        if scope["type"] != "http":
            return
        with self.admit() as admitted:
            if admitted:
                answer = await self._answer(Request(scope, receive))
            else:
                detail = f"{self.limits.max_requests} requests are being served (the --max-requests limit); retry"
                answer = 503, {"detail": detail}, {"retry-after": "1", "connection": "close"}
            if answer is not None:
                status, payload, headers = answer
                await Response(json.dumps(payload).encode(), status, headers, media_type="application/json")(
                    scope, receive, send)

    async def _answer(self, request: Request) -> tuple[int, Any, dict[str, str]] | None:
        """Status, JSON payload and headers of the answer to ``request``; ``None`` for a client that left."""
        method, path = request.method, request.url.path.rstrip("/") or "/"
        query = dict(urllib.parse.parse_qsl(request.scope["query_string"].decode("latin-1")))
        try:
            body = await self._body(request) if method == "POST" else {}
            return 200, await anyio.to_thread.run_sync(self.answer, method, path, query, body,
                                                       limiter=self._workers), {}
        except http_body.BodyError as err:  # the body was not read through: the connection closes
            return err.status, {"detail": err.message}, {"connection": "close"}
        except HttpError as err:
            return err.status, {"detail": err.detail}, {}
        except ClientDisconnect:
            return None
        except Exception as err:  # noqa: BLE001 - a bug is a 500 for the client (no traceback), printed here
            traceback.print_exc()
            return 500, {"detail": f"internal error: {type(err).__name__}"}, {}

    async def _body(self, request: Request) -> dict[str, Any]:
        """The JSON object a POST carries (``{}`` for none), read within ``limits.body_seconds``."""
        raw = await http_body.read_body(request, self.limits.max_body_bytes, self.limits.body_seconds)
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except RecursionError:
            raise HttpError(422, "request body nests arrays and objects too deeply") from None
        except (UnicodeDecodeError, ValueError) as err:
            raise HttpError(422, f"request body is not JSON: {err}"[:300]) from None
        if not isinstance(body, dict):
            raise HttpError(422, "request body must be a JSON object")
        return body

    @property
    def url(self) -> str:
        """``http://host:port`` the server listens on."""
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def _random_goal(self) -> int:
        with self._lock:
            return int(self._rng.integers(len(self.catalog.goals)))

    def create(self) -> int:
        """A new env (on a random goal); its id."""
        session = WebShopSession(self.catalog)
        session.reset(self._random_goal())
        with self._lock:
            self._drop_expired()
            if len(self.envs) >= self.max_envs:
                raise HttpError(503, f"{self.max_envs} envs exist (the --max-envs limit); close some with /close")
            env_idx, self._next_id = self._next_id, self._next_id + 1
            self.envs[env_idx] = (session, threading.Lock())
            self.used[env_idx] = time.monotonic()
        return env_idx

    def _drop_expired(self) -> None:
        """Drop the envs unused for :attr:`env_ttl` seconds (call with the lock held)."""
        now = time.monotonic()
        for env_idx in [i for i, t in self.used.items() if now - t > self.env_ttl]:
            self.envs.pop(env_idx, None)
            self.used.pop(env_idx, None)

    def env(self, env_idx: Any) -> tuple[WebShopSession, threading.Lock]:
        """The env ``env_idx`` and its lock; 422 if the id is not an integer, 404 if there is no such env."""
        if not isinstance(env_idx, int) or isinstance(env_idx, bool):
            raise HttpError(422, f"env_idx must be an integer, got {env_idx!r}")
        with self._lock:
            if env_idx not in self.envs:
                raise HttpError(404, f"no env {env_idx}")
            self.used[env_idx] = time.monotonic()
            return self.envs[env_idx]

    def close_env(self, env_idx: Any) -> bool:
        """Drop env ``env_idx``; whether it existed."""
        if not isinstance(env_idx, int) or isinstance(env_idx, bool):
            raise HttpError(422, f"env_idx must be an integer, got {env_idx!r}")
        with self._lock:
            self.used.pop(env_idx, None)
            return self.envs.pop(env_idx, None) is not None

    # ----- endpoints: (method, path) -> handler(query or body) -> JSON value -----------------------------------------

    def answer(self, method: str, path: str, query: dict[str, str], body: dict[str, Any]) -> Any:
        """Answer one request (raises :class:`HttpError`)."""
        if (method, path) == ("GET", "/"):
            return "ok"
        if (method, path) == ("GET", "/list_envs"):
            with self._lock:
                self._drop_expired()
                return sorted(self.envs)
        if (method, path) == ("POST", "/create"):
            return self.create()
        if (method, path) == ("POST", "/close"):
            return {"closed": self.close_env(body.get("env_idx"))}
        if method == "POST" and path in ("/reset", "/step"):
            session, lock = self.env(body.get("env_idx"))
            with lock:
                return self._reset(session, body) if path == "/reset" else self._step(session, body)
        if method == "GET" and path in ("/observation", "/available_actions", "/instruction_text"):
            raw = query.get("env_idx", "")
            if not INTEGER.fullmatch(raw):
                raise HttpError(422, f"query parameter env_idx must be an integer, got {raw!r}")
            session, lock = self.env(int(raw))
            with lock:
                if path == "/observation":
                    return session.observation()
                return session.available_actions() if path == "/available_actions" else session.instruction_text()
        raise HttpError(404, f"no endpoint {method} {path}")

    def _reset(self, session: WebShopSession, body: dict[str, Any]) -> list[Any]:
        goal = body.get("session_id")
        if goal is None:
            goal = self._random_goal()
        if not isinstance(goal, int) or isinstance(goal, bool) or not 0 <= goal < len(self.catalog.goals):
            raise HttpError(422, f"session_id must be null or an integer goal index in [0, {len(self.catalog.goals)}),"
                                 f" got {goal!r}")
        return [session.reset(goal), None]

    @staticmethod
    def _step(session: WebShopSession, body: dict[str, Any]) -> dict[str, Any]:
        action = body.get("action")
        if not isinstance(action, str):
            raise HttpError(422, f"action must be a string, got {action!r}"[:300])
        reward, done, _ = session.step(action)
        return {"state": session.observation(), "reward": reward, "done": done, "info": None}


def make_server(host: str = "127.0.0.1", port: int = 0, *, catalog: Catalog | None = None, max_envs: int = 8000,
                seed: int = 0, verbose: bool = False, env_ttl: float = ENV_TTL,
                limits: http_body.ServerLimits = LIMITS) -> WebShopServer:
    """A bound, not yet serving :class:`WebShopServer` (call ``serve_forever``, or ``start`` for a thread)."""
    return WebShopServer((host, port), catalog or load_catalog(), max_envs=max_envs, seed=seed, verbose=verbose,
                         env_ttl=env_ttl, limits=limits)


@contextlib.contextmanager
def serve_in_thread(host: str = "127.0.0.1", port: int = 0, **kwargs: Any) -> Iterator[WebShopServer]:
    """Run a server in a background thread for the ``with`` block; shuts it down afterwards."""
    with make_server(host, port, **kwargs) as server:
        yield server


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``agentgym-bench webshop-serve``."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; 0.0.0.0 exposes "
                                                            "the server to the network, without authentication)")
    parser.add_argument("--port", type=http_body.port, default=DEFAULT_PORT,
                        help=f"port to listen on (default {DEFAULT_PORT}, AgentGym's; 0 picks a free port)")
    parser.add_argument("--catalog", type=Path, default=None, help="catalog file (default: the bundled store)")
    parser.add_argument("--max-envs", type=int, default=8000, help="envs that may exist at once (default 8000)")
    parser.add_argument("--seed", type=int, default=0, help="seed for goals drawn when no session_id is given")
    parser.add_argument("--env-ttl", type=float, default=ENV_TTL,
                        help="seconds an env may go unused before the server drops it (default %(default)g)")
    parser.add_argument("--max-connections", type=int, default=LIMITS.max_connections,
                        help="connections open at once (idle and slow ones included); another is answered a 503 "
                        "and closed (default %(default)s)")
    parser.add_argument("--max-requests", type=int, default=LIMITS.max_requests,
                        help="requests read and answered at once; another gets a 503 (default %(default)s)")
    parser.add_argument("--verbose", action="store_true", help="log every request")


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted. The first line on stdout is ``WebShop server listening on http://host:port ...``."""
    if args.catalog is not None and not args.catalog.is_file():
        raise UserError(f"--catalog {args.catalog}: no such file")
    if args.max_envs < 1:
        raise UserError(f"--max-envs {args.max_envs} must be at least 1")
    limits = LIMITS.with_flags(max_connections=args.max_connections, max_requests=args.max_requests)
    if not args.env_ttl > 0:
        raise UserError(f"--env-ttl {args.env_ttl} must be a positive number of seconds")
    try:
        catalog = load_catalog(args.catalog)
    except (OSError, EOFError, ValueError, KeyError, TypeError) as err:  # not gzip, not JSON, not a catalog
        why = str(err).splitlines()[0]
        raise UserError(f"--catalog {args.catalog}: not a catalog file (gzip-compressed JSON, as "
                        f"`python -m agentgym_bench.envs.webshop.catalog` writes): {why}") from None
    http_body.raise_open_files_limit(limits.max_connections + 256)
    try:
        server = make_server(args.host, args.port, catalog=catalog, max_envs=args.max_envs, seed=args.seed,
                             verbose=args.verbose, env_ttl=args.env_ttl, limits=limits)
    except OSError as err:
        raise http_body.listen_error(args.host, args.port, err) from err
    print(f"WebShop server listening on {server.url} ({len(catalog.products)} products, {len(catalog.goals)} goals)",
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
