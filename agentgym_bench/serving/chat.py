"""The server behind ``agentgym-bench serve``: a small OpenAI-compatible server for a local model: ``POST
/v1/chat/completions``, ``GET /v1/models`` and ``GET /v1/models/{id}`` (each model object carries ``max_model_len``,
the model's positions, as vLLM's do; ``eval`` checks its prompts against it), and the Responses API, ``POST
/v1/responses`` and ``GET /v1/responses/{id}`` (:mod:`~agentgym_bench.serving.responses`: each request answered as the
chat request it translates to, by the code below).

A Starlette app on uvicorn's h11 protocol (:mod:`agentgym_bench.http_body`), the ASGI stack vLLM, ``transformers
serve`` and OpenEnv serve on; binds ``127.0.0.1`` only. Requests are served one generation at a time (a lock around the
model, taken in a worker thread so that the event loop keeps answering) with
:class:`~agentgym_bench.rollout.hf.HFPolicy` and the request's parameters, held to OpenAI's ranges: ``temperature``
(0..2), ``top_p`` (0..1; 0 keeps the likeliest token alone, :data:`~.chat_request.SMALLEST_TOP_P`), ``max_tokens`` (or
``max_completion_tokens``; when neither is given the reply may fill the room the prompt leaves in the model's
positions, as OpenAI and vLLM limit it), ``seed``, ``logprobs`` (entries with ``token``, ``logprob``, ``bytes`` and
``top_logprobs``), ``top_logprobs`` (0..:data:`~.chat_request.MAX_TOP_LOGPROBS`, with ``logprobs``: the most likely
tokens of the distribution sampled from), ``logit_bias`` (token ids to -100..100), ``frequency_penalty`` and
``presence_penalty`` (-2..2; these three by OpenAI's formula, :class:`~.chat_request.Adjust`, an HFPolicy logits
processor used only when one is given), ``n`` (1..:data:`~.chat_request.MAX_N` choices, sampled as one batch), ``stop``
(a string or up to :data:`~.chat_request.MAX_STOP` strings: a choice stops generating at the token that completes one,
and the reply is cut before the first one it contains, with ``finish_reason: "stop"``, streamed or not;
``completion_tokens`` counts the tokens generated, that one included) and ``stream``. A message's ``content`` is a
string or a list of ``{"type": "text", "text": ...}`` parts (joined with newlines, as vLLM does); other part types are
a 400 naming the part, and so is a ``response_format`` other than text, which this server cannot honour. Every answer
carries ``usage`` with ``prompt_tokens``, ``completion_tokens`` (all choices, stop tokens included) and
``total_tokens``.

Tools, as vLLM's ``hermes`` tool parser answers them: ``tools`` (a list of ``{"type": "function", "function": {"name",
...}}``) go to the chat template (Qwen2.5/Qwen3 templates list them in the system turn), and a reply that holds
well-formed ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks is answered as ``message.tool_calls``
(ids ``call_...``, ``arguments`` a JSON string) with the text before the first block as ``content`` (``null`` when
empty) and ``finish_reason: "tool_calls"``; streamed, the calls come as one ``delta.tool_calls`` chunk. ``tool_choice``
may be ``"auto"`` (the default), ``"none"`` (the reply stays text), ``"required"`` or a named function: a forced call
is generated after :data:`CALL_HEAD`, the function's name and ``, "arguments": `` (for ``"required"`` each choice's
function drawn by the model's probability of each name, :func:`continuation_logprobs`) and ends at ``</tool_call>``;
every choice is one call of it, its ``arguments`` the JSON object the model wrote or else its text
(:func:`call_arguments`; the arguments are not schema-constrained). Messages may carry earlier ``tool_calls``
(assistant, ``content`` null) and ``tool`` results, as the SDK sends them.

``stream: true`` answers Server-Sent Events in OpenAI's format: ``chat.completion.chunk`` objects, first the
assistant role, then one chunk per generated token (with its log-probability when ``logprobs`` is set), then the
``finish_reason``, then ``data: [DONE]``; with ``stream_options: {"include_usage": true}`` a last chunk with empty
``choices`` and the ``usage``. The reply is generated whole before the first chunk is sent (the chunks exist for
clients that only speak streaming, not for latency), then ``data: [DONE]``.

Completion ids are ``chatcmpl-`` and 32 random hex digits; every answer carries an ``x-request-id`` header: the
client's ``X-Request-Id`` when it is a short token (as vLLM echoes it), else a random one.

Errors use OpenAI's shape ``{"error": {"message", "type", "param", "code"}}`` (``param`` names the field at
fault, ``null`` when none is): 400 for a malformed request (a body that is not JSON or nests too deeply, a missing
or bad field, a number that is not finite or out of range — ``max_tokens: Infinity``, ``seed: 1e999`` —, a prompt
longer than the model reads: ``code: "context_length_exceeded"``), 401 for a wrong key (when the server has one),
404 for another path or a ``model`` other than the one served (``code: "model_not_found"``, as for
``GET /v1/models/{id}`` of another id), 405 for a method other than GET and POST, 408 for a body not sent within
``body_seconds``, 411 without a ``Content-Length`` (or chunked ``Transfer-Encoding``), 413 for a body over
``max_body_bytes``, 500 when generation fails (or for a bug: the client gets no traceback), 503 for a connection
over ``max_connections`` or a request over ``max_requests``. A request h11 cannot parse (a bad request line,
header or ``Content-Length``) is a 400 in the same shape. Every request gets an answer; none drops the connection.

Abuse bounds (:mod:`agentgym_bench.http_body`), the fields of the :class:`~agentgym_bench.http_body.ServerLimits`
the server is given (each field says its default and the answer over it): a body is at most ``max_body_bytes``,
nests at most ``max_json_depth`` levels and must arrive within ``body_seconds``; a request's line and headers are at
most ``max_head_bytes`` and must arrive within ``head_seconds`` of its first byte (else the connection is closed
unanswered); a connection that sends nothing for ``idle_seconds`` after connecting or after an answer is closed; an
answer must be written out within ``write_seconds`` (a client that stops reading its answer, streamed or not, is cut
off); an idle or slow connection is a few kilobytes on the event loop, not a thread, and at most
``max_connections`` are open at once (``--max-connections``; another is answered a 503 and closed); at most
``max_requests`` requests are read and answered at once (``--max-requests``; another gets a 503);
``max_tokens`` is at most the model's positions; the prompt is rendered and tokenised outside the model's lock, so
a long prompt does not hold other clients up, and only generation is serialised.

This server is for tests and small models. For real throughput serve the model with ``vllm serve PATH`` or
``transformers serve`` (both OpenAI-compatible, see ``docs/rollout.md``) and point
:class:`~agentgym_bench.rollout.openai_compat.OpenAIPolicy` at them.

Run: ``agentgym-bench serve [NAME_OR_PATH] [--port 8000]`` (``--model NAME_OR_PATH`` says the same), then point
:class:`~agentgym_bench.rollout.openai_compat.OpenAIPolicy` (or any OpenAI client) at ``http://127.0.0.1:PORT/v1``.
"""

