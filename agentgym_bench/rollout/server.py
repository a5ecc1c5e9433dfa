"""A small OpenAI-compatible server for a local model: ``POST /v1/chat/completions`` and ``GET /v1/models``.

Standard library ``http.server``; binds ``127.0.0.1`` only. Requests are served one generation at a time (a lock
around the model) with :class:`~agentgym_bench.rollout.hf.HFPolicy` and the request's ``temperature``, ``top_p``,
``max_tokens`` (or ``max_completion_tokens``), ``seed``, ``logprobs``, ``n`` (1..:data:`MAX_N` choices, sampled as
one batch) and ``stream``. Every answer carries ``usage`` with ``prompt_tokens``, ``completion_tokens`` (all choices,
stop tokens included) and ``total_tokens``.

``stream: true`` answers Server-Sent Events in OpenAI's format: ``chat.completion.chunk`` objects, first the
assistant role, then one chunk per generated token (with its log-probability when ``logprobs`` is set), then the
``finish_reason``, then ``data: [DONE]``; with ``stream_options: {"include_usage": true}`` a last chunk with empty
``choices`` and the ``usage``. The reply is generated whole before the first chunk is sent (the chunks exist for
clients that only speak streaming, not for latency), and the connection closes after ``[DONE]``.

Errors use OpenAI's shape ``{"error": {"message", "type"}}``: 400 for a malformed request, 401 for a wrong key (when
the server has one), 404 for another path, 500 when generation fails (for example a prompt longer than the model's
positions).

This server is for tests and small models. For real throughput serve the model with ``vllm serve PATH`` or
``transformers serve`` (both OpenAI-compatible, see ``docs/rollout.md``) and point
:class:`~agentgym_bench.rollout.openai_compat.OpenAIPolicy` at them.

Run: ``agentgym-bench serve [--model NAME_OR_PATH] [--port 8000]``, then point
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

from agentgym_bench import cli
from agentgym_bench.rollout.hf import HFPolicy

HOST = "127.0.0.1"
MAX_N = 16
"""Most choices (``n``) one request may ask for."""


def _given(request: dict[str, Any], key: str, default: Any) -> Any:
    """``request[key]``, or ``default`` when absent or ``null`` (OpenAI's clients send ``null`` for unset)."""
    value = request.get(key)
    return default if value is None else value


def _request_settings(request: Any, next_seed: int) -> dict[str, Any]:
    """Checked settings of a chat-completions request; ValueError naming the field that is wrong."""
    if not isinstance(request, dict):
        raise ValueError("the body must be a JSON object")
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in messages):
        raise ValueError("messages must be a non-empty list of {role, content} strings")
    n = _given(request, "n", 1)
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_N:
        raise ValueError(f"n={n!r} must be an integer in 1..{MAX_N}")
    stream = request.get("stream", False)
    if not isinstance(stream, bool) and stream is not None:
        raise ValueError(f"stream={stream!r} must be true or false")
    options = request.get("stream_options") or {}
    if not isinstance(options, dict):
        raise ValueError("stream_options must be an object")
    max_tokens = request.get("max_completion_tokens") or request.get("max_tokens") or 256
    seed = request.get("seed")
    return {"messages": messages, "n": n, "stream": bool(stream),
            "include_usage": bool(options.get("include_usage", False)), "logprobs": bool(request.get("logprobs")),
            "policy": {"temperature": float(_given(request, "temperature", 1.0)),
                       "top_p": float(_given(request, "top_p", 1.0)),
                       "max_new_tokens": int(max_tokens),
                       "seed": int(seed) if seed is not None else next_seed}}


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
            settings = _request_settings(json.loads(raw), next(self.server.seeds))
            policy = HFPolicy(self.server.model, self.server.tokenizer, **settings["policy"])
        except (ValueError, KeyError, TypeError) as e:
            self._error(400, f"bad request: {e}", "invalid_request_error")
            return
        tokenizer = self.server.tokenizer
        try:
            with self.server.lock:
                prompt = tokenizer.apply_chat_template(settings["messages"], add_generation_prompt=True,
                                                       tokenize=False)
                prompt_tokens = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
                generations = policy.generate([settings["messages"]] * settings["n"])
        except Exception as e:  # noqa: BLE001 - any model failure is a 500 for the client, not a dead server
            self._error(500, f"generation failed: {e}", "server_error")
            return
        completion_tokens = sum(len(g.token_ids) for g in generations)
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": prompt_tokens + completion_tokens}
        head = {"id": f"chatcmpl-{next(self.server.ids)}", "created": int(time.time()),
                "model": self.server.model_name}
        if settings["stream"]:
            self._stream(head, generations, settings, usage)
            return
        choices = [self._choice(i, g, settings["logprobs"]) for i, g in enumerate(generations)]
        self._send(200, {**head, "object": "chat.completion", "choices": choices, "usage": usage})

    def _finish_reason(self, generation: Any) -> str:
        stopped = generation.token_ids and generation.token_ids[-1] in set(self.server.stop_ids)
        return "stop" if stopped else "length"

    def _logprobs(self, token_ids: list[int], logprobs: list[float]) -> dict[str, Any]:
        tokens = self.server.tokenizer.convert_ids_to_tokens(token_ids)
        return {"content": [{"token": t, "logprob": lp} for t, lp in zip(tokens, logprobs, strict=True)]}

    def _choice(self, index: int, generation: Any, logprobs: bool) -> dict[str, Any]:
        choice: dict[str, Any] = {"index": index, "message": {"role": "assistant", "content": generation.text},
                                  "finish_reason": self._finish_reason(generation)}
        if logprobs:
            choice["logprobs"] = self._logprobs(generation.token_ids, generation.logprobs)
        return choice

    def _stream(self, head: dict[str, Any], generations: list[Any], settings: dict[str, Any],
                usage: dict[str, int]) -> None:
        """Send the finished generations as OpenAI ``chat.completion.chunk`` events, then ``[DONE]``; close."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def event(choices: list[dict[str, Any]], **extra: Any) -> None:
            chunk = {**head, "object": "chat.completion.chunk", "choices": choices, **extra}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())

        decode = self.server.tokenizer.decode
        for index, generation in enumerate(generations):
            event([{"index": index, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
            ids, text = generation.token_ids, ""
            for k in range(len(ids)):
                if ids[k] in self.server.stop_ids:
                    piece = ""
                else:  # the text the token adds (decoding the prefix keeps multi-token characters whole)
                    piece = decode(ids[: k + 1], skip_special_tokens=True)[len(text):]
                    text += piece
                delta = {"index": index, "delta": {"content": piece}, "finish_reason": None}
                if settings["logprobs"]:
                    delta["logprobs"] = self._logprobs(ids[k : k + 1], generation.logprobs[k : k + 1])
                event([delta])
            event([{"index": index, "delta": {}, "finish_reason": self._finish_reason(generation)}])
        if settings["include_usage"]:
            event([], usage=usage)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


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
    parser.add_argument("--model", default="default",
                        help="model folder, name under $AGENTGYM_BENCH_HOME/models (default, warmstart) or hub id "
                        "to serve (default: %(default)s, built by `agentgym-bench init-model`)")
    parser.add_argument("--name", default=None, help="model name reported to clients (default: the --model value)")
    parser.add_argument("--port", type=cli.port, default=8000, help="port on 127.0.0.1 (default: %(default)s)")
    parser.add_argument("--device", default="cpu", help="torch device (default: %(default)s)")
    parser.add_argument("--api-key-env", default=None,
                        help="environment variable whose value clients must send as the bearer key (default: none)")
    parser.add_argument("--verbose", action="store_true", help="log every request")


def run(args: argparse.Namespace) -> int:
    import os

    from agentgym_bench.rollout.default_model import load_model

    model, tokenizer = load_model(args.model, device=args.device)
    key = os.environ.get(args.api_key_env, "") if args.api_key_env else None
    try:
        server = ChatServer(model, tokenizer, model_name=args.name or args.model, port=args.port,
                            api_key=key or None, verbose=args.verbose)
    except OSError as err:
        raise cli.listen_error(HOST, args.port, err) from err
    print(f"serving {args.model} at {server.base_url} (Ctrl-C to stop)", flush=True)
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
