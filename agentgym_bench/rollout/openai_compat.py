"""OpenAI-compatible HTTP backends: any ``/v1/chat/completions`` endpoint (a vLLM server, Ollama, hosted APIs, or
:mod:`agentgym_bench.serving.chat` serving a local model), :class:`OpenAIPolicy`; any ``/v1/responses`` endpoint,
:class:`OpenAIResponsesPolicy` (the same requests and replies in OpenAI's Responses API).

Standard library only (``urllib``). Each conversation is one request; up to ``max_concurrency`` run at once in a
thread pool. A request that times out, cannot connect, or gets HTTP 429 or 5xx is retried up to ``max_retries``
times with exponential back-off; any other HTTP error (400, 401, 404 ...) fails at once. A conversation that still
fails raises :class:`GenerationError` naming the URL, the status and the server's message: a broken endpoint stops
the run rather than being scored as a string of invalid replies.

Tools. A conversation whose agent env is in tool format (``action_format="tool"``) is sent with that env's
``tools``; the answer's ``message.tool_calls`` come back written after its ``content`` as the Hermes/Qwen text
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (:func:`agentgym_bench.agent.tools.reply_text`), the
reply string the env parses, records and replays. Earlier turns are sent as that text too (assistant ``content``,
then the next observation as a user message), which every chat endpoint accepts.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agentgym_bench.agent.tools import offered_tools, reply_text
from agentgym_bench.rollout.policy import Generation, Message, key_seed

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


NOT_OPENAI = "not_openai"
""":class:`GenerationError`'s ``code`` for an answer that is not an OpenAI chat completion (or Responses answer):
not JSON, another shape, a reply that is not text, token counts that are not counts."""


class GenerationError(RuntimeError):
    """A backend could not produce a reply (after its retries). For an HTTP endpoint: its ``url``, the last HTTP
    ``status`` (``None``: no answer) and the error ``code`` the server gave (OpenAI's ``error.code``, e.g.
    ``context_length_exceeded``; :data:`NOT_OPENAI` for an answer of another shape), so a caller can say what to
    change."""

    def __init__(self, message: str, *, url: str | None = None, status: int | None = None, code: str | None = None):
        super().__init__(message)
        self.url, self.status, self.code = url, status, code


def error_of(body: bytes) -> tuple[str, str | None]:
    """``(message, code)`` of an error answer: OpenAI's ``{"error": {"message", "code"}}`` on one line, else the
    body's first 300 characters."""
    try:
        error = json.loads(body)["error"]
        message, code = str(error["message"]), error.get("code")
    except (ValueError, KeyError, TypeError):
        message, code = body[:300].decode(errors="replace"), None
    return " ".join(message.split())[:500], code if isinstance(code, str) else None


