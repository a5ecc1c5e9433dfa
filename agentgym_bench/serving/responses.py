"""``POST /v1/responses`` and ``GET /v1/responses/{id}`` of ``agentgym-bench serve`` (:mod:`.chat`): OpenAI's
Responses API, as a translation to and from the chat-completions route, which builds the prompt, samples and parses
tool calls for both (one code path: a Responses request samples exactly what the same chat request samples, the
same seed giving the same reply).

Request (:func:`chat_request`): ``model``; ``input``, a string (one user message) or a list of items: messages
(``role`` user, system, developer (read as system, as OpenAI's chat models read it) or assistant; ``content`` a string
or a list of ``input_text`` parts, or ``output_text`` parts as a reply replayed; ``type: "message"`` or no type),
``function_call`` items (a reply's calls replayed: an assistant turn's ``tool_calls``) and ``function_call_output``
items (a ``tool`` message); ``instructions`` (a system message first, not carried on by ``previous_response_id``, as
OpenAI's); ``tools`` (function tools in the Responses' flat shape ``{"type": "function", "name", "description",
"parameters", "strict"}``; ``strict`` is passed on and, as on the chat route, the arguments are not constrained to
the schema); ``tool_choice`` (``"auto"``, ``"none"``, ``"required"`` or ``{"type": "function", "name": ...}``);
``parallel_tool_calls`` (``false`` keeps a reply's first call only); ``max_output_tokens``, ``temperature``,
``top_p`` (the chat route's ranges); ``seed`` (not OpenAI's: send it with the SDK's ``extra_body``; without it a
request gets the server's next seed, as on the chat route); ``stream``; ``store`` (default true) and
``previous_response_id``: the server keeps the last
:attr:`~agentgym_bench.http_body.ServerLimits.responses_kept` stored responses in memory (their whole conversation,
so a follow-up sends only its new items); an id not among them is a 404 in OpenAI's shape (``code:
"previous_response_not_found"``), and ``GET /v1/responses/{id}`` of one is a 404 too (``code: "not_found"``).

Accepted although meaningless here (:data:`HARMLESS`): ``user``, ``safety_identifier``, ``prompt_cache_key`` and
``prompt_cache_retention`` (identifiers for abuse tracking and for a cache this server does not keep),
``service_tier`` (there is one tier), ``metadata`` (echoed back) and ``stream_options`` (its one option,
``include_obfuscation``, pads events against side channels on a network; this server binds loopback only). Accepted
at their defaults only (:data:`DEFAULTS`): ``truncation: "disabled"``, ``background: false``, ``text: {"format":
{"type": "text"}}``, ``include: []``, ``reasoning``, ``max_tool_calls`` and ``top_logprobs`` null (0 for the last).
Any other field, or one of these at another value, is a 400 naming it (``conversation``, ``prompt``, hosted tools,
images and files included): nothing is silently ignored.

Answer (:func:`response_object`): a ``response`` object with the reply's ``output`` items (a ``message`` with one
``output_text`` part when the reply has text or no calls; a ``function_call`` item per call, ``call_id`` the chat
route's call id), ``status`` ``"completed"`` or ``"incomplete"`` (``incomplete_details.reason:
"max_output_tokens"``) and ``usage`` (``input_tokens``, ``output_tokens``, ``total_tokens``). Streamed
(:func:`stream_events`): Server-Sent Events, each with its ``event:`` name and ``sequence_number``:
``response.created``, ``response.in_progress``, per item ``response.output_item.added``, for text
``response.content_part.added``, one ``response.output_text.delta`` per generated token, ``response.output_text.done``
and ``response.content_part.done``, for a call ``response.function_call_arguments.delta`` and ``.done``, then
``response.output_item.done``, and last ``response.completed`` (or ``response.incomplete``). As on the chat route the
reply is generated whole before the first event. Errors are the chat route's, a field named as the Responses API
names it (``max_output_tokens``, ``input``).
"""

from __future__ import annotations

import json
import secrets
import threading
from collections import OrderedDict
from typing import Any