from __future__ import annotations

import io
import itertools
import json
import re
import secrets
import threading
import time
import traceback
import urllib.parse
from typing import Any

import anyio
import torch  # noqa: TID253 - serves a local model: commands/serve.py imports this module only to serve
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse

from agentgym_bench import http_body
from agentgym_bench.agent.tools import TOOL_CALL_CLOSE, TOOL_CALL_OPEN, split_tool_calls
from agentgym_bench.rollout.hf import HFPolicy, logits_argument
from agentgym_bench.serving import responses
from agentgym_bench.serving.chat_request import (
    MAX_TOKENS_WITHOUT_LIMIT,
    Adjust,
    FieldError,
    RequestError,
    error_body,
    parse_body,
    request_settings,
)

HOST = "127.0.0.1"
CALL_HEAD = TOOL_CALL_OPEN + '\n{"name": '
"""How a call begins in the reply, as the Qwen templates (and vLLM's ``hermes`` parser) write it: a forced call
(``tool_choice`` ``"required"`` or a named function) is generated after this, the name and ``, "arguments": ``."""


@torch.no_grad()
def continuation_logprobs(model: Any, sequences: list[list[int]], pad_id: int) -> list[float]:
    """Each sequence's log-probability under ``model`` after the prefix all of them share (one left-padded batch;
    the output head runs on the last positions only where the model's forward allows)."""
    start = next((k for k in range(min(map(len, sequences)))
                  if len({s[k] for s in sequences}) > 1), min(map(len, sequences)) - 1)
    start = max(start, 1)
    length = max(map(len, sequences))
    pads = torch.tensor([length - len(s) for s in sequences])
    ids = torch.tensor([[pad_id] * (length - len(s)) + s for s in sequences])
    mask = (torch.arange(length)[None, :] >= pads[:, None]).long()
    keep = length - start + 1
    argument = logits_argument(model)
    device = next(model.parameters()).device
    logits = model(input_ids=ids.to(device), attention_mask=mask.to(device),
                   position_ids=(mask.cumsum(-1) - 1).clamp(min=0).to(device),
                   **({argument: keep} if argument else {})).logits[:, -keep:-1].float()
    scores = torch.log_softmax(logits, dim=-1).gather(2, ids[:, start:, None].to(device))[..., 0].cpu()
    own = torch.arange(start, length)[None, :] >= pads[:, None] + start  # each row's own tokens after the prefix
    return (scores * own).sum(dim=1).tolist()