class OpenAIPolicy:
    """Reply through an OpenAI-compatible chat-completions endpoint.

    Arguments:
        base_url: the API root, e.g. ``http://127.0.0.1:8000/v1`` (``/chat/completions`` is appended).
        model: the model name the server expects.
        api_key_env: environment variable holding the API key (sent as ``Authorization: Bearer ...``); unset or
            empty means no header (local servers).
        temperature / top_p / max_tokens: sampling settings sent with every request.
        seed: if given, request ``i`` of the policy's lifetime carries ``seed + i`` (servers that honour seeds are
            then reproducible for a fixed batch order); with ``keys``, a conversation's request carries
            ``key_seed(seed, key)`` instead (63 bits, an int64 as OpenAI's, vLLM's and ``serve``'s ``seed`` take),
            independent of the batch: the seed ``hf:`` gives that conversation's row, so ``serve`` samples what the
            same weights sample through ``hf:`` (up to the last bits a batch's shape changes).
        logprobs: ask for the log-probabilities of the reply tokens (``Generation.logprobs``) where supported.
        timeout: seconds per request attempt.
        max_retries: extra attempts after a timeout, connection error, 429 or 5xx.
        backoff: seconds before the first retry, doubled for each further one.
        max_concurrency: requests in flight at once.
        extra_body: more JSON fields for every request (``{"stop": [...]}``, ``{"top_k": 20}`` ...).
        overlong: what a conversation the endpoint refuses as longer than its context gets (HTTP 400, OpenAI's
            ``context_length_exceeded``): ``"error"`` (a :class:`GenerationError`, the default) or ``"empty"`` (an
            empty reply, which the env scores as an invalid turn), as :class:`~agentgym_bench.rollout.hf.HFPolicy`'s
            ``overlong``: a benchmark evaluation treats an overlong prompt alike by every route.
    """

    def __init__(self, base_url: str, model: str, *, api_key_env: str = "OPENAI_API_KEY", temperature: float = 1.0,
                 top_p: float = 1.0, max_tokens: int = 256, seed: int | None = None, logprobs: bool = False,
                 timeout: float = 60.0, max_retries: int = 3, backoff: float = 0.5, max_concurrency: int = 8,
                 extra_body: dict[str, Any] | None = None, overlong: str = "error"):
        if overlong not in ("error", "empty"):
            raise ValueError(f"overlong={overlong!r} must be 'error' or 'empty'")
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url={base_url!r} must start with http:// or https://")
        for name, value in [("timeout", timeout), ("max_tokens", max_tokens), ("max_concurrency", max_concurrency)]:
            if value <= 0:
                raise ValueError(f"{name}={value} must be > 0")
        if max_retries < 0 or backoff < 0:
            raise ValueError(f"max_retries={max_retries} and backoff={backoff} must be >= 0")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.body = {"model": model, "temperature": temperature, "top_p": top_p, "max_tokens": max_tokens,
                     **({"logprobs": True} if logprobs else {}), **(extra_body or {})}
        self.seed = seed
        self.timeout, self.max_retries, self.backoff = timeout, max_retries, backoff
        self.max_concurrency = max_concurrency
        self.overlong = overlong
        self.requests_made = 0
        self._lock = threading.Lock()
        self.prompt_tokens = 0
        """Sum of ``usage.prompt_tokens`` over the answers (what the endpoint charged for)."""
        self.completion_tokens = 0
        """Sum of ``usage.completion_tokens``."""

    def generate(self, conversations: Sequence[list[Message]], envs: Sequence[Any] | None = None,
                 keys: Sequence[tuple[int, ...]] | None = None) -> list[Generation]:
        """Reply to each conversation (``envs`` only give the ``tools`` an agent env in tool format offers); requests
        run concurrently, results keep the order."""
        first = self.requests_made
        self.requests_made += len(conversations)
        if self.seed is None:
            seeds: list[int | None] = [None] * len(conversations)
        elif keys is None:
            seeds = [self.seed + first + i for i in range(len(conversations))]
        else:
            seeds = [key_seed(self.seed, k) for k in keys]
        jobs = list(zip([list(c) for c in conversations], seeds, offered_tools(envs, len(conversations)),
                        strict=True))
        if len(jobs) <= 1:
            return [self._complete(*job) for job in jobs]
        with ThreadPoolExecutor(min(self.max_concurrency, len(jobs))) as pool:
            return list(pool.map(lambda job: self._complete(*job), jobs))

    def _complete(self, messages: list[Message], seed: int | None, tools: list[dict[str, Any]] | None = None
                  ) -> Generation:
        try:
            data = self._post(self._request(messages, seed, tools))
        except GenerationError as err:
            if self.overlong == "empty" and err.code == "context_length_exceeded":
                return Generation("", None, None)
            raise
        try:
            text, logprobs, (prompt_tokens, completion_tokens) = self._reply(data)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError) as e:
            why = f" ({e})" if isinstance(e, ValueError) else ""
            raise GenerationError(f"{self.url}: the answer is not an OpenAI-compatible completion{why}: "
                                  f"{str(data)[:300]}", url=self.url, status=200, code=NOT_OPENAI) from e
        with self._lock:
            self.prompt_tokens += prompt_tokens or 0
            self.completion_tokens += completion_tokens or 0
        return Generation(text, None, logprobs, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)

    def _request(self, messages: list[Message], seed: int | None, tools: list[dict[str, Any]] | None
                 ) -> dict[str, Any]:
        """The request body of one conversation."""
        return {**self.body, "messages": messages, **({} if seed is None else {"seed": seed}),
                **({"tools": tools} if tools else {})}

    def _reply(self, data: dict[str, Any]) -> tuple[str, list[float] | None, tuple[Any, Any]]:
        """An answer's reply string, log-probabilities (``None``: none given) and ``(prompt, completion)`` token
        counts (``None`` where not given)."""
        choice = data["choices"][0]
        text = reply_text(choice["message"].get("content"), choice["message"].get("tool_calls"))
        content = (choice.get("logprobs") or {}).get("content")
        logprobs = [float(item["logprob"]) for item in content] if content else None
        return text, logprobs, _counts(data, "prompt_tokens", "completion_tokens")


    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        payload = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env, "")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        problem, status, code = "", None, None
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            request = urllib.request.Request(self.url, data=payload, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as e:
                message, code = error_of(e.read(1 << 16))
                status, problem = e.code, f"HTTP {e.code}{f' ({code})' if code else ''}: {message}"
                if e.code not in RETRY_STATUS:
                    break
            except (TimeoutError, urllib.error.URLError, ConnectionError) as e:
                status, code = None, None
                reason = getattr(e, "reason", e)
                problem = f"timed out after {self.timeout}s" if isinstance(reason, TimeoutError) else f"{reason}"
            except json.JSONDecodeError as e:  # it answered, and another try will answer the same
                status, code, problem = 200, NOT_OPENAI, f"the answer is not JSON ({e})"
                break
        raise GenerationError(f"{self.url} (model {self.model!r}) failed after {attempt + 1} attempt(s): {problem}",
                              url=self.url, status=status, code=code)


def _counts(data: dict[str, Any], *names: str) -> tuple[int | None, ...]:
    """The answer's ``usage`` token counts ``names``: ``None`` where not given, else non-negative integers
    (``ValueError`` naming the field otherwise: a file must not carry a cost the endpoint did not count)."""
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    for name in names:
        value = usage.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"usage.{name}={value!r} is not a count of tokens")
    return tuple(usage.get(name) for name in names)