from agentgym_bench.serving.chat_request import FieldError

HANDLED = frozenset({"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls",
                     "max_output_tokens", "temperature", "top_p", "seed", "stream", "store", "previous_response_id"})
"""The fields a request's answer follows."""
HARMLESS = frozenset({"user", "safety_identifier", "prompt_cache_key", "prompt_cache_retention", "service_tier",
                      "metadata", "stream_options"})
"""Fields accepted whatever their value, meaningless here (see the module docstring)."""
DEFAULTS: dict[str, tuple[Any, ...]] = {"truncation": (None, "disabled"), "background": (None, False),
                                        "text": (None, {"format": {"type": "text"}}), "include": (None, []),
                                        "reasoning": (None,), "max_tool_calls": (None,), "top_logprobs": (None, 0)}
"""Fields accepted only at these values (their defaults, the only behaviour this server has)."""
RENAMED = {"max_tokens": "max_output_tokens", "messages": "input"}
"""Chat-route field names and what the Responses API calls them, for error answers."""


class ResponseStore:
    """The last ``size`` stored responses (the server's ``ServerLimits.responses_kept``), for
    ``previous_response_id`` and ``GET /v1/responses/{id}``: each one's ``response`` object and its conversation (the
    chat messages it answered, without its ``instructions``, and its reply; at most what the model's context reads);
    the oldest is forgotten first; thread-safe."""

    def __init__(self, size: int):
        self.size, self._lock, self._kept = size, threading.Lock(), OrderedDict()

    def keep(self, response: dict[str, Any], conversation: list[dict[str, Any]]) -> None:
        with self._lock:
            self._kept[response["id"]] = (response, conversation)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)

    def get(self, response_id: Any, param: str = "previous_response_id") -> tuple[dict[str, Any], list]:
        """The stored ``(response, conversation)``; a 404 :class:`FieldError` for an id not kept."""
        with self._lock:
            found = self._kept.get(response_id) if isinstance(response_id, str) else None
        if found is None:
            raise FieldError(param, f"Previous response with id {str(response_id)[:100]!r} not found (this server "
                             f"keeps its last {self.size} stored responses)", "previous_response_not_found", 404)
        return found


def refuse_unsupported(request: dict[str, Any]) -> None:
    """A 400 naming every field this server cannot honour (see the module docstring)."""
    unknown = sorted(k for k in request if k not in HANDLED | HARMLESS | DEFAULTS.keys())
    if unknown:
        raise FieldError(unknown[0], f"unsupported field(s) {', '.join(unknown)}"[:300] + ": this server's "
                         "/v1/responses does not implement them", "unsupported_parameter")
    for key, allowed in DEFAULTS.items():
        if key in request and request[key] not in allowed:
            raise FieldError(key, f"{key}={request[key]!r}"[:120] + " is not supported: this server takes only "
                             + " or ".join(json.dumps(a) for a in allowed), "unsupported_value")


def _parts(content: Any, where: str) -> Any:
    """A Responses ``content``: a string, or ``input_text`` / ``output_text`` parts as chat ``text`` parts (the chat
    route joins and checks them); another part type is a :class:`FieldError` naming it."""
    if not isinstance(content, list):
        return content  # a string, or the chat route's error naming it
    parts = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in ("input_text", "output_text"):
            raise FieldError(f"{where}.content[{j}].type", f"{where}.content[{j}].type={kind!r}"[:120] + " is not "
                             "supported: this server serves a text-only model and reads input_text and output_text "
                             "parts")
        parts.append({"type": "text", "text": part.get("text")})
    return parts


def _output(item: dict[str, Any], where: str) -> Any:
    """A ``function_call_output``'s ``output``: a string, or ``input_text`` parts."""
    output = item.get("output")
    return output if isinstance(output, str) else _parts(output if isinstance(output, list) else None, where)