class ChatHandler:
    """One request to a :class:`ChatServer`, answered as ``http.server``'s handlers answer (so that subclasses may
    wrap :meth:`do_GET` / :meth:`do_POST` or override :meth:`_model_object`): ``server``, ``command``, ``path`` (with
    its query), ``headers`` (case-insensitive) and the ``body`` already read (also as ``rfile``). :meth:`do_POST`
    runs in a worker thread (it tokenises and generates), :meth:`do_GET` on the event loop (it must not block); each
    leaves its answer in :attr:`answer` (status and JSON payload) or :attr:`events` (Server-Sent Events)."""

    def __init__(self, server: ChatServer, command: str, path: str, headers: Any, body: bytes = b""):
        self.server, self.command, self.path, self.headers, self.body = server, command, path, headers, body
        self.rfile = io.BytesIO(body)
        self.answer: tuple[int, dict[str, Any]] | None = None
        self.events: list[bytes] | None = None

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        self.answer = (status, payload)

    def _error(self, status: int, message: str, kind: str, param: str | None = None, code: str | None = None
               ) -> None:
        self._send(status, error_body(message, kind, param, code))

    def _authorised(self) -> bool:
        if self.server.api_key and self.headers.get("Authorization") != f"Bearer {self.server.api_key}":
            self._error(401, "invalid or missing API key", "authentication_error")
            return False
        return True

    def _model_object(self) -> dict[str, Any]:
        """OpenAI's model object plus vLLM's ``max_model_len``: the tokens the model reads, prompt and reply
        together (``null`` for a model that does not say)."""
        return {"id": self.server.model_name, "object": "model", "created": self.server.created,
                "owned_by": "agentgym-bench", "max_model_len": self.server.max_positions}

    def _no_model(self, name: str) -> RequestError:
        return RequestError(404, f"The model `{name[:200]}` does not exist; this server serves "
                                 f"`{self.server.model_name}`", param="model", code="model_not_found")

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if not self._authorised():
            return
        path = urllib.parse.urlsplit(self.path).path
        if path.rstrip("/") == "/v1/models":
            self._send(200, {"object": "list", "data": [self._model_object()]})
        elif path.startswith("/v1/responses/") and path != "/v1/responses/":
            try:
                self._send(200, self.server.responses.get(urllib.parse.unquote(path[len("/v1/responses/"):]),
                                                          "response_id")[0])
            except FieldError as e:
                self._error(e.status, str(e).replace("Previous response", "Response"), "invalid_request_error",
                            e.param, "not_found")
        elif path.startswith("/v1/models/") and path != "/v1/models/":
            name = urllib.parse.unquote(path[len("/v1/models/"):])
            if name == self.server.model_name:
                self._send(200, self._model_object())
            else:
                error = self._no_model(name)
                self._error(error.status, error.message, error.kind, error.param, error.code)
        else:
            self._error(404, f"no route {self.path[:200]}", "not_found")

    def do_POST(self) -> None:  # noqa: N802
        try:
            self._post()
        except RequestError as e:
            self._error(e.status, e.message, e.kind, e.param, e.code)

    def _post(self) -> None:
        if not self._authorised():
            return
        path = urllib.parse.urlsplit(self.path).path.rstrip("/")
        if path == "/v1/responses":
            self._respond()
            return
        if path != "/v1/chat/completions":
            raise RequestError(404, f"no route {self.path[:200]}", "not_found")
        settings, ids, opened = self._prompt(self.body)
        head, generations, usage = self._generate(settings, ids, opened)
        if settings["stream"]:
            self._stream(head, generations, settings, usage)
            return
        choices = [self._choice(i, g, settings, head["id"]) for i, g in enumerate(generations)]
        self._send(200, {**head, "object": "chat.completion", "choices": choices, "usage": usage})

    def _respond(self) -> None:
        """``POST /v1/responses`` (:mod:`~agentgym_bench.serving.responses`): the request as the chat request
        that samples its reply, answered by the chat route's code, the answer as a ``response`` object or its events;
        stored unless ``store`` is false."""
        store, request, kept = self.server.responses, {}, []

        def translate(body: Any) -> dict[str, Any]:
            chat, conversation = responses.chat_request(body, store)
            request.update(body)
            kept.extend(conversation)
            return chat

        try:
            settings, ids, opened = self._prompt(self.body, translate)
            head, generations, usage = self._generate(settings, ids, opened)
        except RequestError as e:  # a field as the Responses API names it
            name = responses.RENAMED.get(e.param or "")
            if name:
                e.param, e.message = name, e.message.replace(e.param, name)
            raise
        choice = self._choice(0, generations[0], settings, head["id"])
        response = responses.response_object(request, head["model"], head["created"], choice["message"],
                                                   choice["finish_reason"], usage)
        if response["store"]:
            store.keep(response, [*kept, choice["message"]])
        if request.get("stream"):
            self.events = responses.stream_events(response, self._pieces(generations[0]))
        else:
            self._send(200, response)

    def _generate(self, settings: dict[str, Any], ids: list[int], opened: dict[str, list[int]]
                  ) -> tuple[dict[str, Any], list[Any], dict[str, int]]:
        """Sample a checked request's choices: the answer's ``id``/``created``/``model``, the generations and the
        ``usage``."""
        policy = self._policy(settings, ids, opened)
        try:
            with self.server.lock:  # only generation is serialised; the prompt was tokenised above
                # choice i samples from its own generator, seeded seed + i: a request carrying the seed hf: gives
                # a keyed conversation (eval's openai: route sends it) samples what hf: samples
                seeds = [settings["policy"]["seed"] + i for i in range(settings["n"])]
                prompts = [ids] * settings["n"]
                if opened:
                    settings["called"] = self._call_names(opened, settings, seeds)
                    prompts = [opened[name] for name in settings["called"]]
                generations = policy.generate_ids(prompts, seeds=seeds)
        except Exception as e:  # noqa: BLE001 - any model failure is a 500 for the client, not a dead server
            raise RequestError(500, f"generation failed: {e}"[:500], "server_error") from None
        prompt_tokens = len(ids)  # a forced call's opening counts as reply: the reply holds it
        completion_tokens = sum(len(g.token_ids) + len(p) - len(ids) for g, p in zip(generations, prompts,
                                                                                     strict=True))
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": prompt_tokens + completion_tokens}
        head = {"id": f"chatcmpl-{secrets.token_hex(16)}", "created": int(time.time()),
                "model": self.server.model_name}
        return head, generations, usage

    def _prompt(self, raw: bytes, translate: Any = None) -> tuple[dict[str, Any], list[int], dict[str, list[int]]]:
        """A request's checked settings, its prompt's token ids, and for a forced call (``tool_choice``
        ``"required"`` or a named function) the prompt followed by :data:`CALL_HEAD`, the name and
        ``, "arguments": `` for each function it may call (else ``{}``). ``translate``: makes the chat request of
        another route's parsed body."""
        tokenizer, positions = self.server.tokenizer, self.server.max_positions
        try:
            limit = positions if positions is not None else MAX_TOKENS_WITHOUT_LIMIT
            body = parse_body(raw, self.server.limits.max_json_depth)
            settings = request_settings(translate(body) if translate else body, next(self.server.seeds), limit,
                                         self.server.vocab_size)
            prompt = tokenizer.apply_chat_template(settings["messages"], tools=settings["tools"] or None,
                                                   add_generation_prompt=True, tokenize=False)
            ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
            opened = {name: tokenizer(f'{prompt}{CALL_HEAD}{json.dumps(name)}, "arguments": ',
                                      add_special_tokens=False)["input_ids"] for name in settings["called"] or ()}
        except FieldError as e:
            said = f"bad request: {e}" if e.status == 400 else str(e)
            raise RequestError(e.status, said[:500], param=e.param, code=e.code) from None
        except (ValueError, KeyError, TypeError) as e:
            raise RequestError(400, f"bad request: {e}"[:500]) from None
        if settings["model"] != self.server.model_name:
            raise self._no_model(settings["model"])
        if not ids:
            raise RequestError(400, "bad request: the prompt is empty")
        if opened:  # a forced call's arguments end where the call closes
            settings["stop"] = [*settings["stop"], TOOL_CALL_CLOSE]
        return settings, ids, opened

    def _policy(self, settings: dict[str, Any], ids: list[int], opened: dict[str, list[int]]) -> HFPolicy:
        """The request's policy: its reply limited to ``max_tokens``, or to the room the prompt (with a forced
        call's opening) leaves in the model's positions when not given, as OpenAI and vLLM limit it."""
        positions, longest = self.server.max_positions, max(map(len, [ids, *opened.values()]))
        room = positions - longest if positions is not None else MAX_TOKENS_WITHOUT_LIMIT
        asked = settings["max_tokens"]
        if room < (asked or 1):
            said = f" + max_tokens={asked} exceed" if asked else " leave no room for a reply in"
            raise RequestError(400, f"bad request: the prompt's {longest} tokens{said} the model's {positions} "
                                    "positions", param="messages", code="context_length_exceeded")
        bias, (frequency, presence) = settings["logit_bias"], settings["penalties"]
        adjust = [Adjust(bias, frequency, presence)] if bias or frequency or presence else []
        stops = settings["stop"] + ([TOOL_CALL_CLOSE] if opened else [])
        return HFPolicy(self.server.model, self.server.tokenizer, **settings["policy"], max_new_tokens=asked or room,
                        stop_strings=stops, logits_processors=adjust)

    def _call_names(self, opened: dict[str, list[int]], settings: dict[str, Any], seeds: list[int]) -> list[str]:
        """The function each choice of a forced call calls: the one named, or for ``"required"`` one of the tools
        drawn (from a generator of the choice's seed) by the model's probability of writing each name after
        :data:`CALL_HEAD` (tempered; the likeliest at ``temperature`` 0): decoding constrained to the names."""
        names = list(opened)
        if len(names) == 1:
            return names * len(seeds)
        scores = torch.tensor(continuation_logprobs(self.server.model, list(opened.values()), self.server.pad_id))
        temperature = settings["policy"]["temperature"]
        if temperature == 0:
            return [names[int(scores.argmax())]] * len(seeds)
        weights = torch.softmax(scores / temperature, dim=0)
        return [names[int(torch.multinomial(weights, 1, generator=torch.Generator().manual_seed(seed)))]
                for seed in seeds]

    def _finish_reason(self, generation: Any) -> str:
        stopped = generation.token_ids and generation.token_ids[-1] in set(self.server.stop_ids)
        return "stop" if stopped else "length"

    def _logprob(self, token_id: int, logprob: float) -> dict[str, Any]:
        """One token's entry: its text (decoded alone, special tokens kept, as vLLM reports it), log-probability
        and ``bytes``, the text's UTF-8 bytes."""
        text = self.server.tokenizer.decode([token_id])
        return {"token": text, "logprob": logprob, "bytes": list(text.encode("utf-8"))}

    def _logprobs(self, token_ids: list[int], logprobs: list[float], top: list[list[tuple[int, float]]] | None
                  ) -> dict[str, Any]:
        """OpenAI's ``logprobs``: each token's entry with its ``top_logprobs`` (``top``: each token's most likely
        tokens, ``None`` for none asked)."""
        return {"content": [{**self._logprob(i, lp), "top_logprobs": [self._logprob(*t) for t in top[k]] if top
                             else []} for k, (i, lp) in enumerate(zip(token_ids, logprobs, strict=True))]}

    def _pieces(self, generation: Any) -> list[str]:
        """The text each generated token adds (decoding the prefix keeps multi-token characters whole; a stop
        token adds nothing)."""
        decode, ids, text, pieces = self.server.tokenizer.decode, generation.token_ids, "", []
        for k in range(len(ids)):
            stop_token = ids[k] in self.server.stop_ids
            piece = "" if stop_token else decode(ids[: k + 1], skip_special_tokens=True)[len(text):]
            text += piece
            pieces.append(piece)
        return pieces

    def _cut(self, generation: Any, stops: list[str]) -> tuple[list[str], str] | None:
        """With a stop string in the reply: the pieces of the tokens before the first one (the last piece clipped
        where it begins) and ``"stop"``; ``None`` when no stop string occurs. (Generation already stopped at the
        token that completed it: :class:`~agentgym_bench.rollout.hf.HFPolicy`'s ``stop_strings``.)"""
        if not stops:
            return None
        pieces = self._pieces(generation)
        text = "".join(pieces)
        found = [i for i in (text.find(s) for s in stops) if i >= 0]
        if not found:
            return None
        cut, kept, length = min(found), [], 0
        for piece in pieces:
            if length >= cut:
                break
            kept.append(piece[: cut - length])
            length += len(kept[-1])
        return kept, "stop"

    def _tool_calls(self, text: str, settings: dict[str, Any], call_id: str, index: int
                    ) -> tuple[str | None, list] | None:
        """With ``tools`` offered and a reply that holds tool calls: its ``content`` (``None`` when empty) and
        OpenAI's ``tool_calls`` (ids ``call_id`` + ``_k``); ``None`` otherwise. A forced call's reply is the
        arguments of the function choice ``index`` calls (:func:`call_arguments`)."""
        if settings["called"]:
            function = {"name": settings["called"][index], "arguments": call_arguments(text)}
            return None, [{"id": f"{call_id}_0", "type": "function", "function": function}]
        found = split_tool_calls(text) if settings["tools"] else None
        if found is None:
            return None
        content, calls = found
        return content or None, [{"id": f"{call_id}_{k}", "type": "function",
                                  "function": {"name": name, "arguments": json.dumps(arguments)}}
                                 for k, (name, arguments) in enumerate(calls)]

    def _choice(self, index: int, generation: Any, settings: dict[str, Any], completion_id: str) -> dict[str, Any]:
        text, ids, logprobs = generation.text, generation.token_ids, generation.logprobs
        top = getattr(generation, "top_logprobs", None)
        finish_reason = self._finish_reason(generation)
        cut = self._cut(generation, settings["stop"])
        if cut is not None:
            pieces, finish_reason = cut
            text, ids, logprobs = "".join(pieces), ids[: len(pieces)], logprobs[: len(pieces)]
            top = top[: len(pieces)] if top else top
        message: dict[str, Any] = {"role": "assistant", "content": text}
        calls = self._tool_calls(text, settings, completion_id.replace("chatcmpl-", "call_") + f"_{index}", index)
        if calls is not None:
            message = {"role": "assistant", "content": calls[0], "tool_calls": calls[1]}
            finish_reason = "length" if finish_reason == "length" and settings["called"] else "tool_calls"
        choice: dict[str, Any] = {"index": index, "message": message, "finish_reason": finish_reason}
        if settings["logprobs"]:
            choice["logprobs"] = self._logprobs(ids, logprobs, top)
        return choice

    def _stream(self, head: dict[str, Any], generations: list[Any], settings: dict[str, Any],
                usage: dict[str, int]) -> None:
        """The finished generations as OpenAI ``chat.completion.chunk`` events, then ``[DONE]``."""
        self.events = []

        def event(choices: list[dict[str, Any]], **extra: Any) -> None:
            chunk = {**head, "object": "chat.completion.chunk", "choices": choices, **extra}
            self.events.append(f"data: {json.dumps(chunk)}\n\n".encode())

        for index, generation in enumerate(generations):
            event([{"index": index, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
            ids = generation.token_ids
            pieces, finish_reason = self._cut(generation, settings["stop"]) or (self._pieces(generation),
                                                                                 self._finish_reason(generation))
            calls = self._tool_calls("".join(pieces), settings, head["id"].replace("chatcmpl-", "call_") + f"_{index}",
                                     index)
            if calls is not None:
                truncated = finish_reason == "length" and settings["called"]
                self._stream_tool_calls(event, index, *calls, "length" if truncated else "tool_calls")
                continue
            top = getattr(generation, "top_logprobs", None)
            for k, piece in enumerate(pieces):
                delta = {"index": index, "delta": {"content": piece}, "finish_reason": None}
                if settings["logprobs"]:
                    delta["logprobs"] = self._logprobs(ids[k : k + 1], generation.logprobs[k : k + 1],
                                                       top[k : k + 1] if top else None)
                event([delta])
            event([{"index": index, "delta": {}, "finish_reason": finish_reason}])
        if settings["include_usage"]:
            event([], usage=usage)
        self.events.append(b"data: [DONE]\n\n")

    @staticmethod
    def _stream_tool_calls(event: Any, index: int, content: str | None, calls: list[dict[str, Any]],
                           finish_reason: str) -> None:
        """A reply with tool calls, streamed: its content (if any) in one chunk, the calls in one, then
        ``finish_reason``."""
        if content:
            event([{"index": index, "delta": {"content": content}, "finish_reason": None}])
        deltas = [{"index": k, **call} for k, call in enumerate(calls)]
        event([{"index": index, "delta": {"tool_calls": deltas}, "finish_reason": None}])
        event([{"index": index, "delta": {}, "finish_reason": finish_reason}])


def call_arguments(text: str) -> str:
    """A forced call's ``arguments`` from the text generated after ``"arguments": ``: the JSON object it begins
    with (compact, as ``json.dumps`` writes it), else the text itself, stripped: OpenAI's own ``arguments`` "may not
    be valid JSON" (its reference says so), and a small model's often are not."""
    text = text.strip()
    try:
        value, _ = json.JSONDecoder().raw_decode(text)
    except ValueError:
        return text
    return json.dumps(value) if isinstance(value, dict) else text


def _request_id(headers: Any) -> str:
    """The client's ``X-Request-Id`` when it is a short printable token (as vLLM echoes it), else a random one."""
    given = headers.get("x-request-id", "")
    return given if re.fullmatch(r"[A-Za-z0-9._:-]{1,128}", given) else secrets.token_hex(16)


class ChatServer(http_body.HttpServer):
    """Serve ``model`` / ``tokenizer`` on ``127.0.0.1:port`` (``port=0``: a free port; see :attr:`base_url`), on
    uvicorn, within ``limits`` (:class:`~agentgym_bench.http_body.ServerLimits`, its defaults when not given: the
    HTTP guards, ``max_json_depth`` and ``responses_kept``). ``handler``: the :class:`ChatHandler` (sub)class
    answering each request.

    Use as a context manager, or call :meth:`start` and :meth:`stop` (or :meth:`serve_forever` in this thread).
    """

    def __init__(self, model: Any, tokenizer: Any, *, model_name: str = "local", port: int = 0,
                 api_key: str | None = None, verbose: bool = False, handler: type[ChatHandler] = ChatHandler,
                 limits: http_body.ServerLimits | None = None):
        super().__init__(self._app, HOST, port, limits, verbose=verbose)
        self.model, self.tokenizer, self.model_name = model, tokenizer, model_name
        self.api_key, self.handler = api_key, handler
        policy = HFPolicy(model, tokenizer)
        self.stop_ids, self.pad_id = policy.stop_ids, policy.pad_id
        self.vocab_size = getattr(model.config, "vocab_size", None)
        self.max_positions = getattr(model.config, "max_position_embeddings", None)
        self.lock = threading.Lock()
        self.created = int(time.time())
        self.seeds = itertools.count()
        self.responses = responses.ResponseStore(self.limits.responses_kept)  # for previous_response_id
        # worker threads: a request's tokenising and generation
        self._workers = anyio.CapacityLimiter(self.limits.max_requests)

    def busy_answer(self) -> tuple[int, str, bytes]:
        """OpenAI's error shape for the 503 a connection over ``limits.max_connections`` gets."""
        message = f"{self.limits.max_connections} connections are open (the server's limit); retry"
        return 503, "application/json", json.dumps(error_body(message, "server_error")).encode()

    def bad_request(self) -> tuple[str, bytes]:
        message = "malformed HTTP request (its request line, a header or its Content-Length)"
        return "application/json", json.dumps(error_body(message)).encode()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://{HOST}:{self.server_address[1]}/v1"

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """The ASGI app: every request gets an answer in OpenAI's error shape or the handler's."""
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        headers = {"x-request-id": _request_id(request.headers)}
        path = scope["raw_path"].decode("latin-1") + (f"?{scope['query_string'].decode('latin-1')}"
                                                      if scope["query_string"] else "")
        with self.admit() as admitted:
            if not admitted:
                message = f"{self.limits.max_requests} requests are being served (the server's limit); retry"
                response = _json(503, error_body(message, "server_error"),
                                 {**headers, "retry-after": "1", "connection": "close"})
            else:
                response = await self._answer(request, path, headers)
            if response is not None:
                await response(scope, receive, send)

    async def _answer(self, request: Request, path: str, headers: dict[str, str]) -> Response | None:
        """The answer to one admitted request (``None`` for a client that left mid-body)."""
        method = request.method
        try:
            if method == "GET":
                handler = self.handler(self, method, path, request.headers)
                handler.do_GET()
            elif method == "POST":
                try:
                    raw = await http_body.read_body(request, self.limits.max_body_bytes, self.limits.body_seconds,
                                                    length_required=True)
                except http_body.BodyError as e:  # the body was not read through: the connection closes
                    return _json(e.status, error_body(e.message), {**headers, "connection": "close"})
                except ClientDisconnect:
                    return None
                handler = self.handler(self, method, path, request.headers, raw)
                await anyio.to_thread.run_sync(handler.do_POST, limiter=self._workers)
            else:
                return _json(405, error_body(f"method {method[:20]} is not allowed: GET or POST"),
                             {**headers, "allow": "GET, POST"})
        except Exception as e:  # noqa: BLE001 - a bug is a 500 for the client (no traceback), printed here
            traceback.print_exc()
            return _json(500, error_body(f"internal error: {type(e).__name__}"[:200], "server_error"), headers)
        if handler.events is not None:
            async def events() -> Any:
                for event in handler.events:
                    yield event

            return StreamingResponse(events(), media_type="text/event-stream",
                                     headers={**headers, "cache-control": "no-cache"})
        if handler.answer is None:
            return _json(500, error_body("internal error: no answer", "server_error"), headers)
        return _json(*handler.answer, headers)


def _json(status: int, payload: dict[str, Any], headers: dict[str, str]) -> Response:
    return Response(json.dumps(payload).encode(), status, headers, media_type="application/json")

