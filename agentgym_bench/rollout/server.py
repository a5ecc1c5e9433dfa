"""A small OpenAI-compatible server for a local model: ``POST /v1/chat/completions`` and ``GET /v1/models``.

Standard library ``http.server``; binds ``127.0.0.1`` only. Requests are served one generation at a time (a lock
around the model) with :class:`~agentgym_bench.rollout.hf.HFPolicy` and the request's ``temperature``, ``top_p``,
``max_tokens`` (or ``max_completion_tokens``), ``seed`` and ``logprobs``. Errors use OpenAI's shape
``{"error": {"message", "type"}}``: 400 for a malformed request, 401 for a wrong key (when the server has one), 404
for another path, 500 when generation fails (for example a prompt longer than the model's positions).

Run: ``python -m agentgym_bench.rollout.server --model PATH [--port 8000]``, then point
:class:`~agentgym_bench.rollout.openai_compat.OpenAIPolicy` (or any OpenAI client) at ``http://127.0.0.1:PORT/v1``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentgym_bench.rollout.hf import HFPolicy

HOST = "127.0.0.1"


class ChatHandler(BaseHTTPRequestHandler):
    """Request handler; the server object carries ``model``, ``tokenizer``, ``model_name``, ``api_key``, ``lock``."""

    server: ChatServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        if self.server.verbose:
            super().log_message(format, *args)

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, kind: str) -> None:
        self._send(status, {"error": {"message": message, "type": kind}})

    def _authorised(self) -> bool:
        if self.server.api_key and self.headers.get("Authorization") != f"Bearer {self.server.api_key}":
            self._error(401, "invalid or missing API key", "authentication_error")
            return False
        return True

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if not self._authorised():
            return
        if self.path.rstrip("/") != "/v1/models":
            self._error(404, f"no route {self.path}", "not_found")
            return
        self._send(200, {"object": "list", "data": [{"id": self.server.model_name, "object": "model"}]})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if not self._authorised():
            return
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._error(404, f"no route {self.path}", "not_found")
            return
        try:
            request = json.loads(raw)
            messages = request["messages"]
            if not isinstance(messages, list) or not all(
                    isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                    for m in messages):
                raise ValueError("messages must be a list of {role, content} strings")
            max_tokens = request.get("max_completion_tokens") or request.get("max_tokens") or 256
            settings = {"temperature": float(request.get("temperature", 1.0)),
                        "top_p": float(request.get("top_p", 1.0)),
                        "max_new_tokens": int(max_tokens),
                        "seed": int(request["seed"]) if request.get("seed") is not None else next(self.server.seeds)}
            policy = HFPolicy(self.server.model, self.server.tokenizer, **settings)
        except (ValueError, KeyError, TypeError) as e:
            self._error(400, f"bad request: {e}", "invalid_request_error")
            return
        try:
            with self.server.lock:
                generation = policy.generate([messages])[0]
        except Exception as e:  # noqa: BLE001 - any model failure is a 500 for the client, not a dead server
            self._error(500, f"generation failed: {e}", "server_error")
            return
        self._send(200, self._completion(generation, request, settings["max_new_tokens"]))

    def _completion(self, generation: Any, request: dict[str, Any], max_new_tokens: int) -> dict[str, Any]:
        stopped = generation.token_ids and generation.token_ids[-1] in set(self.server.stop_ids)
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": generation.text},
                                  "finish_reason": "stop" if stopped else "length"}
        if request.get("logprobs"):
            tokens = self.server.tokenizer.convert_ids_to_tokens(generation.token_ids)
            choice["logprobs"] = {"content": [{"token": t, "logprob": lp}
                                              for t, lp in zip(tokens, generation.logprobs, strict=True)]}
        return {"id": f"chatcmpl-{next(self.server.ids)}", "object": "chat.completion", "created": int(time.time()),
                "model": self.server.model_name, "choices": [choice],
                "usage": {"completion_tokens": len(generation.token_ids)}}


class ChatServer(ThreadingHTTPServer):
    """Serve ``model`` / ``tokenizer`` on ``127.0.0.1:port`` (``port=0``: a free port; see :attr:`base_url`).

    Use as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    daemon_threads = True

    def __init__(self, model: Any, tokenizer: Any, *, model_name: str = "local", port: int = 0,
                 api_key: str | None = None, verbose: bool = False, handler: type[ChatHandler] = ChatHandler):
        super().__init__((HOST, port), handler)
        self.model, self.tokenizer, self.model_name = model, tokenizer, model_name
        self.api_key, self.verbose = api_key, verbose
        self.stop_ids = HFPolicy(model, tokenizer).stop_ids
        self.lock = threading.Lock()
        self.seeds = itertools.count()
        self.ids = itertools.count()
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://{HOST}:{self.server_address[1]}/v1"

    def start(self) -> ChatServer:
        """Serve in a background thread."""
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def configure_parser(parser: argparse.ArgumentParser) -> None:
    from agentgym_bench.rollout.default_model import DEFAULT_MODEL_DIR

    parser.add_argument("--model", default=str(DEFAULT_MODEL_DIR),
                        help="model folder or hub id to serve (default: %(default)s)")
    parser.add_argument("--name", default=None, help="model name reported to clients (default: the --model value)")
    parser.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (default: %(default)s)")
    parser.add_argument("--device", default="cpu", help="torch device (default: %(default)s)")
    parser.add_argument("--api-key-env", default=None,
                        help="environment variable whose value clients must send as the bearer key (default: none)")
    parser.add_argument("--verbose", action="store_true", help="log every request")


def run(args: argparse.Namespace) -> int:
    import os

    from agentgym_bench.rollout.default_model import load_model

    model, tokenizer = load_model(args.model, device=args.device)
    key = os.environ.get(args.api_key_env, "") if args.api_key_env else None
    server = ChatServer(model, tokenizer, model_name=args.name or args.model, port=args.port, api_key=key or None,
                        verbose=args.verbose)
    print(f"serving {args.model} at {server.base_url} (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m agentgym_bench.rollout.server",
                                     description=__doc__.split("\n")[0])
    configure_parser(parser)
    raise SystemExit(run(parser.parse_args()))