def input_messages(given: Any) -> list[dict[str, Any]]:
    """``input`` as chat messages: calls join the assistant turn before them (or make one), call outputs become
    ``tool`` messages."""
    if isinstance(given, str):
        return [{"role": "user", "content": given}]
    if not isinstance(given, list) or not given:
        raise FieldError("input", "input must be a string or a non-empty list of items", "invalid_type")
    messages: list[dict[str, Any]] = []
    for i, item in enumerate(given):
        where = f"input[{i}]"
        kind = item.get("type", "message") if isinstance(item, dict) else None
        if kind == "message" and item.get("role") in ("user", "system", "developer", "assistant"):
            role = "system" if item["role"] == "developer" else item["role"]
            messages.append({"role": role, "content": _parts(item.get("content"), where)})
        elif kind == "function_call":
            if not all(isinstance(item.get(k), str) for k in ("call_id", "name", "arguments")):
                raise FieldError(where, f"{where}: a function_call needs call_id, name and arguments strings",
                                 "invalid_type")
            call = {"id": item["call_id"], "type": "function",
                    "function": {"name": item["name"], "arguments": item["arguments"]}}
            if not messages or messages[-1]["role"] != "assistant":
                messages.append({"role": "assistant", "content": None})
            messages[-1]["tool_calls"] = [*messages[-1].get("tool_calls", []), call]
        elif kind == "function_call_output" and isinstance(item.get("call_id"), str):
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": _output(item, where)})
        else:
            role = item.get("role") if kind else None
            raise FieldError(f"{where}.type", f"{where} (type {kind!r}, role {role!r})"[:150] + " is not supported: "
                             "items are messages (role user, system, developer or assistant), function_call and "
                             "function_call_output")
    return messages


def chat_tools(request: dict[str, Any]) -> dict[str, Any]:
    """``tools`` and ``tool_choice`` in the chat route's shape (``{"type": "function", "function": {...}}``), the
    function's fields in their order (the chat template writes them as they come)."""
    tools, choice = request.get("tools"), request.get("tool_choice")
    out: dict[str, Any] = {}
    if tools is not None:
        if not isinstance(tools, list):
            raise FieldError("tools", "tools must be a list of function tools", "invalid_type")
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(tool.get("name"), str):
                kind = tool.get("type") if isinstance(tool, dict) else None
                raise FieldError(f"tools[{i}]", f"tools[{i}] (type {kind!r})"[:120] + " is not supported: this "
                                 "server takes function tools, {type: 'function', name, parameters, ...}")
        out["tools"] = [{"type": "function", "function": {k: v for k, v in t.items() if k != "type"}} for t in tools]
    if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("name"), str):
        choice = {"type": "function", "function": {"name": choice["name"]}}
    elif choice is not None and choice not in ("auto", "none", "required"):
        raise FieldError("tool_choice", f"tool_choice={choice!r}"[:120] + " is not supported: this server takes "
                         "'none', 'auto', 'required' or {'type': 'function', 'name': ...}")
    if choice is not None:
        out["tool_choice"] = choice
    return out