class OpenAIResponsesPolicy(OpenAIPolicy):
    """Reply through an OpenAI Responses endpoint (``POST {base_url}/responses``: ``serve``'s, vLLM's,
    ``transformers serve``'s), the ``openai-responses:MODEL@URL`` policy: each conversation is one request whose
    ``input`` is its messages as message items (the system prompt one of them, not ``instructions``), with
    ``max_output_tokens``, ``temperature``, ``top_p``, the env's ``tools`` in the Responses' flat shape
    (``{"type": "function", "name", ...}``), ``store: false`` and, as :class:`OpenAIPolicy` sends it, the
    conversation's ``seed`` (not an OpenAI field: an endpoint that refuses unknown fields, OpenAI's own among them,
    needs ``seed=None``). The answer's ``output``: the text of its ``message`` items, then each ``function_call``
    written as the chat route's ``tool_calls`` are (:func:`~agentgym_bench.agent.tools.reply_text`), so the reply
    string is what the chat route gives for the same sample. The arguments are :class:`OpenAIPolicy`'s (no
    ``logprobs``: Responses log-probabilities are not read)."""

    def __init__(self, base_url: str, model: str, *, logprobs: bool = False, **kwargs: Any):
        if logprobs:
            raise ValueError("logprobs are not read from a Responses endpoint: use the chat route (OpenAIPolicy)")
        super().__init__(base_url, model, **kwargs)
        self.url = base_url.rstrip("/") + "/responses"
        self.body = {"model": model, "max_output_tokens": self.body.pop("max_tokens"), "store": False,
                     **{k: v for k, v in self.body.items() if k != "model"}}

    def _request(self, messages: list[Message], seed: int | None, tools: list[dict[str, Any]] | None
                 ) -> dict[str, Any]:
        flat = [{"type": "function", **t["function"]} for t in tools or []]
        return {**self.body, "input": [{"type": "message", **m} for m in messages],
                **({} if seed is None else {"seed": seed}), **({"tools": flat} if flat else {})}

    def _reply(self, data: dict[str, Any]) -> tuple[str, list[float] | None, tuple[Any, Any]]:
        output = data["output"]
        text = "".join(part["text"] for item in output if item["type"] == "message" for part in item["content"]
                       if part["type"] == "output_text")
        calls = [{"function": {"name": item["name"], "arguments": item["arguments"]}} for item in output
                 if item["type"] == "function_call"]
        return reply_text(text, calls), None, _counts(data, "input_tokens", "output_tokens")