def chat_request(request: Any, store: ResponseStore) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A Responses request as the chat-completions request that samples its reply (one choice, not streamed:
    the events are made from the answer), and its conversation without ``instructions`` (what a follow-up's
    ``previous_response_id`` continues)."""
    if not isinstance(request, dict):
        raise ValueError("the body must be a JSON object")
    refuse_unsupported(request)
    earlier = store.get(request["previous_response_id"])[1] if request.get("previous_response_id") is not None else []
    conversation = [*earlier, *input_messages(request.get("input"))]
    instructions = request.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise FieldError("instructions", "instructions must be a string", "invalid_type")
    for key in ("store", "parallel_tool_calls", "stream"):
        if request.get(key) is not None and not isinstance(request[key], bool):
            raise FieldError(key, f"{key}={request[key]!r}"[:120] + " must be true or false", "invalid_type")
    chat = {"model": request.get("model"), **chat_tools(request),
            "messages": ([{"role": "system", "content": instructions}] if instructions else []) + conversation,
            **{key: request[key] for key in ("temperature", "top_p", "seed") if key in request}}
    if request.get("max_output_tokens") is not None:
        chat["max_tokens"] = request["max_output_tokens"]
    return chat, conversation


def _usage(usage: dict[str, int]) -> dict[str, Any]:
    return {"input_tokens": usage["prompt_tokens"], "input_tokens_details": {"cached_tokens": 0,
                                                                             "cache_write_tokens": 0},
            "output_tokens": usage["completion_tokens"], "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage["total_tokens"]}


def response_object(request: dict[str, Any], model: str, created: int, message: dict[str, Any], finish_reason: str,
                    usage: dict[str, int]) -> dict[str, Any]:
    """The ``response`` object of a chat choice's ``message`` (``content``, ``tool_calls``) and ``finish_reason``
    (``parallel_tool_calls: false`` keeps the first call; ``message`` is left holding what was answered)."""
    incomplete = finish_reason == "length"
    status = "incomplete" if incomplete else "completed"
    if request.get("parallel_tool_calls") is False and message.get("tool_calls"):
        message["tool_calls"] = message["tool_calls"][:1]
    output: list[dict[str, Any]] = []
    if message.get("content") or not message.get("tool_calls"):
        output.append({"type": "message", "id": f"msg_{secrets.token_hex(16)}", "role": "assistant", "status": status,
                       "content": [{"type": "output_text", "text": message.get("content") or "", "annotations": [],
                                    "logprobs": []}]})
    for call in message.get("tool_calls") or []:
        output.append({"type": "function_call", "id": f"fc_{secrets.token_hex(16)}", "call_id": call["id"],
                       "name": call["function"]["name"], "arguments": call["function"]["arguments"],
                       "status": status})
    choice = request.get("tool_choice") or "auto"
    return {"id": f"resp_{secrets.token_hex(16)}", "object": "response", "created_at": created, "model": model,
            "status": status, "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
            "instructions": request.get("instructions"), "max_output_tokens": request.get("max_output_tokens"),
            "metadata": request.get("metadata") or {}, "output": output,
            "parallel_tool_calls": request.get("parallel_tool_calls") is not False,
            "previous_response_id": request.get("previous_response_id"), "store": request.get("store") is not False,
            "temperature": request.get("temperature", 1.0), "top_p": request.get("top_p", 1.0),
            "text": {"format": {"type": "text"}}, "tool_choice": choice, "tools": request.get("tools") or [],
            "truncation": "disabled", "usage": _usage(usage)}


def stream_events(response: dict[str, Any], deltas: list[str]) -> list[bytes]:
    """A finished ``response`` as Responses Server-Sent Events; ``deltas``: its text, token by token."""
    events: list[bytes] = []

    def event(kind: str, **fields: Any) -> None:
        payload = {"type": kind, "sequence_number": len(events), **fields}
        events.append(f"event: {kind}\ndata: {json.dumps(payload)}\n\n".encode())

    begun = {**response, "status": "in_progress", "output": [], "incomplete_details": None, "usage": None}
    event("response.created", response=begun)
    event("response.in_progress", response=begun)
    for index, item in enumerate(response["output"]):
        at = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "message":
            event("response.output_item.added", output_index=index, item={**item, "status": "in_progress",
                                                                          "content": []})
            part = item["content"][0]
            event("response.content_part.added", **at, content_index=0, part={**part, "text": ""})
            for delta in deltas if "".join(deltas) == part["text"] else [part["text"]]:
                if delta:
                    event("response.output_text.delta", **at, content_index=0, delta=delta, logprobs=[])
            event("response.output_text.done", **at, content_index=0, text=part["text"], logprobs=[])
            event("response.content_part.done", **at, content_index=0, part=part)
        else:
            event("response.output_item.added", output_index=index, item={**item, "status": "in_progress",
                                                                          "arguments": ""})
            event("response.function_call_arguments.delta", **at, delta=item["arguments"])
            event("response.function_call_arguments.done", **at, arguments=item["arguments"], name=item["name"])
        event("response.output_item.done", output_index=index, item=item)
    event(f"response.{response['status']}", response=response)
    return events
